import IRCWire

/// draft/multiline: a paste sent as one message. The client opens a batch, sends its lines as
/// PRIVMSG or NOTICE tagged with the batch, and closes it; recipients with the capability get
/// the batch, the others each line as a message of its own.
extension ServerState {
    // BATCH +<ref> draft/multiline <target> | BATCH -<ref>
    mutating func handleBatch(_ request: Request) {
        let session = request.session
        let raw = request.params[0]
        guard session.caps.contains(.multiline), let sign = raw.first, sign == "+" || sign == "-", raw.count > 1 else {
            standardReply(session, "FAIL", command: "BATCH", code: "MULTILINE_INVALID", always: session.caps.contains(.multiline),
                          "Only draft/multiline batches are accepted, after CAP REQ draft/multiline")
            return
        }
        let reference = String(raw.dropFirst())
        if sign == "+" {
            guard request.params.count >= 3, request.params[1] == "draft/multiline" else {
                standardReply(session, "FAIL", command: "BATCH", code: "MULTILINE_INVALID", always: session.caps.contains(.multiline), "Expected BATCH +ref draft/multiline target")
                return
            }
            guard session.openBatch == nil else {
                standardReply(session, "FAIL", command: "BATCH", code: "MULTILINE_INVALID", always: session.caps.contains(.multiline), "A multiline batch is already open")
                return
            }
            session.openBatch = MultilineBatch(reference: reference, target: request.params[2], label: response?.label,
                                               clientTags: request.message.tags.filter(\.isClientOnly))
            // The reply (the echo) comes when the batch closes; nothing now, not even an ACK.
            response = nil
            return
        }
        guard let batch = session.openBatch, batch.reference == reference else {
            standardReply(session, "FAIL", command: "BATCH", code: "MULTILINE_INVALID", always: session.caps.contains(.multiline), "No open batch \(reference)")
            return
        }
        session.openBatch = nil
        guard !batch.failed else { return }
        guard let command = batch.command, !batch.lines.isEmpty else {
            standardReply(session, "FAIL", command: "BATCH", code: "MULTILINE_INVALID", always: session.caps.contains(.multiline), "The batch has no lines")
            return
        }
        // The echo belongs to the labelled opening command.
        response = ResponseBuffer(session: session, label: batch.label)
        relayMultiline(request, batch, command: command)
    }

    /// A line that carries the tag of the client's open batch: collected, not relayed.
    /// Returns false when the line is not part of a batch.
    mutating func collectBatched(_ message: IRCMessage, from session: Session) -> Bool {
        guard let reference = message.tag("batch") else { return false }
        guard var batch = session.openBatch, batch.reference == reference else {
            standardReply(session, "FAIL", command: "BATCH", code: "MULTILINE_INVALID", always: session.caps.contains(.multiline), "No open batch \(reference)")
            return true
        }
        defer { session.openBatch = batch }
        guard !batch.failed else { return true }
        func fail(_ code: String, _ context: [String], _ text: String) {
            standardReply(session, "FAIL", command: "BATCH", code: code, context: context, always: session.caps.contains(.multiline), text)
            batch.failed = true
        }
        guard message.command == "PRIVMSG" || message.command == "NOTICE", message.params.count >= 2,
              batch.command == nil || batch.command == message.command else {
            fail("MULTILINE_INVALID", [], "A multiline batch holds PRIVMSG or NOTICE lines, all of one kind")
            return true
        }
        guard casemapping.equal(message.params[0], batch.target) else {
            fail("MULTILINE_INVALID_TARGET", [batch.target, message.params[0]], "Every line must go to the batch's target")
            return true
        }
        let text = message.params[1]
        let concat = message.tag("draft/multiline-concat") != nil
        if concat && text.isEmpty {
            fail("MULTILINE_INVALID", [], "A concatenated line may not be empty")
            return true
        }
        batch.command = message.command
        batch.bytes += text.utf8.count
        batch.lines.append((text, concat))
        if batch.bytes > config.multilineMaxBytes {
            fail("MULTILINE_MAX_BYTES", [String(config.multilineMaxBytes)], "The message is longer than \(config.multilineMaxBytes) bytes")
        } else if batch.lines.count > config.multilineMaxLines {
            fail("MULTILINE_MAX_LINES", [String(config.multilineMaxLines)], "The message has more than \(config.multilineMaxLines) lines")
        }
        return true
    }

    /// Delivers a closed batch with the checks of an ordinary message.
    mutating func relayMultiline(_ request: Request, _ batch: MultilineBatch, command: String) {
        let session = request.session, sender = request.user, now = request.now
        let quiet = command == "NOTICE"
        var recipients: [User] = []
        let targetName: String
        var roomKey: String?
        switch messageTarget(batch.target, from: session, quiet: quiet) {
        case nil:
            return
        case .room(let key, let channel)?:
            targetName = channel.name
            roomKey = key
            recipients = (membership.members[key] ?? [:]).values.map(\.user).filter { $0 !== sender }
        case .person(let target, let nick)?:
            targetName = nick
            // To oneself: delivered like a plain message to oneself, echo-message or not.
            recipients = [target]
        }
        if let resolved = messageTarget(batch.target, from: session, quiet: true), historyRefuses(session, command, resolved) { return }
        sender.lastSpoke = now
        // The sender with echo-message gets the batch back as its reply; without, nothing.
        let echo = session.caps.contains(.echoMessage)
        let tags = accountTags(sender) + batch.clientTags
        let stamp = self.stamp(command, now: now)
        let reference = newBatchReference()
        let everyone = echo && !recipients.contains(where: { $0 === sender }) ? recipients + [sender] : recipients
        // With the capability: the batch, its msgid on the opening line.
        deliver(IRCMessage(tags: tags, source: sender.prefix, command: "BATCH", params: ["+" + reference, "draft/multiline", targetName]),
                toUsers: everyone, now: now, onlyWith: .multiline, storable: false, stamp: stamp)
        for line in batch.lines {
            var lineTags = [IRCTag("batch", reference)]
            if line.concat { lineTags.append(IRCTag("draft/multiline-concat")) }
            deliver(IRCMessage(tags: lineTags, source: sender.prefix, command: command, params: [targetName, line.text]),
                    toUsers: everyone, now: now, onlyWith: .multiline, storable: false, stamp: Stamp(time: now, msgid: nil))
        }
        deliver(IRCMessage(source: sender.prefix, command: "BATCH", params: ["-" + reference]),
                toUsers: everyone, now: now, onlyWith: .multiline, storable: false, stamp: Stamp(time: now, msgid: nil))
        // Without it: each line as its own message (what history keeps), the first with the batch's msgid.
        var lastStamp = stamp
        for (index, line) in batch.lines.enumerated() where !line.text.isEmpty {
            let lineStamp = index == 0 ? stamp : self.stamp(command, now: now)
            lastStamp = lineStamp
            let message = IRCMessage(tags: tags, source: sender.prefix, command: command, params: [targetName, line.text])
            deliver(message, toUsers: recipients, now: now, excluding: .multiline,
                    stamp: lineStamp,
                    history: IRCNames.isChannel(batch.target) ? nil : recipients.first.flatMap { directEntry(sender, $0) }.map { [$0] } ?? [])
            // Linked servers get the lines as lines, each under the msgid stored here.
            if let roomKey {
                linkRoomMessage(message, from: sender, room: roomKey, stamp: lineStamp)
            } else if let target = recipients.first, target.remote != nil {
                linkDirectMessage(message, from: sender, to: target, stamp: lineStamp)
            }
        }
        // The sender's echo of the batch waits until its last stored line is committed.
        if echo, historyEnabled, let id = lastStamp.msgid, response?.session === session,
           IRCNames.isChannel(batch.target) || recipients.first.flatMap({ directEntry(sender, $0) }) != nil {
            response?.awaitsCommit = id
        }
        if command == "PRIVMSG", !IRCNames.isChannel(batch.target), let target = recipients.first, let away = target.away {
            reply(session, .away, targetName, away)
        }
    }
}
