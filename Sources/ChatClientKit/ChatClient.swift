import ChatStore
import ChatTransport
import IRCWire

/// One connection to one IRC server: registration, capabilities, heartbeat, reconnect, a queue
/// for messages typed while offline, and the `ClientState` that owns the conversations. Front
/// ends apply `events` (each carries its value) to a view of their own; they never touch the
/// socket and never pull the state.
public actor ChatClient {
    public nonisolated let events: AsyncStream<ClientEvent>
    private let continuation: AsyncStream<ClientEvent>.Continuation
    public internal(set) var state: ClientState
    public nonisolated let config: ClientConfig
    /// File transfers: their one owner, fed by the workers; each change is published as a
    /// `.transfer` event (the screen draws progress from those, not from this table).
    public nonisolated let transfers: FileTransfers

    var connection: LineConnection?
    private var runTask: Task<Void, Never>?
    private var backoffTask: Task<Void, Never>?
    /// False once the user quits or disconnects, or the server refuses us for good.
    private var keepConnected = true
    private var fatalReason: String?
    /// Why the user stopped us (`you quit`), reported instead of the socket's view of it.
    private var userStopReason: String?
    /// The text of the server's ERROR line, the best explanation of a close that follows it.
    private var serverErrorText: String?
    private var queue: [Outgoing] = []
    /// Direct messages sent from the offline queue, by folded nickname: a 401 for one of them
    /// (the person has not reconnected yet) names the text that was not delivered.
    private var flushedDirect: [String: [(text: String, isAction: Bool)]] = [:]
    private var lastReceived: Double = 0
    private var connectedAt: Double = 0
    private var pingSentAt: Double?
    /// This connection's registration (CAP, SASL, nickname retries).
    private var registration: Registration
    /// Rooms to be in: the configured ones plus any the user joined; kept across reconnects.
    private var wantedRooms: [String]

    struct Outgoing {
        let target: String
        let text: String
        let isAction: Bool
        /// The held line showing it, while offline.
        var serial: UInt64 = 0
    }

    public init(config: ClientConfig) {
        self.config = config
        // The client owns the facts; lines are kept by the views that show them.
        state = ClientState(nick: config.nick, scrollbackLimit: config.scrollbackLimit, keepsLines: false,
                            directLimit: config.directConversationLimit)
        registration = Registration(config.registrationSettings)
        wantedRooms = config.rooms
        ignoreMasks = config.ignoreMasks.compactMap { IRCMask.normalise($0.contains("!") || $0.contains("@") ? $0 : $0 + "!*@*") }
        let (events, continuation) = AsyncStream.makeStream(of: ClientEvent.self, bufferingPolicy: .unbounded)
        self.events = events
        self.continuation = continuation
        transfers = FileTransfers(publish: { continuation.yield(.transfer($0)) })
        let opened = config.logPath.flatMap { try? ClientLog(path: $0) }
        log = opened
        logProblem = config.logPath != nil && opened == nil ? "the log \(config.logPath!) cannot be opened; lines are not kept" : nil
    }

    // MARK: Lines not yet confirmed

    /// The connection dropped: lines not echoed are shown as held, with their text (the state
    /// keeps them: `ClientState.sent`).
    private func holdUnconfirmed() {
        for event in state.holdUnconfirmed(now: WallClock.now()) { emit(event) }
    }

    /// What history did not have is sent again (for a room once its history has been read;
    /// for people at once: no history is asked for them). A line the server refused is not
    /// among them: a refusal took it out for good.
    private func resendUnconfirmed(where belongs: (ConversationID) -> Bool, over connection: LineConnection) {
        let (again, events) = state.takeHeld(where: belongs)
        for event in events { emit(event) }
        for outgoing in again {
            deliver(Outgoing(target: outgoing.target, text: outgoing.text, isAction: outgoing.isAction), over: connection)
        }
    }

    // MARK: The local log

    /// Every line shown, kept per network and conversation (`ClientConfig.logPath`).
    private let log: ClientLog?
    private let logProblem: String?
    /// `host:port`: the network the log files lines under.
    public var network: String { "\(config.host):\(config.port)" }
    private var restored = false

    /// Ends the lines restored from the local log in each conversation.
    public static let earlierMarker = "── earlier ──"

    /// Lines worth keeping: what people said and did (not the client's own notices).
    static let loggedKinds: Set<String> = ["message", "action", "notice", "join", "part", "quit", "kick", "nick", "topic", "mode"]

    private func logged(_ id: ConversationID, _ line: ChatLine) {
        // Held lines are not said yet: they are logged when they are (their echo).
        guard let log, id != .server, !line.isPending, Self.loggedKinds.contains(line.kind.logName) else { return }
        log.append([LoggedLine(network: network, conversation: id.key, name: state[id]?.name ?? id.key, time: line.time,
                               kind: line.kind.logName, sender: line.sender, text: line.text, msgid: line.msgid, own: line.isOwn)])
    }

    /// On start: each conversation of this network opens with its last lines from the log
    /// (as history: in their place by time, once per msgid, not news).
    private func restoreFromLog() {
        guard !restored, let log else { return }
        restored = true
        guard let conversations = try? log.recent(network: network) else { return }
        for (_, name, lines) in conversations.reversed() {
            let id = state.id(for: name)
            for logged in lines {
                var line = logged.chatLine
                line.isHistory = true
                line.isOldNews = true
                // Straight to the views: these are in the log already.
                for event in state.line(line, to: id, name: name) { continuation.yield(event) }
            }
            // The boundary: above it the local log, below it this session (an info line, never logged).
            if let last = lines.map(\.time).max() {
                var marker = ChatLine(time: last + 0.0001, kind: .info, text: Self.earlierMarker)
                marker.isHistory = true
                marker.isOldNews = true
                for event in state.line(marker, to: id, name: name) { continuation.yield(event) }
            }
            // Restored lines are not unread.
            continuation.yield(state.record(.markedRead(id)))
        }
    }

    /// Scrolling past the oldest line of a room: the lines before it, from the server's history.
    public func fetchOlder(_ room: String, before msgid: String) {
        guard let connection, let request = state.olderRequest(for: state.id(for: room), room: room, before: msgid) else { return }
        write(request, over: connection)
    }

    /// Searches the log: the hits arrive as `.searchResults`.
    public func search(_ words: [String]) {
        let query = words.joined(separator: " ")
        guard let log else {
            emit(.searchResults(query: query, []))
            return
        }
        let hits = ((try? log.search(words)) ?? []).map { logged -> SearchHit in
            let line = logged.chatLine
            return SearchHit(conversation: IRCNames.isChannel(logged.name) ? .room(logged.conversation) : .direct(logged.conversation),
                             name: logged.name, line: line, network: logged.network)
        }
        emit(.searchResults(query: query, hits))
    }

    /// The lines around a search hit, put in their place in its conversation.
    public func showAround(_ hit: SearchHit) {
        guard let log, let lines = try? log.around(network: hit.network ?? network, conversation: hit.conversation.key, time: hit.line.time) else { return }
        for logged in lines {
            var line = logged.chatLine
            line.isHistory = true
            for event in state.line(line, to: hit.conversation, name: hit.name) { continuation.yield(event) }
        }
    }

    // MARK: Controls

    /// Connects, and keeps reconnecting until `quit` or `disconnect`.
    public func start() {
        guard runTask == nil else { return }
        restoreFromLog()
        if let logProblem { for event in state.line(ChatLine(time: WallClock.now(), kind: .error, text: logProblem), to: .server) { emit(event) } }
        keepConnected = true
        userStopReason = nil
        fatalReason = nil
        runTask = Task { await self.run() }
    }

    /// Sends QUIT, closes the connection and stops reconnecting.
    public func quit(reason: String = "Leaving") async {
        defer { log?.sync() }
        keepConnected = false
        userStopReason = "you quit"
        backoffTask?.cancel()
        // Still connecting: give up on it now rather than when the connect times out.
        if connection == nil { runTask?.cancel() }
        if let connection {
            try? connection.write(IRCMessage(command: "QUIT", params: [reason]))
            // Give the server a moment to send its ERROR; the reader ends the session either way.
            try? await Task.sleep(for: .milliseconds(200))
            connection.close(reason: "you quit")
        }
        await runTask?.value
    }

    /// Closes the connection without reconnecting; `start()` connects again.
    public func disconnect() async {
        keepConnected = false
        userStopReason = "disconnected by you"
        backoffTask?.cancel()
        if connection == nil { runTask?.cancel() }
        connection?.close(reason: "disconnected by you")
        await runTask?.value
    }

    /// Reconnects now: skips a pending backoff wait, or drops and re-establishes a live connection.
    public func reconnectNow() {
        if runTask == nil {
            start()
        } else if connection != nil {
            connection?.close(reason: "reconnecting at your request")
        } else {
            backoffTask?.cancel()
        }
    }

    /// Sends a message to a room or a person, split to fit the line limit; queued while offline.
    public func send(_ text: String, to target: String, isAction: Bool = false) {
        let outgoing = Outgoing(target: target, text: text, isAction: isAction)
        guard let connection, state.isRegistered else {
            enqueue(outgoing)
            return
        }
        deliver(outgoing, over: connection)
    }

    /// Sends a raw command (JOIN, NICK, TOPIC, WHOIS…), if connected; its replies are shown in
    /// `replyIn` (the conversation it was typed in) when given.
    public func sendCommand(_ message: IRCMessage, replyIn: ConversationID? = nil) {
        state.replyConversation = replyIn
        if message.command == "JOIN", let rooms = message.params.first {
            for room in rooms.split(separator: ",").map(String.init) where !wantedRooms.contains(where: { state.key(for: $0) == state.key(for: room) }) {
                wantedRooms.append(room)
            }
        }
        if message.command == "PART", let rooms = message.params.first {
            let parting = Set(rooms.split(separator: ",").map { state.key(for: String($0)) })
            wantedRooms.removeAll { parting.contains(state.key(for: $0)) }
        }
        guard let connection else {
            emit(.error("not connected: \(message.command) not sent"))
            return
        }
        write(message, over: connection)
    }

    /// The user has seen a conversation's lines.
    public func markRead(_ id: ConversationID) {
        guard let conversation = state[id], conversation.unread > 0 || conversation.mentioned else { return }
        emit(state.record(.markedRead(id)))
        // draft/read-marker: the account's other connections (another chat-tui) agree.
        if let connection, let marker = state.markerRequest(for: id) { write(marker, over: connection) }
    }

    /// The `/ignore` list, as completed masks.
    public private(set) var ignoreMasks: [String] = []

    /// Adds a mask (a bare nick means `nick!*@*`); returns the list, or nil when the mask is not valid.
    public func ignore(_ mask: String) -> [String]? {
        guard let full = IRCMask.normalise(mask.contains("!") || mask.contains("@") ? mask : mask + "!*@*") else { return nil }
        if !ignoreMasks.contains(where: { state.casemapping.equal($0, full) }) { ignoreMasks.append(full) }
        return ignoreMasks
    }

    public func unignore(_ mask: String) -> [String] {
        let full = IRCMask.normalise(mask.contains("!") || mask.contains("@") ? mask : mask + "!*@*") ?? mask
        ignoreMasks.removeAll { state.casemapping.equal($0, full) }
        return ignoreMasks
    }

    func isIgnored(_ source: String?) -> Bool {
        guard !ignoreMasks.isEmpty, let source, source.contains("!") else { return false }
        return ignoreMasks.contains { IRCMask.matches($0, source, casemapping: state.casemapping) }
    }
    public func clear(_ id: ConversationID) { emit(state.record(.cleared(id))) }

    /// Opens a direct conversation (or a room's window) by name, if it is not open.
    public func openConversation(_ name: String) {
        for event in state.open(name, now: WallClock.now()) { emit(event) }
    }

    public func closeConversation(_ id: ConversationID) {
        guard id != .server, state[id] != nil else { return }
        emit(state.close(id))
    }

    /// Adds a client-side note (an error the user should see) to a conversation.
    /// `name`: how to spell a direct conversation this opens (the folded key otherwise).
    public func note(_ text: String, in conversation: ConversationID, isError: Bool = true, name: String? = nil) {
        let place = state[conversation] == nil && conversation.kind != .direct ? .server : conversation
        let line = ChatLine(time: WallClock.now(), kind: isError ? .error : .info, text: text)
        for event in state.line(line, to: place, name: name) { emit(event) }
    }

    /// A note about a person or a room, by name, in the conversation with them.
    func note(_ text: String, in name: String, isError: Bool = true) {
        note(text, in: state.id(for: name), isError: isError, name: name)
    }

    /// Where answers to the user's last command go: the conversation it was typed in.
    var replyPlace: ConversationID { state.replyConversation ?? .server }

    /// The conversation the user types in, for answers that do not go to the server (file
    /// transfer commands, /ignore).
    public func replyIn(_ id: ConversationID) { state.replyConversation = id }

    // MARK: TLS trust

    private var clientTLS: TLSContext?

    private func tlsContext() throws(TransportError) -> TLSContext {
        if let clientTLS { return clientTLS }
        do {
            let context = try TLSContext.client(certificate: config.tlsClientCertificate, key: config.tlsClientKey)
            clientTLS = context
            return context
        } catch {
            throw .tls(host: config.host, port: config.port, reason: error.description)
        }
    }

    /// Why a certificate is refused, or nil when it is accepted: the pinned one, one the
    /// system trusts for this host name, or one the user trusted before (known-servers).
    func refusal(of certificate: PeerCertificate) -> String? {
        let server = "\(config.host):\(config.port)"
        if let pin = config.tlsFingerprint {
            return KnownServers.normalise(pin) == KnownServers.normalise(certificate.fingerprint) ? nil
                : "the certificate of \(server) is \(certificate.fingerprint), not the pinned \(pin)"
        }
        if certificate.problem == nil { return nil }
        let known = config.knownServersPath.flatMap { KnownServers.fingerprint(for: server, in: $0) }
        if let known {
            if KnownServers.normalise(known) == KnownServers.normalise(certificate.fingerprint) { return nil }
            return "the certificate of \(server) changed: it was \(known), now it is \(certificate.fingerprint); "
                + "if the server really has a new one, remove its line from \(config.knownServersPath ?? "known-servers")"
        }
        emit(.unknownCertificate(server: server, fingerprint: certificate.fingerprint, problem: certificate.problem ?? ""))
        return "the certificate of \(server) is not trusted (\(certificate.problem ?? "")); its SHA-256 is \(certificate.fingerprint): "
            + "pin it with --tls-fingerprint \(certificate.fingerprint)"
    }

    /// The user trusts this certificate: remembered in known-servers, and we connect again.
    public func trustCertificate(_ fingerprint: String) {
        if let path = config.knownServersPath {
            KnownServers.remember("\(config.host):\(config.port)", fingerprint, in: path)
        }
        start()
    }

    // MARK: The connection loop

    private func run() async {
        var attempt = 0
        var lastReason = ""
        var registeredOnce = false
        var unresolved = 0
        /// The host ended its server: said until we are back, whatever the next tries meet.
        var hostClosed: String?
        var saidStopped = false
        while keepConnected {
            attempt += 1
            emit(.status(.connecting(host: config.host, port: config.port, attempt: attempt)))
            do {
                let connection = try await LineConnection.open(host: config.host, port: config.port, timeout: config.connectTimeout,
                                                               tls: config.tls ? try tlsContext() : nil)
                guard keepConnected else { connection.close(reason: "stopped"); break }
                if let certificate = connection.certificate, let refusal = refusal(of: certificate) {
                    connection.close(reason: refusal)
                    fatalReason = refusal
                    lastReason = refusal
                    for event in state.connectionLost(reason: lastReason, now: WallClock.now()) { emit(event) }
                    holdUnconfirmed()
                    keepConnected = false
                    emit(.status(.stopped(reason: refusal)))
                    break
                }
                let reason = await session(connection)
                connection.close(reason: reason.text)
                if state.isRegistered || reason.registered { attempt = 0; registeredOnce = true; hostClosed = nil }
                lastReason = reason.text
                if ConnectionEnd.isHostClosing(reason.text) { hostClosed = reason.text }
                unresolved = 0
                if !config.tls, !reason.registered, keepConnected, await speaksTLS(connection, closedWith: reason.text) {
                    fatalReason = ConnectionEnd.speaksTLS
                    lastReason = ConnectionEnd.speaksTLS
                }
            } catch {
                lastReason = error.description
                if config.tls, case TransportError.tls(_, _, let why) = error,
                   case .stop(let words)? = ConnectionEnd.afterTLSFailure(why, plainTextMarker: LineConnection.plainTextAnswer) {
                    fatalReason = words
                    lastReason = words
                }
                // A name that does not resolve is most likely mistyped: a few tries, then stop
                // and say so (a server we have been on may be in a DNS hiccup: keep trying it).
                if case TransportError.hostNotFound = error { unresolved += 1 } else { unresolved = 0 }
                if unresolved >= 3 && !registeredOnce {
                    fatalReason = "\(config.host) was not found after \(unresolved) tries (\(lastReason)); check the name"
                }
            }
            for event in state.connectionLost(reason: lastReason, now: WallClock.now(), byUser: userStopReason != nil) { emit(event) }
            holdUnconfirmed()
            if let fatalReason {
                keepConnected = false
                emit(.status(.stopped(reason: fatalReason)))
                saidStopped = true
                break
            }
            guard keepConnected else {
                emit(.status(.stopped(reason: userStopReason ?? lastReason)))
                saidStopped = true
                break
            }
            let delay = config.reconnect.delay(attempt: max(1, attempt), random: Double.random(in: 0..<1))
            var shown = lastReason
            if case .retry(let words) = ConnectionEnd.retrying(after: hostClosed ?? lastReason, delay: delay) { shown = words }
            emit(.status(.disconnected(reason: shown)))
            emit(.status(.reconnecting(inSeconds: delay, reason: shown)))
            let wait = Task { _ = try? await Task.sleep(for: .seconds(delay)) }
            backoffTask = wait
            await wait.value
            backoffTask = nil
        }
        // Stopped during a backoff wait (or a refused certificate said it already): the status says so once.
        if !saidStopped && fatalReason == nil { emit(.status(.stopped(reason: userStopReason ?? lastReason))) }
        failQueued(reason: "disconnected")
        runTask = nil
        connection = nil
    }

    /// A plain-text connection that ended before registering: was the answer TLS? Its first
    /// bytes say so, or, when the server closed without a byte (an OpenSSL server sends no
    /// alert), one TLS handshake with the same port does.
    /// Only a close by the server is probed (not our own timeout).
    private func speaksTLS(_ connection: LineConnection, closedWith reason: String) async -> Bool {
        if connection.answeredWithTLS { return true }
        guard connection.receivedNothing, userStopReason == nil,
              reason == "connection closed by the server" || reason == "connection reset by the server",
              let context = try? tlsContext() else { return false }
        guard let probe = try? await LineConnection.open(host: config.host, port: config.port, timeout: min(config.connectTimeout, 5), tls: context) else {
            return false
        }
        probe.close(reason: "only a probe for TLS")
        return true
    }

    private struct SessionEnd {
        let text: String
        let registered: Bool
    }

    /// Registers and handles one connection until it closes; returns why it closed.
    private func session(_ connection: LineConnection) async -> SessionEnd {
        self.connection = connection
        serverErrorText = nil
        pingSentAt = nil
        let now = WallClock.now()
        connectedAt = now
        lastReceived = now
        emit(.status(.connected))
        // Each connection registers afresh, under the nickname we last had.
        var settings = config.registrationSettings
        settings.nick = state.nick
        registration = Registration(settings)
        perform(registration.start(), over: connection)

        let heartbeat = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(500))
                await self?.heartbeat(connection)
            }
        }
        defer { heartbeat.cancel() }

        var registered = false
        for await input in connection.input {
            connection.taken()
            switch input {
            case .line(let bytes):
                lastReceived = WallClock.now()
                pingSentAt = nil
                guard let message = try? IRCMessage(bytes: bytes) else { continue }
                handle(message, over: connection)
                registered = registered || state.isRegistered
                // A flood faster than the log can write waits here, not in memory: the
                // connection's bounded input fills and TCP slows the server.
                await log?.waitWhileBehind()
            case .overlong(let discarded):
                emit(.error("the server sent a line of \(discarded) bytes; it was discarded"))
            case .closed(let reason):
                self.connection = nil
                if let error = serverErrorText, reason == "connection closed by the server" {
                    return SessionEnd(text: "closed by the server: \(error)", registered: registered)
                }
                return SessionEnd(text: reason, registered: registered)
            }
        }
        self.connection = nil
        return SessionEnd(text: "connection closed", registered: registered)
    }

    private func heartbeat(_ connection: LineConnection) {
        guard self.connection === connection else { return }
        let now = WallClock.now()
        if !state.isRegistered {
            if now - connectedAt > config.registrationTimeout {
                connection.close(reason: "registration timed out after \(Int(config.registrationTimeout)) s (the server never welcomed us)")
            }
            return
        }
        if let sent = pingSentAt {
            if now - sent > config.pingTimeout {
                connection.close(reason: "ping timeout: no answer from the server for \(Int(now - lastReceived)) s")
            }
        } else if now - lastReceived >= config.pingInterval {
            pingSentAt = now
            write(IRCMessage("PING", "chat-tui-lag-\(now)"), over: connection)
        }
    }

    private func handle(_ message: IRCMessage, over connection: LineConnection) {
        let now = WallClock.now()
        // /ignore: what an ignored person says (messages, notices, actions, CTCP, file offers)
        // is dropped here; their joins and quits still keep the member lists right.
        if message.command == "PRIVMSG" || message.command == "NOTICE" || message.command == "TAGMSG", isIgnored(message.source) {
            return
        }
        if registration.consumes(message) {
            perform(registration.received(message), over: connection)
            return
        }
        switch message.command {
        case "PING":
            write(IRCMessage(command: "PONG", params: message.params), over: connection)
            return
        case "PONG":
            if let token = message.params.last, token.hasPrefix("chat-tui-lag-"), let sent = Double(token.dropFirst(13)) {
                emit(.lag(max(0, now - sent)))
            }
            return
        case "001", "005", "464", "465":
            perform(registration.received(message), over: connection)
            guard registration.phase == .registered else { return }
        case "401" where message.params.count > 1 && !(flushedDirect[state.key(for: message.params[1])]?.isEmpty ?? true):
            // A held message to someone who is not back yet: it stays held until they are (MONITOR).
            let nick = message.params[1]
            let line = flushedDirect[state.key(for: nick)]!.removeFirst()
            for event in state.holdForPerson(nick, text: line.text, isAction: line.isAction, now: now) { emit(event) }
            performActions(over: connection)
            return
        case "ERROR":
            // "Closing Link: host (reason)" says less than the reason alone.
            var errorText = message.params.first ?? ""
            if errorText.hasPrefix("Closing Link: ") { errorText.removeFirst(14) }
            serverErrorText = errorText
            connection.close(reason: "closed by the server: \(message.params.first ?? "")")
            if userStopReason != nil {
                // The expected answer to our QUIT, not an error.
                for event in state.line(ChatLine(time: now, kind: .info, text: serverErrorText ?? ""), to: .server) { emit(event) }
                return
            }
        case "PRIVMSG" where message.params.count >= 2 && message.params[1].hasPrefix("\u{1}DCC "):
            let source = IRCSource(parsing: message.source ?? "")
            let sender = source.nick
            // Our own offer echoed back (echo-message) is not an offer to us.
            if state.isMe(sender) { return }
            if let dcc = DCCMessage(ctcp: message.params[1]) {
                handleDCC(dcc, from: sender, senderHost: source.host, now: now)
                return
            }
        case "PRIVMSG" where message.params.count >= 2 && message.params[1].hasPrefix("\u{1}")
                && !state.isChannel(message.params[0]):
            // CTCP queries other clients answer: VERSION, PING, TIME (ACTION is a message, not a query).
            let sender = IRCSource(parsing: message.source ?? "").nick
            if let (verb, arguments) = CTCP.parse(message.params[1]), !state.isMe(sender) {
                let answer: String?
                switch verb {
                case "VERSION": answer = "chat-tui 0.1 (Swift, terminal IRC client)"
                case "PING": answer = arguments
                case "TIME": answer = ServerTime.format(now)
                default: answer = nil
                }
                if let answer {
                    write(IRCMessage("NOTICE", sender, CTCP.make(verb, answer)), over: connection)
                }
            }
        case "NOTICE" where message.params.count >= 2 && message.params[1].hasPrefix("\u{1}DCC REJECT"):
            dccRejected(by: IRCSource(parsing: message.source ?? "").nick, text: message.params[1])
            return
        default:
            break
        }
        for event in state.apply(message, now: now) { emit(event) }
        performActions(over: connection)
        if message.command == "001" {
            welcomed(over: connection, now: now)
            // Direct conversations dropped with the connection ask for what they missed (a
            // server keeps them for accounts); what was not confirmed waits for that answer.
            var asked: Set<ConversationID> = []
            for id in state.book.order where id.kind == .direct {
                guard let name = state[id]?.name, state.latestMsgid[id] != nil,
                      let request = state.historyRequest(for: id, room: name, onlyAfterDrop: true) else { continue }
                write(request, over: connection)
                asked.insert(id)
            }
            resendUnconfirmed(where: { $0.kind == .direct && !asked.contains($0) }, over: connection)
        }
        // Our own JOIN: the room's history, or what was missed while the connection was down;
        // without history, what was not confirmed goes again at once.
        if message.command == "JOIN", let room = message.params.first, state.isMe(IRCSource(parsing: message.source ?? "").nick) {
            let id = state.id(for: room)
            if let request = state.historyRequest(for: id, room: room) {
                write(request, over: connection)
            } else {
                resendUnconfirmed(where: { $0 == id }, over: connection)
            }
        }
        for request in state.takeGapContinuations() { write(request, over: connection) }
        for id in state.takeFinishedHistory() { resendUnconfirmed(where: { $0 == id }, over: connection) }
    }

    /// Registered: rooms, operator login and the held lines follow.
    private func welcomed(over connection: LineConnection, now: Double) {
        for event in state.connectionBack(now: now) { emit(event) }
        if let oper = config.operLogin {
            write(IRCMessage("OPER", oper.name, oper.password), over: connection)
        }
        if !wantedRooms.isEmpty {
            write(IRCMessage("JOIN", wantedRooms.joined(separator: ",")), over: connection)
        }
        flushQueue(over: connection)
    }

    /// Carries out what the state decided besides its events.
    private func performActions(over connection: LineConnection) {
        for action in state.takeActions() {
            switch action {
            case .send(let message): write(message, over: connection)
            case .deliver(let line):
                flushedDirect[state.key(for: line.target), default: []].append((line.text, line.isAction))
                deliver(Outgoing(target: line.target, text: line.text, isAction: line.isAction), over: connection)
            }
        }
    }

    /// Gives up on the direct messages held for `nick` (not on the server when they were sent).
    public func cancelHeld(for nick: String) {
        for event in state.cancelHeld(for: nick) { emit(event) }
        if let connection { performActions(over: connection) } else { _ = state.takeActions() }
    }

    /// Carries out what the registration machine decided.
    private func perform(_ actions: [Registration.Action], over connection: LineConnection) {
        for action in actions {
            switch action {
            case .send(let message): write(message, over: connection)
            case .nickInUse(let taken, let trying): emit(state.record(.nickInUse(taken, trying: trying)))
            case .capabilities(let set): state.capabilities = set
            case .registered: break // the 001 itself is folded into the state next
            case .notice(let text):
                for event in state.line(ChatLine(time: WallClock.now(), kind: .info, text: text), to: .server) { emit(event) }
            case .refuse(let reason):
                fatalReason = reason
                connection.close(reason: reason)
            }
        }
    }

    // MARK: Sending

    private func deliver(_ outgoing: Outgoing, over connection: LineConnection) {
        let maxBytes = MessageSplitter.maxTextBytes(target: outgoing.target, source: state.ownSource) - (outgoing.isAction ? 9 : 0)
        let echoes = state.capabilities.contains("echo-message")
        let now = WallClock.now()
        for piece in MessageSplitter.split(outgoing.text, maxBytes: maxBytes) {
            let text = outgoing.isAction ? "\u{1}ACTION \(piece)\u{1}" : piece
            do {
                try connection.write(IRCMessage("PRIVMSG", outgoing.target, text))
                // Until its echo comes back, nobody knows whether the server has it.
                if echoes { state.sending(SentLines.Line(target: outgoing.target, text: piece, isAction: outgoing.isAction)) }
            } catch {
                // The connection failed under us: hold the rest for the next one.
                enqueue(Outgoing(target: outgoing.target, text: piece, isAction: outgoing.isAction))
                return
            }
            if !echoes {
                let line = ChatLine(time: now, kind: outgoing.isAction ? .action : .message, sender: state.nick, text: piece, isOwn: true)
                for event in state.line(line, to: state.id(for: outgoing.target), name: outgoing.target) { emit(event) }
            }
        }
    }

    private func enqueue(_ outgoing: Outgoing) {
        guard keepConnected else {
            emit(.notSent(target: outgoing.target, text: outgoing.text, reason: "not connected"))
            return
        }
        guard queue.count < config.offlineQueueLimit else {
            emit(.notSent(target: outgoing.target, text: outgoing.text,
                          reason: "offline queue is full (\(config.offlineQueueLimit) messages)"))
            return
        }
        // Shown at once with its text, marked as held; it turns into an ordinary line when sent.
        var held = outgoing
        held.serial = state.newSerial()
        queue.append(held)
        var line = ChatLine(time: WallClock.now(), kind: outgoing.isAction ? .action : .message,
                            sender: state.nick, text: outgoing.text, isOwn: true)
        line.isPending = true
        line.serial = held.serial
        for event in state.line(line, to: state.id(for: outgoing.target), name: outgoing.target) { emit(event) }
    }

    private func flushQueue(over connection: LineConnection) {
        let pending = queue
        queue = []
        flushedDirect = [:]
        for outgoing in pending {
            emit(state.record(.pendingDone(state.id(for: outgoing.target), serial: outgoing.serial)))
            if !state.isChannel(outgoing.target) { flushedDirect[state.key(for: outgoing.target), default: []].append((outgoing.text, outgoing.isAction)) }
            deliver(outgoing, over: connection)
        }
    }

    private func failQueued(reason: String) {
        for outgoing in queue {
            emit(state.record(.pendingDone(state.id(for: outgoing.target), serial: outgoing.serial)))
            emit(.notSent(target: outgoing.target, text: outgoing.text, reason: reason))
        }
        queue = []
    }

    func write(_ message: IRCMessage, over connection: LineConnection) {
        do {
            try connection.write(message)
        } catch {
            connection.close(reason: "write failed: \(error)")
        }
    }

    func emit(_ event: ClientEvent) {
        if case .line(let id, let line) = event { logged(id, line) }
        continuation.yield(event)
    }
}

extension LoggedLine {
    /// The line as a conversation shows it.
    var chatLine: ChatLine {
        var line = ChatLine(time: time, kind: ChatLine.Kind(logName: kind), sender: sender, text: text, isOwn: own)
        line.msgid = msgid
        return line
    }
}
