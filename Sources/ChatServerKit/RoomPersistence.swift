import ChatStore
import IRCWire

/// The rooms the server keeps across restarts, in the accounts' database (`RoomStore`).
///
/// Only a registered room has a record: one an operator logged into an account registered
/// with ChanServ (`ChanServ.swift`), at most `perAccountLimit` an account and `limit` in all.
/// Its record is written when its modes, lists, topic or access change, and stays when the
/// room empties; joining its name makes the room from it, with its creation time, rules and
/// topic, its founder and access accounts always get in (past +i, +k, +l and bans) and get op,
/// and nobody else gets op by arriving first. A room nobody registered ends with its last
/// member, its rules with it, as on every IRC network: a guest cannot keep a name for good.
/// Its history stays private: once a room is closed (+i, +k, +s) its name is marked closed in
/// the database at once (`markedClosed`), so whoever makes it next, after a restart too, reads
/// only what is said from then on.
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
    /// Every registered room, live or not, by folded name.
    var saved: [String: SavedRoom] = [:]
    /// Live rooms nobody registered whose name has been marked closed in the database (they
    /// were closed at some time): when one ends its name joins `closedRooms`. Owner: the live
    /// room; bound: the live rooms; end: the room's end.
    var markedClosed: Set<String> = []
    /// Records read for a JOIN that their rules refused, so a JOIN repeated (`JOIN #r,#r,#r…`)
    /// does not read the database again each time. At most `cacheLimit`, dropped on any write.
    var refusedRecently: [String: RoomRecord] = [:]
    /// Registered rooms at most, on the whole server: past it REGISTER is refused (nothing is
    /// evicted: a registered room is its founder's until dropped).
    var limit = 10_000
    /// Rooms one account may register (ergo's default).
    var perAccountLimit = 15
    /// Closed rooms without a record remembered at most (checked at start, oldest go first).
    var closedMarkLimit = 100_000
    static let cacheLimit = 16
    /// Operator accounts kept per room.
    static let operatorLimit = 100

    struct SavedRoom {
        /// The folded name of the account that registered it.
        var founder: String
        var registeredAt: Double
        var everClosed: Bool
        var lastActive: Double
        /// The accounts given access besides the founder (op on joining, past the room's
        /// rules); read with the record when the room is made from it.
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
            // Records from before rooms were registered had no founder: those rooms end now, as
            // rooms nobody registered do (a closed one's name stays closed for its history).
            var unregistered: [(key: String, change: RoomStore.Change)] = []
            for record in try store.all() {
                guard let founder = record.founder else {
                    unregistered.append((record.key, .remove))
                    if record.everClosed { unregistered.append((record.key, .markClosed(since: record.lastActive))) }
                    continue
                }
                roomBook.roomRecords.saved[record.key] = .init(founder: founder, registeredAt: record.registeredAt, everClosed: record.everClosed,
                                                      lastActive: record.lastActive, operatorAccounts: Set(record.operatorAccounts))
                roomBook.roomRecords.records[record.key] = record
            }
            if !unregistered.isEmpty {
                try store.apply(unregistered)
                roomLog("rooms: \(unregistered.filter { $0.change == .remove }.count) rooms kept from before registration are kept no more; only rooms registered with ChanServ last")
            }
            var marks = try store.closedMarks()
            // A mark is needed while history holds lines of the room from before its present
            // record (all of them when it has none).
            if let history {
                var kept: [(key: String, since: Double)] = []
                for mark in marks {
                    let record = roomBook.roomRecords.records[mark.key]
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
            if marks.count > roomBook.roomRecords.closedMarkLimit {
                let dropped = marks.prefix(marks.count - roomBook.roomRecords.closedMarkLimit)
                for mark in dropped { try store.unmarkClosed(mark.key) }
                marks.removeFirst(dropped.count)
                roomLog("rooms: \(dropped.count) of the oldest closed rooms without a record forgotten (at most \(roomBook.roomRecords.closedMarkLimit) kept)")
            }
            roomBook.closedRooms.formUnion(marks.map(\.key))
            roomBook.roomRecords.enabled = true
        } catch {
            roomBook.roomRecords.unavailable = true
            roomLog("rooms: the saved rooms cannot be read (\(error)); rooms made in this run read only their own history")
        }
    }

    /// A room about to be made for a JOIN: from its record when the name has one (nil when the
    /// record's rules refuse the joiner, who has been told), else new. `op`: the joiner runs it.
    mutating func roomToMake(_ key: String, name: String, for session: Session, key given: String?, now: Double) -> (channel: Channel, op: Bool)? {
        guard let entry = roomBook.roomRecords.saved[key] else {
            if roomBook.roomRecords.unavailable { roomBook.closedRooms.insert(key) }
            return (Channel(name: name, createdAt: now), true)
        }
        // Fail closed: without its rules the room is not made, or anyone could make it.
        func unreadable(_ problem: String) {
            log(session, "rooms: cannot read the record of \(key): \(problem)")
            standardReply(session, "FAIL", command: "JOIN", code: "TEMPORARILY_UNAVAILABLE", context: [name],
                          "The room's rules cannot be read now; try again later")
        }
        guard roomBook.roomRecords.enabled else {
            unreadable("the saved rooms could not be read at start")
            return nil
        }
        guard let record = roomBook.roomRecords.refusedRecently[key] ?? pendingRecord(key) else {
            // No record behind the summary: a new room, which reads none of a closed one's history.
            roomBook.roomRecords.saved[key] = nil
            if entry.everClosed { forgetClosedRecord(key, now: now) }
            return (Channel(name: name, createdAt: now), true)
        }
        let channel = Self.channel(from: record, casemapping: casemapping)
        // Its founder and access accounts get in past its rules (`admissionProblem` reads them here).
        roomBook.roomRecords.saved[key]!.operatorAccounts = Set(record.operatorAccounts)
        if let refusal = admissionProblem(session.user, channel, key: given) {
            // A dormant record keeps only its summary in memory.
            roomBook.roomRecords.saved[key] = entry
            if roomBook.roomRecords.refusedRecently.count >= RoomRecords.cacheLimit { roomBook.roomRecords.refusedRecently.removeAll() }
            roomBook.roomRecords.refusedRecently[key] = record
            reply(session, refusal.numeric, channel.name, refusal.reason)
            return nil
        }
        roomBook.roomRecords.refusedRecently[key] = nil
        roomBook.roomRecords.saved[key]!.lastActive = now
        touchRecord(key, now)
        // Its founder and access accounts run it; nobody else by arriving first.
        return (channel, isSavedOperator(session.user, key: key))
    }

    /// Whether `user` runs the registered room `key`: its account founded it or was given access.
    func isSavedOperator(_ user: User, key: String) -> Bool {
        guard let account = user.account, let entry = roomBook.roomRecords.saved[key] else { return false }
        let folded = AccountStore.key(account)
        return entry.founder == folded || entry.operatorAccounts.contains(folded)
    }

    /// After a registered room's modes, lists, topic or access changed: its record written. A
    /// room nobody registered keeps nothing, but that it was closed: the mark is written as it
    /// closes (a crash then keeps it too). A write that fails is logged and the room goes on in
    /// memory.
    mutating func roomChanged(_ key: String, now: Double) {
        guard roomBook.roomRecords.enabled, let channel = roomBook.channels[key] else { return }
        let closed = Self.isClosed(channel)
        roomBook.roomRecords.refusedRecently[key] = nil
        guard var saved = roomBook.roomRecords.saved[key] else {
            if closed && roomBook.roomRecords.markedClosed.insert(key).inserted {
                roomBook.roomRecords.pendingMarks.append((key, now))
                if roomBook.roomRecords.viaWriter { writeRoomRecords() }
            }
            return
        }
        saved.everClosed = saved.everClosed || closed
        saved.lastActive = now
        roomBook.roomRecords.saved[key] = saved
        roomBook.roomRecords.pending[key] = .save(Self.record(of: channel, key: key, saved))
        if roomBook.roomRecords.viaWriter { writeRoomRecords() }
    }

    /// The rooms an account founded.
    func roomsFounded(by account: String) -> Int {
        let folded = AccountStore.key(account)
        return roomBook.roomRecords.saved.values.reduce(0) { $0 + ($1.founder == folded ? 1 : 0) }
    }

    /// A live room registered to `founder` (ChanServ checked who may): its record made now.
    mutating func registerRoom(_ key: String, founder: String, now: Double) {
        guard let channel = roomBook.channels[key] else { return }
        let saved = RoomRecords.SavedRoom(founder: AccountStore.key(founder), registeredAt: now,
                                          everClosed: Self.isClosed(channel) || roomBook.roomRecords.markedClosed.contains(key), lastActive: now)
        roomBook.roomRecords.markedClosed.remove(key)
        roomBook.roomRecords.saved[key] = saved
        roomBook.roomRecords.refusedRecently[key] = nil
        roomBook.roomRecords.pending[key] = .save(Self.record(of: channel, key: key, saved))
        if roomBook.roomRecords.viaWriter { writeRoomRecords() }
    }

    /// A registration dropped: the record goes; a live room goes on until its last member
    /// leaves, a closed one's name stays closed for its history.
    mutating func dropRoom(_ key: String, now: Double) {
        guard let entry = roomBook.roomRecords.saved.removeValue(forKey: key) else { return }
        roomBook.roomRecords.refusedRecently[key] = nil
        roomBook.roomRecords.pending[key] = .remove
        if entry.everClosed {
            if roomBook.channels[key] != nil { roomBook.roomRecords.markedClosed.insert(key) }
            forgetClosedRecord(key, now: now)
        } else if roomBook.roomRecords.viaWriter {
            writeRoomRecords()
        }
    }

    /// An account given access to a registered room, or taken it (false when the room keeps
    /// `operatorLimit` already).
    mutating func setAccess(_ key: String, account: String, on: Bool, now: Double) -> Bool {
        guard roomBook.roomRecords.saved[key] != nil else { return false }
        let folded = AccountStore.key(account)
        if on {
            guard roomBook.roomRecords.saved[key]!.operatorAccounts.count < RoomRecords.operatorLimit else { return false }
            roomBook.roomRecords.saved[key]!.operatorAccounts.insert(folded)
        } else {
            roomBook.roomRecords.saved[key]!.operatorAccounts.remove(folded)
        }
        let saved = roomBook.roomRecords.saved[key]!
        if let channel = roomBook.channels[key] {
            roomBook.roomRecords.pending[key] = .save(Self.record(of: channel, key: key, saved))
        } else if var record = pendingRecord(key) {
            record.operatorAccounts = saved.operatorAccounts.sorted()
            roomBook.roomRecords.pending[key] = .save(record)
        }
        roomBook.roomRecords.refusedRecently[key] = nil
        if roomBook.roomRecords.viaWriter { writeRoomRecords() }
        return true
    }

    /// The accounts deleted since the directory was last read: the rooms they founded are
    /// registered no more, and their access goes (the database did the same in the deletion).
    mutating func forgetRoomsOfMissingAccounts(now: Double) {
        guard let directory = accountBook.directory else { return }
        for (key, entry) in roomBook.roomRecords.saved {
            if directory.lookup(entry.founder) == nil {
                // Gone from the database with the account; memory is brought in line (and a
                // change still pending must not write it back).
                roomBook.roomRecords.saved[key] = nil
                roomBook.roomRecords.records[key] = nil
                roomBook.roomRecords.pending[key] = .remove
                roomBook.roomRecords.refusedRecently[key] = nil
                if entry.everClosed {
                    if roomBook.channels[key] != nil { roomBook.roomRecords.markedClosed.insert(key) } else { roomBook.closedRooms.insert(key) }
                }
            } else {
                let gone = entry.operatorAccounts.filter { directory.lookup($0) == nil }
                if !gone.isEmpty { roomBook.roomRecords.saved[key]!.operatorAccounts.subtract(gone) }
            }
        }
    }

    /// A closed room's record is gone: its name stays closed, here and in the database.
    mutating func forgetClosedRecord(_ key: String, now: Double) {
        roomBook.closedRooms.insert(key)
        roomBook.roomRecords.pendingMarks.append((key, now))
        if roomBook.roomRecords.viaWriter { writeRoomRecords() }
    }

    /// On a JOIN of a live room with a record: the record marked active, at most once an hour
    /// (which records go first when there are too many is by this time).
    mutating func roomUsed(_ key: String, now: Double) {
        guard roomBook.roomRecords.enabled, let entry = roomBook.roomRecords.saved[key], now - entry.lastActive >= 3600 else { return }
        roomBook.roomRecords.saved[key]!.lastActive = now
        touchRecord(key, now)
    }

    /// A record as it is now: the change not handed over yet, else the one handed over.
    func pendingRecord(_ key: String) -> RoomRecord? {
        var touched: Double?
        for change in [roomBook.roomRecords.pending[key], roomBook.roomRecords.inFlight[key]?.change] {
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
        var record = roomBook.roomRecords.records[key]
        if let touched { record?.lastActive = touched }
        return record
    }

    /// The record's `lastActive` moved, in the next write.
    mutating func touchRecord(_ key: String, _ now: Double) {
        switch roomBook.roomRecords.pending[key] {
        case .save(var record)?:
            record.lastActive = now
            roomBook.roomRecords.pending[key] = .save(record)
        case .remove?:
            break
        default:
            roomBook.roomRecords.pending[key] = .touch(lastActive: now)
        }
        if roomBook.roomRecords.viaWriter { writeRoomRecords() }
    }

    /// Hands what changed to be written (from `tick`, and when the server stops), in one
    /// transaction: to the history writer, or with history off to the store worker. A write
    /// that fails is logged and the rooms go on in memory; their records are tried again.
    public mutating func writeRoomRecords() {
        if roomBook.roomRecords.viaWriter, let committed = historyHealth?.roomChangesCommitted.load(ordering: .acquiring) {
            roomBook.roomRecords.inFlight = roomBook.roomRecords.inFlight.filter { $0.value.upTo > committed }
        }
        guard roomBook.roomRecords.enabled, !roomBook.roomRecords.atWorker, !roomBook.roomRecords.pending.isEmpty || !roomBook.roomRecords.pendingMarks.isEmpty else { return }
        let changes = roomBook.roomRecords.pending.sorted { $0.key < $1.key }.map { (key: $0.key, change: $0.value) }
            + roomBook.roomRecords.pendingMarks.map { (key: $0.key, change: RoomStore.Change.markClosed(since: $0.since)) }
        for (key, change) in changes {
            switch change {
            case .save(let record): roomBook.roomRecords.records[key] = record
            case .remove: roomBook.roomRecords.records[key] = nil
            case .touch(let lastActive): roomBook.roomRecords.records[key]?.lastActive = lastActive
            case .markClosed: continue
            }
        }
        if roomBook.roomRecords.viaWriter {
            roomBook.roomRecords.handed += changes.count
            for (key, change) in changes {
                switch (change, roomBook.roomRecords.inFlight[key]?.change) {
                case (.markClosed, _):
                    continue
                case (.touch(let lastActive), .save(var record)?):
                    // Still the whole record until the writer has it, now with its new time.
                    record.lastActive = lastActive
                    roomBook.roomRecords.inFlight[key] = (.save(record), roomBook.roomRecords.handed)
                default:
                    roomBook.roomRecords.inFlight[key] = (change, roomBook.roomRecords.handed)
                }
            }
            outbox.items.append(.saveRooms(RoomChanges(list: changes)))
        } else {
            roomBook.roomRecords.atWorker = true
            outbox.items.append(.store(.saveRooms(RoomChanges(list: changes))))
        }
        roomBook.roomRecords.pending.removeAll()
        roomBook.roomRecords.pendingMarks.removeAll()
    }

    /// The store worker's answer to a write of the saved rooms (history off). A failure puts the
    /// changes back, under any made since, to be tried again with the next.
    mutating func roomsSaved(_ changes: RoomChanges, failure: String?) {
        roomBook.roomRecords.atWorker = false
        guard let failure else {
            if roomBook.roomRecords.writeFailing { roomLog("rooms: the saved rooms are written again") }
            roomBook.roomRecords.writeFailing = false
            return
        }
        if !roomBook.roomRecords.writeFailing {
            roomLog("rooms: cannot save \(changes.list.count) changes to the saved rooms: \(failure); the rooms go on in memory, tried again each second")
        }
        roomBook.roomRecords.writeFailing = true
        for (key, change) in changes.list {
            if case .markClosed(let since) = change {
                roomBook.roomRecords.pendingMarks.insert((key, since), at: 0)
            } else if case .touch(let lastActive)? = roomBook.roomRecords.pending[key], case .save(var record) = change {
                // The whole record is still to be written, with its newer time.
                record.lastActive = lastActive
                roomBook.roomRecords.pending[key] = .save(record)
            } else if roomBook.roomRecords.pending[key] == nil {
                roomBook.roomRecords.pending[key] = change
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
        record.founder = saved.founder
        record.registeredAt = saved.registeredAt
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
