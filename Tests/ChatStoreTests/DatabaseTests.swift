import Foundation
import Testing
import ChatStore

/// `Database.query` keeps its prepared statements between calls: a cached statement must come
/// back clean after a failure, follow a schema change, and the cache must not grow with SQL
/// made on the fly.
@Suite("database statements")
struct DatabaseTests {
    func database() throws -> Database {
        try Database(path: NSTemporaryDirectory() + "chat-tui-db-\(UUID().uuidString).db")
    }

    @Test("the same SQL after a constraint failure runs cleanly, with its new parameters")
    func afterFailure() throws {
        let db = try database()
        try db.execute("CREATE TABLE t (name TEXT PRIMARY KEY, n INTEGER)")
        let insert = "INSERT INTO t (name, n) VALUES (?, ?)"
        _ = try db.query(insert, [.text("a"), .integer(1)])
        #expect(throws: Database.Failure.self) { _ = try db.query(insert, [.text("a"), .integer(2)]) }
        _ = try db.query(insert, [.text("b"), .integer(3)])
        #expect(try db.query("SELECT name, n FROM t ORDER BY name") == [[.text("a"), .integer(1)], [.text("b"), .integer(3)]])
        // Fewer parameters than last time: nothing of the last binding is left over.
        #expect(try db.query("SELECT count(*) FROM t WHERE name = ?", [.text("b")]) == [[.integer(1)]])
        #expect(try db.query("SELECT count(*) FROM t WHERE name = ?", []) == [[.integer(0)]])
    }

    @Test("a cached SELECT sees a column added after it was first prepared")
    func schemaChange() throws {
        let db = try database()
        try db.execute("CREATE TABLE t (a INTEGER)")
        _ = try db.query("INSERT INTO t VALUES (1)")
        #expect(try db.query("SELECT * FROM t") == [[.integer(1)]])
        try db.execute("ALTER TABLE t ADD COLUMN b TEXT DEFAULT 'x'")
        #expect(try db.query("SELECT * FROM t") == [[.integer(1), .text("x")]])
    }

    @Test("hundreds of distinct statements answer correctly (the cache keeps at most 64)")
    func manyStatements() throws {
        let db = try database()
        for n in 0..<300 {
            #expect(try db.query("SELECT \(n) + ?", [.integer(1)]) == [[.integer(Int64(n + 1))]])
        }
        for n in stride(from: 0, to: 300, by: 7) {
            #expect(try db.query("SELECT \(n) + ?", [.integer(2)]) == [[.integer(Int64(n + 2))]])
        }
    }
}
