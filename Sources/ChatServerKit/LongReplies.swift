import IRCWire

/// A reply too long to make in one go (LIST of a server with 50,000 rooms, WHO of a room of
/// 10,000): made a step at a time, each step when the client has taken most of the last
/// (`Outbox.Item.continueReply`), so one command never holds the loop or the memory for long.
/// Meanwhile the client's next commands wait (`Session.busy`), and its replies keep their order.
enum LongReply {
    /// LIST: rooms after `after` in key order, filtered by the query.
    case list(ListQuery, after: String?)
    /// WHO #room: these members (a snapshot, in order), from `next`.
    case whoRoom(mask: String, channelName: String, key: String, members: [UserID], next: Int, whox: WhoxRequest?, showAll: Bool)
}

/// What LIST asked for: names, masks and the ELIST conditions.
struct ListQuery {
    var wanted: Set<String>?
    var masks: [(mask: String, include: Bool)] = []
    var conditions: [(field: Character, op: Character, value: Double)] = []
}

/// Keys kept in order as they come and go (room names, for LIST): a binary search finds where
/// a LIST stopped, even if rooms were made or emptied meanwhile.
struct SortedKeys {
    private(set) var keys: [String] = []

    func position(of key: String) -> (index: Int, found: Bool) {
        var low = 0, high = keys.count
        while low < high {
            let middle = (low + high) / 2
            if keys[middle] < key { low = middle + 1 } else { high = middle }
        }
        return (low, low < keys.count && keys[low] == key)
    }

    mutating func insert(_ key: String) {
        let (index, found) = position(of: key)
        if !found { keys.insert(key, at: index) }
    }

    mutating func remove(_ key: String) {
        let (index, found) = position(of: key)
        if found { keys.remove(at: index) }
    }

    /// The index of the first key after `key` (all of them for nil).
    func start(after key: String?) -> Int {
        guard let key else { return 0 }
        let (index, found) = position(of: key)
        return found ? index + 1 : index
    }
}

extension ServerState {
    /// Starts a long reply: its first step now, inside the command's response.
    mutating func startLongReply(_ session: Session, _ reply: LongReply, now: Double) {
        session.longReply = reply
        stepLongReply(session, now: now)
    }

    /// The runtime's call when the client has taken what was sent: the next step.
    public mutating func continueReply(_ id: ConnectionID, now: Double) {
        guard let session = people.sessions[id], session.longReply != nil else { return }
        // Taking the output is a sign of life: its PONG may be waiting behind the reply.
        session.lastActivity = now
        session.pingSentAt = nil
        response = ResponseBuffer(session: session, label: nil, batch: session.replyBatch)
        stepLongReply(session, now: now)
        flushResponse()
        resumeHeldLines(session, now: now)
    }

    mutating func stepLongReply(_ session: Session, now: Double) {
        guard let reply = session.longReply else { return }
        switch reply {
        case .list(let query, let after):
            let start = roomBook.sortedChannelKeys.start(after: after)
            let end = min(start + config.longReplyStep, roomBook.sortedChannelKeys.keys.count)
            for key in roomBook.sortedChannelKeys.keys[start..<end] { listEntry(session, key: key, query: query, now: now) }
            if end < roomBook.sortedChannelKeys.keys.count {
                session.longReply = .list(query, after: roomBook.sortedChannelKeys.keys[end - 1])
                outbox.items.append(.continueReply(session.connection))
                return
            }
            self.reply(session, .listEnd, "End of /LIST")
        case .whoRoom(let mask, let channelName, let key, let members, let next, let whox, let showAll):
            let end = min(next + config.longReplyStep, members.count)
            for id in members[next..<end] {
                // Someone who left since the snapshot is not answered for.
                guard let status = roomBook.membership.status(of: id, in: key) else { continue }
                guard showAll || !status.user.isInvisible else { continue }
                whoReply(session, status.user, channel: channelName, status: status, whox: whox, now: now)
            }
            if end < members.count {
                session.longReply = .whoRoom(mask: mask, channelName: channelName, key: key, members: members, next: end, whox: whox, showAll: showAll)
                outbox.items.append(.continueReply(session.connection))
                return
            }
            self.reply(session, .endOfWho, mask, "End of /WHO list")
        }
        session.longReply = nil
        // A labelled reply streamed in steps closes its batch with the last one.
        if let batch = session.replyBatch {
            session.replyBatch = nil
            flushResponse()
            sendNow(session, IRCMessage(source: config.name, command: "BATCH", params: ["-" + batch]))
            response = ResponseBuffer(session: session, label: nil)
        }
    }

    /// One room's 322, when it passes the query and the asker may see it.
    mutating func listEntry(_ session: Session, key: String, query: ListQuery, now: Double) {
        guard query.wanted?.contains(key) ?? true, let channel = roomBook.channels[key] else { return }
        // A secret room is listed only to its members, even when asked for by name (InspIRCd does the same).
        guard canSee(session.user, key: key) else { return }
        let count = roomBook.membership.count(of: key)
        for (mask, include) in query.masks where IRCNames.globMatch(mask, key) != include { return }
        for (field, op, n) in query.conditions {
            let value: Double
            switch field {
            case "U": value = Double(count)
            case "C": value = (now - channel.createdAt) / 60
            // A room whose topic was never set matches no T condition (NaN compares false).
            default: value = channel.topicSetAt == 0 ? .nan : (now - channel.topicSetAt) / 60
            }
            // C<n: created less than n minutes ago; C>n: more than n minutes ago (the modern docs).
            if op == ">" ? !(value > n) : !(value < n) { return }
        }
        let modes = channel.modeParameters(showKey: roomBook.membership.isMember(session.user.id, of: key)).joined(separator: " ")
        reply(session, .list, channel.name, String(count), "[\(modes)] \(channel.topic)")
    }
}
