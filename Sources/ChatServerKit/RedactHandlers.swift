import ChatStore
import IRCWire

/// draft/message-redaction: `REDACT <target> <msgid> [:reason]` deletes a message. Its sender
/// may delete it (the same account, or the same nick!user@host when neither has one), a room's
/// operators anything said in their room, IRC operators anything. History forgets the row, so
/// it is never served again; members with the capability are told.
struct RedactRequest: Sendable {
    /// As the client wrote it, and as history keys it (a folded room, or `dm …`).
    let name: String
    let target: String
    let msgid: UInt64
    let reason: String?
    /// The room's folded key, or the other person of a direct conversation.
    let room: String?
    let peer: UserID?
    /// Allowed whatever the message is (a room operator, an IRC operator).
    let moderator: Bool
}

extension ServerState {
    // REDACT <target> <msgid> [:<reason>]
    mutating func handleRedact(_ request: Request) {
        let session = request.session, user = request.user
        let name = request.params[0], id = request.params[1]
        let reason = request.params.count > 2 && !request.params[2].isEmpty
            ? UTF8Boundary.prefix(PlainText.cleanFreeText(request.params[2]), maxBytes: config.kickLength) : nil
        func fail(_ code: String, _ text: String) {
            standardReply(session, "FAIL", command: "REDACT", code: code, context: [name, id], always: true, text)
        }
        // A deletion does not cross links (the linked network has no REDACT): refused rather than
        // deleted here and kept there. Also while no link is up on a server set to link: a split
        // (or a restart, which forgets one) would serve it from the other side and the heal
        // would merge it back (issue 43, item 4). As RENAME.
        if !net.links.isEmpty || !net.splitSince.isEmpty || !config.links.blocks.isEmpty {
            return fail("REDACT_FORBIDDEN", "Messages cannot be deleted on a linked server (the linked network has no REDACT)")
        }
        var redact: RedactRequest
        if IRCNames.isChannel(name) {
            guard let (key, _) = channel(named: name), let status = roomBook.membership.status(of: user.id, in: key) else {
                standardReply(session, "FAIL", command: "REDACT", code: "INVALID_TARGET", context: [name], always: true,
                              "You are not in that room")
                return
            }
            guard let msgid = MessageIDs.value(id) else { return fail("UNKNOWN_MSGID", "This message does not exist or is too old") }
            redact = RedactRequest(name: roomBook.channels[key]!.name, target: key, msgid: msgid, reason: reason, room: key, peer: nil,
                                   moderator: status.op || user.isOperator)
        } else {
            guard let other = self.user(named: name), let nick = other.nick else {
                standardReply(session, "FAIL", command: "REDACT", code: "INVALID_TARGET", context: [name], always: true, "No such nick")
                return
            }
            guard let msgid = MessageIDs.value(id) else { return fail("UNKNOWN_MSGID", "This message does not exist or is too old") }
            // Without an account on either side a direct conversation is not kept: nothing to check the sender against.
            guard let entry = directEntry(user, other) else {
                return fail("REDACT_FORBIDDEN", "This server keeps no record of that conversation, so it cannot tell who sent the message")
            }
            redact = RedactRequest(name: nick, target: entry.target, msgid: msgid, reason: reason, room: nil, peer: other.id,
                                   moderator: user.isOperator)
        }
        guard historyEnabled else {
            // Without history nothing says who sent what: only moderators may, and only say so.
            guard redact.moderator, redact.room != nil else {
                return fail("REDACT_FORBIDDEN", "Without history this server cannot tell whose message this is; a room operator can delete it")
            }
            finishRedact(session, redact, row: nil, now: request.now)
            return
        }
        let signed = Int64(bitPattern: redact.msgid)
        requestHistory(session, [.rows(target: redact.target, direction: .after, bound: signed - 1, limit: 1, kinds: .messages)],
                       .redact(redact))
    }

    /// The message found (or not): allowed or refused, relayed, forgotten by history.
    mutating func finishRedact(_ session: Session, _ redact: RedactRequest, row: HistoryRow?, now: Double) {
        let user = session.user
        let id = MessageIDs.text(redact.msgid)
        func fail(_ code: String, _ text: String) {
            standardReply(session, "FAIL", command: "REDACT", code: code, context: [redact.name, id], always: true, text)
        }
        if historyEnabled {
            // A message of this room (not of an earlier room of the same name), and a message, not an event.
            guard let row, row.msgid == Int64(bitPattern: redact.msgid), HistoryStore.Kinds.isMessage(row.command),
                  row.msgid >= historyFloor(redact.target) else {
                return fail("UNKNOWN_MSGID", "This message does not exist or is too old")
            }
            guard mayModerate(redact, row: row, user) || isOwnRow(row, user) else {
                return fail("REDACT_FORBIDDEN", "You may delete only your own messages (room operators may delete any said in the room they run)")
            }
        }
        let message = IRCMessage(tags: accountTags(user), source: user.prefix, command: "REDACT",
                                 params: [redact.name, id] + (redact.reason.map { [$0] } ?? []))
        let stamp = Stamp(time: now, msgid: messageIDs.next(now: now))
        if let room = redact.room {
            // Kept in the room's history (with history on): a member who was away learns of the
            // deletion when it reads what it missed, and its client forgets the line (issue 43, item 10).
            let members = (roomBook.membership.members[room] ?? [:]).values.map(\.user)
            deliver(message, toUsers: members, now: now, onlyWith: .messageRedaction, storable: historyEnabled, stamp: stamp,
                    history: historyEnabled ? [HistoryEntry(target: room)] : [])
        } else {
            let recipients = [redact.peer.flatMap { people.users[$0] }, user].compactMap { $0 }
            deliver(message, toUsers: recipients, now: now, onlyWith: .messageRedaction, storable: false, stamp: stamp)
        }
        // Without the capability the requester gets at least its labelled ACK (the response is empty).
        if historyEnabled {
            let signed = Int64(bitPattern: redact.msgid)
            cache.roomTails[redact.target]?.rows.removeAll { $0.msgid == signed }
            outbox.items.append(.forgetRow(target: redact.target, msgid: signed))
        }
        log(session, "\(user.replyName) deleted \(id) in \(redact.name)" + (redact.reason.map { ": \($0)" } ?? ""))
    }

    /// Whether `user` may delete someone else's message as a moderator: an IRC operator; a room
    /// operator only for lines said in the room as it is now (not in an earlier room of that
    /// name, which whoever re-made it does not run), or anything in a registered room whose
    /// founder or access account it is.
    func mayModerate(_ redact: RedactRequest, row: HistoryRow, _ user: User) -> Bool {
        if user.isOperator { return true }
        guard redact.moderator, let room = redact.room else { return false }
        if isSavedOperator(user, key: room) { return true }
        guard let created = roomBook.channels[room]?.createdAt else { return false }
        return row.msgid >= Int64((created * 1000).rounded(.down)) << 16
    }

    /// Whether `user` sent the stored message: the same account; or, when neither has one, the
    /// same nick!user@host.
    func isOwnRow(_ row: HistoryRow, _ user: User) -> Bool {
        guard let first = row.line.split(separator: "\n", maxSplits: 1).first, let message = try? IRCMessage(parsing: String(first)) else {
            return false
        }
        let account = message.tag("account")
        if let mine = user.account { return account.map { AccountStore.key($0) == AccountStore.key(mine) } ?? false }
        return account == nil && message.source.map { casemapping.fold($0) == casemapping.fold(user.prefix) } == true
    }
}
