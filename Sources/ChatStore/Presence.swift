/// What the server keeps of one account's presence across restarts: whether it wants to stay
/// present with no session (always-on), what its user was when it last had none (nickname,
/// rooms, how it showed), when a session of it was last connected, and each of its devices'
/// last-seen time (what that device has already been shown). No IRC logic: the server decides
/// what a record holds and when it is written.
public struct PresenceRecord: Equatable, Sendable {
    /// The folded account name, the record's key.
    public var account: String
    /// `on`, `off` or `default` (PERSISTENCE SET, NickServ SET ALWAYS-ON).
    public var setting: String
    public var nick: String
    public var username: String
    public var host: String
    public var realname: String
    /// The rooms its user is in, by name as shown, oldest joined first.
    public var rooms: [String]
    /// When a session of it was last connected (seconds since 1970): unused for
    /// `--always-on-expire` days, it stops being always-on.
    public var lastUsed: Double
    /// Device name to the msgid (as a number) of the newest line that device was connected for.
    public var devices: [String: Int64]

    public init(account: String, setting: String = "default", nick: String, username: String, host: String, realname: String,
                rooms: [String] = [], lastUsed: Double, devices: [String: Int64] = [:]) {
        self.account = account
        self.setting = setting
        self.nick = nick
        self.username = username
        self.host = host
        self.realname = realname
        self.rooms = rooms
        self.lastUsed = lastUsed
        self.devices = devices
    }
}

/// The presence records in the server's database (the accounts' file).
public final class PresenceStore {
    public let database: Database

    public init(database: Database) throws(Database.Failure) {
        self.database = database
        try database.execute("""
            CREATE TABLE IF NOT EXISTS presence (
                account TEXT PRIMARY KEY, setting TEXT NOT NULL, nick TEXT NOT NULL, username TEXT NOT NULL,
                host TEXT NOT NULL, realname TEXT NOT NULL, rooms TEXT NOT NULL, last_used REAL NOT NULL);
            CREATE TABLE IF NOT EXISTS presence_devices (
                account TEXT NOT NULL REFERENCES presence(account) ON DELETE CASCADE, device TEXT NOT NULL,
                seen INTEGER NOT NULL, PRIMARY KEY (account, device));
            """)
    }

    public enum Change: Sendable, Equatable {
        case save(PresenceRecord)
        case remove(account: String)
    }

    /// Every record, with its devices.
    public func all() throws(Database.Failure) -> [PresenceRecord] {
        var records: [String: PresenceRecord] = [:]
        for row in try database.query("SELECT account, setting, nick, username, host, realname, rooms, last_used FROM presence") {
            guard row.count == 8, case .text(let account) = row[0], case .text(let setting) = row[1], case .text(let nick) = row[2],
                  case .text(let username) = row[3], case .text(let host) = row[4], case .text(let realname) = row[5],
                  case .text(let rooms) = row[6] else { continue }
            let lastUsed: Double
            switch row[7] {
            case .real(let value): lastUsed = value
            case .integer(let value): lastUsed = Double(value)
            default: lastUsed = 0
            }
            records[account] = PresenceRecord(account: account, setting: setting, nick: nick, username: username, host: host,
                                              realname: realname, rooms: rooms.split(separator: "\n").map(String.init), lastUsed: lastUsed)
        }
        for row in try database.query("SELECT account, device, seen FROM presence_devices") {
            guard row.count == 3, case .text(let account) = row[0], case .text(let device) = row[1], case .integer(let seen) = row[2] else { continue }
            records[account]?.devices[device] = seen
        }
        return records.values.sorted { $0.account < $1.account }
    }

    /// Changes in one transaction, in order.
    public func apply(_ changes: [Change]) throws(Database.Failure) {
        try database.execute("BEGIN")
        do {
            for change in changes {
                switch change {
                case .save(let record):
                    try database.query("""
                        INSERT INTO presence (account, setting, nick, username, host, realname, rooms, last_used)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (account) DO UPDATE SET setting = excluded.setting,
                        nick = excluded.nick, username = excluded.username, host = excluded.host, realname = excluded.realname,
                        rooms = excluded.rooms, last_used = excluded.last_used
                        """, [.text(record.account), .text(record.setting), .text(record.nick), .text(record.username),
                              .text(record.host), .text(record.realname), .text(record.rooms.joined(separator: "\n")),
                              .real(record.lastUsed)])
                    try database.query("DELETE FROM presence_devices WHERE account = ?", [.text(record.account)])
                    for (device, seen) in record.devices.sorted(by: { $0.key < $1.key }) {
                        try database.query("INSERT INTO presence_devices (account, device, seen) VALUES (?, ?, ?)",
                                           [.text(record.account), .text(device), .integer(seen)])
                    }
                case .remove(let account):
                    try database.query("DELETE FROM presence_devices WHERE account = ?", [.text(account)])
                    try database.query("DELETE FROM presence WHERE account = ?", [.text(account)])
                }
            }
            try database.execute("COMMIT")
        } catch {
            _ = try? database.execute("ROLLBACK")
            throw error
        }
    }
}
