/// One Web Push subscription of an account (draft/webpush): where to POST, the browser's keys,
/// and when it was made and last taken by its push service.
public struct PushSubscription: Equatable, Sendable {
    public var endpoint: String
    /// The subscription's P-256 public key (65 bytes) and authentication secret (16 bytes).
    public var p256dh: [UInt8]
    public var auth: [UInt8]
    public var created: Double
    /// Registered again or last delivered (seconds since 1970): unused for 14 days, it expires.
    public var lastUsed: Double

    public init(endpoint: String, p256dh: [UInt8], auth: [UInt8], created: Double, lastUsed: Double) {
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.auth = auth
        self.created = created
        self.lastUsed = lastUsed
    }
}

/// The subscriptions in the server's database (the accounts' file), by folded account name.
public final class WebPushStore {
    public let database: Database

    public init(database: Database) throws(Database.Failure) {
        self.database = database
        try database.execute("""
            CREATE TABLE IF NOT EXISTS webpush (
                account TEXT NOT NULL, endpoint TEXT NOT NULL, p256dh BLOB NOT NULL, auth BLOB NOT NULL,
                created REAL NOT NULL, last_used REAL NOT NULL, PRIMARY KEY (account, endpoint));
            """)
    }

    /// An account's whole list, written as it is now (an empty list removes the account's rows).
    public struct Change: Sendable, Equatable {
        public var account: String
        public var subscriptions: [PushSubscription]
        public init(account: String, subscriptions: [PushSubscription]) {
            self.account = account
            self.subscriptions = subscriptions
        }
    }

    public func all() throws(Database.Failure) -> [String: [PushSubscription]] {
        var byAccount: [String: [PushSubscription]] = [:]
        for row in try database.query("SELECT account, endpoint, p256dh, auth, created, last_used FROM webpush ORDER BY created") {
            guard row.count == 6, case .text(let account) = row[0], case .text(let endpoint) = row[1],
                  case .blob(let p256dh) = row[2], case .blob(let auth) = row[3] else { continue }
            byAccount[account, default: []].append(PushSubscription(endpoint: endpoint, p256dh: p256dh, auth: auth,
                                                                    created: row[4].seconds, lastUsed: row[5].seconds))
        }
        return byAccount
    }

    public func apply(_ changes: [Change]) throws(Database.Failure) {
        try database.replaceAccountRows("webpush", columns: ["endpoint", "p256dh", "auth", "created", "last_used"], changes.map { change in
            (change.account, change.subscriptions.map { [.text($0.endpoint), .blob($0.p256dh), .blob($0.auth), .real($0.created), .real($0.lastUsed)] })
        })
    }
}
