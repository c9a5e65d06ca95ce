import Foundation
import Testing
import ChatStore

@Suite("the client's log")
struct ClientLogTests {
    func log() throws -> ClientLog {
        try ClientLog(path: NSTemporaryDirectory() + "chat-tui-client-log-\(UUID().uuidString).db")
    }

    func line(_ text: String, in conversation: String = "#lobby", at time: Double, msgid: String? = nil, sender: String = "bob") -> LoggedLine {
        LoggedLine(network: "irc.example:6667", conversation: conversation, name: conversation, time: time, kind: "message",
                   sender: sender, text: text, msgid: msgid, own: false)
    }

    @Test("search finds English words, Chinese inside a run of Han characters, and emoji; every word must be there")
    func search() throws {
        let log = try log()
        try log.insertNow([
            line("the release is tomorrow", at: 1),
            line("我们明天发布新版本，大家辛苦了", at: 2),
            line("party time 🎉 after the release", at: 3),
            line("unrelated chatter", at: 4, sender: "carol"),
        ])
        #expect(try log.search(["release"]).map(\.time) == [3, 1], "newest first")
        #expect(try log.search(["发布新版本"]).map(\.time) == [2], "five Han characters inside a longer run (trigram index)")
        #expect(try log.search(["明天"]).map(\.time) == [2], "two characters: found by a scan")
        #expect(try log.search(["🎉"]).map(\.time) == [3])
        #expect(try log.search(["release", "party"]).map(\.time) == [3], "every word")
        #expect(try log.search(["RELEASE"]).map(\.time) == [3, 1], "case does not matter")
        #expect(try log.search(["\"unrelated"]).isEmpty, "a quote is text, not FTS syntax")
        // /lastlog carol: what carol said too, whatever its words (any case), and lines naming her.
        try log.insertNow([line("carol: lunch?", at: 5)])
        #expect(try log.search(["Carol"], sender: "Carol").map(\.time) == [5, 4])
        #expect(try log.search(["carol"]).map(\.time) == [5], "without a sender, the text alone")
        #expect(try log.search(["ch"], sender: "carol").map(\.time) == [5, 4], "a short word (a scan) or the sender")
    }

    @Test("a line with a msgid is logged once; recent gives each conversation's last lines oldest first; around a hit")
    func recentAndAround() throws {
        let log = try log()
        try log.insertNow([line("one", at: 1, msgid: "m1"), line("one again", at: 1, msgid: "m1"), line("two", at: 2), line("three", at: 3)])
        try log.insertNow([line("elsewhere", in: "bob", at: 5)])
        let recent = try log.recent(network: "irc.example:6667", lines: 2)
        #expect(recent.map(\.conversation) == ["bob", "#lobby"], "the most recent conversation first")
        #expect(recent[1].lines.map(\.text) == ["two", "three"])
        #expect(try log.around(network: "irc.example:6667", conversation: "#lobby", time: 2, before: 1, after: 1).map(\.text) == ["one", "two", "three"])
        #expect(try log.count() == 4)
    }

    @Test("recent: the most recent conversations of that network only, at most as many as asked, each named as its newest line says")
    func recentConversations() throws {
        let log = try log()
        var lines = (0..<30).map { n in line("line \(n)", in: "#room\(n % 6)", at: Double(n)) }
        var renamed = line("newest", in: "alice", at: 40)
        renamed.name = "Alice"
        lines += [line("older", in: "alice", at: 7), renamed]
        lines.append(LoggedLine(network: "other:6667", conversation: "#elsewhere", name: "#elsewhere", time: 99, kind: "message",
                                sender: "x", text: "another network", msgid: nil, own: false))
        try log.insertNow(lines)
        let recent = try log.recent(network: "irc.example:6667", conversations: 4, lines: 3)
        #expect(recent.map(\.conversation) == ["alice", "#room5", "#room4", "#room3"])
        #expect(recent.map(\.name) == ["Alice", "#room5", "#room4", "#room3"])
        #expect(recent[1].lines.map(\.text) == ["line 17", "line 23", "line 29"])
        #expect(try log.recent(network: "nowhere:6667").isEmpty)
    }

    @Test("a deleted message (REDACT) leaves the log and its search index; the same msgid elsewhere stays")
    func deletion() throws {
        let log = try log()
        try log.insertNow([line("secret plans for friday", at: 1, msgid: "m1"), line("friday is fine", at: 2, msgid: "m2"),
                           line("secret plans elsewhere", in: "#other", at: 3, msgid: "m1")])
        try log.insertNow([LoggedLine(network: "irc.example:6667", conversation: "#lobby", name: "", time: 0, kind: ClientLog.deletion,
                                      sender: nil, text: "", msgid: "m1", own: false)])
        #expect(try log.search(["friday"]).map(\.text) == ["friday is fine"])
        #expect(try log.search(["secret"]).map(\.conversation) == ["#other"])
        #expect(try log.count() == 2)
    }

    @Test("lines reach the search index a batch at a time: a line and its deletion in one batch, lines after it, an old log's per-line trigger dropped; the index stays whole")
    func indexedByBatch() throws {
        let path = NSTemporaryDirectory() + "chat-tui-client-log-\(UUID().uuidString).db"
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            // A log from before: its trigger indexed each line as it went in.
            let old = try Database(path: path)
            try old.execute("""
                CREATE TABLE lines (
                    id INTEGER PRIMARY KEY, network TEXT NOT NULL, conversation TEXT NOT NULL, name TEXT NOT NULL, time REAL NOT NULL,
                    kind TEXT NOT NULL, sender TEXT, text TEXT NOT NULL, msgid TEXT, own INTEGER NOT NULL);
                CREATE VIRTUAL TABLE lines_fts USING fts5(text, content='lines', content_rowid='id', tokenize='trigram');
                CREATE TRIGGER lines_removed AFTER DELETE ON lines BEGIN
                    INSERT INTO lines_fts(lines_fts, rowid, text) VALUES ('delete', old.id, old.text);
                END;
                CREATE TRIGGER lines_added AFTER INSERT ON lines BEGIN INSERT INTO lines_fts(rowid, text) VALUES (new.id, new.text); END;
                INSERT INTO lines (network, conversation, name, time, kind, sender, text, msgid, own)
                    VALUES ('irc.example:6667', '#lobby', '#lobby', 0.5, 'message', 'bob', 'an old line about cake', NULL, 0);
                """)
        }
        let log = try ClientLog(path: path)
        try log.insertNow([line("gone before it was ever searched", at: 1, msgid: "m1"),
                           LoggedLine(network: "irc.example:6667", conversation: "#lobby", name: "", time: 0, kind: ClientLog.deletion,
                                      sender: nil, text: "", msgid: "m1", own: false),
                           line("cake after the deletion", at: 2, msgid: "m2")])
        try log.insertNow([line("more cake", at: 3, msgid: "m3")])
        #expect(try log.search(["cake"]).map(\.time) == [3, 2, 0.5])
        #expect(try log.search(["searched"]).isEmpty)
        let database = try Database(path: path)
        #expect(try database.query("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name = 'lines_added'").isEmpty)
        try database.execute("INSERT INTO lines_fts(lines_fts) VALUES ('integrity-check')")
        #expect(try database.query("SELECT count(*) FROM lines_fts WHERE lines_fts MATCH 'cake'") == [[.integer(3)]])
    }

    @Test("a flood waits for the writer: the backlog never passes its bound, and every line reaches the log")
    func backlogBounded() async throws {
        let log = try ClientLog(path: NSTemporaryDirectory() + "chat-tui-client-log-\(UUID().uuidString).db", backlogBound: 100)
        var most = 0
        for i in 0..<3000 {
            await log.waitWhileBehind()
            log.append([line("line \(i) of the flood", at: Double(i))])
            most = max(most, log.backlog)
        }
        log.close()
        #expect(most <= 100)
        #expect(try log.count() == 3000)
        await log.waitWhileBehind() // a closed log holds nobody
    }

    /// Waits (polling the log, never asserting on time) until `done`, for at most 20 s.
    func eventually(_ done: () throws -> Bool) async throws -> Bool {
        for _ in 0..<2000 {
            if try done() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    @Test("a batch the database refuses is kept and tried again: said while it waits, every line there once it can be written")
    func failedBatchKept() async throws {
        let path = NSTemporaryDirectory() + "chat-tui-client-log-\(UUID().uuidString).db"
        let log = try ClientLog(path: path)
        // Another connection makes every insert fail, as a full disk or a damaged file would.
        let other = try Database(path: path)
        let refuse = "CREATE TRIGGER refuse BEFORE INSERT ON lines BEGIN SELECT RAISE(ABORT, 'no room (test)'); END"
        try other.execute(refuse)
        log.append((0..<50).map { line("line \($0)", at: Double($0)) })
        #expect(try await eventually { log.writeProblem != nil }, "the failure is said")
        #expect(log.writeProblem?.contains("no room (test)") == true)
        #expect(try log.count() == 0 && log.backlog == 50, "the batch waits, whole")
        try other.execute("DROP TRIGGER refuse")
        #expect(try await eventually { try log.count() == 50 && log.writeProblem == nil }, "written on a later turn")
        // The quit's sync keeps a refused batch too.
        try other.execute(refuse)
        log.append([line("at the quit", at: 60)])
        log.sync()
        #expect(try log.count() == 50 && log.writeProblem != nil)
        try other.execute("DROP TRIGGER refuse")
        log.sync()
        #expect(try await eventually { try log.count() == 51 })
        log.close()
    }
}
