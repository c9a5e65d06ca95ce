import Synchronization
import ChatTransport

/// One line the client showed, as its log keeps it.
public struct LoggedLine: Sendable, Equatable {
    public var id: Int64 = 0
    /// `host:port` of the server.
    public var network: String
    /// The conversation's folded key, and its name as shown.
    public var conversation: String
    public var name: String
    public var time: Double
    public var kind: String
    public var sender: String?
    public var text: String
    public var msgid: String?
    public var own: Bool

    public init(network: String, conversation: String, name: String, time: Double, kind: String, sender: String?,
                text: String, msgid: String?, own: Bool) {
        self.network = network
        self.conversation = conversation
        self.name = name
        self.time = time
        self.kind = kind
        self.sender = sender
        self.text = text
        self.msgid = msgid
        self.own = own
    }
}

/// The client's own log of every line it showed, per network and conversation, with full-text
/// search (SQLite FTS5). The tokenizer is `trigram`: it indexes every three characters, so a
/// search finds Chinese, Japanese or emoji inside a run of text as well as English words
/// (`unicode61` would take a run of Han characters as one word and miss anything inside it);
/// queries shorter than three characters fall back to a scan (`LIKE`).
/// Writes go through a thread that commits in batches (everything queued since the last
/// commit); reads (start-up, search, the lines around a hit) run on a reader thread of their
/// own when asked through `read` (the client's actor waits for them without blocking). The trigram index makes a line cost tens of
/// microseconds to write, slower than a flood arrives, so the queue has a bound: past it the
/// client stops reading from the server (`waitWhileBehind`) until the writer has taken the
/// backlog, and TCP slows the sender. Nothing shown is dropped from the log.
public final class ClientLog: Sendable {
    private let pending: BatchQueue<LoggedLine>
    private let reader: ReaderBox
    /// Reads asked for with `read`, one after another, on the thread "chat-tui log reads".
    private let reads = BatchQueue<@Sendable () -> Void>()

    /// `backlogBound`: lines queued at which `waitWhileBehind` waits (10,000: a few MiB, well
    /// under a second of the writer's time).
    public init(path: String, backlogBound: Int = 10_000) throws(Database.Failure) {
        pending = BatchQueue(bound: backlogBound)
        let writer = try Database(path: path)
        try Self.createTables(writer)
        let readerDatabase = try Database(path: path)
        // A small page cache each (256 KiB, not SQLite's 2 MiB): the log is appended to and
        // searched now and then; the pages it rereads are in the kernel's cache anyway.
        for database in [writer, readerDatabase] { try database.execute("PRAGMA cache_size = -256") }
        reader = ReaderBox(readerDatabase)
        let box = ReaderBox(writer)
        Threads.start(name: "chat-tui log") { [self] in run(box.database) }
        Threads.start(name: "chat-tui log reads") { [reads] in
            while true {
                let (jobs, stopped) = reads.take(waiting: 5)
                for job in jobs { job() }
                if stopped { reads.writerFinished(); return }
            }
        }
    }

    /// Runs `body` (a read: `recent`, `search`, `around`, or `sync`) on the log's reader
    /// thread; the caller waits without holding its thread.
    public func read<T: Sendable>(_ body: @escaping @Sendable (ClientLog) throws(Database.Failure) -> T) async -> Result<T, Database.Failure> {
        await withCheckedContinuation { continuation in
            reads.append([{ [self] in
                do throws(Database.Failure) { continuation.resume(returning: .success(try body(self))) } catch { continuation.resume(returning: .failure(error)) }
            }])
        }
    }

    static func createTables(_ database: Database) throws(Database.Failure) {
        try database.execute("""
            CREATE TABLE IF NOT EXISTS lines (
                id INTEGER PRIMARY KEY, network TEXT NOT NULL, conversation TEXT NOT NULL, name TEXT NOT NULL, time REAL NOT NULL,
                kind TEXT NOT NULL, sender TEXT, text TEXT NOT NULL, msgid TEXT, own INTEGER NOT NULL);
            CREATE INDEX IF NOT EXISTS lines_place ON lines(network, conversation, time);
            CREATE UNIQUE INDEX IF NOT EXISTS lines_msgid ON lines(network, conversation, msgid) WHERE msgid IS NOT NULL;
            CREATE VIRTUAL TABLE IF NOT EXISTS lines_fts USING fts5(text, content='lines', content_rowid='id', tokenize='trigram');
            DROP TRIGGER IF EXISTS lines_added;
            CREATE TRIGGER IF NOT EXISTS lines_removed AFTER DELETE ON lines BEGIN
                INSERT INTO lines_fts(lines_fts, rowid, text) VALUES ('delete', old.id, old.text);
            END;
            """)
    }

    /// The kind of a queued entry that deletes the logged line with its msgid.
    public static let deletion = "deleted"

    /// Queues lines to be written (a line with a msgid already logged is not written twice).
    public func append(_ lines: [LoggedLine]) { pending.append(lines) }

    /// Returns at once while fewer than the bound's lines wait to be written; otherwise when
    /// the writer has taken them (the reader of a flood waits here, so the backlog stays bounded).
    public func waitWhileBehind() async { await pending.waitForRoom() }

    /// Lines queued and not yet taken by the writer.
    public var backlog: Int { pending.count }

    /// Writes what is queued and stops the writer and the reader thread.
    public func close() {
        pending.stopAndWait()
        reads.stopAndWait()
    }

    private func run(_ database: Database) {
        var failedAtStop = 0
        while true {
            pending.waitForItems(0.2)
            // Taken and written under `writing`: `sync` never finds a batch taken and not yet stored.
            let stopped = writing.withLock { written -> Bool in
                written += 1
                let (lines, stopped) = pending.takeNow()
                if !lines.isEmpty, !store(lines, into: database), stopped, failedAtStop < 25 {
                    // Closing with a batch that will not go in: a few more tries (5 s), then it is lost, said.
                    failedAtStop += 1
                    return false
                }
                return stopped
            }
            if stopped {
                pending.writerFinished()
                return
            }
        }
    }

    /// Writes a batch; one that fails is put back in front, to be tried again on the writer's
    /// next turn (a full disk, a locked file), and the failure is kept for `writeProblem`.
    private func store(_ lines: [LoggedLine], into database: Database) -> Bool {
        do {
            try Self.insert(lines, into: database)
            problem.withLock { $0 = nil }
            return true
        } catch {
            pending.putBack(lines)
            problem.withLock { $0 = "the log cannot be written (\(error)); \(pending.count) lines wait and are tried again" }
            return false
        }
    }

    private let problem = Locked<String?>(nil)

    /// Why lines are waiting to be written, while they are (nil once a batch went in).
    public var writeProblem: String? { problem.withLock { $0 } }

    /// New lines reach the search index a batch at a time, not by a trigger per line: a
    /// trigger's insert into FTS5 ran inside a statement savepoint, at which FTS5 writes out
    /// what it holds in memory as a new segment (and merges segments): 135,000 instructions a
    /// line, a third of the client's work in a flood. One statement per batch is one segment.
    static func insert(_ lines: [LoggedLine], into database: Database) throws(Database.Failure) {
        try database.execute("BEGIN")
        do {
            // Every line this batch adds has a larger id than any before it.
            var indexedUpTo = try newestID(database)
            func index() throws(Database.Failure) {
                try database.query("INSERT INTO lines_fts(rowid, text) SELECT id, text FROM lines WHERE id > ?", [.integer(indexedUpTo)])
                indexedUpTo = try newestID(database)
            }
            for line in lines {
                // A deleted message (REDACT): the line goes, from the search index too (its
                // trigger), so what came before it is indexed first. It is in the queue after
                // the line itself, so it finds it.
                if line.kind == Self.deletion {
                    try index()
                    try database.query("DELETE FROM lines WHERE network = ? AND conversation = ? AND msgid = ?",
                                       [.text(line.network), .text(line.conversation), line.msgid.map { .text($0) } ?? .null])
                    // The newest line deleted, its id is given again to the next: counted from here.
                    indexedUpTo = try newestID(database)
                    continue
                }
                try database.query("INSERT OR IGNORE INTO lines (network, conversation, name, time, kind, sender, text, msgid, own) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                   [.text(line.network), .text(line.conversation), .text(line.name), .real(line.time), .text(line.kind),
                                    line.sender.map { .text($0) } ?? .null, .text(line.text), line.msgid.map { .text($0) } ?? .null,
                                    .integer(line.own ? 1 : 0)])
            }
            try index()
            try database.execute("COMMIT")
        } catch {
            _ = try? database.execute("ROLLBACK")
            throw error
        }
    }

    private static func newestID(_ database: Database) throws(Database.Failure) -> Int64 {
        if case .integer(let id)? = try database.query("SELECT MAX(id) FROM lines").first?.first { return id }
        return 0
    }

    /// Writes what is queued now, on the calling thread (on quitting, so nothing shown is lost),
    /// after the batch the writer may be writing: a process that exits right after must not
    /// cut that batch off (with batches of thousands of lines, a quit lost up to 31 of 30,001).
    public func sync() {
        writing.withLock { written in
            written += 1
            let lines = pending.takeNow().items
            if !lines.isEmpty { _ = store(lines, into: reader.database) }
        }
    }

    /// Held while a batch is written, by the writer and by `sync` (the value counts the batches).
    private let writing = Locked(0)

    /// Writes lines now, on the calling thread (the shell's import, tests).
    public func insertNow(_ lines: [LoggedLine]) throws(Database.Failure) {
        try Self.insert(lines, into: reader.database)
    }

    static let columns = "id, network, conversation, name, time, kind, sender, text, msgid, own"

    static func line(_ row: [Database.Value]) -> LoggedLine? {
        guard row.count == 10, case .integer(let id) = row[0], case .text(let network) = row[1], case .text(let conversation) = row[2],
              case .text(let name) = row[3], case .text(let kind) = row[5], case .text(let text) = row[7], case .integer(let own) = row[9] else { return nil }
        let time: Double
        switch row[4] {
        case .real(let value): time = value
        case .integer(let value): time = Double(value)
        default: return nil
        }
        var sender: String?, msgid: String?
        if case .text(let value) = row[6] { sender = value }
        if case .text(let value) = row[8] { msgid = value }
        var line = LoggedLine(network: network, conversation: conversation, name: name, time: time, kind: kind, sender: sender,
                              text: text, msgid: msgid, own: own != 0)
        line.id = id
        return line
    }

    /// The conversations of a network with their last lines (oldest first), most recent conversations first.
    public func recent(network: String, conversations: Int = 50, lines: Int = 100) throws(Database.Failure) -> [(conversation: String, name: String, lines: [LoggedLine])] {
        // Each conversation found by a seek in `lines_place` from the one before (a skip scan
        // SQLite does not make by itself), then its newest line by another: a GROUP BY over
        // every line took 60-120 ms with 100,000 lines before the first frame, this 0.1 ms.
        let found = try reader.database.query("""
            WITH RECURSIVE places(conversation) AS (
                SELECT (SELECT MIN(conversation) FROM lines WHERE network = ?1)
                UNION ALL
                SELECT (SELECT MIN(conversation) FROM lines WHERE network = ?1 AND conversation > places.conversation)
                FROM places WHERE places.conversation IS NOT NULL)
            SELECT places.conversation, newest.name, newest.time FROM places
            JOIN lines AS newest ON newest.id = (SELECT id FROM lines WHERE network = ?1 AND conversation = places.conversation
                                                 ORDER BY time DESC, id DESC LIMIT 1)
            ORDER BY newest.time DESC LIMIT ?2
            """, [.text(network), .integer(Int64(conversations))])
        var result: [(conversation: String, name: String, lines: [LoggedLine])] = []
        for row in found {
            guard case .text(let conversation) = row[0], case .text(let name) = row[1] else { continue }
            let rows = try reader.database.query("SELECT \(Self.columns) FROM lines WHERE network = ? AND conversation = ? ORDER BY time DESC, id DESC LIMIT ?",
                                                 [.text(network), .text(conversation), .integer(Int64(lines))])
            result.append((conversation, name, rows.compactMap(Self.line).reversed()))
        }
        return result
    }

    /// Lines with every word in them, newest first. Words of three characters or more use the
    /// trigram index; shorter ones a scan. With a `sender`, the lines that nickname said too
    /// (any case; a scan of the senders).
    public func search(_ words: [String], limit: Int = 200, sender: String? = nil) throws(Database.Failure) -> [LoggedLine] {
        let words = words.filter { !$0.isEmpty }
        guard !words.isEmpty else { return [] }
        let indexed = words.filter { $0.count >= 3 }
        let scanned = words.filter { $0.count < 3 }
        var conditions: [String] = []
        var parameters: [Database.Value] = []
        if !indexed.isEmpty {
            conditions.append("id IN (SELECT rowid FROM lines_fts WHERE lines_fts MATCH ?)")
            // Each word a phrase (quoted, quotes doubled): no FTS syntax from the user's text.
            parameters.append(.text(indexed.map { "\"" + $0.replacing("\"", with: "\"\"") + "\"" }.joined(separator: " ")))
        }
        for word in scanned {
            conditions.append("instr(lower(text), lower(?)) > 0")
            parameters.append(.text(word))
        }
        var matching = conditions.joined(separator: " AND ")
        if let sender, !sender.isEmpty {
            matching = "(\(matching)) OR lower(sender) = lower(?)"
            parameters.append(.text(sender))
        }
        var sql = "SELECT \(Self.columns) FROM lines WHERE \(matching)"
        sql += " ORDER BY time DESC LIMIT ?"
        parameters.append(.integer(Int64(limit)))
        return try reader.database.query(sql, parameters).compactMap(Self.line)
    }

    /// The lines of a conversation around a time: `before` older ones, the line, and `after` newer ones.
    public func around(network: String, conversation: String, time: Double, before: Int = 20, after: Int = 20) throws(Database.Failure) -> [LoggedLine] {
        let older = try reader.database.query("SELECT \(Self.columns) FROM lines WHERE network = ? AND conversation = ? AND time < ? ORDER BY time DESC LIMIT ?",
                                              [.text(network), .text(conversation), .real(time), .integer(Int64(before))]).compactMap(Self.line)
        let newer = try reader.database.query("SELECT \(Self.columns) FROM lines WHERE network = ? AND conversation = ? AND time >= ? ORDER BY time LIMIT ?",
                                              [.text(network), .text(conversation), .real(time), .integer(Int64(after + 1))]).compactMap(Self.line)
        return older.reversed() + newer
    }

    public func count() throws(Database.Failure) -> Int {
        if case .integer(let n)? = try reader.database.query("SELECT COUNT(*) FROM lines").first?.first { return Int(n) }
        return 0
    }
}

private final class ReaderBox: @unchecked Sendable {
    // SQLite's own lock (FULLMUTEX) serialises the calls.
    let database: Database
    init(_ database: Database) { self.database = database }
}
