import ChatLink
import ChatStore
import ChatTransport
import IRCWire

/// The whole server as a value: it takes events (a connection opened, a line arrived, a
/// connection closed, time passed) and records what to send to whom in `outbox`. It does no I/O.
public struct ServerState {
    public let config: ServerConfig
    /// The parts, each the one owner of its facts (ServerParts.swift).
    var people = People()
    var roomBook = RoomBook()
    var accountBook = AccountBook()
    /// Web Push subscriptions (WebPush.swift).
    var pushBook = PushBook()
    var tokenBook = TokenBook()
    var cache = HistoryCache()
    var net = LinkedNetwork()
    var gate = Admission()
    public var registeredCount: Int { people.registeredCount }
    public var historyHealth: HistoryHealth? {
        get { cache.historyHealth }
        set { cache.historyHealth = newValue }
    }
    /// How names fold here (`ServerConfig.casemapping`).
    let casemapping: Casemapping
    public internal(set) var outbox = Outbox()
    /// The messages whose echo waits for history's commit.
    static func isEchoed(_ command: String) -> Bool { command == "PRIVMSG" || command == "NOTICE" || command == "TAGMSG" }
    /// The replies of the command being handled, flushed by `dispatch` (labeled-response wraps them here).
    var response: ResponseBuffer?
    var messageIDs = MessageIDs()
    var nextBatch: UInt64 = 1
    /// Whether the server has accounts (SASL, REGISTER, nickname protection).
    let hasAccounts: Bool
    /// The history database, read at start only (the read markers, the closed rooms' checks):
    /// history is read by the history worker (`HistoryQuery`) and written by the writer thread.
    /// Nil: history is off.
    let history: HistoryStore?

    /// Our SID, worked out once.
    let sid: String

    /// Worked out once from the configuration: they are read on every message or registration.
    let targetLimits: [String: Int]
    let isupportTokens: [String]
    /// Skeletons of the reserved nicknames, to the name as configured.
    let reservedSkeletons: [String: String]

    public init(config: ServerConfig, accounts: AccountStore? = nil, history: HistoryStore? = nil) {
        self.config = config
        casemapping = config.casemapping
        hasAccounts = accounts != nil
        self.history = history
        sid = config.sid
        messageIDs.node = UInt64(LinkIDs.nodeByte(config.sid))
        targetLimits = config.targetLimits
        var tokens = config.isupport
        if history != nil { tokens += [("CHATHISTORY", String(config.chathistoryLimit)), ("MSGREFTYPES", "msgid,timestamp")] }
        // draft/webpush: the key the server signs pushes with, for the client's subscription.
        if accounts != nil, let push = config.webPush { tokens += [("VAPID", Base64URL.encode(push.key.publicKey))] }
        isupportTokens = tokens.sorted { $0.0 < $1.0 }.map { $0.1.isEmpty ? $0.0 : "\($0.0)=\($0.1)" }
        var reserved: [String: String] = [:]
        for name in config.reservedNicks {
            for key in NameKeys.of(name, casemapping) { reserved[key] = name }
        }
        reservedSkeletons = reserved
        if let accounts {
            do {
                accountBook.directory = try accounts.directory()
            } catch {
                accountsFailed(error.description)
            }
        }
        if let history {
            do { cache.accountMarkers = try history.allReadMarkers() } catch {
                cache.markersUnavailable = true
                outbox.items.append(.log("history: the read markers cannot be read (\(error)); MARKREAD of accounts fails until a restart"))
            }
        }
        loadSavedRooms(accounts?.database)
        loadPresence(accounts?.database)
        loadWebPush(accounts?.database)
        loadLoginTokens(accounts?.database)
    }


    /// Takes what has been decided since the last call.
    public mutating func takeOutbox() -> Outbox {
        defer { outbox = Outbox() }
        return outbox
    }

    /// Gives back an outbox the runtime has carried out, emptied, so the next command's items
    /// go into its storage (one allocation fewer per line); a big one is let go.
    public mutating func recycle(_ taken: inout Outbox) {
        guard outbox.items.isEmpty, taken.items.capacity <= 64 else { return }
        // (The runtime took every item out: emptying an empty list went through the generic
        // `replaceSubrange`, 53 instructions a line.)
        if !taken.items.isEmpty { taken.items.removeAll(keepingCapacity: true) }
        swap(&outbox, &taken)
    }

    public var connectionCount: Int { people.sessions.count }

    /// The nicknames in a room, for tests and logs.
    public func members(of room: String) -> [String] {
        (roomBook.membership.members[casemapping.fold(room)] ?? [:]).keys.compactMap { people.users[$0]?.nick }.sorted()
    }

    // MARK: Events from the runtime

    public mutating func connected(_ id: ConnectionID, host: String, peer: String, secure: Bool = false, now: Double) {
        let user = User(id: UserID(people.nextUserID), host: host, now: now)
        user.uuid = LinkIDs.uuid(sid: sid, number: people.nextUserID)
        people.nextUserID += 1
        let session = Session(connection: id, user: user, peer: peer, now: now)
        session.secure = secure
        user.sessions = [session]
        people.users[user.id] = user
        people.sessions[id] = session
        people.openUsers.opened(id, user)
        log(session, "connected")
        admit(session, now: now)
    }

    /// Who an upload with this token is from: its connection's nickname, and the owner its
    /// files count against (the account it is logged in to, else its address).
    public func uploader(token: String) -> (nick: String, owner: String)? {
        guard let id = people.uploadTokens[token], let session = people.sessions[id], session.registered else { return nil }
        let user = session.user
        return (user.nick ?? "*", user.account.map { "account:" + fold($0) } ?? "address:" + Self.throttleKey(user.address))
    }

    /// The TLS handshake finished; `certificate` is the SHA-256 of the client's certificate, if it showed one (SASL EXTERNAL).
    public mutating func secured(_ id: ConnectionID, clientCertificate: [UInt8]?) {
        guard let session = people.sessions[id] else {
            net.links[id]?.certificate = clientCertificate.map { Crypto.hex($0).uppercased() }
            return
        }
        session.clientCertificate = clientCertificate.map { Crypto.hex($0).uppercased() }
    }

    /// Applies the connection limits to a new connection: past them it is told why and closed.
    mutating func admit(_ session: Session, now: Double) {
        guard let limits = config.connectionLimits else { return }
        let address = session.user.address
        if limits.exemptLoopback && Self.isLoopback(address) { return }
        let key = Self.throttleKey(address)
        var recent = (gate.recentConnections[key] ?? []).filter { now - $0 < limits.window }
        let refusal: String?
        if (gate.connectionsPerAddress[key] ?? 0) >= limits.perAddress {
            refusal = "Too many connections from your address (\(limits.perAddress))"
        } else if recent.count >= limits.newPerWindow {
            refusal = "Too many new connections from your address; try again in \(Int(limits.window / 60)) minutes"
        } else if (gate.unregisteredByBlock[Self.blockKey(address)]?.count ?? 0) >= limits.unregisteredPerBlock {
            refusal = "Too many connections from your network are registering at once; try again in a moment"
        } else {
            refusal = nil
        }
        if let refusal {
            if gate.refusedAddresses.insert(key).inserted { log(session, "refused \(key): \(refusal)") }
            closeLink(session, reason: refusal, now: now)
            return
        }
        recent.append(now)
        gate.recentConnections[key] = recent
        gate.connectionsPerAddress[key, default: 0] += 1
        session.limitKey = key
        // Full: the oldest of those registering from the network with the most of them makes
        // room, so a newcomer from elsewhere always gets in (2,000 silent connections used to
        // lock everyone out for the whole registration timeout).
        // (Between networks with as many, the one whose oldest came first: the same choice every time.)
        if gate.unregisteredConnections >= limits.unregistered,
           let crowded = gate.unregisteredByBlock.max(by: { ($0.value.count, $1.value.first?.raw ?? 0) < ($1.value.count, $0.value.first?.raw ?? 0) }),
           let oldest = crowded.value.first, let evicted = people.sessions[oldest] {
            if gate.refusedAddresses.insert("evicting " + crowded.key).inserted {
                log(session, "unregistered connections full (\(limits.unregistered)): closing the oldest from \(crowded.key) to make room")
            }
            closeLink(evicted, reason: "The server is full of connections that have not registered; yours was the oldest", now: now)
        }
        gate.unregisteredConnections += 1
        session.countedUnregistered = true
        gate.unregisteredByBlock[Self.blockKey(address), default: []].append(session.connection)
    }

    /// The registration timeout: shorter once half the room for unregistered connections is
    /// taken, so connections that never register are shed sooner under a flood of them.
    var effectiveRegistrationTimeout: Double {
        guard let limits = config.connectionLimits, gate.unregisteredConnections >= limits.unregistered / 2 else { return config.registrationTimeout }
        return min(config.registrationTimeout, limits.registrationTimeoutUnderPressure)
    }

    /// The connection is gone (closed by the peer, reset, unwritable); tell everyone who shared a room.
    public mutating func disconnected(_ id: ConnectionID, reason: String, now: Double) {
        guard let session = people.sessions[id] else {
            if let link = net.links[id] { linkLost(link, reason: reason, now: now) }
            return
        }
        removeSession(session, quitMessage: reason, now: now)
    }

    /// One complete line from the connection.
    public mutating func received(_ line: [UInt8], from id: ConnectionID, now: Double) {
        guard let session = people.sessions[id] else { return }
        received(line, session: session, now: now)
    }

    /// The same, from the runtime, which keeps each connection's session (no lookup per line).
    mutating func received(_ line: [UInt8], session: Session, now: Double) {
        guard !session.gone else { return }
        session.lastActivity = now
        session.pingSentAt = nil
        // While a password is checked off the loop, the client's next lines wait, so replies
        // keep the order of the commands (a PING after OPER is answered after OPER).
        if session.busy {
            guard session.heldLines.count < 256 else {
                closeLink(session, reason: "Too many lines sent while waiting for an answer", now: now)
                return
            }
            session.heldLines.append(line)
            return
        }
        // message-tags: a client's tag data is at most 4094 bytes (plus `@` and the space).
        if line.first == UInt8(ascii: "@"), let space = line.firstIndex(of: UInt8(ascii: " ")), space > 4095 {
            sendNow(session, numeric(session, .inputTooLong, "Input line was too long"))
            log(session, "error: \(space) bytes of tags (417) from \(session.user.replyName)")
            return
        }
        if relayPlainDirect(line, from: session, now: now) { return }
        let message: IRCMessage
        do {
            message = try IRCMessage(bytes: line)
        } catch {
            rejected(error, from: session, line: line)
            return
        }
        dispatch(message, from: session, now: now, invalidUTF8: !UTF8Validation.isValid(line))
    }

    /// A line longer than the framer holds arrived and was discarded.
    public mutating func receivedOverlongLine(from id: ConnectionID, discardedBytes: Int) {
        guard let session = people.sessions[id] else { return }
        sendNow(session, numeric(session, .inputTooLong, "Input line was too long"))
        log(session, "error: line of \(discardedBytes) bytes discarded (417) from \(session.user.replyName)")
    }

    /// Called about once a second: closes connections that never registered, pings quiet ones,
    /// and declares dead those that did not answer.
    public mutating func tick(now: Double) {
        // Password failures older than their minute are forgotten.
        if !gate.passwordFailures.isEmpty { gate.passwordFailures = gate.passwordFailures.filter { now - $0.value.since < 60 } }
        if !accountBook.loginFailures.isEmpty { accountBook.loginFailures = accountBook.loginFailures.filter { now - $0.value.since < 60 } }
        if !accountBook.accountsCreated.isEmpty, gate.ticksSincePrune >= 60 {
            accountBook.accountsCreated = accountBook.accountsCreated.compactMapValues { times in
                let kept = times.filter { now - $0 < 3600 }
                return kept.isEmpty ? nil : kept
            }
        }
        reloadAccountsIfChanged()
        enforceNickProtection(now: now)
        historyTick()
        // (Links that came to the link port count too: one that never finishes its handshake is closed.)
        if !net.links.isEmpty || !config.links.blocks.isEmpty { tickLinks(now: now) }
        writeRoomRecords()
        tickPresence(now: now)
        if let window = config.connectionLimits?.window, gate.ticksSincePrune >= 60 {
            gate.ticksSincePrune = 0
            gate.recentConnections = gate.recentConnections.compactMapValues { times in
                let kept = times.filter { now - $0 < window }
                return kept.isEmpty ? nil : kept
            }
            gate.refusedAddresses = []
        }
        gate.ticksSincePrune += 1
        var timedOut: [(Session, String)] = []
        let registrationTimeout = effectiveRegistrationTimeout
        for session in people.sessions.values {
            if !session.registered {
                if now - session.connectedAt >= registrationTimeout {
                    timedOut.append((session, "Registration timed out"))
                }
            } else if let sent = session.pingSentAt {
                if now - sent >= config.pingTimeout {
                    timedOut.append((session, "Ping timeout: \(Int((now - session.lastActivity).rounded())) seconds"))
                }
            } else if now - session.lastActivity >= config.pingInterval {
                session.pingSentAt = now
                outbox.send(session.connection, IRCMessage(command: "PING", params: [config.name]))
            }
        }
        for (session, reason) in timedOut.sorted(by: { $0.0.connection < $1.0.connection }) {
            closeLink(session, reason: reason, now: now)
        }
    }

    // MARK: Dispatch

    struct Request {
        let session: Session
        let message: IRCMessage
        let now: Double
        var params: [String] { message.params }
        var user: User { session.user }
    }

    mutating func dispatch(_ message: IRCMessage, from session: Session, now: Double, invalidUTF8: Bool = false) {
        // labeled-response needs batch negotiated too; a label over the spec's 64 bytes is not
        // echoed cut (the client could not match it), it is ignored.
        var label: String?
        if session.caps.contains(.labeledResponse) && session.caps.contains(.batch), let value = message.tag("label"),
           !value.isEmpty, value.utf8.count <= 64 {
            label = value
        }
        response = ResponseBuffer(session: session, label: label)
        defer { flushResponse() }
        // UTF8ONLY: a line with bytes that are not UTF-8 is refused whole, in words, with its
        // label (a QUIT still quits, its reason with U+FFFD). A line of a multiline batch
        // fails the batch: the message is not sent without it.
        if invalidUTF8 && message.command != "QUIT" {
            let command = UTF8Validation.isValid(Array(message.command.utf8)) && !message.command.contains("\u{FFFD}") ? message.command : "*"
            standardReply(session, "FAIL", command: command, code: "INVALID_UTF8", always: true, Self.notUTF8)
            if message.tag("batch") != nil, session.openBatch?.reference == message.tag("batch") { session.openBatch?.failed = true }
            return
        }
        // Lines of an open draft/multiline batch are collected, not handled one by one.
        if session.openBatch != nil || message.tag("batch") != nil, session.registered, collectBatched(message, from: session) {
            return
        }
        // A NOTICE never causes an automatic reply, not even "unknown" or "not registered".
        if message.command == "NOTICE" && (!session.registered || message.params.count < 2) { return }
        // PRIVMSG, the command of nearly every line, without hashing its name.
        guard let command = message.command == "PRIVMSG" ? ServerState.privmsg : ServerState.commands[message.command] else {
            reply(session, .unknownCommand, UTF8Boundary.prefix(message.command, maxBytes: 32), "Unknown command")
            return
        }
        if !session.registered && !command.beforeRegistration {
            reply(session, .notRegistered, "You have not registered")
            return
        }
        if command.operatorOnly && !session.user.isOperator {
            reply(session, .noPrivileges, "Permission Denied- You're not an IRC operator")
            return
        }
        if message.params.count < command.minParams {
            reply(session, .needMoreParams, message.command, "Not enough parameters")
            return
        }
        command.run(&self, Request(session: session, message: message, now: now))
    }

    static let notUTF8 = "Message rejected: it is not UTF-8, which this server requires (UTF8ONLY); set your client's encoding to UTF-8"

    mutating func rejected(_ error: IRCParseError, from session: Session, line: [UInt8] = []) {
        let name = session.user.replyName
        switch error {
        case .empty:
            return // RFC 1459: empty lines are silently ignored.
        case .lineTooLong, .tagsTooLong:
            sendNow(session, numeric(session, .inputTooLong, "Input line was too long"))
        case .invalidCommand(let command):
            // A command word that is not one (`F00`) still had its tags parsed: its 421 keeps the label.
            var reply = numeric(session, .unknownCommand, UTF8Boundary.prefix(command, maxBytes: 32), "Unknown command")
            // A command word that is not UTF-8 (UTF8ONLY): FAIL *, as the spec says.
            if !UTF8Validation.isValid(line) {
                reply = IRCMessage(source: config.name, command: "FAIL", params: ["*", "INVALID_UTF8", Self.notUTF8])
            }
            if session.caps.contains(.labeledResponse) && session.caps.contains(.batch), line.first == UInt8(ascii: "@"),
               let space = line.firstIndex(of: UInt8(ascii: " ")),
               let label = IRCTagCoding.parse(line[1..<space]).first(where: { $0.key == "label" })?.value, !label.isEmpty, label.utf8.count <= 64 {
                reply.tags.append(IRCTag("label", label))
                var variant = session.variant
                variant.insert(.label)
                outbox.items.append(.send(session.connection, Rendering.render(reply, nil, variant)))
            } else {
                sendNow(session, reply)
            }
        case .missingCommand:
            sendNow(session, IRCMessage(source: config.name, command: "NOTICE", params: [name, "Line ignored: it has no command"]))
        case .containsNul:
            sendNow(session, IRCMessage(source: config.name, command: "NOTICE", params: [name, "Line ignored: it contains a NUL byte"]))
        }
        log(session, "error: \(error) from \(name)")
    }

    // MARK: Replies

    func numeric(_ session: Session, _ numeric: Numeric, _ params: String...) -> IRCMessage {
        IRCMessage(source: config.name, command: numeric.rawValue, params: [session.user.replyName] + params)
    }

    func numeric(_ session: Session, _ numeric: Numeric, params: [String]) -> IRCMessage {
        IRCMessage(source: config.name, command: numeric.rawValue, params: [session.user.replyName] + params)
    }

    /// A numeric to `session`: into the command's response when it is the one asking, else at once.
    mutating func reply(_ session: Session, _ numeric: Numeric, _ params: String...) {
        send(session, self.numeric(session, numeric, params: params))
    }

    mutating func reply(_ session: Session, _ numeric: Numeric, params: [String]) {
        send(session, self.numeric(session, numeric, params: params))
    }

    /// Any message to one connection, through the response buffer when it is the requester's.
    mutating func send(_ session: Session, _ message: IRCMessage) {
        // Not `if let response`: a bound copy would share the buffer's storage, and every
        // append would copy all of it (a NAMES of 10,000 is hundreds of lines: quadratic).
        if response?.session === session {
            response!.messages.append(.message(message, nil))
        } else {
            sendNow(session, message)
        }
    }

    /// A line written already, CR LF included, with no tags and nothing the serialiser would
    /// change (as `send` of that message would write it for any variant, with no stamp).
    mutating func sendRaw(_ session: Session, _ line: [UInt8]) {
        if response?.session === session {
            response!.messages.append(.raw(line))
        } else {
            outbox.items.append(.send(session.connection, line))
        }
    }

    mutating func sendNow(_ session: Session, _ message: IRCMessage) {
        outbox.items.append(.send(session.connection, Rendering.render(message, nil, session.variant)))
    }

    /// A FAIL/WARN/NOTE (standard-replies), or a NOTICE saying the same to clients without it.
    /// `always`: the command's own spec requires FAIL (SETNAME does) whatever else was negotiated.
    mutating func standardReply(_ session: Session, _ kind: String, command: String, code: String, context: [String] = [],
                                always: Bool = false, _ text: String) {
        if always || session.caps.contains(.standardReplies) {
            send(session, IRCMessage(source: config.name, command: kind, params: [command, code] + context + [text]))
        } else {
            send(session, IRCMessage(source: config.name, command: "NOTICE", params: [session.user.replyName, "\(command): \(text)"]))
        }
    }

    /// Writes the response of the command being handled: as it is, with its label, or in a
    /// `labeled-response` batch when there is more than one line (an ACK when there is none).
    mutating func flushResponse() {
        guard let buffer = response else { return }
        response = nil
        let session = buffer.session
        guard people.sessions[session.connection] != nil || !buffer.messages.isEmpty else { return }
        var variant = session.variant
        if let batch = buffer.batch {
            variant.insert(.batch)
            var bytes: [UInt8] = []
            let tag = IRCTag("batch", batch)
            for line in buffer.messages { bytes += line.rendered(variant, adding: tag) }
            if !bytes.isEmpty { outbox.items.append(.send(session.connection, bytes)) }
            return
        }
        guard let label = buffer.label else {
            if buffer.messages.isEmpty { return }
            var bytes: [UInt8] = []
            for line in buffer.messages { bytes += line.rendered(variant) }
            outbox.items.append(buffer.awaitsCommit.map { .sendAfterCommit(session.connection, bytes, $0) } ?? .send(session.connection, bytes))
            return
        }
        if buffer.deferred && buffer.messages.isEmpty { return }
        variant.insert(.label)
        variant.insert(.batch)
        // A long reply goes on after this: its labelled batch opens now and closes with its last step.
        if session.longReply != nil {
            let reference = newBatchReference()
            session.replyBatch = reference
            var bytes = Rendering.render(IRCMessage(tags: [IRCTag("label", label)], source: config.name, command: "BATCH",
                                                    params: ["+" + reference, "labeled-response"]), nil, variant)
            let tag = IRCTag("batch", reference)
            for line in buffer.messages { bytes += line.rendered(variant, adding: tag) }
            outbox.items.append(.send(session.connection, bytes))
            return
        }
        var bytes: [UInt8] = []
        switch buffer.messages.count {
        case 0:
            bytes = Rendering.render(IRCMessage(tags: [IRCTag("label", label)], source: config.name, command: "ACK"), nil, variant)
        case 1:
            bytes = buffer.messages[0].rendered(variant, adding: IRCTag("label", label))
        case _ where Self.isOneBatch(buffer.messages):
            // A reply that is one batch of its own (a multiline echo) carries the label on its
            // opening line, unwrapped (labeled-response allows it; draft/multiline expects it).
            bytes = buffer.messages[0].rendered(variant, adding: IRCTag("label", label))
            for line in buffer.messages.dropFirst() { bytes += line.rendered(variant) }
        default:
            let reference = newBatchReference()
            bytes += Rendering.render(IRCMessage(tags: [IRCTag("label", label)], source: config.name, command: "BATCH",
                                                 params: ["+" + reference, "labeled-response"]), nil, variant)
            // A line already in a batch of its own (a multiline echo) stays in that inner batch.
            let tag = IRCTag("batch", reference)
            for line in buffer.messages { bytes += line.rendered(variant, adding: tag) }
            bytes += Rendering.render(IRCMessage(source: config.name, command: "BATCH", params: ["-" + reference]), nil, variant)
        }
        outbox.items.append(buffer.awaitsCommit.map { .sendAfterCommit(session.connection, bytes, $0) } ?? .send(session.connection, bytes))
    }

    /// Lines that are exactly one batch: `BATCH +r`, lines tagged `batch=r`, `BATCH -r`.
    static func isOneBatch(_ lines: [ResponseLine]) -> Bool {
        guard lines.count >= 2, case .message(let first, _) = lines[0], case .message(let last, _) = lines[lines.count - 1],
              first.command == "BATCH", last.command == "BATCH", let open = first.params.first, open.hasPrefix("+"),
              last.params.first == "-" + open.dropFirst() else { return false }
        let reference = String(open.dropFirst())
        return lines.dropFirst().dropLast().allSatisfy { if case .message(let m, _) = $0 { return m.tag("batch") == reference } else { return false } }
    }

    mutating func newBatchReference() -> String {
        defer { nextBatch += 1 }
        return "b" + String(nextBatch, radix: 36)
    }

    /// One line for the host's log; everything in it that came from the network is made visible
    /// here, in one place (an ESC in a nickname, a QUIT reason, a bad command word).
    mutating func log(_ session: Session, _ text: String) {
        outbox.items.append(.log("[\(session.peer)] " + PlainText.visible(text)))
    }

    /// A line about the server itself or its links, made visible as a whole (server names and
    /// reasons come from the network).
    mutating func log(_ text: String) {
        outbox.items.append(.log(PlainText.visible(text)))
    }

    // MARK: Lookups

    func user(named nick: String) -> User? {
        guard let user = people.nicks[casemapping.fold(nick)], user.isOnline else { return nil }
        return user
    }

    func channel(named name: String) -> (key: String, channel: Channel)? {
        let key = casemapping.fold(name)
        guard let channel = roomBook.channels[key] else { return nil }
        return (key, channel)
    }

    // MARK: Delivery

    /// Sends one relayed message to users. Each recipient's connections get the form their
    /// capabilities ask for; the message is serialised once per form, by the runtime. The
    /// requester's own copy (echo-message, its JOIN, its NICK) joins the command's response,
    /// so a labelled command's echo carries the label.
    /// `storable: false` marks a stand-in event (the chghost fallback) that history must not keep.
    /// `viaResponse: false` keeps even the requester's copy out of the response (a message to oneself:
    /// the delivered copy must not carry the label).
    mutating func deliver(_ message: IRCMessage, to recipients: some Sequence<UserID>, now: Double,
                          onlyWith required: Capability? = nil, excluding excluded: Capability? = nil, viaResponse: Bool = true,
                          storable storableOverride: Bool? = nil, stamp given: Stamp? = nil, history: [HistoryEntry]? = nil) {
        let found = people.users
        deliver(message, toUsers: recipients.lazy.compactMap { found[$0] }, now: now, onlyWith: required, excluding: excluded,
                viaResponse: viaResponse, storable: storableOverride, stamp: given, history: history)
    }

    /// Sends a room event to every member of the room `key` (one lookup for the room, none per member).
    /// The common case (no capability filter) hands over the room's kept lists (`FanOut`)
    /// with at most two connections to skip: no walk over the members.
    /// `leaving`: the connection of a user leaving the server (its QUIT), skipped though it
    /// is still in the room's lists and no longer among the user's sessions.
    mutating func deliver(_ message: IRCMessage, toRoom key: String, except: UserID? = nil, leaving: ConnectionID? = nil, now: Double,
                          onlyWith required: Capability? = nil, excluding excluded: Capability? = nil, stamp given: Stamp? = nil,
                          history: [HistoryEntry]? = nil) {
        guard required == nil && excluded == nil, let fanOut = roomBook.membership.fanOut[key] else {
            let members = roomBook.membership.members[key] ?? [:]
            deliver(message, toUsers: members.values.lazy.filter { $0.user.id != except }.map(\.user), now: now,
                    onlyWith: required, excluding: excluded, skipping: leaving, stamp: given, history: history)
            return
        }
        let storable = Delivery.isStorable(message.command)
        let stamp = given ?? self.stamp(message.command, now: now)
        let entries = historyEntries(message, storable: storable, given: history, roomKey: key)
        var skip: [ConnectionID] = []
        if let leaving { skip.append(leaving) }
        if let except, let user = people.users[except] {
            for session in user.sessions where session.connection != leaving { skip.append(session.connection) }
        }
        if let requester = response?.session, requester.user.id != except, requester.registered, requester.connection != leaving,
           roomBook.membership.isMember(requester.user.id, of: key) {
            skip.append(requester.connection)
            answerRequester(message, stamp, stored: !entries.isEmpty)
        }
        var rows: [HistoryRow] = [], serialized: [UInt8]?
        if !entries.isEmpty, let id = stamp.msgid { (rows, serialized) = historyRows(message, stamp: stamp, id: id, entries: entries) }
        outbox.items.append(.deliver(Delivery(message: message, stamp: stamp, groups: fanOut.groups, skipping: skip,
                                              lists: (key, fanOut.generation), storable: storable, rows: rows, serialized: serialized)))
    }

    /// The requester's own copy goes in its reply; the sender's copy of a stored message (its
    /// echo) waits until it is committed.
    mutating func answerRequester(_ message: IRCMessage, _ stamp: Stamp, stored: Bool) {
        response!.messages.append(.message(message, stamp))
        if stored, let id = stamp.msgid, Self.isEchoed(message.command) { response!.awaitsCommit = id }
    }

    /// Where history keeps a message: given (a direct message, a QUIT or NICK in each room), or
    /// the room it is addressed to; a TAGMSG only with a tag worth keeping (a reaction, not typing).
    /// `roomKey`: the room it is delivered to; when the message names it as folded already
    /// (the usual case), it is the target without folding the name again.
    func historyEntries(_ message: IRCMessage, storable: Bool, given: [HistoryEntry]?, roomKey: String? = nil) -> [HistoryEntry] {
        guard storable && historyEnabled else { return [] }
        var entries: [HistoryEntry] = []
        if let given {
            entries = given
        } else if let first = message.params.first, IRCNames.isChannel(first) {
            entries = [HistoryEntry(target: first == roomKey ? first : casemapping.fold(first))]
        }
        if message.command == "TAGMSG" && !message.tags.contains(where: { $0.isClientOnly && !$0.key.hasSuffix("typing") }) { return [] }
        return entries
    }

    /// `skipping`: a connection that does not get it (a sender without echo-message, whose
    /// other sessions do).
    mutating func deliver(_ message: IRCMessage, toUsers recipients: some Sequence<User>, now: Double,
                          onlyWith required: Capability? = nil, excluding excluded: Capability? = nil, viaResponse: Bool = true,
                          skipping: ConnectionID? = nil,
                          storable storableOverride: Bool? = nil, stamp given: Stamp? = nil, history: [HistoryEntry]? = nil) {
        let storable = storableOverride ?? Delivery.isStorable(message.command)
        let stamp = given ?? self.stamp(message.command, now: now)
        let requester = viaResponse ? response?.session : nil
        let entries = historyEntries(message, storable: storable, given: history)
        // Few forms among the recipients, usually one: a short list searched linearly.
        var groups: [(variant: RenderVariant, connections: [ConnectionID])] = []
        for user in recipients {
            for session in user.sessions where session.registered && session.connection != skipping {
                if let required, !session.caps.contains(required) { continue }
                if let excluded, session.caps.contains(excluded) { continue }
                if session === requester {
                    answerRequester(message, stamp, stored: !entries.isEmpty)
                    continue
                }
                let variant = session.variant
                if let index = groups.firstIndex(where: { $0.variant == variant }) {
                    groups[index].connections.append(session.connection)
                } else {
                    groups.append((variant, [session.connection]))
                }
            }
        }
        var rows: [HistoryRow] = [], serialized: [UInt8]?
        if !entries.isEmpty, let id = stamp.msgid { (rows, serialized) = historyRows(message, stamp: stamp, id: id, entries: entries) }
        if rows.isEmpty, groups.count == 1, groups[0].connections.count == 1 {
            // One recipient and nothing to store (most direct messages): its line, rendered here.
            outbox.items.append(.send(groups[0].connections[0], Rendering.render(message, stamp, groups[0].variant)))
            return
        }
        if !groups.isEmpty || storable {
            outbox.items.append(.deliver(Delivery(message: message, stamp: stamp, groups: groups, storable: storable, rows: rows, serialized: serialized)))
        }
    }

    /// When an event happens: its time, and a msgid for what history keeps.
    mutating func stamp(_ command: String, now: Double) -> Stamp {
        Stamp(time: now, msgid: Delivery.isStorable(command) ? messageIDs.next(now: now) : nil)
    }

    /// The `account` and `bot` tags for everything `user` sends (account-tag, bot mode).
    func accountTags(_ user: User) -> [IRCTag] {
        if user.account == nil && !user.isBot { return [] }
        var tags: [IRCTag] = []
        if let account = user.account { tags.append(IRCTag("account", account)) }
        if user.isBot { tags.append(IRCTag("bot")) }
        return tags
    }

    // MARK: Leaving

    /// Sends `ERROR`, forgets the user, tells the others it quit, and asks the runtime to close it.
    mutating func closeLink(_ session: Session, reason: String, now: Double) {
        guard people.sessions[session.connection] != nil else { return }
        send(session, IRCMessage(command: "ERROR", params: ["Closing Link: \(session.user.host) (\(reason))"]))
        // The ERROR must be written before the close.
        if response?.session === session { flushResponse() }
        removeSession(session, quitMessage: reason, now: now)
    }

    mutating func removeSession(_ session: Session, quitMessage: String, now: Double) {
        guard people.sessions.removeValue(forKey: session.connection) != nil else { return }
        people.openUsers.closed(session.connection)
        if let token = session.uploadToken { people.uploadTokens[token] = nil }
        session.gone = true
        session.lastDirect = nil
        gate.releaseLimits(session)
        let user = session.user
        user.sessions.removeAll { $0 === session }
        if response?.session === session { response = nil }
        // Another session goes on, or the account stays present (always-on): nobody is told.
        if session.registered, sessionLeft(session, now: now) {
            let left = user.sessions.filter(\.registered).count
            log(session, "a session of \(user.replyName) ended (\(quitMessage)); " + (left > 0 ? "\(left) still connected"
                : user.account == nil ? "kept \(Int(Self.resumeGrace)) s for it to come back (RESUME)" : "kept present (always-on)"))
            outbox.items.append(.close(session.connection))
            return
        }
        if user.sessions.isEmpty {
            if session.registered {
                endUser(user, quitMessage: quitMessage, leaving: session.connection, now: now)
            } else {
                forgetUser(user, wasOnline: false)
            }
        }
        log(session, session.registered ? "\(user.replyName) quit: \(quitMessage)" : "closed before registering: \(quitMessage)")
        outbox.items.append(.close(session.connection))
    }

    mutating func removeMember(_ id: UserID, from key: String) {
        if let user = people.users[id] { presenceMayChange(user) }
        if roomBook.membership.remove(id, from: key), let channel = roomBook.channels.removeValue(forKey: key) {
            roomBook.sortedChannelKeys.remove(key)
            cache.roomTails[key] = nil
            // A closed room (invite-only, keyed, secret) keeps its history from whoever makes a
            // room of that name next: they read only what is said from then on.
            // (Or was closed once: `RoomRecords.markedClosed`, its mark already written.)
            if roomBook.roomRecords.markedClosed.remove(key) != nil || Self.isClosed(channel) { roomBook.closedRooms.insert(key) }
            for key in NameKeys.of(channel.name, casemapping) where roomBook.channelSkeletons[key] == casemapping.fold(channel.name) {
                roomBook.channelSkeletons.removeValue(forKey: key)
            }
            for invitee in channel.invited { roomBook.invitations[invitee]?.remove(key) }
        }
    }

    /// A nickname given up (by QUIT or by NICK, as RFC 2812 asks), for WHOWAS.
    /// One user keeps at most 3 entries of the ring, so a rename loop cannot push everyone
    /// else's history out.
    mutating func rememberDeparture(_ user: User, nick given: String? = nil, now: Double) {
        guard let nick = given ?? user.nick, config.whowasLimit > 0 else { return }
        let mine = people.whowas.indices.filter { people.whowas[$0].user == user.id }
        if mine.count >= 3 { people.whowas.remove(at: mine[0]) }
        if people.whowas.count >= config.whowasLimit { people.whowas.removeFirst(people.whowas.count - config.whowasLimit + 1) }
        people.whowas.append(WhowasEntry(nick: nick, foldedNick: casemapping.fold(nick), username: user.username ?? "unknown",
                                  host: user.host, realname: user.realname, leftAt: now, user: user.id))
    }
}

/// A line of a command's response: a message, or one already written without tags (the 353s
/// of a big room's NAMES, cut from the room's kept list), which gets only the batch or label tag.
enum ResponseLine {
    case message(IRCMessage, Stamp?)
    case raw([UInt8])

    /// Its bytes for `variant`, with `tag` (a batch or label) first unless it has that tag already.
    func rendered(_ variant: RenderVariant, adding tag: IRCTag? = nil) -> [UInt8] {
        switch self {
        case .message(var message, let stamp):
            if let tag, message.tag(tag.key) == nil { message.tags.insert(tag, at: 0) }
            return Rendering.render(message, stamp, variant)
        case .raw(let bytes):
            guard let tag, Rendering.keeps(tag.key, variant) else { return bytes }
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count + 64)
            IRCMessage.appendTags([tag], to: &out)
            out += bytes
            return out
        }
    }
}

/// The replies to one command, held until it is done.
struct ResponseBuffer {
    let session: Session
    let label: String?
    /// A step of a long reply streamed in a labeled-response batch: its lines carry this batch.
    var batch: String? = nil
    var messages: [ResponseLine] = []
    /// The command's answer comes later (a password check): no ACK now.
    var deferred = false
    /// It holds the sender's copy of a message history stores: sent once that msgid is committed.
    var awaitsCommit: UInt64?
}

/// `msgid` values: unique, opaque, and sortable by time (milliseconds since 1970 in the high
/// bits, then a counter, then this server's node byte), written in base 32 so they stay short.
/// The node byte keeps two linked chat-tui servers from minting the same msgid in the same
/// millisecond: a message keeps its msgid on every node, so the two must never meet.
/// The model's one reference cycle, a user listing its sessions and each session naming its
/// user, is broken by `removeSession`; for the connections still open when a server stops (or a
/// test drops its state) this does it, when the last copy of the state goes: without it their
/// people outlived the server (LeakSanitizer: about 1,400 of them over the suite). Owner: the
/// state; bound: one entry per open connection; end: its connection's close, or the state's.
final class OpenUsers: @unchecked Sendable {
    private var open: [ConnectionID: Unmanaged<User>] = [:]

    func opened(_ id: ConnectionID, _ user: User) { open[id] = .passUnretained(user) }
    func closed(_ id: ConnectionID) { open[id] = nil }

    // Every user listed is alive: its own cycle keeps it until `closed`.
    deinit { for user in open.values { user.takeUnretainedValue().sessions.removeAll() } }
}

public struct MessageIDs: Sendable {
    private var last: UInt64 = 0
    /// The low 8 bits of every msgid minted here (`LinkIDs.nodeByte` of the server's SID).
    var node: UInt64 = 0 {
        didSet { last = last & ~0xFF | node }
    }
    /// The newest msgid handed out.
    var latest: UInt64 { last }

    mutating func next(now: Double) -> UInt64 {
        // 256 a millisecond before the counter runs into the next one (which only moves ids ahead).
        let candidate = UInt64(max(0, now * 1000)) << 16 | node
        last = max(last &+ 256, candidate)
        return last
    }

    /// The smallest msgid any server mints at this time (a bound for reads by time).
    static func lowest(at time: Double) -> UInt64 { UInt64(max(0, time * 1000)) << 16 }

    /// The tag's text: 13 characters of Crockford base 32, which sort as the numbers do.
    public static func text(_ id: UInt64) -> String {
        let alphabet: StaticString = "0123456789abcdefghjkmnpqrstvwxyz"
        var value = id
        var digits = [UInt8](repeating: 0, count: 13)
        for i in stride(from: 12, through: 0, by: -1) {
            digits[i] = alphabet.utf8Start[Int(value & 31)]
            value >>= 5
        }
        return String(decoding: digits, as: UTF8.self)
    }

    /// The number a msgid's text stands for (nil for text that is not one of ours).
    public static func value(_ text: String) -> UInt64? {
        let alphabet = Array("0123456789abcdefghjkmnpqrstvwxyz".utf8)
        let digits = Array(text.utf8)
        guard digits.count == 13 else { return nil }
        var value: UInt64 = 0
        for digit in digits {
            guard let index = alphabet.firstIndex(of: digit) else { return nil }
            value = value << 5 | UInt64(index)
        }
        return value
    }
}
