import Foundation
import Testing
import ChatStore
import ChatTransport

@Suite("the server's history store")
struct HistoryStoreTests {
    func store() throws -> HistoryStore {
        try HistoryStore(database: Database(path: NSTemporaryDirectory() + "chat-tui-history-store-\(UUID().uuidString).db"))
    }

    func row(_ n: Int64, _ target: String = "#a") -> HistoryRow {
        HistoryRow(msgid: n << 16, timeMilliseconds: n, target: target, command: "PRIVMSG", line: ":x!x@h PRIVMSG \(target) :\(n)")
    }

    @Test("retention: rows older than the cut-off go, and each target keeps at most its newest N")
    func prune() throws {
        let history = try store()
        try history.insert((1...10).map { row($0) } + (1...3).map { row($0, "#b") })
        #expect(try history.prune(olderThan: 3 << 16, keepPerTarget: 5) == 2 + 3 + 2, "#a: 1, 2 by age, 3–5 past the cap; #b: 1, 2 by age")
        #expect(try history.rows("#a", .after, 0, limit: 100, kinds: .all).map(\.timeMilliseconds) == [6, 7, 8, 9, 10])
        #expect(try history.rows("#b", .after, 0, limit: 100, kinds: .all).map(\.timeMilliseconds) == [3])
    }

    @Test("a rename moves rows and read markers even where the new name has them already (a QUIT in both rooms, a marker set first): never a conflict")
    func renameWithConflicts() throws {
        let history = try store()
        try history.insert([row(1), row(2), row(2, "#b"), row(3, "#b")])
        _ = try history.setReadMarker(account: "alice", target: "#a", time: 50)
        _ = try history.setReadMarker(account: "alice", target: "#b", time: 40)
        _ = try history.setReadMarker(account: "bob", target: "#a", time: 10)
        try history.rename(from: "#a", to: "#b")
        #expect(try history.rows("#b", .after, 0, limit: 100, kinds: .all).map(\.timeMilliseconds) == [1, 2, 3])
        #expect(try history.rows("#a", .after, 0, limit: 100, kinds: .all).isEmpty)
        #expect(try history.readMarker(account: "alice", target: "#b") == 50, "the later marker")
        #expect(try history.readMarker(account: "bob", target: "#b") == 10)
        #expect(try history.readMarker(account: "alice", target: "#a") == nil)
        try history.forget(target: "#b", msgid: 2 << 16)
        #expect(try history.rows("#b", .after, 0, limit: 100, kinds: .all).map(\.timeMilliseconds) == [1, 3])
    }

    @Test("a QUIT kept in two rooms shares its msgid; BEFORE and AFTER are strict and ordered")
    func sharedMsgid() throws {
        let history = try store()
        try history.insert([row(5, "#a"), row(5, "#b"), row(6, "#a")])
        #expect(try history.rows("#a", .before, 6 << 16, limit: 10, kinds: .all).map(\.timeMilliseconds) == [5])
        #expect(try history.rows("#b", .after, 4 << 16, limit: 10, kinds: .texts).map(\.timeMilliseconds) == [5])
        #expect(try history.count() == 3)
    }

    @Test("rows go in 32 to a statement with the rest one by one; a row stored twice is kept once, whole")
    func chunkedInsert() throws {
        let history = try store()
        try history.insert((1...70).map { row($0) })
        try history.insert((60...100).map { row($0) } + (1...5).map { row($0, "#b") })
        let stored = try history.rows("#a", .after, 0, limit: 200, kinds: .all)
        #expect(stored == (1...100).map { row($0) })
        #expect(try history.rows("#b", .after, 0, limit: 200, kinds: .all) == (1...5).map { row($0, "#b") })
        #expect(try history.count() == 105)
    }

    @Test("messages among 20,000 membership events: a read of messages walks the messages' table alone (the plan says so), all events merge both tables")
    func messagesAmongEvents() throws {
        let history = try store()
        var rows: [HistoryRow] = []
        for n in Int64(1)...20_000 {
            let command = n == 7 ? "PRIVMSG" : n == 9 ? "TAGMSG" : n % 2 == 0 ? "JOIN" : "PART"
            rows.append(HistoryRow(msgid: n << 16, timeMilliseconds: n, target: "#a", command: command, line: ":x!x@h \(command) #a"))
        }
        try history.insert(rows)
        #expect(try history.rows("#a", .before, .max, limit: 100, kinds: .messages).map(\.timeMilliseconds) == [7, 9])
        #expect(try history.rows("#a", .before, .max, limit: 100, kinds: .texts).map(\.timeMilliseconds) == [7])
        #expect(try history.rows("#a", .after, 7 << 16, limit: 100, kinds: .messages).map(\.timeMilliseconds) == [9])
        #expect(try history.rows("#a", .before, .max, limit: 3, kinds: .all).map(\.timeMilliseconds) == [19_998, 19_999, 20_000])
        #expect(try history.rows("#a", .after, 19_997 << 16, limit: 2, kinds: .all).map(\.timeMilliseconds) == [19_998, 19_999])
        #expect(try history.count() == 20_000)
        for direction in [HistoryStore.Direction.before, .after] {
            for kinds in [HistoryStore.Kinds.messages, .texts] {
                let plan = try history.plan(direction, kinds: kinds)
                #expect(plan.contains("SEARCH history USING PRIMARY KEY") && !plan.contains("history_events") && !plan.contains("TEMP B-TREE"), "\(plan)")
            }
            let plan = try history.plan(direction, kinds: .all)
            #expect(plan.contains("MERGE") && plan.contains("SEARCH history_events USING PRIMARY KEY") && !plan.contains("TEMP B-TREE"), "\(plan)")
        }
        let tables = try history.database.query("SELECT count(*) FROM history").first?.first
        #expect(tables == .integer(2), "the messages alone in `history`")
    }
}

extension HistoryStoreTests {
    @Test("a database from before the split (one table, the messages' partial index in either of its forms) is moved over once: events to their own table, the index dropped, every row still read")
    func oldOneTableDatabaseSplit() throws {
        for index in ["command IN ('PRIVMSG', 'NOTICE', 'TAGMSG')", "(command = 'PRIVMSG' OR command = 'NOTICE' OR command = 'TAGMSG')"] {
            let path = NSTemporaryDirectory() + "chat-tui-old-index-\(UUID().uuidString).db"
            defer { try? FileManager.default.removeItem(atPath: path) }
            do {
                let database = try Database(path: path)
                try database.execute("""
                    CREATE TABLE history (target TEXT NOT NULL, msgid INTEGER NOT NULL, time INTEGER NOT NULL, command TEXT NOT NULL, line TEXT NOT NULL,
                        PRIMARY KEY (target, msgid)) WITHOUT ROWID;
                    CREATE INDEX history_messages ON history (target, msgid) WHERE \(index);
                    INSERT INTO history VALUES ('#a', 65536, 1, 'PRIVMSG', ':x!x@h PRIVMSG #a :kept'), ('#a', 131072, 2, 'JOIN', ':x!x@h JOIN #a'),
                        ('#a', 196608, 3, 'TAGMSG', '@+draft/react=x :x!x@h TAGMSG #a');
                    """)
            }
            let history = try HistoryStore(database: try Database(path: path))
            #expect(try history.database.query("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'history%'").isEmpty)
            #expect(try history.rows("#a", .before, .max, limit: 10, kinds: .messages).map(\.timeMilliseconds) == [1, 3])
            #expect(try history.rows("#a", .before, .max, limit: 10, kinds: .texts).map(\.line) == [":x!x@h PRIVMSG #a :kept"])
            #expect(try history.rows("#a", .after, 0, limit: 10, kinds: .all).map(\.command) == ["PRIVMSG", "JOIN", "TAGMSG"])
            #expect(try history.database.query("SELECT command FROM history_events") == [[.text("JOIN")]])
            #expect(try history.latest(in: "#a") == 196608 && history.contains(msgid: 131072, in: "#a") && history.msgid(atOrAfter: 2, in: "#a") == 131072)
            // Opened again: nothing to do (the database is only read).
            _ = try HistoryStore(database: try Database(path: path))
            #expect(try history.count() == 3)
        }
    }
}

@Suite("the history writer's checkpoints")
struct HistoryCheckpointTests {
    @Test("checkpoints run on their own thread, soon after commits, not every 1,000 pages: the database file alone (no WAL beside it) comes to hold the rows while the writer runs")
    func checkpointedWhileRunning() throws {
        let directory = NSTemporaryDirectory() + "chat-tui-checkpoint-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/server.db"
        let committed = Semaphore()
        let writer = try HistoryWriter(path: path, committed: { msgid in if msgid == 500 << 16 { committed.signal() } }, failed: { _ in })
        defer { writer.stop() }
        writer.append((Int64(1)...500).map { n in
            HistoryRow(msgid: n << 16, timeMilliseconds: n, target: "#a", command: "PRIVMSG", line: ":x!x@h PRIVMSG #a :line \(n)")
        })
        #expect(committed.wait(seconds: 30))
        // 500 short rows are some 40 pages: SQLite's own checkpoint would wait for 1,000. A copy of
        // the file alone, as a backup without its -wal would be, until it holds them (or 30 s).
        let copy = directory + "/copy.db"
        var count: Database.Value?
        for _ in 0..<600 where count != .integer(500) {
            try? FileManager.default.removeItem(atPath: copy)
            try FileManager.default.copyItem(atPath: path, toPath: copy)
            count = (try? Database(path: copy).query("SELECT COUNT(*) FROM history"))?.first?.first
            if count != .integer(500) { _ = Semaphore().wait(seconds: 0.05) }
        }
        #expect(count == .integer(500))
    }
}
