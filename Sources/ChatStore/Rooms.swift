/// One registered room as it is kept across restarts: its name, creation time, rules (flag
/// modes, key, limit, the `b`, `e` and `I` lists) and topic, its founder and the accounts given
/// access, and whether it was ever closed (`+i`, `+k` or `+s`), so that the room that comes
/// back is the same room. Only rooms registered by an account (ChanServ REGISTER) are kept.
public struct RoomRecord: Equatable, Sendable {
    /// One entry of a `b`, `e` or `I` list, as set.
    public struct Entry: Equatable, Sendable {
        public var mask: String
        public var setBy: String
        public var setAt: Double

        public init(mask: String, setBy: String, setAt: Double) {
            self.mask = mask
            self.setBy = setBy
            self.setAt = setAt
        }
    }

    /// The folded name (the server's casemapping), the record's key.
    public var key: String
    /// The name as first created, for display.
    public var name: String
    public var createdAt: Double
    /// The flag modes that are on, as letters (`nst`).
    public var flags: String
    public var roomKey: String?
    public var limit: Int?
    public var bans: [Entry] = []
    public var exceptions: [Entry] = []
    public var inviteExceptions: [Entry] = []
    public var topic = ""
    public var topicSetBy = ""
    public var topicSetAt: Double = 0
    /// The folded name of the account that registered the room (nil only in records written
    /// before rooms were registered: the server drops those at start).
    public var founder: String?
    /// When it was registered (seconds since 1970).
    public var registeredAt: Double = 0
    /// The folded names of the accounts given access (op on joining, past the room's rules),
    /// besides the founder.
    public var operatorAccounts: [String] = []
    public var everClosed = false
    /// When the record was last saved or the room last made from it: the least recently
    /// active records are the first to go when there are too many.
    public var lastActive: Double

    public init(key: String, name: String, createdAt: Double, flags: String, roomKey: String? = nil, limit: Int? = nil,
                lastActive: Double) {
        self.key = key
        self.name = name
        self.createdAt = createdAt
        self.flags = flags
        self.roomKey = roomKey
        self.limit = limit
        self.lastActive = lastActive
    }
}

/// What the server keeps in memory of each saved room that is not live: enough to choose which
/// records go when there are too many (the rest is read when someone joins that name).
public struct RoomSummary: Equatable, Sendable {
    public let key: String
    public let everClosed: Bool
    public let lastActive: Double
}

/// Saved rooms in the server's database (the accounts' file), and the names of closed rooms
/// whose record is gone while their history may remain (`closed_rooms`): whoever makes a room
/// of such a name reads only what is said from then on. No IRC logic: the server decides what
/// a record holds and when it is written.
public final class RoomStore {
    public let database: Database

    public init(database: Database) throws(Database.Failure) {
        self.database = database
        try database.execute("""
            CREATE TABLE IF NOT EXISTS rooms (
                key TEXT PRIMARY KEY, name TEXT NOT NULL, created_at REAL NOT NULL, flags TEXT NOT NULL,
                room_key TEXT, user_limit INTEGER, topic TEXT NOT NULL, topic_set_by TEXT NOT NULL,
                topic_set_at REAL NOT NULL, ever_closed INTEGER NOT NULL, last_active REAL NOT NULL);
            CREATE TABLE IF NOT EXISTS room_list_entries (
                key TEXT NOT NULL REFERENCES rooms(key) ON DELETE CASCADE, list TEXT NOT NULL, position INTEGER NOT NULL,
                mask TEXT NOT NULL, set_by TEXT NOT NULL, set_at REAL NOT NULL, PRIMARY KEY (key, list, position));
            CREATE TABLE IF NOT EXISTS room_operators (
                key TEXT NOT NULL REFERENCES rooms(key) ON DELETE CASCADE, account TEXT NOT NULL, PRIMARY KEY (key, account));
            CREATE TABLE IF NOT EXISTS closed_rooms (key TEXT PRIMARY KEY, since REAL NOT NULL);
            """)
        // Registration came later: a database from before has the two columns added, empty.
        let columns = try database.query("PRAGMA table_info(rooms)").compactMap { row -> String? in
            if row.count > 1, case .text(let name) = row[1] { name } else { nil }
        }
        if !columns.contains("founder") {
            try database.execute("ALTER TABLE rooms ADD COLUMN founder TEXT; ALTER TABLE rooms ADD COLUMN registered_at REAL NOT NULL DEFAULT 0")
        }
    }

    /// The list letters as stored, with the record's field for each.
    private static var lists: [(letter: String, field: WritableKeyPath<RoomRecord, [RoomRecord.Entry]>)] {
        [("b", \.bans), ("e", \.exceptions), ("I", \.inviteExceptions)]
    }

    /// A change to the saved rooms, made with others in one transaction (`apply`).
    public enum Change: Sendable, Equatable {
        case save(RoomRecord)
        case remove
        case touch(lastActive: Double)
        case markClosed(since: Double)
    }

    /// Writes the whole record (its lists and operators replaced) in one transaction.
    public func save(_ record: RoomRecord) throws(Database.Failure) {
        try apply([(record.key, .save(record))])
    }

    /// Changes in one transaction, in order: the server gathers what changed in a second and
    /// writes it at once, so rooms changing fast cost one commit a second, not one each.
    public func apply(_ changes: [(key: String, change: Change)]) throws(Database.Failure) {
        try database.execute("BEGIN")
        do {
            for (key, change) in changes {
                switch change {
                case .save(let record): try write(record)
                case .remove: try remove(key)
                case .touch(let lastActive): try touch(key, lastActive: lastActive)
                case .markClosed(let since): try markClosed(key, since: since)
                }
            }
            try database.execute("COMMIT")
        } catch {
            _ = try? database.execute("ROLLBACK")
            throw error
        }
    }

    private func write(_ record: RoomRecord) throws(Database.Failure) {
        do {
            try database.query("""
                INSERT INTO rooms (key, name, created_at, flags, room_key, user_limit, topic, topic_set_by, topic_set_at,
                                   ever_closed, last_active, founder, registered_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET
                    name = excluded.name, created_at = excluded.created_at, flags = excluded.flags, room_key = excluded.room_key,
                    user_limit = excluded.user_limit, topic = excluded.topic, topic_set_by = excluded.topic_set_by,
                    topic_set_at = excluded.topic_set_at, ever_closed = excluded.ever_closed, last_active = excluded.last_active,
                    founder = excluded.founder, registered_at = excluded.registered_at
                """, [.text(record.key), .text(record.name), .real(record.createdAt), .text(record.flags),
                      record.roomKey.map { .text($0) } ?? .null, record.limit.map { .integer(Int64($0)) } ?? .null,
                      .text(record.topic), .text(record.topicSetBy), .real(record.topicSetAt),
                      .integer(record.everClosed ? 1 : 0), .real(record.lastActive),
                      record.founder.map { .text($0) } ?? .null, .real(record.registeredAt)])
            try database.query("DELETE FROM room_list_entries WHERE key = ?", [.text(record.key)])
            for (letter, field) in Self.lists {
                for (position, entry) in record[keyPath: field].enumerated() {
                    try database.query("INSERT INTO room_list_entries VALUES (?, ?, ?, ?, ?, ?)",
                                       [.text(record.key), .text(letter), .integer(Int64(position)), .text(entry.mask),
                                        .text(entry.setBy), .real(entry.setAt)])
                }
            }
            try database.query("DELETE FROM room_operators WHERE key = ?", [.text(record.key)])
            for account in record.operatorAccounts {
                try database.query("INSERT OR IGNORE INTO room_operators VALUES (?, ?)", [.text(record.key), .text(account)])
            }
        }
    }

    /// Moves a record's `lastActive` (the room was made from it again).
    public func touch(_ key: String, lastActive: Double) throws(Database.Failure) {
        try database.query("UPDATE rooms SET last_active = ? WHERE key = ?", [.real(lastActive), .text(key)])
    }

    /// Forgets a record (its lists and operators with it).
    public func remove(_ key: String) throws(Database.Failure) {
        try database.query("DELETE FROM rooms WHERE key = ?", [.text(key)])
    }

    /// One record, whole.
    public func record(_ key: String) throws(Database.Failure) -> RoomRecord? {
        let rows = try database.query("""
            SELECT key, name, created_at, flags, room_key, user_limit, topic, topic_set_by, topic_set_at, ever_closed, last_active,
                   founder, registered_at
            FROM rooms WHERE key = ?
            """, [.text(key)])
        guard let row = rows.first, var record = Self.record(row) else { return nil }
        for entry in try database.query("SELECT list, mask, set_by, set_at FROM room_list_entries WHERE key = ? ORDER BY list, position",
                                        [.text(key)]) {
            guard case .text(let letter) = entry[0], case .text(let mask) = entry[1], case .text(let setBy) = entry[2],
                  let setAt = Self.double(entry[3]), let field = Self.lists.first(where: { $0.letter == letter })?.field else { continue }
            record[keyPath: field].append(RoomRecord.Entry(mask: mask, setBy: setBy, setAt: setAt))
        }
        record.operatorAccounts = try database.query("SELECT account FROM room_operators WHERE key = ? ORDER BY account", [.text(key)])
            .compactMap { if case .text(let account) = $0[0] { account } else { nil } }
        return record
    }

    /// Every record, whole (tests and tools; the server reads `summaries` at start).
    public func all() throws(Database.Failure) -> [RoomRecord] {
        var records: [RoomRecord] = []
        for summary in try summaries() {
            if let record = try record(summary.key) { records.append(record) }
        }
        return records
    }

    public func summaries() throws(Database.Failure) -> [RoomSummary] {
        try database.query("SELECT key, ever_closed, last_active FROM rooms ORDER BY key").compactMap { row in
            guard case .text(let key) = row[0], case .integer(let closed) = row[1], let last = Self.double(row[2]) else { return nil }
            return RoomSummary(key: key, everClosed: closed != 0, lastActive: last)
        }
    }

    // MARK: Closed rooms without a record

    /// Remembers that the room `key` was closed and its record is gone, from `since`.
    public func markClosed(_ key: String, since: Double) throws(Database.Failure) {
        try database.query("INSERT OR IGNORE INTO closed_rooms VALUES (?, ?)", [.text(key), .real(since)])
    }

    public func unmarkClosed(_ key: String) throws(Database.Failure) {
        try database.query("DELETE FROM closed_rooms WHERE key = ?", [.text(key)])
    }

    /// The marks, oldest first.
    public func closedMarks() throws(Database.Failure) -> [(key: String, since: Double)] {
        try database.query("SELECT key, since FROM closed_rooms ORDER BY since, key").compactMap { row in
            guard case .text(let key) = row[0], let since = Self.double(row[1]) else { return nil }
            return (key, since)
        }
    }

    /// Whether a database with the server's history holds events of `target` older than `msgid`
    /// (a closed room's mark is needed while it does).
    public static func hasHistory(_ target: String, before msgid: Int64, in history: Database) throws(Database.Failure) -> Bool {
        try !history.query("SELECT 1 FROM history WHERE target = ?1 AND msgid < ?2 UNION ALL SELECT 1 FROM history_events WHERE target = ?1 AND msgid < ?2 LIMIT 1",
                           [.text(target), .integer(msgid)]).isEmpty
    }

    private static func record(_ row: [Database.Value]) -> RoomRecord? {
        guard row.count == 13, case .text(let key) = row[0], case .text(let name) = row[1], let created = double(row[2]),
              case .text(let flags) = row[3], case .text(let topic) = row[6], case .text(let setBy) = row[7],
              let setAt = double(row[8]), case .integer(let closed) = row[9], let last = double(row[10]) else { return nil }
        var record = RoomRecord(key: key, name: name, createdAt: created, flags: flags, lastActive: last)
        if case .text(let roomKey) = row[4] { record.roomKey = roomKey }
        if case .integer(let limit) = row[5] { record.limit = Int(limit) }
        record.topic = topic
        record.topicSetBy = setBy
        record.topicSetAt = setAt
        record.everClosed = closed != 0
        if case .text(let founder) = row[11] { record.founder = founder }
        record.registeredAt = double(row[12]) ?? 0
        return record
    }

    /// A REAL column (SQLite hands back a whole number stored in one as an integer).
    private static func double(_ value: Database.Value) -> Double? {
        switch value {
        case .real(let number): number
        case .integer(let number): Double(number)
        default: nil
        }
    }
}
