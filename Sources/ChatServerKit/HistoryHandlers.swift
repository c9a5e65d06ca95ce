import ChatStore
import IRCWire

/// Where history keeps one event: a folded room name, or a direct conversation
/// (`dm PARTY PARTY`, each party `a:ACCOUNT` or `n:nick`, sorted), with the parties that are
/// accounts and the name each sees the other under (for TARGETS).
public struct HistoryEntry: Sendable, Equatable {
    public let target: String
    public var parties: [Party] = []

    public struct Party: Sendable, Equatable {
        public let party: String
        public let peer: String
    }

    init(target: String, parties: [Party] = []) {
        self.target = target
        self.parties = parties
    }
}

extension ServerState {
    var historyEnabled: Bool { history != nil }

    /// The rows history keeps of a message (made once: the writer takes them), with the message
    /// serialised for them (its line with CRLF), which the delivery reuses for every recipient
    /// whose form adds nothing. Nothing is kept of them here but a room's tail
    /// (`roomTails`): a read waits for their commit (`OutputOrder.read`).
    mutating func historyRows(_ message: IRCMessage, stamp: Stamp, id: UInt64, entries: [HistoryEntry]) -> (rows: [HistoryRow], serialized: [UInt8]?) {
        // While nothing can be stored and rows pile up, a JOIN, PART or mode change still happens
        // but is not kept (messages are refused before they get here: `historyRefuses`).
        if let health = historyHealth, health.refusing(past: config.historyBacklog), !Self.isEchoed(message.command) {
            cache.eventsNotStored += entries.count
            return ([], nil)
        }
        let serialized = message.serialized()
        let line = String(decoding: serialized.dropLast(2), as: UTF8.self)
        return (historyRows(line: line, command: message.command, stamp: stamp, id: id, entries: entries), serialized)
    }

    /// The rows of a stored line made elsewhere (a multiline message's lines in one row).
    func historyRows(line: String, command: String, stamp: Stamp, id: UInt64, entries: [HistoryEntry]) -> [HistoryRow] {
        let time = Int64((stamp.time * 1000).rounded(.down))
        let isText = HistoryStore.Kinds.texts.includes(command)
        var rows: [HistoryRow] = []
        rows.reserveCapacity(entries.count)
        for entry in entries {
            let row = HistoryRow(msgid: Int64(bitPattern: id), timeMilliseconds: time, target: entry.target, command: command,
                                 line: line, parties: entry.parties.isEmpty ? [] : entry.parties.map { ($0.party, $0.peer) })
            rows.append(row)
            if isText { extendTail(row) }
        }
        return rows
    }

    /// A message whose rows would wait behind rows that cannot be stored is refused, in words,
    /// and not delivered to anyone: nobody sees what might be lost.
    /// `alone`: the command's only target, so the refusal may carry its label (one labelled answer per command).
    mutating func historyRefuses(_ session: Session, _ command: String, _ target: MessageTarget, alone: Bool = true) -> Bool {
        guard let health = historyHealth, health.refusing(past: config.historyBacklog) else { return false }
        let name: String
        switch target {
        case .room(_, let channel):
            name = channel.name
        case .person(let user, let nick):
            // A direct message history does not keep goes as always.
            guard directEntry(session.user, user) != nil else { return false }
            name = nick
        }
        if !cache.refusingLogged {
            cache.refusingLogged = true
            outbox.items.append(.log("history: messages refused while \(health.waiting.load(ordering: .relaxed)) rows wait to be stored"))
        }
        // Ahead of the echoes that wait for their commit, with the command's label if it has one.
        var refusal = IRCMessage(source: config.name, command: "FAIL", params: [command, "TEMPORARILY_UNAVAILABLE", name,
                                 "Not sent: the server cannot store messages right now (its disk is full); try again in a while"])
        var variant = session.variant
        if response?.session === session, let label = response?.label, response?.messages.isEmpty == true, response?.deferred == false,
           alone {
            refusal.tags.append(IRCTag("label", label))
            variant.insert(.label)
            response?.deferred = true
        }
        outbox.items.append(.sendAhead(session.connection, Rendering.render(refusal, nil, variant)))
        return true
    }

    /// From `tick`: once history stores again after refusing, the log says so (and what was not
    /// kept meanwhile); the split's merged msgids go once nothing waits for a commit.
    mutating func historyTick() {
        // Two ticks in a row with nothing waiting: a merge's rows are handed over at the end of
        // its turn, so one tick in the same turn could see nothing waiting before they were.
        if !cache.splitMerged.isEmpty {
            let idle = historyHealth.map { $0.waiting.load(ordering: .relaxed) == 0 } ?? true
            if idle && cache.splitMergedIdle { cache.splitMerged = [:] }
            cache.splitMergedIdle = idle && !cache.splitMerged.isEmpty
        }
        if let health = historyHealth, !health.refusing(past: config.historyBacklog), cache.refusingLogged || cache.eventsNotStored > 0 {
            outbox.items.append(.log("history: storing again" + (cache.eventsNotStored > 0 ? "; \(cache.eventsNotStored) joins, parts and mode changes were not kept meanwhile" : "")))
            cache.refusingLogged = false
            cache.eventsNotStored = 0
        }
    }

    /// The rooms a user is in, for a QUIT or NICK that history keeps in each.
    func roomEntries(of user: User) -> [HistoryEntry] {
        roomBook.membership.rooms(of: user.id).sorted().map { HistoryEntry(target: $0) }
    }

    static func party(_ user: User, casemapping: Casemapping) -> String {
        user.account.map { "a:" + AccountStore.key($0) } ?? "n:" + casemapping.fold(user.nick ?? "*")
    }

    /// A direct conversation's entry, or nil when neither side is logged in: what an
    /// unauthenticated user says in private is not kept for anyone to read later.
    func directEntry(_ sender: User, _ recipient: User) -> HistoryEntry? {
        guard sender.account != nil || recipient.account != nil else { return nil }
        let a = Self.party(sender, casemapping: casemapping), b = Self.party(recipient, casemapping: casemapping)
        var entry = HistoryEntry(target: "dm " + [a, b].sorted().joined(separator: " "))
        if sender.account != nil { entry.parties.append(.init(party: a, peer: recipient.nick ?? "*")) }
        if recipient.account != nil && b != a { entry.parties.append(.init(party: b, peer: sender.nick ?? "*")) }
        return entry
    }

    /// The oldest msgid a room's current members may read: all of it, unless the room ended
    /// while closed and was made again (then only from its new start).
    func historyFloor(_ target: String) -> Int64 {
        guard roomBook.closedRooms.contains(target), let channel = roomBook.channels[target] else { return 0 }
        return Int64((channel.createdAt * 1000).rounded(.down)) << 16
    }

    /// The stored conversation a client means by `name`, if it may read it: a room it is in,
    /// or a direct conversation of its account with that nickname or account.
    func readableTarget(_ name: String, for user: User) -> String? {
        if IRCNames.isChannel(name) {
            let key = casemapping.fold(name)
            return roomBook.membership.isMember(user.id, of: key) ? key : nil
        }
        guard let account = user.account else { return nil }
        let me = "a:" + AccountStore.key(account)
        let other: String
        if let online = self.user(named: name) {
            other = Self.party(online, casemapping: casemapping)
        } else if accountBook.directory?.lookup(AccountStore.key(name)) != nil {
            other = "a:" + AccountStore.key(name)
        } else {
            other = "n:" + casemapping.fold(name)
        }
        return "dm " + [me, other].sorted().joined(separator: " ")
    }

    // CHATHISTORY LATEST|BEFORE|AFTER|AROUND <target> <ref> <limit> | BETWEEN <target> <ref> <ref> <limit> | TARGETS <ts> <ts> <limit>
    mutating func handleChathistory(_ request: Request) {
        let session = request.session
        let p = request.params
        let subcommand = p[0].uppercased()
        func fail(_ code: String, _ context: [String], _ text: String) {
            standardReply(session, "FAIL", command: "CHATHISTORY", code: code, context: context, always: true, text)
        }
        guard history != nil else {
            fail("INVALID_PARAMS", [subcommand], "History is off on this server")
            return
        }
        let arity = ["LATEST": 4, "BEFORE": 4, "AFTER": 4, "AROUND": 4, "BETWEEN": 5, "TARGETS": 4]
        guard let needed = arity[subcommand] else {
            fail("INVALID_PARAMS", [p[0]], "Unknown CHATHISTORY subcommand")
            return
        }
        guard p.count >= needed else {
            fail("NEED_MORE_PARAMS", [subcommand], "Missing parameters")
            return
        }
        guard let asked = Int(p[needed - 1]), asked > 0 else {
            fail("INVALID_PARAMS", [subcommand, p[needed - 1]], "The limit must be a positive number")
            return
        }
        let limit = min(asked, config.chathistoryLimit)
        if subcommand == "TARGETS" {
            chathistoryTargets(session, p[1], p[2], limit: limit)
            return
        }
        let name = p[1]
        // A target that does not exist and one that may not be read get the same answer: it
        // tells an outsider nothing about a secret room.
        guard let target = readableTarget(name, for: session.user) else {
            fail("INVALID_TARGET", [subcommand, name], "Messages could not be retrieved")
            return
        }
        func point(_ reference: String) -> Int64? {
            if reference == "*" { return nil }
            if reference.hasPrefix("msgid="), let id = MessageIDs.value(String(reference.dropFirst(6))) { return Int64(bitPattern: id) }
            if reference.hasPrefix("timestamp="), let time = ServerTime.parse(String(reference.dropFirst(10))) {
                // A time stands for the first msgid this server mints in that millisecond
                // (msgids begin with the time, and end with our node byte).
                return Int64((time * 1000).rounded()) << 16 | Int64(messageIDs.node)
            }
            return -1
        }
        let kinds: HistoryStore.Kinds = session.caps.contains(.eventPlayback) ? .all : .messages
        func rows(_ direction: HistoryStore.Direction, _ bound: Int64, _ limit: Int) -> HistoryRead {
            .rows(target: target, direction: direction, bound: bound, limit: limit, kinds: kinds)
        }
        let reads: [HistoryRead]
        var above: Int64?, below: Int64?
        switch subcommand {
        case "LATEST":
            let bound = point(p[2])
            guard bound != -1 else { return fail("INVALID_PARAMS", [subcommand, p[2]], "Bad message reference") }
            // LATEST msgid=X: the newest after X, up to the limit (what a client that has X is missing).
            reads = [rows(.before, .max, limit)]
            above = bound
        case "BEFORE", "AFTER":
            guard let bound = point(p[2]), bound != -1 else { return fail("INVALID_PARAMS", [subcommand, p[2]], "Bad message reference") }
            reads = [rows(subcommand == "BEFORE" ? .before : .after, bound, limit)]
        case "AROUND":
            guard let bound = point(p[2]), bound != -1 else { return fail("INVALID_PARAMS", [subcommand, p[2]], "Bad message reference") }
            // Up to half before it; from it on, what the limit leaves (the answer is cut to the limit).
            reads = [rows(.before, bound, limit / 2), rows(.after, bound - 1, limit)]
        default: // BETWEEN
            guard let first = point(p[2]), let second = point(p[3]), first != -1, second != -1 else {
                return fail("INVALID_PARAMS", [subcommand, p[2]], "Bad message reference")
            }
            if first <= second {
                reads = [rows(.after, first, limit)]
                below = second
            } else {
                reads = [rows(.before, first, limit)]
                above = second
            }
        }
        requestHistory(session, reads, .chathistory(name: name, target: target, above: above, below: below))
    }

    /// A `chathistory` batch with the stored lines, their original msgid, time, source and tags.
    mutating func sendHistoryBatch(_ session: Session, _ name: String, _ rows: [HistoryRow]) {
        let reference = newBatchReference()
        send(session, IRCMessage(source: config.name, command: "BATCH", params: ["+" + reference, "chathistory", name]))
        let room = IRCNames.isChannel(name) ? roomBook.channels[casemapping.fold(name)]?.name : nil
        for row in rows { replay(row, to: session, batch: reference, room: room) }
        send(session, IRCMessage(source: config.name, command: "BATCH", params: ["-" + reference]))
    }

    /// One stored line in a client's own form (its tags, its time), in a batch if given.
    /// `room`: the room's name now, for lines said before it was renamed.
    mutating func replay(_ row: HistoryRow, to session: Session, batch: String?, room: String? = nil) {
        // A kept deletion only to those who understand REDACT.
        if row.command == "REDACT" && !session.caps.contains(.messageRedaction) { return }
        // Half a millisecond in: the time printed is the stored millisecond, whatever the rounding of a Double.
        let stamp = Stamp(time: (Double(row.timeMilliseconds) + 0.5) / 1000, msgid: UInt64(bitPattern: row.msgid))
        if let stored = Self.storedParts(row.line) {
            var parts = stored.parts
            let tags = stored.tags
            if let room { for index in parts.indices { Self.renameTarget(&parts[index], room) } }
            replayMultiline(parts, tags: tags, stamp: stamp, to: session, batch: batch)
            return
        }
        guard var message = try? IRCMessage(parsing: row.line) else { return }
        if let room { Self.renameTarget(&message, room) }
        if let batch { message.tags.insert(IRCTag("batch", batch), at: 0) }
        replayLine(message, stamp, to: session, batch: batch)
    }

    /// A stored room line under the room's name now (it may have been renamed since): only
    /// commands whose first parameter is the room (not a QUIT whose reason starts with `#`).
    static func renameTarget(_ message: inout IRCMessage, _ room: String) {
        guard ["PRIVMSG", "NOTICE", "TAGMSG", "JOIN", "PART", "KICK", "TOPIC", "MODE"].contains(message.command),
              let first = message.params.first, IRCNames.isChannel(first), first != room else { return }
        message.params[0] = room
    }

    mutating func replayLine(_ message: IRCMessage, _ stamp: Stamp, to session: Session, batch: String?) {
        if response?.session === session {
            response!.messages.append(.message(message, stamp))
        } else {
            var variant = session.variant
            if batch != nil { variant.insert(.batch) }
            outbox.items.append(.send(session.connection, Rendering.render(message, stamp, variant)))
        }
    }

    /// A stored multiline message: as its batch (inside the history batch) to a client with
    /// draft/multiline, else its non-blank lines, the first with the msgid.
    mutating func replayMultiline(_ parts: [IRCMessage], tags: [IRCTag], stamp: Stamp, to session: Session, batch: String?) {
        guard let first = parts.first, let source = first.source, let target = first.params.first else { return }
        let outer = batch.map { [IRCTag("batch", $0)] } ?? []
        let plain = Stamp(time: stamp.time, msgid: nil)
        if session.caps.contains(.multiline) {
            let reference = newBatchReference()
            replayLine(IRCMessage(tags: outer + tags, source: source, command: "BATCH", params: ["+" + reference, "draft/multiline", target]),
                       stamp, to: session, batch: reference)
            for part in parts {
                var line = part
                line.tags.insert(IRCTag("batch", reference), at: 0)
                replayLine(line, plain, to: session, batch: reference)
            }
            replayLine(IRCMessage(tags: outer, source: source, command: "BATCH", params: ["-" + reference]), plain, to: session, batch: reference)
            return
        }
        var lineStamp = stamp
        for part in parts where !(part.params.last ?? "").isEmpty {
            var line = part
            line.tags = outer + tags
            replayLine(line, lineStamp, to: session, batch: batch)
            lineStamp = plain
        }
    }

    /// TARGETS: the rooms one is in and one's direct conversations with messages between two times.
    mutating func chathistoryTargets(_ session: Session, _ from: String, _ to: String, limit: Int) {
        guard from.hasPrefix("timestamp="), to.hasPrefix("timestamp="),
              let start = ServerTime.parse(String(from.dropFirst(10))), let end = ServerTime.parse(String(to.dropFirst(10))) else {
            standardReply(session, "FAIL", command: "CHATHISTORY", code: "INVALID_PARAMS", context: ["TARGETS", from], always: true,
                          "TARGETS takes two timestamp= references")
            return
        }
        let low = Int64((min(start, end) * 1000).rounded()) << 16, high = (Int64((max(start, end) * 1000).rounded()) + 1) << 16
        let rooms = roomBook.membership.rooms(of: session.user.id).sorted().compactMap { key in roomBook.channels[key].map { (key: key, name: $0.name) } }
        var reads = rooms.map { HistoryRead.latest(target: $0.key) }
        if let account = session.user.account {
            reads.append(.conversations(party: "a:" + AccountStore.key(account), from: low, to: high, limit: limit))
        }
        requestHistory(session, reads, .targets(rooms: rooms, low: low, high: high, limit: limit))
    }

    /// The `draft/chathistory-targets` batch: the targets with their newest message, oldest first.
    mutating func sendTargetsBatch(_ session: Session, _ found: [(name: String, last: Int64)], limit: Int) {
        let reference = newBatchReference()
        send(session, IRCMessage(source: config.name, command: "BATCH", params: ["+" + reference, "draft/chathistory-targets"]))
        for (name, last) in found.sorted(by: { $0.last < $1.last }).prefix(limit) {
            let time = ServerTime.format(Double(last >> 16) / 1000)
            send(session, IRCMessage(tags: [IRCTag("batch", reference)], source: config.name, command: "CHATHISTORY",
                                     params: ["TARGETS", name, time]))
        }
        send(session, IRCMessage(source: config.name, command: "BATCH", params: ["-" + reference]))
    }

    /// A client that does not ask for history itself gets a room's last lines when it joins,
    /// with their times (server-time) where it reads them, so it too has context.
    /// The room's last lines are kept in memory (`roomTails`) once read, so a crowd joining and
    /// leaving costs no database read per JOIN; the first joiner after a start reads them off the loop.
    mutating func replayOnJoin(_ session: Session, key: String, name: String) {
        guard history != nil, config.replayOnJoin > 0, !session.caps.contains(.chathistory) else { return }
        if let tail = tail(of: key) {
            replay(tail, to: session, key: key, name: name)
        } else {
            // The lines said from now on gather in the tail, to be merged with what the read finds.
            if cache.roomTails[key] == nil, roomBook.channels[key] != nil { cache.roomTails[key] = RoomTail() }
            requestHistory(session, [.rows(target: key, direction: .before, bound: .max, limit: config.replayOnJoin, kinds: .texts)],
                           .replay(name: name, key: key, upTo: Int64(bitPattern: messageIDs.latest)))
        }
    }

    /// The replay itself: in a batch where the client reads batches, the lines alone otherwise.
    mutating func replay(_ tail: [HistoryRow], to session: Session, key: String, name: String) {
        let floor = historyFloor(key)
        let rows = floor > 0 ? tail.filter { $0.msgid >= floor } : tail
        guard !rows.isEmpty else { return }
        if session.caps.contains(.batch) {
            sendHistoryBatch(session, name, rows)
        } else {
            for row in rows { replay(row, to: session, batch: nil, room: name) }
        }
    }

    /// On joining, a client that reads markers is told where it (its account, or this
    /// connection without one) had read to: after the JOIN, before the names end (the spec's order).
    mutating func markerOnJoin(_ session: Session, key: String, name: String) {
        guard session.caps.contains(.readMarker) else { return }
        send(session, IRCMessage(source: config.name, command: "MARKREAD", params: [name, Self.markerText(readMarker(session, target: key))]))
    }

    /// Per-connection markers a client without an account may keep (one per conversation).
    static let connectionMarkerLimit = 1000

    static func markerText(_ marker: Int64?) -> String {
        marker.map { "timestamp=" + ServerTime.format(Double($0) / 1000) } ?? "*"
    }

    /// Where a read marker lives: the account's (in memory, kept in the history database);
    /// otherwise this connection's, for as long as it lives.
    func markerAccount(_ session: Session) -> String? {
        guard history != nil, let account = session.user.account else { return nil }
        return AccountStore.key(account)
    }

    func readMarker(_ session: Session, target: String) -> Int64? {
        if let account = markerAccount(session) { return cache.accountMarkers[account]?[target] }
        return session.readMarkers[target]
    }

    // MARKREAD <target> [timestamp=…]
    mutating func handleMarkread(_ request: Request) {
        let session = request.session
        guard let name = request.params.first, !name.isEmpty else {
            standardReply(session, "FAIL", command: "MARKREAD", code: "NEED_MORE_PARAMS", context: [], always: true, "Missing parameters")
            return
        }
        var time: Int64?
        if request.params.count > 1 {
            let value = request.params[1]
            guard value.hasPrefix("timestamp="), let parsed = ServerTime.parse(String(value.dropFirst(10))) else {
                standardReply(session, "FAIL", command: "MARKREAD", code: "INVALID_PARAMS", context: [name, value], always: true,
                              "The marker is a timestamp= reference")
                return
            }
            time = Int64((parsed * 1000).rounded())
        }
        let target = IRCNames.isChannel(name) ? casemapping.fold(name) : "dm-read " + casemapping.fold(name)
        guard let account = markerAccount(session) else {
            // No account (or no history): this connection's own marker.
            if let time {
                guard session.readMarkers[target] != nil || session.readMarkers.count < Self.connectionMarkerLimit else {
                    standardReply(session, "FAIL", command: "MARKREAD", code: "INTERNAL_ERROR", context: [name], always: true,
                                  "Read markers are kept for at most \(Self.connectionMarkerLimit) conversations per connection")
                    return
                }
                session.readMarkers[target] = max(session.readMarkers[target] ?? time, time)
            }
            send(session, IRCMessage(source: config.name, command: "MARKREAD", params: [name, Self.markerText(session.readMarkers[target])]))
            return
        }
        guard !cache.markersUnavailable else {
            standardReply(session, "FAIL", command: "MARKREAD", code: "TEMPORARILY_UNAVAILABLE", context: [name], always: true,
                          "Read markers could not be read at the server's start; they are unavailable until it restarts")
            return
        }
        let before = cache.accountMarkers[account]?[target]
        guard let time else {
            send(session, IRCMessage(source: config.name, command: "MARKREAD", params: [name, Self.markerText(before)]))
            return
        }
        // As many conversations per account as per connection: an account cannot grow the server's memory without end.
        guard before != nil || (cache.accountMarkers[account]?.count ?? 0) < Self.connectionMarkerLimit else {
            standardReply(session, "FAIL", command: "MARKREAD", code: "INTERNAL_ERROR", context: [name], always: true,
                          "Read markers are kept for at most \(Self.connectionMarkerLimit) conversations per account")
            return
        }
        let now = max(before ?? time, time)
        let line = IRCMessage(source: config.name, command: "MARKREAD", params: [name, Self.markerText(now)])
        // Every connection of the account hears of a change; the asker always gets the answer.
        if before != now {
            cache.accountMarkers[account, default: [:]][target] = now
            outbox.items.append(.setMarker(account: account, target: target, time: now))
            // Read on one device: its notifications elsewhere can go.
            pushDismissal(account: account, target: name, marker: Self.markerText(now), now: request.now)
            // (One user per account with multiclient; without, any number of them.)
            let holders = config.multiclient ? people.byAccount[account].map { [$0] } ?? []
                : people.users.values.filter { $0.account.map(AccountStore.key) == account }
            for other in holders {
                for connection in other.sessions where connection.caps.contains(.readMarker) && connection !== session {
                    sendNow(connection, line)
                }
            }
        }
        send(session, line)
    }
}
