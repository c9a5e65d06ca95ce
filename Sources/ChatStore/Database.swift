import CSQLite
import ChatTransport
import Synchronization

/// One SQLite database file, used from one thread at a time. WAL mode, so readers never wait
/// for the writer; errors carry SQLite's own message.
public final class Database {
    let handle: OpaquePointer
    /// `query`'s statements, prepared once per SQL text (preparing was most of the cost of the
    /// look-ups a registration makes: SQLite's parser showed in the arrivals profile). A statement
    /// is taken out while it runs, so two threads never share one.
    private let prepared = Locked<[String: StatementBox]>([:])

    private final class StatementBox: @unchecked Sendable {
        let statement: OpaquePointer
        init(_ statement: OpaquePointer) { self.statement = statement }
        deinit { sqlite3_finalize(statement) }
    }

    public struct Failure: Error, CustomStringConvertible, Equatable {
        public let description: String
    }

    /// `serialized`: SQLite locks the connection around every call (safe from any thread). A
    /// connection only one thread ever uses can go without (the history writer: the locks were
    /// a tenth of its time).
    public init(path: String, serialized: Bool = true) throws(Failure) {
        var opened: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | (serialized ? SQLITE_OPEN_FULLMUTEX : SQLITE_OPEN_NOMUTEX)
        guard sqlite3_open_v2(path, &opened, flags, nil) == SQLITE_OK, let opened else {
            let text = opened.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let opened { sqlite3_close(opened) }
            throw Failure(description: "cannot open \(path): \(text)")
        }
        handle = opened
        sqlite3_busy_timeout(handle, 5000)
        try execute("PRAGMA journal_mode = WAL")
        try execute("PRAGMA foreign_keys = ON")
    }

    deinit {
        // Statements first: SQLite will not close a connection that still has some.
        prepared.withLock { $0.removeAll() }
        sqlite3_close(handle)
    }

    /// Runs statements that return no rows.
    public func execute(_ sql: String) throws(Failure) {
        var error: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(handle, sql, nil, nil, &error) == SQLITE_OK else {
            let text = error.map { String(cString: $0) } ?? "error"
            sqlite3_free(error)
            throw Failure(description: text)
        }
    }

    public enum Value: Equatable, Sendable {
        case text(String)
        case blob([UInt8])
        case integer(Int64)
        case real(Double)
        case null
    }

    /// Runs one statement with its parameters (`?`), returning every row.
    @discardableResult
    public func query(_ sql: String, _ parameters: [Value] = []) throws(Failure) -> [[Value]] {
        let box: StatementBox
        if let cached = prepared.withLock({ $0.removeValue(forKey: sql) }) {
            box = cached
        } else {
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
                throw Failure(description: String(cString: sqlite3_errmsg(handle)))
            }
            box = StatementBox(statement)
        }
        let statement = box.statement
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
            prepared.withLock { cache in
                // A few dozen distinct statements at most; a program that builds SQL text on the fly must not fill this.
                if cache.count < 64 { cache[sql] = box }
            }
        }
        Database.bind(statement, parameters)
        var rows: [[Value]] = []
        while true {
            let step = sqlite3_step(statement)
            if step == SQLITE_DONE { break }
            guard step == SQLITE_ROW else { throw Failure(description: String(cString: sqlite3_errmsg(handle))) }
            var row: [Value] = []
            for column in 0..<sqlite3_column_count(statement) {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER: row.append(.integer(sqlite3_column_int64(statement, column)))
                case SQLITE_FLOAT: row.append(.real(sqlite3_column_double(statement, column)))
                case SQLITE_TEXT: row.append(.text(String(cString: sqlite3_column_text(statement, column))))
                case SQLITE_BLOB:
                    let count = Int(sqlite3_column_bytes(statement, column))
                    let base = sqlite3_column_blob(statement, column)
                    row.append(.blob(base.map { Array(UnsafeRawBufferPointer(start: $0, count: count)) } ?? []))
                default: row.append(.null)
                }
            }
            rows.append(row)
        }
        return rows
    }

    /// A statement prepared once and run many times (an insert in a hot loop): preparing is
    /// most of the cost of a small statement.
    public final class Statement {
        let statement: OpaquePointer
        let database: Database

        init(_ statement: OpaquePointer, _ database: Database) {
            self.statement = statement
            self.database = database
        }

        deinit { sqlite3_finalize(statement) }

        /// The same, with each text bound in place from its string's own bytes (no copy into
        /// SQLite: every text of a history row was copied once more, 700 instructions each),
        /// the step run while those bytes are lent: each binding happens inside the previous
        /// one's borrow, the step innermost. Every parameter is bound on each run, so nothing
        /// bound before outlives its step.
        public func runInPlace(_ parameters: [Value]) throws(Failure) {
            precondition(parameters.count == Int(sqlite3_bind_parameter_count(statement)), "runInPlace binds every parameter")
            let statement = self.statement
            func bind(from index: Int) -> Int32 {
                guard index < parameters.count else { return sqlite3_step(statement) }
                let position = Int32(index + 1)
                if case .text(let text) = parameters[index], let stepped = Database.withChars(of: text, { base, count in
                    sqlite3_bind_text(statement, position, base, count, nil)
                    return bind(from: index + 1)
                }) {
                    return stepped
                }
                Database.bind(statement, index, parameters[index])
                return bind(from: index + 1)
            }
            let step = bind(from: 0)
            sqlite3_reset(statement)
            guard step == SQLITE_DONE || step == SQLITE_ROW else { throw Failure(description: String(cString: sqlite3_errmsg(database.handle))) }
        }

        /// Binds the parameters, runs it to the end, and resets it for the next run.
        public func run(_ parameters: [Value]) throws(Failure) {
            defer {
                sqlite3_reset(statement)
                // Each run binds every parameter again (a hot insert's clearing cost 900
                // instructions a row); only fewer than the statement takes leaves any to clear.
                if parameters.count < sqlite3_bind_parameter_count(statement) { sqlite3_clear_bindings(statement) }
            }
            Database.bind(statement, parameters)
            let step = sqlite3_step(statement)
            guard step == SQLITE_DONE || step == SQLITE_ROW else { throw Failure(description: String(cString: sqlite3_errmsg(database.handle))) }
        }
    }

    public func prepare(_ sql: String) throws(Failure) -> Statement {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw Failure(description: String(cString: sqlite3_errmsg(handle)))
        }
        return Statement(statement, self)
    }

    static func bind(_ statement: OpaquePointer, _ parameters: [Value]) {
        for (index, value) in parameters.enumerated() { bind(statement, index, value) }
    }

    /// `body` with a string's own UTF-8 bytes and their count, or nil when it has none to lend
    /// (not contiguous, or empty: a null address would bind NULL).
    static func withChars<T>(of text: String, _ body: (UnsafePointer<CChar>, Int32) -> T) -> T? {
        text.utf8.withContiguousStorageIfAvailable { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in chars.baseAddress.map { body($0, Int32(chars.count)) } }
        } ?? nil
    }

    /// One parameter (`index` from 0), its text or blob copied by SQLite.
    static func bind(_ statement: OpaquePointer, _ index: Int, _ value: Value) {
        let position = Int32(index + 1)
        switch value {
        case .text(let text):
            // From the string's own bytes with their length (no bridging, no strlen).
            // (An empty one has no address, and a null one would bind NULL: the text path.)
            if Database.withChars(of: text, { sqlite3_bind_text(statement, position, $0, $1, chat_sqlite_transient()) }) == nil {
                sqlite3_bind_text(statement, position, text, -1, chat_sqlite_transient())
            }
        case .blob(let bytes): _ = bytes.withUnsafeBytes { sqlite3_bind_blob(statement, position, $0.baseAddress, Int32($0.count), chat_sqlite_transient()) }
        case .integer(let number): sqlite3_bind_int64(statement, position, number)
        case .real(let number): sqlite3_bind_double(statement, position, number)
        case .null: sqlite3_bind_null(statement, position)
        }
    }

    /// How long a statement waits for another connection's write lock before failing.
    public func setBusyTimeout(milliseconds: Int32) { sqlite3_busy_timeout(handle, milliseconds) }

    /// Rows changed by the last statement.
    public var changes: Int { Int(sqlite3_changes(handle)) }
}

extension Database.Value {
    /// A time kept as REAL (INTEGER in older rows): seconds since 1970; 0 when it is neither.
    public var seconds: Double {
        switch self {
        case .real(let number): number
        case .integer(let number): Double(number)
        default: 0
        }
    }
}

extension Database {
    /// Each named account's rows of `table` replaced by the rows given (none: removed), in one
    /// transaction: how the per-account lists (push subscriptions, login tokens) are written.
    public func replaceAccountRows(_ table: String, columns: [String], _ changes: [(account: String, rows: [[Value]])]) throws(Failure) {
        let insert = "INSERT INTO \(table) (account, \(columns.joined(separator: ", "))) VALUES (?\(String(repeating: ", ?", count: columns.count)))"
        try execute("BEGIN")
        do {
            for change in changes {
                try query("DELETE FROM \(table) WHERE account = ?", [.text(change.account)])
                for row in change.rows { try query(insert, [.text(change.account)] + row) }
            }
            try execute("COMMIT")
        } catch {
            _ = try? execute("ROLLBACK")
            throw error
        }
    }
}
