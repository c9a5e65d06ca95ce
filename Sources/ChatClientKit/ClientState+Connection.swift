import IRCWire

/// What the state asks the actor to do besides publishing events: the actor performs these and
/// nothing else (it owns the socket, the clock and the file transfers, not the decisions).
public enum ClientAction: Sendable, Equatable {
    /// Write this line on the connection.
    case send(IRCMessage)
    /// Write one piece of a message we typed; if the write fails, `line` is held for the next
    /// connection (`ClientState.writeFailed`).
    case sendLine(IRCMessage, SentLines.Line)
    /// Close this connection (the server said ERROR, or a line of ours made it pointless).
    case close(reason: String)
    /// Close it and do not reconnect: the server refused us for good (the reason is the user's).
    case stop(reason: String)
    /// A file offer or answer (DCC) from `nick`: the transfers are the actor's.
    case dcc(DCCMessage, from: String, host: String?)
    /// `nick` rejected a file we offered.
    case dccRejected(by: String, text: String)
}

/// One change to the state: what to publish and what to do, in that order.
public struct Reduction: Sendable, Equatable {
    public var events: [ClientEvent] = []
    public var actions: [ClientAction] = []
}

/// The connection's side of the reducer: registration, PING, CTCP, the offline queue, the
/// rooms we want to be in, and what follows a welcome or our own JOIN. Every server line goes
/// through `receive` — the one dispatcher — and every request of the user's through a method
/// here; each returns a `Reduction`. The actor only performs it.
extension ClientState {
    /// The state a `ChatClient` owns. Its book places lines as a screen's does (the same
    /// scrollback) but keeps only their keys (time, msgid, a hash of the text): only an equal
    /// book deduplicates a replay or a history page exactly as the screen does, so the unread
    /// counts agree, and the lines themselves are the screen's to keep. The front ends number
    /// messages in their own books (`/reply 12`): this one keeps no numbers.
    public init(config: ClientConfig) {
        self.init(nick: config.nick, scrollbackLimit: config.scrollbackLimit, keepsLines: true, keepsOnlyKeys: true, numbersMessages: false,
                  directLimit: config.directConversationLimit, registration: config.registrationSettings)
        wantedRooms = config.rooms
        operLogin = config.operLogin
        offlineQueueLimit = config.offlineQueueLimit
        for mask in config.ignoreMasks { _ = ignore(mask) }
        highlights = config.highlights
    }

    /// Collects what the change being made produced.
    mutating func reduction() -> Reduction {
        defer { produced = []; actions = [] }
        return Reduction(events: produced, actions: actions)
    }

    // MARK: A connection

    /// A fresh connection: it registers afresh, under the nickname we last had.
    public mutating func connectionStarted() -> Reduction {
        produced = []
        actions = []
        serverError = nil
        var settings = registrationSettings
        settings.nick = nick
        registration = Registration(settings)
        registrationDid(registration.start(), now: 0)
        return reduction()
    }

    /// One line from the server, folded: registration's, the connection's (PING, ERROR, CTCP,
    /// file offers) and the conversations', with what follows a welcome or a JOIN of ours.
    public mutating func receive(_ message: IRCMessage, now: Double) -> Reduction {
        produced = []
        actions = []
        let command = message.command
        // /ignore: what an ignored person says (messages, notices, actions, CTCP, file offers)
        // is dropped here; their joins and quits still keep the member lists right.
        if command == "PRIVMSG" || command == "NOTICE" || command == "TAGMSG", isIgnored(message.source) { return reduction() }
        if registration.consumes(message) {
            registrationDid(registration.received(message), now: now)
            return reduction()
        }
        switch command {
        case "PING":
            actions.append(.send(IRCMessage(command: "PONG", params: message.params)))
            return reduction()
        case "PONG":
            if let token = message.params.last, token.hasPrefix("chat-tui-lag-"), let sent = Double(token.dropFirst(13)) {
                emit(.lag(max(0, now - sent)))
            }
            return reduction()
        case "001", "005", "464", "465":
            registrationDid(registration.received(message), now: now)
            guard isRegistered else { return reduction() }
        case "401" where message.params.count > 1 && !isChannel(message.params[1]) && !isMe(message.params[1]):
            // The answer to our oldest line to someone not here now: it waits for the person, not
            // for an echo (else a drop holds it and sends it again, after lines typed later: chaos
            // soak). A line flushed after a reconnect stays held until they are back (MONITOR);
            // one just typed is held where the server says when, else shown as not sent.
            let nick = message.params[1]
            let mapping = casemapping
            let refused = sent.refuse(targetKey: mapping.fold(nick), key: { mapping.fold($0) })
            if !(flushedDirect[key(for: nick)]?.isEmpty ?? true) {
                let line = flushedDirect[key(for: nick)]!.removeFirst()
                _ = holdForPerson(nick, text: line.text, isAction: line.isAction, now: now)
            } else if let line = refused {
                if hasMonitor {
                    _ = holdForPerson(nick, text: line.text, isAction: line.isAction, now: now)
                } else {
                    emit(.notSent(target: line.target, text: line.text, reason: "\(nick) is not on the server now"))
                }
            } else if typingOut.absorbsRefusal(for: key(for: nick), now: now) {
                // A typing notice's answer: the line's own was said once.
                return reduction()
            } else {
                break
            }
            return reduction()
        case "ERROR":
            // "Closing Link: host (reason)" says less than the reason alone.
            var text = message.params.first ?? ""
            if text.hasPrefix("Closing Link: ") { text.removeFirst(14) }
            serverError = text
            actions.append(.close(reason: "closed by the server: \(text)"))
            if userStopping {
                // The expected answer to our QUIT, not an error.
                say(ChatLine(time: now, kind: .info, text: "The server closed the connection as asked: \(text)"), to: .server)
                return reduction()
            }
        case "PRIVMSG" where message.params.count >= 2 && message.params[1].hasPrefix("\u{1}DCC "):
            let source = IRCSource(parsing: message.source ?? "")
            // Our own offer echoed back (echo-message) is not an offer to us.
            if isMe(source.nick) { return reduction() }
            if let dcc = DCCMessage(ctcp: message.params[1]) {
                actions.append(.dcc(dcc, from: source.nick, host: source.host))
                return reduction()
            }
        case "PRIVMSG" where message.params.count >= 2 && message.params[1].hasPrefix("\u{1}") && !isChannel(message.params[0]):
            answerCTCP(message, now: now)
        case "NOTICE" where message.params.count >= 2 && message.params[1].hasPrefix("\u{1}DCC REJECT"):
            actions.append(.dccRejected(by: IRCSource(parsing: message.source ?? "").nick, text: message.params[1]))
            return reduction()
        default:
            break
        }
        let context = MessageContext(message: message, now: now)
        noteAccount(message, context)
        if command == "354" && heldAccountChecked(context) { return reduction() }
        if message.tag("time") != nil { newestServerTime = max(newestServerTime ?? context.time, context.time) }
        if command == "PRIVMSG" { confirmEcho(context) }
        if let handler = Self.handlers[command] {
            handler(&self, context)
        } else if !Self.silent.contains(command) {
            numericOrUnknown(context)
        }
        if command == "001" { welcomed(now: now) }
        // Our own JOIN: the room's history, or what was missed while the connection was down;
        // without history, what was not confirmed goes again at once.
        if command == "JOIN", let room = message.params.first, isMe(IRCSource(parsing: message.source ?? "").nick) {
            let id = id(for: room)
            if let request = historyRequest(for: id, room: room) {
                actions.append(.send(request))
            } else {
                resendHeld(where: { $0 == id }, now: now)
            }
        }
        for request in gapContinuations + syncRequests { actions.append(.send(request)) }
        gapContinuations = []
        syncRequests = []
        let finished = finishedHistory
        finishedHistory = []
        for id in finished { resendHeld(where: { $0 == id }, now: now) }
        // A line queued behind held lines that are gone by any other way (confirmed by an echo,
        // refused) goes now: it waits only while its conversation holds lines (chaos soak: a
        // direct line waited for the next reconnect while later ones went).
        if isRegistered && !queue.isEmpty && queue.contains(where: { !holdsLines(id(for: $0.target)) }) { flushQueue(now: now) }
        return reduction()
    }

    /// What the registration machine decided, as events and actions.
    private mutating func registrationDid(_ decided: [Registration.Action], now: Double) {
        for action in decided {
            switch action {
            case .send(let message): actions.append(.send(message))
            case .nickInUse(let taken, let trying):
                emit(.nickInUse(taken, trying: trying))
                // Said in words: a login whose nickname a guest holds must not become alice_ silently.
                say(ChatLine(time: now, kind: .info, text: "The nickname \(taken) is taken: trying \(trying) "
                             + "(/nick \(taken) once it is free)"), to: .server)
            case .capabilities(let set): capabilities = set
            case .registered: break // the 001 itself is folded into the state next
            case .notice(let text): say(ChatLine(time: now, kind: .info, text: text), to: .server)
            case .refuse(let reason): actions.append(.stop(reason: reason))
            }
        }
    }

    /// CTCP queries other clients answer: VERSION, PING, TIME (ACTION is a message, not a query).
    private mutating func answerCTCP(_ message: IRCMessage, now: Double) {
        let sender = IRCSource(parsing: message.source ?? "").nick
        // Our own request echoed is not answered, unless we asked ourselves (`/ctcp ME VERSION`).
        guard let (verb, arguments) = CTCP.parse(message.params[1]), !isMe(sender) || isMe(message.params[0]) else { return }
        // Asking ourselves, the request comes twice with echo-message (its echo and its
        // delivery, one msgid): answered once.
        if isMe(sender), let msgid = message.tag("msgid") {
            guard msgid != lastSelfCTCP else { return }
            lastSelfCTCP = msgid
        }
        let answer: String?
        switch verb {
        case "VERSION": answer = "chat-tui \(ChatTUIVersion.number) (Swift, terminal IRC client)"
        case "PING": answer = arguments
        case "TIME": answer = ServerTime.format(now)
        default: answer = nil
        }
        if let answer { actions.append(.send(IRCMessage("NOTICE", sender, CTCP.make(verb, answer)))) }
    }

    /// Registered: rooms, operator login and the held lines follow; direct conversations
    /// dropped with the connection ask for what they missed (a server keeps them for
    /// accounts), and what was not confirmed in the others goes again.
    private mutating func welcomed(now: Double) {
        _ = connectionBack(now: now)
        if let oper = operLogin { actions.append(.send(IRCMessage("OPER", oper.name, oper.password))) }
        // The people's keys we show: before the JOINs, so their answers carry them.
        if capabilities.contains("draft/metadata-2") {
            actions.append(.send(IRCMessage("METADATA", "*", "SUB", "display-name", "avatar", "pronouns", "status")))
        }
        if !wantedRooms.isEmpty { actions.append(.send(IRCMessage("JOIN", wantedRooms.joined(separator: ",")))) }
        flushedDirect = [:]
        flushQueue(now: now)
        var asked: Set<ConversationID> = []
        for id in book.order where id.kind == .direct {
            guard let name = book[id]?.name, let request = historyRequest(for: id, room: name, onlyAfterDrop: true) else { continue }
            actions.append(.send(request))
            asked.insert(id)
        }
        askedDirect = asked
        if let request = targetsRequest(now: now) { actions.append(.send(request)) }
        resendHeld(where: { $0.kind == .direct && !asked.contains($0) }, now: now)
    }

    /// What history did not have is sent again (for a room once its history has been read;
    /// for people at once: no history is asked for them). A refused line is not among them.
    private mutating func resendHeld(where belongs: (ConversationID) -> Bool, now: Double) {
        let (again, events) = takeHeld(where: belongs)
        produced += events
        for line in again { deliver(SentLines.Line(target: line.target, text: line.text, isAction: line.isAction), now: now) }
        // What was typed meanwhile goes after them.
        if !queue.isEmpty { flushQueue(now: now) }
    }

    // MARK: Sending

    /// A message typed for a room or a person: split to fit the line limit and sent, or held
    /// while offline (`queueing`: the actor still means to connect; otherwise refused).
    public mutating func send(_ text: String, to target: String, isAction: Bool, replyTo: String? = nil, queueing: Bool, now: Double) -> Reduction {
        produced = []
        actions = []
        let line = SentLines.Line(target: target, text: text, isAction: isAction, replyTo: replyTo)
        // Behind our held lines of that conversation (sent again once history has been read, or
        // when the person is back), so a sender's lines keep their order (chaos soak).
        if isRegistered && hasMonitor && !isChannel(target) && held.waiting[key(for: target)] != nil {
            _ = holdForPerson(target, text: text, isAction: isAction, now: now)
        } else if isRegistered && !holdsLines(id(for: target)) {
            deliver(line, now: now)
        } else {
            enqueue(line, queueing: queueing || isRegistered, now: now)
        }
        return reduction()
    }

    /// Our line as PRIVMSGs that fit; with echo-message each is unconfirmed until its echo,
    /// without it is shown at once.
    mutating func deliver(_ line: SentLines.Line, now: Double) {
        // Several lines (a paste): one draft/multiline message where the server takes it and it
        // fits its limits; else each line as a message of its own, as before.
        if line.text.contains("\n") {
            let parts = line.text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            if !deliverMultiline(line, parts: parts, now: now) {
                for part in parts where !part.isEmpty {
                    deliver(SentLines.Line(target: line.target, text: part, isAction: line.isAction, replyTo: line.replyTo), now: now)
                }
            }
            return
        }
        let maxBytes = MessageSplitter.maxTextBytes(target: line.target, source: ownSource) - (line.isAction ? 9 : 0)
        let echoes = capabilities.contains("echo-message")
        for piece in MessageSplitter.split(line.text, maxBytes: maxBytes) {
            let text = line.isAction ? "\u{1}ACTION \(piece)\u{1}" : piece
            let one = SentLines.Line(target: line.target, text: piece, isAction: line.isAction, replyTo: line.replyTo)
            var message = IRCMessage("PRIVMSG", line.target, text)
            if let parent = line.replyTo, capabilities.contains("message-tags") { message.tags = [IRCTag("+draft/reply", parent)] }
            actions.append(.sendLine(message, one))
            if echoes {
                sending(one)
            } else {
                say(ChatLine(time: now, kind: line.isAction ? .action : .message, sender: nick, text: piece, isOwn: true),
                    to: id(for: line.target), name: line.target)
            }
        }
    }

    /// The server's draft/multiline limits (`max-bytes`, `max-lines`), when it offers it and batches.
    var multilineLimits: (bytes: Int, lines: Int)? {
        guard capabilities.contains("draft/multiline"), capabilities.contains("batch"), let value = registration.offered["draft/multiline"] else { return nil }
        var bytes = 0, lines = 100
        for token in value.split(separator: ",") {
            let pair = token.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, let number = Int(pair[1]) else { continue }
            if pair[0] == "max-bytes" { bytes = number } else if pair[0] == "max-lines" { lines = number }
        }
        return bytes > 0 ? (bytes, lines) : nil
    }

    /// A multiline message as one batch: each line cut to fit (the cuts sent as
    /// `draft/multiline-concat`); the closing line carries the whole text, for the echo to confirm.
    mutating func deliverMultiline(_ line: SentLines.Line, parts: [String], now: Double) -> Bool {
        guard let limits = multilineLimits, !line.isAction else { return false }
        let maxBytes = MessageSplitter.maxTextBytes(target: line.target, source: ownSource)
        var pieces: [(String, Bool)] = []
        for part in parts {
            for (index, piece) in Self.exactPieces(part, maxBytes: maxBytes).enumerated() { pieces.append((piece, index > 0)) }
        }
        guard pieces.count <= limits.lines, pieces.reduce(0, { $0 + $1.0.utf8.count }) <= limits.bytes else { return false }
        nextBatch += 1
        let reference = "ml\(nextBatch)"
        var opening = IRCMessage("BATCH", "+" + reference, "draft/multiline", line.target)
        if let parent = line.replyTo { opening.tags = [IRCTag("+draft/reply", parent)] }
        actions.append(.send(opening))
        for (piece, concat) in pieces {
            var tags = [IRCTag("batch", reference)]
            if concat { tags.append(IRCTag("draft/multiline-concat")) }
            actions.append(.send(IRCMessage(tags: tags, command: "PRIVMSG", params: [line.target, piece])))
        }
        actions.append(.sendLine(IRCMessage("BATCH", "-" + reference), line))
        if capabilities.contains("echo-message") {
            sending(line)
        } else {
            var shown = ChatLine(time: now, kind: .message, sender: nick, text: line.text, isOwn: true)
            shown.replyTo = line.replyTo
            say(shown, to: id(for: line.target), name: line.target)
        }
        return true
    }

    /// A line cut into pieces of at most `maxBytes` that join back into it exactly (what
    /// `draft/multiline-concat` means): at a space where there is one, kept at the end of the
    /// piece before; never inside a character.
    static func exactPieces(_ text: String, maxBytes: Int) -> [String] {
        guard text.utf8.count > maxBytes, maxBytes > 4 else { return [text] }
        var pieces: [String] = []
        var current = "", bytes = 0, lastSpace: String.Index?
        for character in text {
            let size = character.utf8.count
            if bytes + size > maxBytes, !current.isEmpty {
                if let space = lastSpace, space < current.endIndex {
                    let after = current.index(after: space)
                    pieces.append(String(current[..<after]))
                    current = String(current[after...])
                } else {
                    pieces.append(current)
                    current = ""
                }
                bytes = current.utf8.count
                lastSpace = nil
            }
            current.append(character)
            bytes += size
            if character == " " { lastSpace = current.index(before: current.endIndex) }
        }
        if !current.isEmpty { pieces.append(current) }
        return pieces
    }

    /// A piece could not be written (the connection failed under us): it waits for the next one.
    public mutating func writeFailed(_ line: SentLines.Line, now: Double) -> Reduction {
        produced = []
        actions = []
        sent.forget(line)
        enqueue(line, queueing: true, now: now)
        return reduction()
    }

    /// Held while offline: shown at once with its text, marked as held; it turns into an
    /// ordinary line when sent.
    private mutating func enqueue(_ line: SentLines.Line, queueing: Bool, now: Double) {
        guard queueing else {
            emit(.notSent(target: line.target, text: line.text, reason: "not connected"))
            return
        }
        guard queue.count < offlineQueueLimit else {
            emit(.notSent(target: line.target, text: line.text, reason: "offline queue is full (\(offlineQueueLimit) messages)"))
            return
        }
        var held = line
        held.serial = newSerial()
        queue.append(held)
        say(heldLine(line.text, isAction: line.isAction, serial: held.serial, now: now), to: id(for: line.target), name: line.target)
    }

    /// Whether our lines of a dropped connection in this conversation still wait for history's answer.
    func holdsLines(_ id: ConversationID) -> Bool {
        let book = self.book
        return sent.oldestHeld { book.id(for: $0.target) == id } != nil
    }

    /// Registered again, or history read: what was typed while offline goes, in order, but not
    /// ahead of held lines of its conversation that history has not answered for yet.
    private mutating func flushQueue(now: Double) {
        var pending: [SentLines.Line] = []
        var waiting: [SentLines.Line] = []
        for line in queue {
            if holdsLines(id(for: line.target)) { waiting.append(line) } else { pending.append(line) }
        }
        queue = waiting
        for line in pending {
            emit(.pendingDone(id(for: line.target), serial: line.serial))
            if !isChannel(line.target) { flushedDirect[key(for: line.target), default: []].append((line.text, line.isAction)) }
            deliver(SentLines.Line(target: line.target, text: line.text, isAction: line.isAction), now: now)
        }
    }

    /// Stopped for good: what was typed while offline is shown as not sent.
    public mutating func failQueued(reason: String) -> Reduction {
        produced = []
        actions = []
        for line in queue {
            emit(.pendingDone(id(for: line.target), serial: line.serial))
            emit(.notSent(target: line.target, text: line.text, reason: reason))
        }
        queue = []
        return reduction()
    }

    /// Held lines for someone who came back (MONITOR) go now, and a 401 for one of them holds it again.
    mutating func deliverHeld(_ line: SentLines.Line, now: Double) {
        flushedDirect[key(for: line.target), default: []].append((line.text, line.isAction))
        deliver(line, now: now)
    }

    // MARK: The user's commands

    /// A command the user typed (JOIN, NICK, TOPIC, WHOIS…); `connected`: there is a
    /// connection to write it on. JOIN and PART change the rooms we rejoin after a reconnect.
    public mutating func command(_ message: IRCMessage, connected: Bool) -> Reduction {
        produced = []
        actions = []
        if message.command == "JOIN", let rooms = message.params.first {
            for room in rooms.split(separator: ",").map(String.init) where !wantedRooms.contains(where: { key(for: $0) == key(for: room) }) {
                wantedRooms.append(room)
            }
        }
        if message.command == "PART", let rooms = message.params.first {
            let mapping = casemapping
            let parting = Set(rooms.split(separator: ",").map { mapping.fold(String($0)) })
            wantedRooms.removeAll { parting.contains(mapping.fold($0)) }
        }
        if connected {
            actions.append(.send(message))
        } else {
            emit(.error("not connected: \(message.command) not sent"))
        }
        return reduction()
    }

    /// The user has seen a conversation's lines; the account's other connections are told
    /// (draft/read-marker) when we are connected.
    public mutating func userRead(_ id: ConversationID, connected: Bool) -> Reduction {
        produced = []
        actions = []
        guard let conversation = book[id], conversation.unread > 0 || conversation.mentioned else { return reduction() }
        emit(.markedRead(id))
        if connected, let marker = markerRequest(for: id) { actions.append(.send(marker)) }
        return reduction()
    }

    /// The user gave up on what is held for `nick`.
    public mutating func userCancelledHeld(for nick: String, now: Double) -> Reduction {
        produced = []
        actions = []
        guard held.waiting[key(for: nick)] != nil else {
            say(ChatLine(time: now, kind: .info, text: "Nothing is held for \(nick)"), to: replyConversation.flatMap { book[$0] != nil ? $0 : nil } ?? .server)
            return reduction()
        }
        _ = cancelHeld(for: nick)
        return reduction()
    }

    // MARK: /ignore

    /// Adds a mask (a bare nick means `nick!*@*`); returns the list, or nil when the mask is not valid.
    /// `/set highlights`, `/set highlight-regex`: lines from now on are marked by these.
    public mutating func setHighlights(_ new: Highlights) -> Reduction {
        highlights = new
        return Reduction()
    }

    public mutating func ignore(_ mask: String) -> [String]? {
        guard let full = Self.ignoreMask(mask) else { return nil }
        if !ignoreMasks.contains(where: { casemapping.equal($0, full) }) { ignoreMasks.append(full) }
        return ignoreMasks
    }

    public mutating func unignore(_ mask: String) -> [String] {
        let full = Self.ignoreMask(mask) ?? mask
        let mapping = casemapping
        ignoreMasks.removeAll { mapping.equal($0, full) }
        return ignoreMasks
    }

    /// A mask as typed, completed: a bare nickname means `nick!*@*`.
    static func ignoreMask(_ mask: String) -> String? {
        IRCMask.normalise(mask.contains("!") || mask.contains("@") ? mask : mask + "!*@*")
    }

    func isIgnored(_ source: String?) -> Bool {
        guard !ignoreMasks.isEmpty, let source, source.contains("!") else { return false }
        return ignoreMasks.contains { IRCMask.matches($0, source, casemapping: casemapping) }
    }
}
