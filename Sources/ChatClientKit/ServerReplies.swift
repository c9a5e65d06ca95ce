import IRCWire

/// Our lines on their way (sent, held, refused), and the server's answers that are about them
/// or about us: refusals, standard replies (FAIL, WARN, NOTE), invitations. Each becomes words
/// in a conversation, never the raw line.
extension ClientState {
    // MARK: Our lines on their way

    /// A number for a held line, so the one sent is the one that leaves the screen.
    public mutating func newSerial() -> UInt64 {
        lastSerial += 1
        return lastSerial
    }

    /// Our line shown as held (typed offline, unconfirmed at a drop, waiting for its person),
    /// with the serial that takes it off the screen when it goes.
    func heldLine(_ text: String, isAction: Bool, serial: UInt64, now: Double) -> ChatLine {
        var line = ChatLine(time: now, kind: isAction ? .action : .message, sender: nick, text: text, isOwn: true)
        line.isPending = true
        line.serial = serial
        return line
    }

    /// A line written on the connection with echo-message on: unconfirmed until its echo.
    public mutating func sending(_ line: SentLines.Line) {
        let me = key(for: nick)
        var line = line
        line.seenBefore = latestMsgid[id(for: line.target)]
        sent.sent(line, as: me)
    }

    /// An echo (live or in history) of our own message confirms the line waiting for it.
    mutating func confirmEcho(_ c: MessageContext) {
        let sender = key(for: c.from)
        if isMe(c.from) { sent.nickSeen(sender) }
        guard c.p.count >= 2, sent.isOwn(sender) else { return }
        var text = c.p[1]
        let isAction = text.hasPrefix("\u{1}ACTION ")
        if isAction { text = String(text.dropFirst(8).prefix { $0 != "\u{1}" }) }
        let mapping = casemapping
        guard let found = sent.confirm(targetKey: mapping.fold(c.p[0]), text: text, isAction: isAction, key: { mapping.fold($0) }) else { return }
        // A flushed direct line echoed was delivered: a later 401 to that person is not its answer
        // (taken for it, a line already stored was held and sent again: chaos soak).
        let flushedKey = mapping.fold(found.target)
        if let index = flushedDirect[flushedKey]?.firstIndex(where: { $0.text == found.text && $0.isAction == found.isAction }) {
            flushedDirect[flushedKey]!.remove(at: index)
        }
        if found.serial != 0 { emit(.pendingDone(id(for: found.target), serial: found.serial)) }
    }

    /// The connection dropped: the lines not confirmed are shown as held, with their text.
    public mutating func holdUnconfirmed(now: Double) -> Reduction {
        var serial = lastSerial
        let held = sent.hold { serial += 1; return serial }
        lastSerial = serial
        var events: [ClientEvent] = []
        for outgoing in held {
            events += self.line(heldLine(outgoing.text, isAction: outgoing.isAction, serial: outgoing.serial, now: now),
                                to: id(for: outgoing.target), name: outgoing.target)
        }
        return Reduction(events: events)
    }

    /// The held lines of the conversations `belongs` chooses, to be sent again (history did
    /// not have them): their held copies go.
    mutating func takeHeld(where belongs: (ConversationID) -> Bool) -> (lines: [SentLines.Line], events: [ClientEvent]) {
        let book = self.book
        let taken = sent.takeHeld { belongs(book.id(for: $0.target)) }
        return (taken, taken.map { record(.pendingDone(book.id(for: $0.target), serial: $0.serial)) })
    }

    // MARK: Refusals

    // 404|442|477|482|486|489|531 <me> <target> :<reason>
    mutating func refusedOrNumeric(_ c: MessageContext) {
        guard c.p.count >= 3 else { return numericOrUnknown(c) }
        if refused(target: c.p[1], reason: c.p[c.p.count - 1]) { return }
        // Nothing of ours waiting: the refusal of a typing notice (the line's own was said once).
        if typingOut.absorbsRefusal(for: key(for: c.p[1]), now: c.time) { return }
        numericOrUnknown(c)
    }

    /// The server refused a line we sent to `target` (nil: whichever came first): it is done,
    /// said where it was meant to go with its text, and never held or sent again. False when
    /// no line was waiting (without echo-message the line is already shown as sent).
    mutating func refused(target: String?, reason: String) -> Bool {
        let mapping = casemapping
        guard let line = sent.refuse(targetKey: target.map { mapping.fold($0) }, key: { mapping.fold($0) }) else { return false }
        emit(.notSent(target: line.target, text: line.text, reason: "refused by the server: \(reason)"))
        return true
    }

    // MARK: Standard replies

    /// What a failed command means, by command: the start of the line that says so.
    static func failure(of command: String, context: [String]) -> String? {
        let subject = context.first.map { " " + $0 } ?? ""
        switch command {
        case "JOIN": return "Could not join\(subject)"
        case "PRIVMSG", "NOTICE", "TAGMSG": return "Not sent to\(subject.isEmpty ? " its target" : subject)"
        case "CHATHISTORY": return "History could not be fetched"
        case "MARKREAD": return "Read marker not kept"
        case "REGISTER": return "Account not registered"
        case "VERIFY": return "Account not verified"
        case "SETNAME": return "Real name not changed"
        case "INVITE": return "Invitation not sent"
        case "MONITOR": return "Watch list not changed"
        case "BATCH": return "Multiline message not sent"
        case "CHGHOST": return "Host not changed"
        case "NICK": return "Nickname not changed"
        case "RENAME": return "Room not renamed"
        case "AUTHENTICATE": return "Login failed"
        default: return nil
        }
    }

    // FAIL|WARN|NOTE <command> <code> [<context>...] :<description>
    mutating func standardReply(_ c: MessageContext) {
        let kind = c.message.command
        guard c.p.count >= 3 else {
            say(ChatLine(time: c.time, kind: .info, text: "the server says: \(c.p.joined(separator: " ")) (\(kind))"), to: .server)
            return
        }
        let command = c.p[0].uppercased(), code = c.p[1], description = c.p[c.p.count - 1]
        let context = Array(c.p.dropFirst(2).dropLast())
        if kind == "FAIL", command == "PRIVMSG" || command == "NOTICE", refused(target: context.first, reason: "\(description) (\(code))") {
            return
        }
        if command == "CHATHISTORY", context.count >= 2 {
            // The request is over: scrolling up may ask again. A direct conversation the server
            // keeps no history of for us (no account) is not worth a line.
            let asked = id(for: context[1])
            historyRequests[asked] = nil
            if code == "INVALID_TARGET", case .direct = asked { return }
        }
        if command == "MARKREAD" {
            // Not sent again on this connection: the server said it keeps no markers for us.
            if code == "ACCOUNT_REQUIRED" { markersRefused = true }
            // Said once: a marker is asked for every time a conversation is read.
            guard !toldOfMarkers else { return }
            toldOfMarkers = true
            let text = code == "ACCOUNT_REQUIRED"
                ? "Read markers are kept only for a logged-in account: log in (SASL) to share what you have read between windows (\(code))"
                : "Read marker not kept: \(description) (\(code))"
            say(ChatLine(time: c.time, kind: .info, text: text), to: .server)
            return
        }
        let lead = kind == "FAIL" ? Self.failure(of: command, context: context) : nil
        let text = lead.map { "\($0): \(description) (\(code))" } ?? "the server says: \(description) (\(code))"
        // About an open conversation: there; else where the command was typed; else the server window.
        var place = ConversationID.server
        if let about = context.first, book[id(for: about)] != nil {
            place = id(for: about)
        } else if let asked = replyConversation, book[asked] != nil {
            place = asked
        }
        say(ChatLine(time: c.time, kind: kind == "FAIL" ? .error : .info, text: text), to: place)
    }

    /// A read marker to send for a conversation the user has read, or nil when the server
    /// has none for us (or said it keeps none).
    public func markerRequest(for id: ConversationID) -> IRCMessage? {
        guard capabilities.contains("draft/read-marker"), !markersRefused, id != .server,
              let conversation = book[id], let time = latestTime[id] else { return nil }
        return IRCMessage("MARKREAD", conversation.name, "timestamp=" + ServerTime.format(time))
    }

    // MARK: Invitations

    // INVITE <nick> <room>
    mutating func invited(_ c: MessageContext) {
        guard c.p.count >= 2 else { return }
        let invitee = c.p[0], room = c.p[1]
        guard isMe(invitee) else {
            // invite-notify: an operator of the room sees who was invited.
            let roomID = id(for: room)
            guard book[roomID] != nil else { return }
            say(ChatLine(time: c.time, kind: .info, sender: c.from, text: "\(c.from) invited \(invitee) to \(room)"), to: roomID)
            return
        }
        // News for us: where the user is looking (else where they last typed), unread and
        // ringing there like a mention.
        var line = ChatLine(time: c.time, kind: .notice, sender: c.from, text: "\(c.from) invites you to \(room) — /join \(room)", isHighlight: true)
        line.msgid = c.msgid
        line.rings = true
        let place = [lookingAt, replyConversation].compactMap { $0 }.first { book[$0] != nil } ?? .server
        say(line, to: place)
    }

    // 341 <me> <nick> <room>: our invitation was sent.
    mutating func inviting(_ c: MessageContext) {
        guard c.p.count >= 3 else {
            numericOrUnknown(c)
            return
        }
        let roomID = id(for: c.p[2])
        let place = replyConversation.flatMap { book[$0] != nil ? $0 : nil } ?? (book[roomID] != nil ? roomID : .server)
        say(ChatLine(time: c.time, kind: .info, text: "invited \(c.p[1]) to \(c.p[2])"), to: place)
    }
}
