import ChatStore
import IRCWire

/// draft/channel-rename: `RENAME <old> <new> [:reason]` by a room's operator. The room keeps its
/// members, modes, lists, topic, history and saved record under the new name; members with the
/// capability see `RENAME`, the others a PART of the old name and a JOIN of the new. A JOIN of
/// the old name while the renamed room lives is pointed at the new one.
extension ServerState {
    // RENAME <old> <new> [:<reason>]
    mutating func handleRename(_ request: Request) {
        let session = request.session, user = request.user
        let oldName = request.params[0], newName = request.params[1]
        let reason = request.params.count > 2 ? UTF8Boundary.prefix(PlainText.cleanFreeText(request.params[2]), maxBytes: config.kickLength) : ""
        func fail(_ code: String, _ text: String) {
            standardReply(session, "FAIL", command: "RENAME", code: code, context: [oldName, newName], always: true, text)
        }
        guard let (old, channel) = channel(named: oldName), canSee(user, key: old) || roomBook.membership.isMember(user.id, of: old) else {
            reply(session, .noSuchChannel, oldName, "No such channel")
            return
        }
        guard let status = roomBook.membership.status(of: user.id, in: old) else {
            reply(session, .notOnChannel, channel.name, "You're not on that channel")
            return
        }
        guard status.op else {
            reply(session, .chanOPrivsNeeded, channel.name, "You're not channel operator")
            return
        }
        if let problem = IRCNames.channelProblem(newName, maxBytes: config.channelLength) ?? NameSafety.channelProblem(newName) {
            return fail("CANNOT_RENAME", problem)
        }
        let new = casemapping.fold(newName)
        if new != old {
            if roomBook.channels[new] != nil { return fail("CHANNEL_NAME_IN_USE", "The room name is already taken") }
            for skeleton in NameKeys.of(newName, casemapping) {
                if let existing = roomBook.channelSkeletons[skeleton], existing != old, let other = roomBook.channels[existing] {
                    return fail("CHANNEL_NAME_IN_USE", "The name looks too much like \(other.name)")
                }
            }
            if roomBook.roomRecords.saved[new] != nil { return fail("CHANNEL_NAME_IN_USE", "A registered room has that name") }
            // A closed room that ended keeps its history from whoever takes its name next.
            if roomBook.closedRooms.contains(new) { return fail("CHANNEL_NAME_IN_USE", "A closed room of that name kept its history") }
        }
        if config.room.map({ casemapping.fold($0) }) == old { return fail("CANNOT_RENAME", "This is the room everyone joins; it keeps its name") }
        // Linked, split from a server that will come back, or set to link: the other side would
        // keep the old name and one room would become two.
        if !net.links.isEmpty || !net.splitSince.isEmpty || !config.links.blocks.isEmpty {
            return fail("CANNOT_RENAME", "Rooms cannot be renamed on a linked server (the linked network has no RENAME)")
        }
        if channel.name == newName { return }
        rename(old, to: new, name: newName, now: request.now)
        // Members with the capability: RENAME. The others: the old room left and the new joined,
        // unless only the case changed (then nothing they would notice).
        let renamed = IRCMessage(tags: accountTags(user), source: user.prefix, command: "RENAME", params: [channel.name, newName, reason])
        deliver(renamed, toRoom: new, now: request.now, onlyWith: .channelRename, stamp: Stamp(time: request.now, msgid: nil), history: [])
        if new != old {
            for member in (roomBook.membership.members[new] ?? [:]).values.map(\.user) {
                for memberSession in member.sessions where memberSession.registered && !memberSession.caps.contains(.channelRename) {
                    send(memberSession, IRCMessage(source: member.prefix, command: "PART", params: [channel.name] + (reason.isEmpty ? [] : [reason])))
                    send(memberSession, IRCMessage(tags: accountTags(member), source: member.prefix, command: "JOIN",
                                                      params: memberSession.caps.contains(.extendedJoin) ? [newName, member.account ?? "*", member.realname] : [newName]))
                    if let renamedChannel = roomBook.channels[new] {
                        if !renamedChannel.topic.isEmpty { sendTopic(memberSession, renamedChannel) }
                        sendNames(memberSession, key: new, renamedChannel)
                    }
                }
            }
        }
        log(session, "room \(channel.name) renamed to \(newName) by \(user.replyName)" + (reason.isEmpty ? "" : ": \(reason)"))
    }

    /// Moves every fact kept under the room's old key to the new one.
    mutating func rename(_ old: String, to new: String, name: String, now: Double) {
        guard var channel = roomBook.channels.removeValue(forKey: old) else { return }
        let oldName = channel.name
        channel.name = name
        roomBook.channels[new] = channel
        if new != old {
            roomBook.sortedChannelKeys.remove(old)
            roomBook.sortedChannelKeys.insert(new)
            for skeleton in NameKeys.of(oldName, casemapping) where roomBook.channelSkeletons[skeleton] == old { roomBook.channelSkeletons[skeleton] = nil }
            roomBook.membership.rename(old, to: new)
            for member in (roomBook.membership.members[new] ?? [:]).values { presenceMayChange(member.user) }
            for (user, rooms) in roomBook.invitations where rooms.contains(old) {
                roomBook.invitations[user]?.remove(old)
                roomBook.invitations[user]?.insert(new)
            }
            if roomBook.closedRooms.remove(old) != nil { roomBook.closedRooms.insert(new) }
            if roomBook.roomRecords.markedClosed.remove(old) != nil { roomBook.roomRecords.markedClosed.insert(new) }
            if let tail = cache.roomTails.removeValue(forKey: old) {
                tail.rows = tail.rows.map { HistoryRow(msgid: $0.msgid, timeMilliseconds: $0.timeMilliseconds, target: new, command: $0.command, line: $0.line) }
                cache.roomTails[new] = tail
            }
            if historyEnabled {
                outbox.items.append(.renameHistory(from: old, to: new))
                // The markers held in memory move as the writer moves the stored ones (the later time kept).
                for account in cache.accountMarkers.keys {
                    guard let time = cache.accountMarkers[account]![old] else { continue }
                    cache.accountMarkers[account]![old] = nil
                    cache.accountMarkers[account]![new] = max(cache.accountMarkers[account]![new] ?? time, time)
                }
            }
            if let saved = roomBook.roomRecords.saved.removeValue(forKey: old) {
                roomBook.roomRecords.saved[new] = saved
                roomBook.roomRecords.pending[old] = .remove
            }
            // Bounded: past a thousand, the oldest pointers go (any will do: each is a courtesy).
            if roomBook.renamedRooms.count >= 1000, let any = roomBook.renamedRooms.keys.first { roomBook.renamedRooms[any] = nil }
            roomBook.renamedRooms[old] = new
            // Markers of connections without an account follow the room too.
            for session in people.sessions.values {
                if let marker = session.readMarkers.removeValue(forKey: old) { session.readMarkers[new] = marker }
            }
        }
        for skeleton in NameKeys.of(name, casemapping) { roomBook.channelSkeletons[skeleton] = new }
        roomChanged(new, now: now)
    }

    /// A JOIN of a name a live room was renamed from: where it went, if it still lives.
    mutating func renamedTo(_ key: String) -> String? {
        guard let new = roomBook.renamedRooms[key] else { return nil }
        guard let channel = roomBook.channels[new] else {
            roomBook.renamedRooms[key] = nil
            return nil
        }
        return channel.name
    }
}
