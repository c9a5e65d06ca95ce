/// A device's standing login to an account (chat-tui.org/resume, an account's form): what a web
/// tab keeps instead of the password. Only the token's SHA-256 is kept, so the database does not
/// hold a way in; the account's salt when it was made, so a new password ends every token.
public struct LoginToken: Equatable, Sendable {
    public var digest: [UInt8]
    /// The account's credential salt when the token was given (a password change makes a new one).
    public var salt: [UInt8]
    /// The device the login named (`account@device`), given back to a session the token logs in.
    public var device: String?
    public var created: Double
    /// Last used to log in (seconds since 1970): unused for `LoginTokens.expireDays`, it expires.
    public var lastUsed: Double

    public init(digest: [UInt8], salt: [UInt8], device: String?, created: Double, lastUsed: Double) {
        self.digest = digest
        self.salt = salt
        self.device = device
        self.created = created
        self.lastUsed = lastUsed
    }
}

/// The login tokens in the server's database (the accounts' file), by folded account name.
public final class LoginTokenStore {
    public let database: Database

    public init(database: Database) throws(Database.Failure) {
        self.database = database
        try database.execute("""
            CREATE TABLE IF NOT EXISTS login_tokens (
                account TEXT NOT NULL, digest BLOB NOT NULL, salt BLOB NOT NULL, device TEXT,
                created REAL NOT NULL, last_used REAL NOT NULL, PRIMARY KEY (account, digest));
            """)
    }

    /// An account's whole list, written as it is now (an empty list removes the account's rows).
    public struct Change: Sendable, Equatable {
        public var account: String
        public var tokens: [LoginToken]
        public init(account: String, tokens: [LoginToken]) {
            self.account = account
            self.tokens = tokens
        }
    }

    public func all() throws(Database.Failure) -> [String: [LoginToken]] {
        var byAccount: [String: [LoginToken]] = [:]
        for row in try database.query("SELECT account, digest, salt, device, created, last_used FROM login_tokens ORDER BY created") {
            guard row.count == 6, case .text(let account) = row[0], case .blob(let digest) = row[1], case .blob(let salt) = row[2] else { continue }
            var device: String?
            if case .text(let name) = row[3] { device = name }
            byAccount[account, default: []].append(LoginToken(digest: digest, salt: salt, device: device,
                                                              created: row[4].seconds, lastUsed: row[5].seconds))
        }
        return byAccount
    }

    public func apply(_ changes: [Change]) throws(Database.Failure) {
        try database.replaceAccountRows("login_tokens", columns: ["digest", "salt", "device", "created", "last_used"], changes.map { change in
            (change.account, change.tokens.map { [.blob($0.digest), .blob($0.salt), $0.device.map { .text($0) } ?? .null, .real($0.created), .real($0.lastUsed)] })
        })
    }
}
