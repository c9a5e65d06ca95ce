#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ChatTransport
import CSQLite

/// One stored event: its msgid (sortable by time, so it is also the row's order; a QUIT or NICK
/// is stored once per room with the same msgid), its time in
/// milliseconds, the conversation it belongs to (a folded room name, or `dm PARTY PARTY` for a
/// direct conversation), and the IRC line as relayed (tags, source, command, parameters).
/// A class: a row goes to the recent list, the delivery and the writer's queue, and as a value
/// each of those copies retained its three strings and its array again.
public final class HistoryRow: Sendable, Equatable {
    public let msgid: Int64
    public let timeMilliseconds: Int64
    public let target: String
    public let command: String
    public let line: String
    /// For a direct conversation: its parties that are accounts (`a:NAME`), with the name the
    /// other side is shown under, so TARGETS can list an account's conversations.
    public let parties: [(party: String, peer: String)]

    public init(msgid: Int64, timeMilliseconds: Int64, target: String, command: String, line: String,
                parties: [(party: String, peer: String)] = []) {
        self.msgid = msgid
        self.timeMilliseconds = timeMilliseconds
        self.target = target
        self.command = command
        self.line = line
        self.parties = parties
    }

    public static func == (a: HistoryRow, b: HistoryRow) -> Bool {
        a.msgid == b.msgid && a.timeMilliseconds == b.timeMilliseconds && a.target == b.target && a.command == b.command
            && a.line == b.line && a.parties.elementsEqual(b.parties) { $0.party == $1.party && $0.peer == $1.peer }
    }
}

/// The server's message history in its SQLite database (the same file as the accounts).
/// One instance per thread: the writer has its own, the event loop reads with another (WAL
/// lets it read while the writer commits).
public final class HistoryStore {
    public let database: Database
    private var insertRow: Database.Statement?
    private var insertRows: Database.Statement?
    private var insertEvent: Database.Statement?
    private var upsertParty: Database.Statement?
    private var begin: Database.Statement?
    private var commit: Database.Statement?

    public init(database: Database) throws(Database.Failure) {
        self.database = database
        try database.execute("""
            CREATE TABLE IF NOT EXISTS history (
                target TEXT NOT NULL, msgid INTEGER NOT NULL, time INTEGER NOT NULL, command TEXT NOT NULL, line TEXT NOT NULL,
                PRIMARY KEY (target, msgid)) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS history_events (
                target TEXT NOT NULL, msgid INTEGER NOT NULL, time INTEGER NOT NULL, command TEXT NOT NULL, line TEXT NOT NULL,
                PRIMARY KEY (target, msgid)) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS history_parties (
                party TEXT NOT NULL, target TEXT NOT NULL, peer TEXT NOT NULL, last INTEGER NOT NULL, PRIMARY KEY (party, target));
            CREATE TABLE IF NOT EXISTS read_markers (
                account TEXT NOT NULL, target TEXT NOT NULL, time INTEGER NOT NULL, PRIMARY KEY (account, target));
            """)
        // Messages and the other events were once one table, with a partial index over the
        // messages for the reads that want only them: every stored message cost a second
        // B-tree insert (a quarter of the writer's work). Such a database is moved over once,
        // the events to their own table and the index dropped (only when the index is there, so
        // a database another process holds locked is only read). The index's older forms too:
        // `history_texts`, and `history_messages` under `IN (…)`.
        if Self.hasOldIndexes(database) {
            try database.execute("BEGIN IMMEDIATE")
            do {
                if Self.hasOldIndexes(database) {
                    try database.execute("""
                        INSERT OR IGNORE INTO history_events SELECT * FROM history WHERE NOT \(Kinds.messages.condition!);
                        DELETE FROM history WHERE NOT \(Kinds.messages.condition!);
                        DROP INDEX IF EXISTS history_messages;
                        DROP INDEX IF EXISTS history_texts;
                        """)
                }
                try database.execute("COMMIT")
            } catch {
                _ = try? database.execute("ROLLBACK")
                throw error
            }
        }
    }

    private static func hasOldIndexes(_ database: Database) -> Bool {
        !((try? database.query("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name IN ('history_messages', 'history_texts')")) ?? []).isEmpty
    }

    /// Which stored events a read wants. Messages are in `history`, the other events in
    /// `history_events`, so "the last 100 messages" of a room full of JOINs and PARTs is a range
    /// of the messages' key, not a walk over every event (200,000 events and one message: 45 ms
    /// a query when they shared a table unindexed, 0.1 ms now); all of them is a merge of both.
    public enum Kinds: Sendable, Equatable {
        case all
        /// PRIVMSG, NOTICE and TAGMSG, and REDACT (a deletion, so a client that comes back learns
        /// what was deleted while it was away): CHATHISTORY without event-playback. Stored in
        /// `history` with the messages.
        case messages
        /// PRIVMSG and NOTICE: the replay on joining, for clients that do not read tags.
        case texts

        /// The commands a read wants: the messages' (also the migration's split) or the texts
        /// (TAGMSG rows among them are few: read past, not indexed).
        var condition: String? {
            switch self {
            case .all: nil
            case .messages: "(command = 'PRIVMSG' OR command = 'NOTICE' OR command = 'TAGMSG' OR command = 'REDACT')"
            case .texts: "(command = 'PRIVMSG' OR command = 'NOTICE')"
            }
        }

        public func includes(_ command: String) -> Bool {
            switch self {
            case .all: true
            case .messages: command == "PRIVMSG" || command == "NOTICE" || command == "TAGMSG" || command == "REDACT"
            case .texts: command == "PRIVMSG" || command == "NOTICE"
            }
        }

        /// A message someone said (what a deletion or a link's merge may name), not a deletion.
        public static func isMessage(_ command: String) -> Bool { command == "PRIVMSG" || command == "NOTICE" || command == "TAGMSG" }
    }

    /// Writes rows in one transaction: messages to `history`, other events to `history_events`.
    public func insert(_ rows: [HistoryRow]) throws(Database.Failure) {
        // Prepared once: preparing each small insert cost more than running it.
        if insertRow == nil {
            insertRow = try database.prepare("INSERT OR IGNORE INTO history VALUES (?, ?, ?, ?, ?)")
            // Rows by the chunk: one statement run per 32 rows (each run has a fixed cost).
            insertRows = try database.prepare("INSERT OR IGNORE INTO history VALUES " + Array(repeating: "(?, ?, ?, ?, ?)", count: Self.chunk).joined(separator: ", "))
            insertEvent = try database.prepare("INSERT OR IGNORE INTO history_events VALUES (?, ?, ?, ?, ?)")
            upsertParty = try database.prepare("INSERT INTO history_parties VALUES (?, ?, ?, ?) ON CONFLICT (party, target) DO UPDATE SET last = excluded.last, peer = excluded.peer")
            // BEGIN and COMMIT too: sqlite3_exec prepared them afresh for every commit.
            begin = try database.prepare("BEGIN")
            commit = try database.prepare("COMMIT")
        }
        try begin!.run([])
        do {
            var values: [Database.Value] = []
            values.reserveCapacity(5 * Self.chunk)
            // Events are few beside messages: one by one.
            var messages = rows
            if rows.contains(where: { !Kinds.messages.includes($0.command) }) {
                messages = rows.filter { Kinds.messages.includes($0.command) }
                for row in rows where !Kinds.messages.includes(row.command) {
                    values.removeAll(keepingCapacity: true)
                    Self.append(row, to: &values)
                    try insertEvent!.runInPlace(values)
                }
            }
            var start = messages.startIndex
            while messages.endIndex - start >= Self.chunk {
                values.removeAll(keepingCapacity: true)
                for row in messages[start..<start + Self.chunk] { Self.append(row, to: &values) }
                try insertRows!.runInPlace(values)
                start += Self.chunk
            }
            for row in messages[start...] {
                values.removeAll(keepingCapacity: true)
                Self.append(row, to: &values)
                try insertRow!.runInPlace(values)
            }
            for row in rows where !row.parties.isEmpty {
                for (party, peer) in row.parties {
                    try upsertParty!.run([.text(party), .text(row.target), .text(peer), .integer(row.msgid)])
                }
            }
            try commit!.run([])
        } catch {
            _ = try? database.execute("ROLLBACK")
            throw error
        }
    }

    static let chunk = 32

    private static func append(_ row: HistoryRow, to values: inout [Database.Value]) {
        values.append(.text(row.target))
        values.append(.integer(row.msgid))
        values.append(.integer(row.timeMilliseconds))
        values.append(.text(row.command))
        values.append(.text(row.line))
    }

    public enum Direction: Sendable { case before, after }

    /// Rows of `target` strictly before (newest first, then returned oldest first) or strictly
    /// after a msgid, at most `limit`, of the given kinds.
    public func rows(_ target: String, _ direction: Direction, _ msgid: Int64, limit: Int, kinds: Kinds) throws(Database.Failure) -> [HistoryRow] {
        let found = try database.query(Self.rowsQuery(direction, kinds), [.text(target), .integer(msgid), .integer(Int64(limit))]).compactMap(Self.row)
        return direction == .before ? found.reversed() : found
    }

    static func rowsQuery(_ direction: Direction, _ kinds: Kinds) -> String {
        let (compare, order) = direction == .before ? ("<", "DESC") : (">", "ASC")
        // Parameters by number: the union reads target and msgid in both arms.
        let select = "SELECT msgid, time, target, command, line FROM"
        let range = "WHERE target = ?1 AND msgid \(compare) ?2"
        switch kinds {
        case .all:
            // Both keys walked in order and merged (SQLite's MERGE of the two arms).
            return "\(select) history \(range) UNION ALL \(select) history_events \(range) ORDER BY msgid \(order) LIMIT ?3"
        case .messages, .texts:
            // (The condition holds for every row the writer puts there; it keeps a read right
            // whatever else a tool wrote into the table.)
            return "\(select) history \(range) AND \(kinds.condition!) ORDER BY msgid \(order) LIMIT ?3"
        }
    }

    /// SQLite's plan for a read of rows (tests: each read walks its tables' keys).
    public func plan(_ direction: Direction, kinds: Kinds) throws(Database.Failure) -> String {
        try database.query("EXPLAIN QUERY PLAN " + Self.rowsQuery(direction, kinds), [.text("#"), .integer(0), .integer(1)])
            .map { $0.map { if case .text(let t) = $0 { t } else { "" } }.joined(separator: " ") }.joined(separator: "; ")
    }

    /// The msgids of `target` between `low` and `high` (inclusive): which of a batch of rows from
    /// another server are here already.
    public func msgids(_ target: String, from low: Int64, to high: Int64) throws(Database.Failure) -> Set<Int64> {
        var found: Set<Int64> = []
        for row in try database.query("SELECT msgid FROM history WHERE target = ?1 AND msgid BETWEEN ?2 AND ?3 UNION SELECT msgid FROM history_events WHERE target = ?1 AND msgid BETWEEN ?2 AND ?3",
                                      [.text(target), .integer(low), .integer(high)]) {
            if case .integer(let id)? = row.first { found.insert(id) }
        }
        return found
    }

    /// The msgid of the row with this msgid, or the first at or after this time (for `timestamp=` references).
    public func msgid(atOrAfter time: Int64, in target: String) throws(Database.Failure) -> Int64? {
        let rows = try database.query("""
            SELECT MIN(msgid) FROM (SELECT MIN(msgid) AS msgid FROM history WHERE target = ?1 AND time >= ?2
            UNION ALL SELECT MIN(msgid) FROM history_events WHERE target = ?1 AND time >= ?2)
            """, [.text(target), .integer(time)])
        if case .integer(let id)? = rows.first?.first { return id }
        return nil
    }

    public func contains(msgid: Int64, in target: String) throws(Database.Failure) -> Bool {
        try !database.query("SELECT 1 FROM history WHERE msgid = ?1 AND target = ?2 UNION ALL SELECT 1 FROM history_events WHERE msgid = ?1 AND target = ?2",
                            [.integer(msgid), .text(target)]).isEmpty
    }

    /// The newest msgid of a target.
    public func latest(in target: String) throws(Database.Failure) -> Int64? {
        let rows = try database.query("SELECT MAX(msgid) FROM (SELECT MAX(msgid) AS msgid FROM history WHERE target = ?1 UNION ALL SELECT MAX(msgid) FROM history_events WHERE target = ?1)",
                                      [.text(target)])
        if case .integer(let id)? = rows.first?.first { return id }
        return nil
    }

    /// soju.im/search: the newest messages (PRIVMSG, NOTICE) of these targets and of the direct
    /// conversations of `party` between two msgids whose line holds `text` (any case, ASCII
    /// folded by SQLite; empty: any), at most `limit` a target, newest first. Each target's rows
    /// are walked on its key from the newest back, so a search costs what it reads.
    public func search(targets: [String], party: String?, text: String, low: Int64, high: Int64, limit: Int) throws(Database.Failure) -> [HistoryRow] {
        var all = targets
        if let party {
            for row in try database.query("SELECT target FROM history_parties WHERE party = ? ORDER BY last DESC LIMIT 100", [.text(party)]) {
                if case .text(let target) = row[0] { all.append(target) }
            }
        }
        var found: [HistoryRow] = []
        for target in all {
            found += try database.query("""
                SELECT msgid, time, target, command, line FROM history WHERE target = ?1 AND msgid BETWEEN ?2 AND ?3
                AND command IN ('PRIVMSG', 'NOTICE') AND (?4 = '' OR instr(lower(line), ?4) > 0) ORDER BY msgid DESC LIMIT ?5
                """, [.text(target), .integer(low), .integer(high), .text(text.lowercased()), .integer(Int64(limit))]).compactMap(Self.row)
        }
        return found.sorted { $0.msgid > $1.msgid }
    }

    /// The direct conversations of a party (`a:NAME`) with activity between two msgids: target, peer, newest msgid.
    public func conversations(of party: String, from: Int64, to: Int64, limit: Int) throws(Database.Failure) -> [(target: String, peer: String, last: Int64)] {
        try database.query("SELECT target, peer, last FROM history_parties WHERE party = ? AND last > ? AND last < ? ORDER BY last LIMIT ?",
                           [.text(party), .integer(from), .integer(to), .integer(Int64(limit))]).compactMap { row in
            guard case .text(let target) = row[0], case .text(let peer) = row[1], case .integer(let last) = row[2] else { return nil }
            return (target, peer, last)
        }
    }

    /// The targets with rows, for pruning one at a time.
    public func targets() throws(Database.Failure) -> [String] {
        try database.query("SELECT DISTINCT target FROM history UNION SELECT DISTINCT target FROM history_events").compactMap { if case .text(let t) = $0[0] { return t } else { return nil } }
    }

    /// Removes a target's rows older than `msgid`, and all but its newest `keep` messages and
    /// its newest `keep` other events: deletes on the keys' ranges, each short.
    public func prune(_ target: String, olderThan msgid: Int64, keep: Int) throws(Database.Failure) -> Int {
        var removed = 0
        for table in ["history", "history_events"] {
            try database.query("DELETE FROM \(table) WHERE target = ? AND msgid < ?", [.text(target), .integer(msgid)])
            removed += database.changes
            try database.query("DELETE FROM \(table) WHERE target = ? AND msgid < (SELECT msgid FROM \(table) WHERE target = ? ORDER BY msgid DESC LIMIT 1 OFFSET ?)",
                               [.text(target), .text(target), .integer(Int64(keep - 1))])
            removed += database.changes
        }
        return removed
    }

    /// Every target pruned at once (tests, tools).
    public func prune(olderThan msgid: Int64, keepPerTarget keep: Int) throws(Database.Failure) -> Int {
        var removed = 0
        for target in try targets() { removed += try prune(target, olderThan: msgid, keep: keep) }
        return removed
    }

    /// A renamed room's rows and read markers, under its new name.
    /// Rows the new name has already (a QUIT stored in two rooms under one msgid, a marker set
    /// under the new name before the rename reached the writer) are kept, never a conflict that
    /// would hold up the writer: markers keep the later time.
    public func rename(from old: String, to new: String) throws(Database.Failure) {
        for table in ["history", "history_events"] {
            try database.query("UPDATE OR IGNORE \(table) SET target = ? WHERE target = ?", [.text(new), .text(old)])
            try database.query("DELETE FROM \(table) WHERE target = ?", [.text(old)])
        }
        try database.query("""
            INSERT INTO read_markers SELECT account, ?, time FROM read_markers WHERE target = ? AND true
            ON CONFLICT (account, target) DO UPDATE SET time = MAX(time, excluded.time)
            """, [.text(new), .text(old)])
        try database.query("DELETE FROM read_markers WHERE target = ?", [.text(old)])
    }

    /// Removes one row (a deleted message).
    public func forget(target: String, msgid: Int64) throws(Database.Failure) {
        try database.query("DELETE FROM history WHERE target = ? AND msgid = ?", [.text(target), .integer(msgid)])
        try database.query("DELETE FROM history_events WHERE target = ? AND msgid = ?", [.text(target), .integer(msgid)])
    }

    public func count() throws(Database.Failure) -> Int {
        if case .integer(let n)? = try database.query("SELECT (SELECT COUNT(*) FROM history) + (SELECT COUNT(*) FROM history_events)").first?.first { return Int(n) }
        return 0
    }

    // MARK: Read markers

    public func readMarker(account: String, target: String) throws(Database.Failure) -> Int64? {
        let rows = try database.query("SELECT time FROM read_markers WHERE account = ? AND target = ?", [.text(account), .text(target)])
        if case .integer(let time)? = rows.first?.first { return time }
        return nil
    }

    /// Every read marker, by account then conversation (the server holds them in memory).
    public func allReadMarkers() throws(Database.Failure) -> [String: [String: Int64]] {
        var markers: [String: [String: Int64]] = [:]
        for row in try database.query("SELECT account, target, time FROM read_markers") {
            guard case .text(let account) = row[0], case .text(let target) = row[1], case .integer(let time) = row[2] else { continue }
            markers[account, default: [:]][target] = time
        }
        return markers
    }

    /// Sets the marker if it moves forward; returns the marker now in place.
    public func setReadMarker(account: String, target: String, time: Int64) throws(Database.Failure) -> Int64 {
        try database.query("INSERT INTO read_markers VALUES (?, ?, ?) ON CONFLICT (account, target) DO UPDATE SET time = MAX(time, excluded.time)",
                           [.text(account), .text(target), .integer(time)])
        return try readMarker(account: account, target: target) ?? time
    }

    static func row(_ values: [Database.Value]) -> HistoryRow? {
        guard values.count == 5, case .integer(let msgid) = values[0], case .integer(let time) = values[1], case .text(let target) = values[2],
              case .text(let command) = values[3], case .text(let line) = values[4] else { return nil }
        return HistoryRow(msgid: msgid, timeMilliseconds: time, target: target, command: command, line: line)
    }
}

/// What the history writer tells the event loop, read without a lock: the highest msgid
/// committed, whether storing fails now (a full disk, a locked file), and how many rows handed
/// over wait for their commit.
public final class HistoryHealth: Sendable {
    public let committed = Atomic<Int64>(0)
    public let failing = Atomic<Bool>(false)
    public let waiting = Atomic<Int>(0)
    /// Changes to the saved rooms handed to the writer and committed, counted (`RoomChanges`).
    public let roomChangesCommitted = Atomic<Int>(0)

    public init() {}

    /// Storing fails and this many rows wait: new messages are refused until they are stored.
    public func refusing(past bound: Int) -> Bool {
        failing.load(ordering: .relaxed) && waiting.load(ordering: .relaxed) >= bound
    }
}

/// Commits history on a thread of its own, in batches: rows handed over are written within
/// `interval` seconds (100 ms by default: a `kill -9` loses at most that), and `committed`
/// is told the highest msgid each commit made durable, so echoes waiting for it can go.
/// A commit that fails is tried again, for as long as it takes: a row is never given up
/// (its sender's echo waits for it); `health` says meanwhile that storing fails.
public final class HistoryWriter: Sendable {
    private let pending = BatchQueue<HistoryRow>()
    private let stats = Locked<(rows: Int, commits: Int, failures: Int)>((0, 0, 0))
    public let health: HistoryHealth
    /// Changes to the saved rooms, written before the rows that came after them: an echo that
    /// waited for its commit means the room's rules set before it are stored too.
    private let roomChanges = Locked<[(key: String, change: RoomStore.Change)]>([])
    /// Rows to delete (REDACT), after every row handed over before them.
    private let forgotten = Locked<[Edit]>([])

    /// A change to rows already handed over: applied after them.
    enum Edit {
        case forget(target: String, msgid: Int64)
        case rename(from: String, to: String)
        case marker(account: String, target: String, time: Int64)
    }

    /// `path`: the database file; `synchronous`: SQLite's `synchronous` (NORMAL survives a
    /// process crash, FULL a power loss too). `retention`: every ten minutes rows older than
    /// `days` and past `perTarget` per conversation are pruned, a few conversations between
    /// commits, so new messages are not held up.
    public init(path: String, synchronous: String = "NORMAL", interval: Double = 0.1,
                committed: @escaping @Sendable (Int64) -> Void, failed: @escaping @Sendable (String) -> Void,
                retention: (days: Int, perTarget: Int)? = nil, health: HistoryHealth = HistoryHealth(),
                beforeCommit: (@Sendable () -> Void)? = nil) throws(Database.Failure) {
        self.health = health
        let database = try Database(path: path, serialized: false)
        try database.execute("PRAGMA synchronous = \(synchronous)")
        // Checkpoints (the WAL copied into the database, two fsyncs) on a thread of their own:
        // run by the writer every 1,000 pages, each held the commit it ran in, and every echo
        // waiting on that commit, for its fsyncs.
        try database.execute("PRAGMA wal_autocheckpoint = 0")
        // Appends touch the right edge of each target's keys: 512 KiB of pages is plenty (the
        // default 2 MiB filled in a flood and stayed, a quarter of history's peak memory).
        try database.execute("PRAGMA cache_size = -512")
        let store = try HistoryStore(database: database)
        let box = StoreBox(store)
        let checkpointer = StoreBox(try HistoryStore(database: try Database(path: path, serialized: false)))
        Threads.start(name: "chat-tui checkpoint") { [self] in checkpoints(checkpointer.store.database, failed: failed) }
        Threads.start(name: "chat-tui history") { [self] in
            run(box.store, interval: interval, committed: committed, failed: failed, retention: retention, beforeCommit: beforeCommit)
        }
    }

    /// Why nothing could be stored in `directory` now (a full disk, no permission), or nil:
    /// 64 KiB written, synced and removed.
    public static func writeProblem(in directory: String) -> String? {
        let path = directory + "/.chat-tui-write-check"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        defer { close(fd); unlink(path) }
        let block = [UInt8](repeating: 0, count: 64 * 1024)
        var offset = 0
        while offset < block.count {
            // A short write is followed by one that says why (ENOSPC, EFBIG).
            let written = block.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 { return String(cString: strerror(errno)) }
            if written == 0 { return "nothing could be written" }
            offset += written
        }
        if fsync(fd) != 0 { return String(cString: strerror(errno)) }
        return nil
    }

    public func append(roomChanges changes: [(key: String, change: RoomStore.Change)]) {
        roomChanges.withLock { $0 += changes }
        pending.wake()
    }

    public func forget(target: String, msgid: Int64) {
        forgotten.withLock { $0.append(.forget(target: target, msgid: msgid)) }
        pending.wake()
    }

    public func rename(from old: String, to new: String) {
        forgotten.withLock { $0.append(.rename(from: old, to: new)) }
        pending.wake()
    }

    /// A read marker moved (the loop holds it already; this keeps it across restarts).
    public func setReadMarker(account: String, target: String, time: Int64) {
        forgotten.withLock { $0.append(.marker(account: account, target: target, time: time)) }
        pending.wake()
    }

    public func append(_ rows: [HistoryRow]) {
        health.waiting.add(rows.count, ordering: .relaxed)
        pending.append(rows)
    }

    /// Writes what is pending, then stops the thread (and the checkpoints, after a last one).
    public func stop() {
        pending.stopAndWait()
        checkpointing.withLock { $0.stopping = true }
        checkpointWake.signal()
        checkpointDone.wait()
    }

    private let checkpointing = Locked<(commits: Int, stopping: Bool)>((0, false))
    private let checkpointWake = Semaphore()
    private let checkpointDone = Semaphore()

    /// Once a second when something was committed, and at the end: a PASSIVE checkpoint, which
    /// never waits for the writer nor makes it wait; the WAL holds about a second of rows.
    private func checkpoints(_ database: Database, failed: @Sendable (String) -> Void) {
        var failing = false
        while true {
            _ = checkpointWake.wait(seconds: 1)
            let (commits, stopping) = checkpointing.withLock { state in
                defer { state.commits = 0 }
                return state
            }
            if commits > 0 || stopping {
                do {
                    try database.execute("PRAGMA wal_checkpoint(PASSIVE)")
                    if failing { failed("history: checkpoints work again") }
                    failing = false
                } catch {
                    if !failing { failed("history: the write-ahead log cannot be checkpointed (\(error)); it grows until it can") }
                    failing = true
                }
            }
            if stopping { break }
        }
        checkpointDone.signal()
    }

    public var counts: (rows: Int, commits: Int, failures: Int) { stats.withLock { $0 } }

    /// Rows in one take that mean a flood, and how long the writer then gathers more.
    static let floodRows = 8
    static let floodGather = 0.002

    private func run(_ store: HistoryStore, interval: Double, committed: @Sendable (Int64) -> Void,
                     failed: @Sendable (String) -> Void, retention: (days: Int, perTarget: Int)?, beforeCommit: (@Sendable () -> Void)?) {
        var lastPrune = Monotonic.now()
        var failures = 0
        var firstFailure = 0.0
        var toPrune: [String] = []
        var cutoff: Int64 = 0
        var pruned = 0
        let rooms = try? RoomStore(database: store.database)
        var roomsFailing = false
        var editsFailing = false
        // A deleted message's bytes are overwritten, not left in a free page (issue 43, item 10):
        // set on the writer's connection, the one that deletes.
        _ = try? store.database.execute("PRAGMA secure_delete = ON")
        while true {
            // Deletions asked for before the rows are taken: every row they name is among those
            // rows or committed already.
            let forget = forgotten.withLock { taken in defer { taken.removeAll() }; return taken }
            // A backlog: rows came in while the last commit ran (they wait already, the writer
            // does not). Paced traffic, even a burst of many senders at once, finds none.
            let backlog = pending.hasItems
            var (rows, stopped) = pending.take(waiting: interval)
            // A flood (a backlog of many rows): gather a little longer, so one commit carries
            // more rows (fewer WAL pages written again, fewer wake-ups of the loop for the output
            // waiting on it). A line on a quiet server, or a paced room's burst, is committed at
            // once: its echo and its deliveries wait for this commit.
            if !stopped && backlog && rows.count >= Self.floodRows {
                usleep(UInt32(Self.floodGather * 1e6))
                let more = pending.takeNow()
                rows += more.items
                stopped = more.stopped
            }
            // The rooms' changes first: they came before these rows (or with them).
            let changes = roomChanges.withLock { taken in defer { taken.removeAll() }; return taken }
            if !changes.isEmpty, let rooms {
                do {
                    try rooms.apply(changes)
                    health.roomChangesCommitted.add(changes.count, ordering: .releasing)
                    if roomsFailing { failed("rooms: the saved rooms are written again") }
                    roomsFailing = false
                } catch {
                    if !roomsFailing { failed("rooms: cannot save \(changes.count) changes to the saved rooms (\(error)); trying again") }
                    roomsFailing = true
                    if !stopped { roomChanges.withLock { $0.insert(contentsOf: changes, at: 0) } }
                }
            }
            if !rows.isEmpty {
                beforeCommit?()
                do {
                    try store.insert(rows)
                    stats.withLock { $0.rows += rows.count; $0.commits += 1 }
                    checkpointing.withLock { $0.commits += 1 }
                    let highest = rows.map(\.msgid).max()!
                    health.committed.store(max(health.committed.load(ordering: .relaxed), highest), ordering: .releasing)
                    health.waiting.subtract(rows.count, ordering: .relaxed)
                    if failures > 0 {
                        failed("history: storing again after \(failures) failed commits over \(Int(Monotonic.now() - firstFailure)) s; nothing was lost")
                        failures = 0
                        health.failing.store(false, ordering: .releasing)
                    }
                    committed(highest)
                } catch {
                    stats.withLock { $0.failures += 1 }
                    if failures == 0 {
                        firstFailure = Monotonic.now()
                        health.failing.store(true, ordering: .releasing)
                        failed("history: \(rows.count) rows not stored yet (\(error)); trying again until they are (their senders' echoes wait)")
                    } else if failures % 60 == 0 {
                        failed("history: still cannot store \(health.waiting.load(ordering: .relaxed)) rows (\(error)); trying again")
                    }
                    failures += 1
                    if stopped {
                        // Stopping: nobody was told these are kept (their echoes waited), and the log says so.
                        failed("history: \(rows.count) rows not stored at shutdown (\(error)); their senders saw no echo")
                        pending.writerFinished()
                        return
                    }
                    // Tried again, with what comes meanwhile, after a pause that grows to a second.
                    pending.putBack(rows)
                    if !forget.isEmpty { forgotten.withLock { $0.insert(contentsOf: forget, at: 0) } }
                    usleep(UInt32(min(1.0, interval * Double(min(failures, 10))) * 1e6))
                    continue
                }
            }
            if !forget.isEmpty {
                do {
                    try store.database.execute("BEGIN")
                    for edit in forget {
                        switch edit {
                        case .forget(let target, let msgid): try store.forget(target: target, msgid: msgid)
                        case .rename(let old, let new): try store.rename(from: old, to: new)
                        case .marker(let account, let target, let time): _ = try store.setReadMarker(account: account, target: target, time: time)
                        }
                    }
                    try store.database.execute("COMMIT")
                    if editsFailing { failed("history: deletions, renames and read markers are written again") }
                    editsFailing = false
                    // And the old pages in the WAL go too: a checkpoint that truncates it (busy
                    // readers can stop it; the next deletion's checkpoint, or the next start, ends it).
                    if forget.contains(where: { if case .forget = $0 { true } else { false } }) {
                        _ = try? store.database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                    }
                } catch {
                    _ = try? store.database.execute("ROLLBACK")
                    // Said once a burst; tried again with the next turn.
                    if !editsFailing || stopped {
                        failed("history: \(forget.count) deletions, renames or read markers not applied \(stopped ? "at shutdown" : "yet") (\(error))\(stopped ? "" : "; trying again")")
                    }
                    editsFailing = true
                    if !stopped { forgotten.withLock { $0.insert(contentsOf: forget, at: 0) } }
                }
            }
            if let retention {
                if toPrune.isEmpty && Monotonic.now() - lastPrune > 600 {
                    lastPrune = Monotonic.now()
                    cutoff = Int64(WallClock.now() * 1000 - Double(retention.days) * 86_400_000) << 16
                    do {
                        toPrune = try store.targets()
                    } catch {
                        failed("history: old rows not pruned this time (\(error)); tried again in 10 minutes")
                    }
                }
                // A few conversations a turn, between commits. A failure is said, once a round.
                var pruneFailure: String?
                for target in toPrune.prefix(20) {
                    do {
                        pruned += try store.prune(target, olderThan: cutoff, keep: retention.perTarget)
                    } catch {
                        pruneFailure = pruneFailure ?? "history: old rows not pruned (\(error)); tried again in 10 minutes"
                    }
                }
                if let pruneFailure { failed(pruneFailure) }
                toPrune.removeFirst(min(20, toPrune.count))
                if toPrune.isEmpty && pruned > 0 {
                    failed("history: pruned \(pruned) rows older than \(retention.days) days or past \(retention.perTarget) per conversation")
                    pruned = 0
                }
            }
            if stopped {
                pending.writerFinished()
                return
            }
            // No pause between commits: nothing reaches anyone before its commit, so a pause
            // here was everyone's latency (25 ms a message). Under load the rows that come while
            // one commit runs make the next one's batch.
        }
    }
}

/// Hands a store to the one thread that uses it from then on (a writer's, a worker's).
public final class StoreBox: @unchecked Sendable {
    public let store: HistoryStore
    public init(_ store: HistoryStore) { self.store = store }
}
