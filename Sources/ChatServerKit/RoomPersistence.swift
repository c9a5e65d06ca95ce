import ChatStore
import IRCWire

/// The rooms the server keeps across restarts, in the accounts' database (`RoomStore`).
///
/// A room has a record once it differs from a new room (modes other than `+nt`, a key, a
/// limit, a list entry or a topic) or was ever closed (`+i`, `+k`, `+s`); the record is
/// written when its modes, lists or topic change, or an account is given or taken `+o`, and
/// it stays when the room empties. Joining a name with a record makes the room from it, with
/// its creation time, rules and topic, and checks the JOIN against those rules as for a live
/// room. A room that goes back to a new room's state and was never closed loses its record.
///
/// Every record is held in memory (read at start): a JOIN never waits for the database. With
/// history on, changes go to the history writer's thread as they happen (`viaWriter`), which
/// stores them before the rows handed over after them: an echo that waited for its commit
/// means the rules set before it are stored too. Without history, changes are gathered
/// (`pending`) and handed to the store worker once a second from `tick`, one transaction: a
/// room whose modes change as fast as its operator is paced costs one commit a second, not one
/// a change. The loop never reads or writes the database for rooms after the start.
struct RoomRecords {
    /// Whether rooms are saved at all (the saved rooms could be read at start).
    var enabled = false
    /// The records as handed over to be written, by folded name.
    var records: [String: RoomRecord] = [:]
    /// Changes handed to the store worker and not answered yet (history off).
    var atWorker = false
    /// What changed since the last write, by folded name (read before the database: `record`).
    var pending: [String: RoomStore.Change] = [:]
    /// Closed rooms whose record went, to remember in the same write.
    var pendingMarks: [(key: String, since: Double)] = []
    /// The last write failed: the log said so once, and says when writing works again.
    var writeFailing = false
    /// Changes go to the history writer (`.saveRooms`); until it has committed them, a read sees them here.
    var viaWriter = false
    var inFlight: [String: (change: RoomStore.Change, upTo: Int)] = [:]
    var handed = 0
    /// The saved rooms could not be read at start: every room made in this run is treated as
    /// closed for history (its members read only what is said in it), since whether its name
    /// was a closed room's is not known.
    var unavailable = false
    /// Every room with a record, live or not, by folded name.
    var saved: [String: SavedRoom] = [:]
    /// Records read for a JOIN that their rules refused, so a JOIN repeated (`JOIN #r,#r,#r…`)
    /// does not read the database again each time. At most `cacheLimit`, dropped on any write.
    var refusedRecently: [String: RoomRecord] = [:]
    /// Records kept at most; past it the least recently active record of a room that is not
    /// live goes (one that is open first). Live rooms are bounded by users and CHANLIMIT.
    var limit = 10_000
    /// Closed rooms without a record remembered at most (checked at start, oldest go first).
    var closedMarkLimit = 100_000
    static let cacheLimit = 16
    /// Operator accounts kept per room.
    static let operatorLimit = 100

    struct SavedRoom {
        var everClosed: Bool
        var lastActive: Double
        /// The accounts that get `+o` on joining; read with the record when the room is made from it.
        var operatorAccounts: Set<String> = []
    }
}

extension ServerState {
    /// At start: the saved rooms become dormant records, and the closed rooms without a record
    /// are remembered (what `closedRooms` is for: their history stays from the next makers).
    mutating func loadSavedRooms(_ database: Database?) {
        guard let database else { return }
        do {
            let store = try RoomStore(database: database)
            for record in try store.all() {
                roomRecords.saved[record.key] = .init(everClosed: record.everClosed, lastActive: record.lastActive)
                roomRecords.records[record.key] = record
            }
            var marks = try store.closedMarks()
            // A mark is needed while history holds lines of the room from before its present
            // record (all of them when it has none).
            if let history {
                var kept: [(key: String, since: Double)] = []
                for mark in marks {
                    let record = roomRecords.records[mark.key]
                    let floor = record.map { Int64(($0.createdAt * 1000).rounded(.down)) << 16 } ?? Int64.max
                    // A check that fails keeps the mark.
                    if (try? RoomStore.hasHistory(mark.key, before: floor, in: history.database)) ?? true {
                        kept.append(mark)
                    } else {
                        try store.unmarkClosed(mark.key)
                    }
                }
                marks = kept
            }
            if marks.count > roomRecords.closedMarkLimit {
                let dropped = marks.prefix(marks.count - roomRecords.closedMarkLimit)
                for mark in dropped { try store.unmarkClosed(mark.key) }
                marks.removeFirst(dropped.count)
                roomLog("rooms: \(dropped.count) of the oldest closed rooms without a record forgotten (at most \(roomRecords.closedMarkLimit) kept)")
            }
            closedRooms.formUnion(marks.map(\.key))
            roomRecords.enabled = true
        } catch {
            roomRecords.unavailable = true
            roomLog("rooms: the saved rooms cannot be read (\(error)); rooms made in this run read only their own history")
        }
    }

    /// A room about to be made for a JOIN: from its record when the name has one (nil when the
    /// record's rules refuse the joiner, who has been told), else new. `op`: the joiner runs it.
    mutating func roomToMake(_ key: String, name: String, for session: Session, key given: String?, now: Double) -> (channel: Channel, op: Bool)? {
        guard let entry = roomRecords.saved[key] else {
            if roomRecords.unavailable { closedRooms.insert(key) }
            return (Channel(name: name, createdAt: now), true)
        }
        // Fail closed: without its rules the room is not made, or anyone could make it.
        func unreadable(_ problem: String) {
            log(session, "rooms: cannot read the record of \(key): \(problem)")
            standardReply(session, "FAIL", command: "JOIN", code: "TEMPORARILY_UNAVAILABLE", context: [name],
                          "The room's rules cannot be read now; try again later")
        }
        guard roomRecords.enabled else {
            unreadable("the saved rooms could not be read at start")
            return nil
        }
        guard let record = roomRecords.refusedRecently[key] ?? pendingRecord(key) else {
            // No record behind the summary: a new room, which reads none of a closed one's history.
            roomRecords.saved[key] = nil
            if entry.everClosed { forgetClosedRecord(key, now: now) }
            return (Channel(name: name, createdAt: now), true)
        }
        let channel = Self.channel(from: record, casemapping: casemapping)
        let operators = Set(record.operatorAccounts)
        // Its operators' accounts are let in as if invited (`admissionProblem` reads them here).
        roomRecords.saved[key] = .init(everClosed: record.everClosed, lastActive: entry.lastActive, operatorAccounts: operators)
        if let refusal = admissionProblem(session.user, channel, key: given) {
            // A dormant record keeps only its summary in memory.
            roomRecords.saved[key] = entry
            if roomRecords.refusedRecently.count >= RoomRecords.cacheLimit { roomRecords.refusedRecently.removeAll() }
            roomRecords.refusedRecently[key] = record
            reply(session, refusal.numeric, channel.name, refusal.reason)
            return nil
        }
        roomRecords.refusedRecently[key] = nil
        roomRecords.saved[key]!.lastActive = now
        touchRecord(key, now)
        // Its operators' accounts run it; a record without any is run by the first who passes its rules.
        return (channel, operators.isEmpty || isSavedOperator(session.user, key: key))
    }

    /// Whether `user` gets `+o` on joining the room: its account is among those the room keeps.
    func isSavedOperator(_ user: User, key: String) -> Bool {
        guard let account = user.account, let entry = roomRecords.saved[key] else { return false }
        return entry.operatorAccounts.contains(AccountStore.key(account))
    }

    /// An account given (`on`) or taken `+o` in a room with a record (saved by `roomChanged`).
    mutating func operatorChanged(_ key: String, account: String, on: Bool) {
        guard let entry = roomRecords.saved[key] else { return }
        if on {
            guard entry.operatorAccounts.count < RoomRecords.operatorLimit else { return }
            roomRecords.saved[key]!.operatorAccounts.insert(AccountStore.key(account))
        } else {
            roomRecords.saved[key]!.operatorAccounts.remove(AccountStore.key(account))
        }
    }

    /// After a room's modes, lists, topic or operators changed: its record written, made, or
    /// (back to a new room's state, never closed) removed. A write that fails is logged and the
    /// room goes on in memory.
    mutating func roomChanged(_ key: String, now: Double) {
        guard roomRecords.enabled, let channel = channels[key] else { return }
        let entry = roomRecords.saved[key]
        let closed = Self.isClosed(channel)
        roomRecords.refusedRecently[key] = nil
        if Self.isAsNew(channel) && !(entry?.everClosed ?? false) {
            guard entry != nil else { return }
            roomRecords.saved[key] = nil
            roomRecords.pending[key] = .remove
            if roomRecords.viaWriter { writeRoomRecords() }
            return
        }
        // The accounts kept, and those of the room's operators now (the creator, an IRC operator given +o).
        var operators = entry?.operatorAccounts ?? []
        for status in (membership.members[key] ?? [:]).values where status.op && operators.count < RoomRecords.operatorLimit {
            if let account = status.user.account { operators.insert(AccountStore.key(account)) }
        }
        let saved = RoomRecords.SavedRoom(everClosed: (entry?.everClosed ?? false) || closed, lastActive: now, operatorAccounts: operators)
        roomRecords.saved[key] = saved
        roomRecords.pending[key] = .save(Self.record(of: channel, key: key, saved))
        if roomRecords.viaWriter { writeRoomRecords() }

        if entry == nil { keepRecordsWithinLimit(now: now) }
    }

    /// Past the limit, the least recently active records of rooms that are not live go, open
    /// rooms' first. A closed room's name is remembered, so its history stays from the next makers.
    mutating func keepRecordsWithinLimit(now: Double) {
        while roomRecords.saved.count > roomRecords.limit {
            // A walk over the records, only when a new one is made past the limit.
            let live = channels
            let dormant = roomRecords.saved.lazy.filter { live[$0.key] == nil }
            func order(_ room: (key: String, value: RoomRecords.SavedRoom)) -> (Int, Double, String) {
                (room.value.everClosed ? 1 : 0, room.value.lastActive, room.key)
            }
            guard let (key, entry) = dormant.min(by: { order($0) < order($1) }) else { return }
            roomRecords.saved[key] = nil
            roomRecords.refusedRecently[key] = nil
            roomRecords.pending[key] = .remove
            if entry.everClosed { forgetClosedRecord(key, now: now) }
        }
    }

    /// A closed room's record is gone: its name stays closed, here and in the database.
    mutating func forgetClosedRecord(_ key: String, now: Double) {
        closedRooms.insert(key)
        roomRecords.pendingMarks.append((key, now))
        if roomRecords.viaWriter { writeRoomRecords() }
    }

    /// On a JOIN of a live room with a record: the record marked active, at most once an hour
    /// (which records go first when there are too many is by this time).
    mutating func roomUsed(_ key: String, now: Double) {
        guard roomRecords.enabled, let entry = roomRecords.saved[key], now - entry.lastActive >= 3600 else { return }
        roomRecords.saved[key]!.lastActive = now
        touchRecord(key, now)
    }

    /// A record as it is now: the change not handed over yet, else the one handed over.
    func pendingRecord(_ key: String) -> RoomRecord? {
        var touched: Double?
        for change in [roomRecords.pending[key], roomRecords.inFlight[key]?.change] {
            switch change {
            case .save(var record)?:
                if let touched { record.lastActive = touched }
                return record
            case .remove?:
                return nil
            case .touch(let lastActive)?:
                if touched == nil { touched = lastActive }
            case .markClosed?, nil:
                continue
            }
        }
        var record = roomRecords.records[key]
        if let touched { record?.lastActive = touched }
        return record
    }

    /// The record's `lastActive` moved, in the next write.
    mutating func touchRecord(_ key: String, _ now: Double) {
        switch roomRecords.pending[key] {
        case .save(var record)?:
            record.lastActive = now
            roomRecords.pending[key] = .save(record)
        case .remove?:
            break
        default:
            roomRecords.pending[key] = .touch(lastActive: now)
        }
        if roomRecords.viaWriter { writeRoomRecords() }
    }

    /// Hands what changed to be written (from `tick`, and when the server stops), in one
    /// transaction: to the history writer, or with history off to the store worker. A write
    /// that fails is logged and the rooms go on in memory; their records are tried again.
    public mutating func writeRoomRecords() {
        if roomRecords.viaWriter, let committed = historyHealth?.roomChangesCommitted.load(ordering: .acquiring) {
            roomRecords.inFlight = roomRecords.inFlight.filter { $0.value.upTo > committed }
        }
        guard roomRecords.enabled, !roomRecords.atWorker, !roomRecords.pending.isEmpty || !roomRecords.pendingMarks.isEmpty else { return }
        let changes = roomRecords.pending.sorted { $0.key < $1.key }.map { (key: $0.key, change: $0.value) }
            + roomRecords.pendingMarks.map { (key: $0.key, change: RoomStore.Change.markClosed(since: $0.since)) }
        for (key, change) in changes {
            switch change {
            case .save(let record): roomRecords.records[key] = record
            case .remove: roomRecords.records[key] = nil
            case .touch(let lastActive): roomRecords.records[key]?.lastActive = lastActive
            case .markClosed: continue
            }
        }
        if roomRecords.viaWriter {
            roomRecords.handed += changes.count
            for (key, change) in changes {
                switch (change, roomRecords.inFlight[key]?.change) {
                case (.markClosed, _):
                    continue
                case (.touch(let lastActive), .save(var record)?):
                    // Still the whole record until the writer has it, now with its new time.
                    record.lastActive = lastActive
                    roomRecords.inFlight[key] = (.save(record), roomRecords.handed)
                default:
                    roomRecords.inFlight[key] = (change, roomRecords.handed)
                }
            }
            outbox.items.append(.saveRooms(RoomChanges(list: changes)))
        } else {
            roomRecords.atWorker = true
            outbox.items.append(.store(.saveRooms(RoomChanges(list: changes))))
        }
        roomRecords.pending.removeAll()
        roomRecords.pendingMarks.removeAll()
    }

    /// The store worker's answer to a write of the saved rooms (history off). A failure puts the
    /// changes back, under any made since, to be tried again with the next.
    mutating func roomsSaved(_ changes: RoomChanges, failure: String?) {
        roomRecords.atWorker = false
        guard let failure else {
            if roomRecords.writeFailing { roomLog("rooms: the saved rooms are written again") }
            roomRecords.writeFailing = false
            return
        }
        if !roomRecords.writeFailing {
            roomLog("rooms: cannot save \(changes.list.count) changes to the saved rooms: \(failure); the rooms go on in memory, tried again each second")
        }
        roomRecords.writeFailing = true
        for (key, change) in changes.list {
            if case .markClosed(let since) = change {
                roomRecords.pendingMarks.insert((key, since), at: 0)
            } else if case .touch(let lastActive)? = roomRecords.pending[key], case .save(var record) = change {
                // The whole record is still to be written, with its newer time.
                record.lastActive = lastActive
                roomRecords.pending[key] = .save(record)
            } else if roomRecords.pending[key] == nil {
                roomRecords.pending[key] = change
            }
        }
    }

    /// A line for the host's log with no connection to name; room names came from the network.
    mutating func roomLog(_ text: String) {
        outbox.items.append(.log(PlainText.visible(text)))
    }

    // MARK: Rooms and records

    /// Closed: what it takes to join it, or to see it, is more than its name.
    static func isClosed(_ channel: Channel) -> Bool { channel.has("i") || channel.key != nil || channel.isSecret }

    /// Nothing in it that a room made now would not have.
    static func isAsNew(_ channel: Channel) -> Bool {
        channel.flags == FlagModes(["n", "t"]) && channel.key == nil && channel.limit == nil && channel.topic.isEmpty
            && channel.lists == ModeLists()
    }

    static func record(of channel: Channel, key: String, _ saved: RoomRecords.SavedRoom) -> RoomRecord {
        func entries(_ letter: Character) -> [RoomRecord.Entry] {
            channel.lists[letter].map { RoomRecord.Entry(mask: $0.mask, setBy: $0.setBy, setAt: $0.setAt) }
        }
        var record = RoomRecord(key: key, name: channel.name, createdAt: channel.createdAt, flags: channel.flags.letters,
                                roomKey: channel.key, limit: channel.limit, lastActive: saved.lastActive)
        record.bans = entries("b")
        record.exceptions = entries("e")
        record.inviteExceptions = entries("I")
        record.topic = channel.topic
        record.topicSetBy = channel.topicSetBy
        record.topicSetAt = channel.topicSetAt
        record.operatorAccounts = saved.operatorAccounts.sorted()
        record.everClosed = saved.everClosed
        return record
    }

    static func channel(from record: RoomRecord, casemapping: Casemapping) -> Channel {
        var channel = Channel(name: record.name, createdAt: record.createdAt)
        channel.flags = FlagModes(Array(record.flags))
        channel.key = record.roomKey
        channel.limit = record.limit
        func entries(_ list: [RoomRecord.Entry]) -> [ListEntry] {
            list.map { ListEntry(mask: $0.mask, folded: Array(casemapping.fold($0.mask).utf8), setBy: $0.setBy, setAt: $0.setAt) }
        }
        channel.lists.bans = entries(record.bans)
        channel.lists.exceptions = entries(record.exceptions)
        channel.lists.inviteExceptions = entries(record.inviteExceptions)
        channel.topic = record.topic
        channel.topicSetBy = record.topicSetBy
        channel.topicSetAt = record.topicSetAt
        return channel
    }
}
