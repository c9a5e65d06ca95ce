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
            recipients = (roomBook.membership.members[key] ?? [:]).values.map(\.user).filter { $0 !== sender }
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
        // One message, one msgid: on the batch's opening line, and on the first line of those
        // who get it as lines.
        let stamp = self.stamp(command, now: now)
        let everyone = echo && !recipients.contains(where: { $0 === sender }) ? recipients + [sender] : recipients
        let parts = batch.lines.map { line in
            IRCMessage(tags: line.concat ? [IRCTag("draft/multiline-concat")] : [], source: sender.prefix, command: command,
                       params: [targetName, line.text])
        }
        deliverMultiline(parts, tags: tags, batchTo: everyone, linesTo: recipients, stamp: stamp, now: now)
        // History keeps it as one row under that msgid, blank lines and all.
        let entries = roomKey.map { [HistoryEntry(target: $0)] } ?? recipients.first.flatMap { directEntry(sender, $0) }.map { [$0] } ?? []
        if historyEnabled, let id = stamp.msgid, !entries.isEmpty {
            let rows = historyRows(line: Self.storedMultiline(parts, tags: tags), command: command, stamp: stamp, id: id, entries: entries)
            if !rows.isEmpty { outbox.items.append(.storeRows(rows)) }
            // The sender's echo of the batch waits until it is committed.
            if echo, response?.session === session { response?.awaitsCommit = id }
        }
        // Linked servers get the lines as lines, the first under the message's msgid.
        var lineStamp = stamp
        for part in parts where !(part.params.last ?? "").isEmpty {
            var message = part
            message.tags = tags
            if let roomKey {
                linkRoomMessage(message, from: sender, room: roomKey, stamp: lineStamp)
            } else if let target = recipients.first, target.remote != nil {
                linkDirectMessage(message, from: sender, to: target, stamp: lineStamp)
            }
            lineStamp = self.stamp(command, now: now)
        }
        if command == "PRIVMSG", !IRCNames.isChannel(batch.target), let target = recipients.first, let away = target.away {
            reply(session, .away, targetName, away)
        }
    }

    /// A multiline message to users: the batch to those with the capability, the non-blank
    /// lines as messages of their own to the others (the first with the message's msgid).
    /// `parts` carry only their `draft/multiline-concat` tag; `tags` are the message's.
    mutating func deliverMultiline(_ parts: [IRCMessage], tags: [IRCTag], batchTo: [User], linesTo: [User], stamp: Stamp, now: Double,
                                   outerBatch: String? = nil) {
        guard let first = parts.first, let source = first.source, let target = first.params.first else { return }
        let reference = newBatchReference()
        let plain = Stamp(time: stamp.time, msgid: nil)
        deliver(IRCMessage(tags: tags, source: source, command: "BATCH", params: ["+" + reference, "draft/multiline", target]),
                toUsers: batchTo, now: now, onlyWith: .multiline, storable: false, stamp: stamp)
        for part in parts {
            var line = part
            line.tags.insert(IRCTag("batch", reference), at: 0)
            deliver(line, toUsers: batchTo, now: now, onlyWith: .multiline, storable: false, stamp: plain)
        }
        deliver(IRCMessage(source: source, command: "BATCH", params: ["-" + reference]),
                toUsers: batchTo, now: now, onlyWith: .multiline, storable: false, stamp: plain)
        var lineStamp = stamp
        for part in parts where !(part.params.last ?? "").isEmpty {
            var line = part
            line.tags = tags
            deliver(line, toUsers: linesTo, now: now, excluding: .multiline, storable: false, stamp: lineStamp)
            lineStamp = plain
        }
    }

    /// How history keeps a multiline message in one row: its lines, one IRC line each, joined
    /// by newlines (which no IRC line contains); the first carries the message's tags.
    static func storedMultiline(_ parts: [IRCMessage], tags: [IRCTag]) -> String {
        parts.enumerated().map { index, part in
            var line = part
            if index == 0 { line.tags = tags + part.tags }
            return String(decoding: line.serialized().dropLast(2), as: UTF8.self)
        }.joined(separator: "\n")
    }

    /// A stored multiline row as the lines it was made of, and the message's tags (those of the
    /// first line but its concat tag); nil for a row of one line.
    static func storedParts(_ line: String) -> (parts: [IRCMessage], tags: [IRCTag])? {
        guard line.utf8.contains(10) else { return nil }
        var parts: [IRCMessage] = []
        for text in line.split(separator: "\n", omittingEmptySubsequences: false) {
            guard let message = try? IRCMessage(parsing: String(text)) else { return nil }
            parts.append(message)
        }
        guard !parts.isEmpty else { return nil }
        let tags = parts[0].tags.filter { $0.key != "draft/multiline-concat" }
        parts[0].tags = parts[0].tags.filter { $0.key == "draft/multiline-concat" }
        return (parts, tags)
    }
}
