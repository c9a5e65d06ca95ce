import ChatTransport
import IRCWire

/// SCRAM-SHA-256 credentials (RFC 5802, RFC 7677): what the server keeps of a password.
/// Nothing here gives the password back: logging in proves knowledge of it (SCRAM), or hands
/// it over once to be derived and compared (PLAIN).
public struct SCRAMCredential: Equatable, Sendable {
    public let salt: [UInt8]
    public let iterations: Int
    public let storedKey: [UInt8]
    public let serverKey: [UInt8]

    public static let defaultIterations = 100_000

    public init(salt: [UInt8], iterations: Int, storedKey: [UInt8], serverKey: [UInt8]) {
        self.salt = salt
        self.iterations = iterations
        self.storedKey = storedKey
        self.serverKey = serverKey
    }

    /// SaltedPassword = PBKDF2(password, salt, i); ClientKey = HMAC(SaltedPassword, "Client Key");
    /// StoredKey = SHA-256(ClientKey); ServerKey = HMAC(SaltedPassword, "Server Key").
    public static func derive(password: String, salt: [UInt8] = Crypto.randomBytes(16),
                              iterations: Int = defaultIterations) -> SCRAMCredential {
        let salted = Crypto.pbkdf2SHA256(password: Array(password.utf8), salt: salt, iterations: iterations)
        let clientKey = Crypto.hmacSHA256(key: salted, Array("Client Key".utf8))
        return SCRAMCredential(salt: salt, iterations: iterations, storedKey: Crypto.sha256(clientKey),
                               serverKey: Crypto.hmacSHA256(key: salted, Array("Server Key".utf8)))
    }

    /// Whether `password` is the one these keys were made from (PLAIN), compared in constant time.
    public func matches(password: String) -> Bool {
        let candidate = SCRAMCredential.derive(password: password, salt: salt, iterations: iterations)
        return Crypto.constantTimeEqual(candidate.storedKey, storedKey)
    }
}

/// One account as listed.
public struct AccountRecord: Equatable, Sendable {
    public let name: String
    public let createdAt: Int64
    public let certificates: [String]

    public init(name: String, createdAt: Int64, certificates: [String]) {
        self.name = name
        self.createdAt = createdAt
        self.certificates = certificates
    }
}

/// Accounts in the server's database: a name (folded `key` for lookups, `name` as written),
/// its SCRAM credential, certificate fingerprints for SASL EXTERNAL, and the look-alike keys
/// of its name (TR39 skeletons, `NameKeys`), so no account and no nickname can imitate it.
/// Names fold as nicknames do on our server (RFC 1459 casemapping).
public final class AccountStore {
    public let database: Database

    public enum Problem: Error, Equatable, CustomStringConvertible {
        case exists(String)
        case looksLike(String, existing: String)
        case missing(String)
        case database(String)

        public var description: String {
            switch self {
            case .exists(let name): return "an account named \(name) exists already"
            case .looksLike(let name, let existing): return "\(name) looks too much like the account \(existing)"
            case .missing(let name): return "there is no account named \(name)"
            case .database(let text): return "database: \(text)"
            }
        }
    }

    /// The folded form of an account name, its key.
    public static func key(_ name: String) -> String { Casemapping.rfc1459.fold(name) }

    /// What is wrong with a new password, the one rule for REGISTER and `chat-tui account`:
    /// 8 to 300 bytes, no control characters.
    public enum PasswordProblem: Sendable, Equatable {
        case tooShort
        case unacceptable

        public var words: String {
            switch self {
            case .tooShort: "Use a password of at least \(AccountStore.minimumPasswordBytes) characters"
            case .unacceptable: "A password is at most 300 bytes, without control characters"
            }
        }
    }

    public static let minimumPasswordBytes = 8

    public static func passwordProblem(_ password: String) -> PasswordProblem? {
        if password.utf8.count < minimumPasswordBytes { return .tooShort }
        if password.utf8.count > 300 || password.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) { return .unacceptable }
        return nil
    }

    /// The tables and triggers `init` makes when one is missing (otherwise it writes nothing, so
    /// that a server starts while another process holds the database's write lock).
    static let schemaObjects: Set<String> = ["accounts", "account_certificates", "account_skeletons", "account_version", "account_added",
                                             "account_changed", "account_deleted", "certificate_added", "certificate_deleted"]

    public init(database: Database) throws(Problem) {
        self.database = database
        let existing: Set<String>
        do {
            existing = Set(try database.query("SELECT name FROM sqlite_master").compactMap { row -> String? in
                if case .text(let name)? = row.first { return name } else { return nil }
            })
        } catch {
            throw .database(error.description)
        }
        if Self.schemaObjects.isSubset(of: existing) { return }
        do {
            try database.execute("""
                CREATE TABLE IF NOT EXISTS accounts (
                    key TEXT PRIMARY KEY, name TEXT NOT NULL, salt BLOB NOT NULL, iterations INTEGER NOT NULL,
                    stored_key BLOB NOT NULL, server_key BLOB NOT NULL, created_at INTEGER NOT NULL);
                CREATE TABLE IF NOT EXISTS account_certificates (
                    fingerprint TEXT PRIMARY KEY, key TEXT NOT NULL REFERENCES accounts(key) ON DELETE CASCADE);
                CREATE TABLE IF NOT EXISTS account_skeletons (
                    skeleton TEXT PRIMARY KEY, key TEXT NOT NULL REFERENCES accounts(key) ON DELETE CASCADE);
                CREATE TABLE IF NOT EXISTS account_version (one INTEGER PRIMARY KEY CHECK (one = 1), version INTEGER NOT NULL);
                INSERT OR IGNORE INTO account_version VALUES (1, 0);
                CREATE TRIGGER IF NOT EXISTS account_added AFTER INSERT ON accounts BEGIN UPDATE account_version SET version = version + 1; END;
                CREATE TRIGGER IF NOT EXISTS account_changed AFTER UPDATE ON accounts BEGIN UPDATE account_version SET version = version + 1; END;
                CREATE TRIGGER IF NOT EXISTS account_deleted AFTER DELETE ON accounts BEGIN UPDATE account_version SET version = version + 1; END;
                CREATE TRIGGER IF NOT EXISTS certificate_added AFTER INSERT ON account_certificates BEGIN UPDATE account_version SET version = version + 1; END;
                CREATE TRIGGER IF NOT EXISTS certificate_deleted AFTER DELETE ON account_certificates BEGIN UPDATE account_version SET version = version + 1; END;
                """)
        } catch {
            throw .database(error.description)
        }
        // Accounts made before the look-alike keys were kept get theirs now.
        for row in try run("SELECT key, name FROM accounts WHERE key NOT IN (SELECT key FROM account_skeletons)") {
            guard case .text(let key) = row[0], case .text(let name) = row[1] else { continue }
            for skeleton in NameKeys.of(name, .rfc1459) {
                try run("INSERT OR IGNORE INTO account_skeletons VALUES (?, ?)", [.text(skeleton), .text(key)])
            }
        }
    }

    /// Adds an account; refused when the name, or a look-alike of it, is an account already.
    public func add(name: String, credential: SCRAMCredential, now: Int64) throws(Problem) {
        let key = Self.key(name)
        guard try lookup(key) == nil else { throw .exists(name) }
        let skeletons = NameKeys.of(name, .rfc1459)
        if let existing = try owner(ofKeys: skeletons) { throw .looksLike(name, existing: existing) }
        try run("BEGIN")
        do {
            try run("INSERT INTO accounts VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [.text(key), .text(name), .blob(credential.salt), .integer(Int64(credential.iterations)),
                     .blob(credential.storedKey), .blob(credential.serverKey), .integer(now)])
            for skeleton in skeletons { try run("INSERT INTO account_skeletons VALUES (?, ?)", [.text(skeleton), .text(key)]) }
            try run("COMMIT")
        } catch {
            _ = try? database.execute("ROLLBACK")
            throw error
        }
    }

    /// The name of the account one of these look-alike keys belongs to.
    public func owner(ofKeys keys: Set<String>) throws(Problem) -> String? {
        for skeleton in keys.sorted() {
            let rows = try run("SELECT a.name FROM account_skeletons s JOIN accounts a ON a.key = s.key WHERE s.skeleton = ?", [.text(skeleton)])
            if case .text(let name)? = rows.first?.first { return name }
        }
        return nil
    }

    public func setCredential(key: String, _ credential: SCRAMCredential) throws(Problem) {
        try run("UPDATE accounts SET salt = ?, iterations = ?, stored_key = ?, server_key = ? WHERE key = ?",
                [.blob(credential.salt), .integer(Int64(credential.iterations)), .blob(credential.storedKey),
                 .blob(credential.serverKey), .text(key)])
        if database.changes == 0 { throw .missing(key) }
    }

    /// Deletes an account and what was kept under it, in one transaction: all of it goes, or
    /// (on an error, which is thrown) none of it.
    public func delete(key: String) throws(Problem) {
        try run("BEGIN IMMEDIATE")
        do throws(Problem) {
            try run("DELETE FROM accounts WHERE key = ?", [.text(key)])
            if database.changes == 0 { throw Problem.missing(key) }
            // Its direct conversations and read markers go with it: whoever takes the name next
            // must not read them. (The history tables exist once the server has run with history,
            // the rooms' once it has run at all.)
            // (Matched in Swift, not with LIKE: `_` is a wildcard there and a letter of nicknames.)
            let tables = Set(try run("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap { row -> String? in
                if case .text(let name)? = row.first { return name } else { return nil }
            })
            let party = "a:" + key
            if tables.contains("history_parties") && tables.contains("history") {
                for row in try run("SELECT DISTINCT target FROM history_parties") {
                    guard case .text(let target) = row[0], target.split(separator: " ").dropFirst().contains(Substring(party)) else { continue }
                    try run("DELETE FROM history WHERE target = ?", [.text(target)])
                    if tables.contains("history_events") { try run("DELETE FROM history_events WHERE target = ?", [.text(target)]) }
                    try run("DELETE FROM history_parties WHERE target = ?", [.text(target)])
                }
            }
            if tables.contains("read_markers") { try run("DELETE FROM read_markers WHERE account = ?", [.text(key)]) }
            // Nor does it run the rooms the account ran: its access goes, and the rooms it founded
            // are registered no more (a closed one's name stays closed: its history stays from
            // whoever makes it next).
            if tables.contains("room_operators") { try run("DELETE FROM room_operators WHERE account = ?", [.text(key)]) }
            let roomColumns = tables.contains("rooms") ? Set(try run("PRAGMA table_info(rooms)").compactMap { row -> String? in
                if row.count > 1, case .text(let name) = row[1] { return name } else { return nil }
            }) : []
            if roomColumns.contains("founder") && tables.contains("closed_rooms") {
                try run("INSERT OR IGNORE INTO closed_rooms SELECT key, last_active FROM rooms WHERE founder = ? AND ever_closed = 1", [.text(key)])
                try run("DELETE FROM rooms WHERE founder = ?", [.text(key)])
            }
            try run("COMMIT")
        } catch {
            _ = try? database.execute("ROLLBACK")
            throw error
        }
    }

    /// A number that changes whenever an account or a certificate is added, changed or
    /// deleted, by any process (a trigger counts): the server reloads its directory when it moves.
    public func version() throws(Problem) -> Int64 {
        if case .integer(let version)? = try run("SELECT version FROM account_version").first?.first { return version }
        return 0
    }

    /// Every account, its look-alike keys and certificates, read in one transaction: what the
    /// server holds in memory, so that no nickname or login waits for the disk.
    public func directory() throws(Problem) -> AccountDirectory {
        try run("BEGIN")
        defer { _ = try? database.execute("COMMIT") }
        var directory = AccountDirectory()
        directory.version = try version()
        for row in try run("SELECT key, name, salt, iterations, stored_key, server_key FROM accounts") {
            guard case .text(let key) = row[0], case .text(let name) = row[1], case .blob(let salt) = row[2], case .integer(let iterations) = row[3],
                  case .blob(let stored) = row[4], case .blob(let server) = row[5] else { continue }
            directory.accounts[key] = .init(name: name, credential: SCRAMCredential(salt: salt, iterations: Int(iterations), storedKey: stored, serverKey: server))
        }
        for row in try run("SELECT skeleton, key FROM account_skeletons") {
            guard case .text(let skeleton) = row[0], case .text(let key) = row[1] else { continue }
            directory.skeletons[skeleton] = key
        }
        for row in try run("SELECT fingerprint, key FROM account_certificates") {
            guard case .text(let fingerprint) = row[0], case .text(let key) = row[1] else { continue }
            directory.certificates[fingerprint] = key
        }
        return directory
    }

    /// The account's name as written and its credential.
    public func lookup(_ key: String) throws(Problem) -> (name: String, credential: SCRAMCredential)? {
        let rows = try run("SELECT name, salt, iterations, stored_key, server_key FROM accounts WHERE key = ?", [.text(key)])
        guard let row = rows.first, case .text(let name) = row[0], case .blob(let salt) = row[1], case .integer(let iterations) = row[2],
              case .blob(let stored) = row[3], case .blob(let server) = row[4] else { return nil }
        return (name, SCRAMCredential(salt: salt, iterations: Int(iterations), storedKey: stored, serverKey: server))
    }

    public func list() throws(Problem) -> [AccountRecord] {
        let rows = try run("SELECT a.name, a.created_at, group_concat(c.fingerprint, ' ') FROM accounts a "
                           + "LEFT JOIN account_certificates c ON c.key = a.key GROUP BY a.key ORDER BY a.key")
        return rows.compactMap { row in
            guard case .text(let name) = row[0], case .integer(let created) = row[1] else { return nil }
            var certificates: [String] = []
            if case .text(let joined) = row[2] { certificates = joined.split(separator: " ").map(String.init) }
            return AccountRecord(name: name, createdAt: created, certificates: certificates)
        }
    }

    /// A certificate (SHA-256, normalised by the caller) that logs in as this account with EXTERNAL.
    public func addCertificate(key: String, fingerprint: String) throws(Problem) {
        guard try lookup(key) != nil else { throw .missing(key) }
        try run("INSERT OR REPLACE INTO account_certificates VALUES (?, ?)", [.text(fingerprint), .text(key)])
    }

    public func account(forCertificate fingerprint: String) throws(Problem) -> String? {
        let rows = try run("SELECT a.name FROM account_certificates c JOIN accounts a ON a.key = c.key WHERE c.fingerprint = ?",
                           [.text(fingerprint)])
        if case .text(let name)? = rows.first?.first { return name }
        return nil
    }

    @discardableResult
    private func run(_ sql: String, _ parameters: [Database.Value] = []) throws(Problem) -> [[Database.Value]] {
        do { return try database.query(sql, parameters) } catch { throw .database(error.description) }
    }
}

/// The accounts as the server holds them in memory (read by `AccountStore.directory`): every
/// look-up a NICK, a login or a REGISTER makes is answered here, never by the disk.
public struct AccountDirectory: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public let name: String
        public let credential: SCRAMCredential
    }

    /// By folded name.
    public var accounts: [String: Entry] = [:]
    /// Look-alike key (`NameKeys`) to the folded name of the account it belongs to.
    public var skeletons: [String: String] = [:]
    /// Certificate fingerprint to folded name.
    public var certificates: [String: String] = [:]
    /// `AccountStore.version()` when read.
    public var version: Int64 = -1

    public init() {}

    public func lookup(_ key: String) -> Entry? { accounts[key] }

    /// The name of the account one of these look-alike keys belongs to.
    public func owner(ofKeys keys: Set<String>) -> String? {
        for skeleton in keys.sorted() {
            if let key = skeletons[skeleton], let entry = accounts[key] { return entry.name }
        }
        return nil
    }

    public func account(forCertificate fingerprint: String) -> String? {
        certificates[fingerprint].flatMap { accounts[$0]?.name }
    }

    /// An account the server itself added (REGISTER), before the next reload would show it.
    public mutating func add(name: String, credential: SCRAMCredential) {
        let key = AccountStore.key(name)
        accounts[key] = Entry(name: name, credential: credential)
        for skeleton in NameKeys.of(name, .rfc1459) { skeletons[skeleton] = key }
    }
}
