import IRCWire

/// One connected client as the server sees it. A class, not a struct: a fan-out or a direct
/// message reads several fields of several clients, and a dictionary of structs copied the
/// whole record (and retained all its strings) on every read — the largest cost in the profile.
/// `ServerState` still does no I/O, but it must not be copied and the copies mutated apart.
final class Client {
    let id: ConnectionID
    /// The peer's address, as it appears in `nick!user@host`.
    let host: String
    /// `host:port`, for logs.
    let peer: String
    var nick: String? { didSet { prefix = Client.makePrefix(nick, user, host) } }
    var user: String? { didSet { prefix = Client.makePrefix(nick, user, host) } }
    var realname = ""
    var registered = false
    /// CAP LS or REQ before registration holds registration until CAP END.
    var capNegotiating = false
    var password: String?
    var away: String?
    var invisible = false
    var caps = CapabilitySet()
    /// Folded names of the rooms the client is in.
    var channels: Set<String> = []
    let connectedAt: Double
    var lastActivity: Double
    /// When the client last sent PRIVMSG or NOTICE, for WHOIS idle time.
    var lastSpoke: Double
    var pingSentAt: Double?

    /// `nick!user@host`, kept ready: every relayed message carries it.
    private(set) var prefix: String

    static func makePrefix(_ nick: String?, _ user: String?, _ host: String) -> String {
        "\(nick ?? "*")!\(user ?? "unknown")@\(host)"
    }
    var replyName: String { nick ?? "*" }

    init(id: ConnectionID, host: String, peer: String, connectedAt: Double, lastActivity: Double, lastSpoke: Double) {
        self.id = id
        self.host = host
        self.peer = peer
        self.connectedAt = connectedAt
        self.lastActivity = lastActivity
        self.lastSpoke = lastSpoke
        prefix = Client.makePrefix(nil, nil, host)
    }
}

/// One member of a room: operator and voice, and the nickname kept here too so that listing
/// a big room reads the room alone.
struct MemberStatus: Equatable {
    var nick: String
    var op = false
    var voice = false

    /// `@+` with multi-prefix, else only the highest.
    func prefix(all: Bool) -> String {
        if all { return (op ? "@" : "") + (voice ? "+" : "") }
        return op ? "@" : (voice ? "+" : "")
    }
}

struct Channel {
    /// As first created, for display.
    let name: String
    let createdAt: Double
    var topic = ""
    var topicSetBy = ""
    var topicSetAt: Double = 0
    /// +n: only members may send.
    var noExternalMessages = true
    /// +t: only operators may set the topic.
    var topicLocked = true
    var members: [ConnectionID: MemberStatus] = [:]

    var modeString: String { "+" + (noExternalMessages ? "n" : "") + (topicLocked ? "t" : "") }
}

/// The whole server as a value: it takes events (a connection opened, a line arrived, a
/// connection closed, time passed) and records what to send to whom in `outbox`. It does no I/O.
public struct ServerState {
    public let config: ServerConfig
    let casemapping = Casemapping.unicode
    var clients: [ConnectionID: Client] = [:]
    /// Folded nickname to its owner, registered or not.
    var nicks: [String: ConnectionID] = [:]
    /// Folded room name to room.
    var channels: [String: Channel] = [:]
    public internal(set) var outbox = Outbox()

    public init(config: ServerConfig) {
        self.config = config
    }

    /// Takes what has been decided since the last call.
    public mutating func takeOutbox() -> Outbox {
        defer { outbox = Outbox() }
        return outbox
    }

    public var connectionCount: Int { clients.count }
    public internal(set) var registeredCount = 0

    /// The nicknames in a room, for tests and logs.
    public func members(of room: String) -> [String] {
        guard let channel = channels[casemapping.fold(room)] else { return [] }
        return channel.members.keys.compactMap { clients[$0]?.nick }.sorted()
    }

    // MARK: Events from the runtime

    public mutating func connected(_ id: ConnectionID, host: String, peer: String, now: Double) {
        clients[id] = Client(id: id, host: host, peer: peer, connectedAt: now, lastActivity: now, lastSpoke: now)
        log(id, "connected")
    }

    /// The connection is gone (closed by the peer, reset, unwritable); tell everyone who shared a room.
    public mutating func disconnected(_ id: ConnectionID, reason: String, now: Double) {
        guard clients[id] != nil else { return }
        removeClient(id, quitMessage: reason, now: now)
    }

    /// One complete line from the connection.
    public mutating func received(_ line: [UInt8], from id: ConnectionID, now: Double) {
        guard clients[id] != nil else { return }
        clients[id]!.lastActivity = now
        clients[id]!.pingSentAt = nil
        let message: IRCMessage
        do {
            message = try IRCMessage(bytes: line)
        } catch {
            rejected(error, from: id)
            return
        }
        dispatch(message, from: id, now: now)
    }

    /// A line longer than the framer holds arrived and was discarded.
    public mutating func receivedOverlongLine(from id: ConnectionID, discardedBytes: Int) {
        guard let client = clients[id] else { return }
        reply(id, .inputTooLong, "Input line was too long")
        log(id, "error: line of \(discardedBytes) bytes discarded (417) from \(client.replyName)")
    }

    /// Called about once a second: closes connections that never registered, pings quiet ones,
    /// and declares dead those that did not answer.
    public mutating func tick(now: Double) {
        var timedOut: [(ConnectionID, String)] = []
        var toPing: [ConnectionID] = []
        for (id, client) in clients {
            if !client.registered {
                if now - client.connectedAt >= config.registrationTimeout {
                    timedOut.append((id, "Registration timed out"))
                }
            } else if let sent = client.pingSentAt {
                if now - sent >= config.pingTimeout {
                    timedOut.append((id, "Ping timeout: \(Int((now - client.lastActivity).rounded())) seconds"))
                }
            } else if now - client.lastActivity >= config.pingInterval {
                toPing.append(id)
            }
        }
        for id in toPing {
            clients[id]!.pingSentAt = now
            outbox.send(id, IRCMessage(command: "PING", params: [config.name]))
        }
        for (id, reason) in timedOut.sorted(by: { $0.0 < $1.0 }) {
            closeLink(id, reason: reason, now: now)
        }
    }

    // MARK: Dispatch

    struct Request {
        let id: ConnectionID
        let message: IRCMessage
        let now: Double
        var params: [String] { message.params }
    }

    mutating func dispatch(_ message: IRCMessage, from id: ConnectionID, now: Double) {
        guard let command = ServerState.commands[message.command] else {
            reply(id, .unknownCommand, message.command, "Unknown command")
            return
        }
        let client = clients[id]!
        if !client.registered && !command.beforeRegistration {
            reply(id, .notRegistered, "You have not registered")
            return
        }
        if message.params.count < command.minParams {
            reply(id, .needMoreParams, message.command, "Not enough parameters")
            return
        }
        command.run(&self, Request(id: id, message: message, now: now))
    }

    mutating func rejected(_ error: IRCParseError, from id: ConnectionID) {
        let name = clients[id]?.replyName ?? "*"
        switch error {
        case .empty:
            return // RFC 1459: empty lines are silently ignored.
        case .lineTooLong, .tagsTooLong:
            reply(id, .inputTooLong, "Input line was too long")
        case .invalidCommand(let command):
            reply(id, .unknownCommand, UTF8Boundary.prefix(command, maxBytes: 32), "Unknown command")
        case .missingCommand:
            outbox.send(id, IRCMessage(source: config.name, command: "NOTICE", params: [name, "Line ignored: it has no command"]))
        case .containsNul:
            outbox.send(id, IRCMessage(source: config.name, command: "NOTICE", params: [name, "Line ignored: it contains a NUL byte"]))
        }
        log(id, "error: \(error) from \(name)")
    }

    // MARK: Helpers shared by the handlers

    mutating func reply(_ id: ConnectionID, _ numeric: Numeric, _ params: String...) {
        let target = clients[id]?.replyName ?? "*"
        outbox.send(id, IRCMessage(source: config.name, command: numeric.rawValue, params: [target] + params))
    }

    mutating func log(_ id: ConnectionID, _ text: String) {
        let peer = clients[id]?.peer ?? "?"
        outbox.items.append(.log("[\(peer)] \(text)"))
    }

    func client(named nick: String) -> ConnectionID? {
        guard let id = nicks[casemapping.fold(nick)], clients[id]?.registered == true else { return nil }
        return id
    }

    /// Everyone who shares a room with `id`, without `id` itself, each once.
    func neighbours(of id: ConnectionID) -> Set<ConnectionID> {
        var result: Set<ConnectionID> = []
        for key in clients[id]?.channels ?? [] {
            for member in channels[key]?.members.keys ?? [:].keys { result.insert(member) }
        }
        result.remove(id)
        return result
    }

    /// Sends one relayed message to many clients. It is serialised at most four times
    /// (with or without `time`, with or without client tags), not once per recipient, and
    /// handed to the runtime as one item per form.
    mutating func deliver(_ message: IRCMessage, to recipients: some Sequence<ConnectionID>, now: Double,
                          onlyWithCapability required: Capability? = nil) {
        // One recipient (a direct message): no grouping, no arrays.
        if recipients.underestimatedCount == 1, let only = recipients.first(where: { _ in true }) {
            guard let caps = clients[only]?.caps, required.map(caps.contains) ?? true else { return }
            outbox.items.append(.send(only, variant(of: message, caps.relayVariant, now: now)))
            return
        }
        var groups: [[ConnectionID]] = [[], [], [], []]
        for id in recipients {
            guard let caps = clients[id]?.caps else { continue }
            if let required, !caps.contains(required) { continue }
            groups[caps.relayVariant].append(id)
        }
        for (variant, ids) in groups.enumerated() where !ids.isEmpty {
            let bytes = self.variant(of: message, variant, now: now)
            outbox.items.append(ids.count == 1 ? .send(ids[0], bytes) : .sendMany(ids, bytes))
        }
    }

    /// The message as one kind of recipient gets it: with or without `time`, with or without client tags.
    func variant(of message: IRCMessage, _ variant: Int, now: Double) -> [UInt8] {
        if variant == 2 || (variant == 0 && message.tags.isEmpty) { return message.serialized() }
        var copy = message
        if variant & 2 == 0 { copy.tags.removeAll() }
        if variant & 1 != 0 { copy.tags.insert(IRCTag("time", ServerTime.format(now)), at: 0) }
        return copy.serialized()
    }

    /// Sends `ERROR`, forgets the client, tells the others it quit, and asks the runtime to close it.
    mutating func closeLink(_ id: ConnectionID, reason: String, now: Double) {
        guard let client = clients[id] else { return }
        outbox.send(id, IRCMessage(command: "ERROR", params: ["Closing Link: \(client.host) (\(reason))"]))
        removeClient(id, quitMessage: reason, now: now)
    }

    mutating func removeClient(_ id: ConnectionID, quitMessage: String, now: Double) {
        guard let client = clients[id] else { return }
        if client.registered {
            let quit = IRCMessage(source: client.prefix, command: "QUIT", params: [quitMessage])
            deliver(quit, to: neighbours(of: id), now: now)
        }
        for key in client.channels { removeMember(id, from: key) }
        if client.registered { registeredCount -= 1 }
        if let nick = client.nick, nicks[casemapping.fold(nick)] == id { nicks.removeValue(forKey: casemapping.fold(nick)) }
        log(id, client.registered ? "\(client.nick ?? "*") quit: \(quitMessage)" : "closed before registering: \(quitMessage)")
        clients.removeValue(forKey: id)
        outbox.items.append(.close(id))
    }

    mutating func removeMember(_ id: ConnectionID, from key: String) {
        channels[key]?.members.removeValue(forKey: id)
        clients[id]?.channels.remove(key)
        if channels[key]?.members.isEmpty == true { channels.removeValue(forKey: key) }
    }
}
