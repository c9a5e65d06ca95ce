import ChatLink
import ChatStore
import ChatTransport
import IRCWire

/// The registry of people: every connection (`Session`), every person (`User`) with the
/// sessions they speak through, and the names they hold. "A person with several sessions, or
/// none" is a fact here and nowhere else. Owner: `ServerState.people`.
struct People {
    var sessions: [ConnectionID: Session] = [:]
    var users: [UserID: User] = [:]
    /// Ends the users of connections still open when the last copy of this state goes.
    let openUsers = OpenUsers()
    /// Folded nickname to its owner, registered or not. The nickname itself is on `User`.
    var nicks: [String: User] = [:]
    /// Skeletons (TR39) of the folded nicknames in use, to their owners, so look-alikes are refused.
    var nickSkeletons: [String: UserID] = [:]
    /// Folded nickname to the users who MONITOR it.
    var monitors: [String: Set<UserID>] = [:]
    /// Departed users, newest last, at most `config.whowasLimit`.
    var whowas: [WhowasEntry] = []
    var nextUserID: UInt64 = 1
    var registeredCount = 0
    /// The most users registered at once since the start, for 265 and 266.
    var peakRegistered = 0
    /// Registered users with +i and with +o, kept as counts so LUSERS (sent on every
    /// registration) does not walk every user.
    var invisibleCount = 0
    var operatorCount = 0
    /// Upload tokens (`/upload/TOKEN`) to the connection they were given to.
    var uploadTokens: [String: ConnectionID] = [:]
    /// Registered connections (a user may have several, or none: `registeredCount` counts users).
    var registeredSessions = 0
    /// Folded account name to the user that speaks for it: one per account, whatever its
    /// sessions (Presence.swift). Owner: registration and `forgetUser`; bound: one per account
    /// with a user; end: that user leaving.
    var byAccount: [String: User] = [:]
    /// Users kept with no session (always-on), counted against `ServerConfig.alwaysOnLimit`.
    var alwaysOnCount = 0
    /// Each account's presence record (always-on setting, what its user was, each device's
    /// last-seen), read at start and written by the store worker when it changes. Owner:
    /// `Presence.swift`; bound: one per account that has logged in, each with at most
    /// `devicesPerAccount` devices; end: the account's deletion (its row goes with it).
    var presence: [String: PresenceRecord] = [:]
    /// Accounts whose record changed and is not written yet, whether a write is at the worker,
    /// whether the last failed, and the ticks counted for the periodic checks.
    var presenceDirty: Set<String> = []
    var presenceAtWorker = false
    var presenceFailing = false
    var presenceTicks = 0
    /// Accounts whose user's rooms or nickname changed since their record was last compared.
    var presenceStale: Set<String> = []
    var expiryCheckedAt: Double = 0
    /// Guests' resume tokens to their user. Owner: Presence.swift; bound: one per guest whose
    /// client asked for `chat-tui.org/resume`; end: the guest's end, or its token's use (a new
    /// one is given). Guests kept with no session are at most `resumableLimit`.
    var resumeTokens: [String: User] = [:]
    var resumableCount = 0

    /// The one way a user mode changes, so the LUSERS counts stay right.
    mutating func setMode(of user: User, _ letter: Character, _ on: Bool) {
        guard user.modes.contains(letter) != on else { return }
        if on { user.modes.insert(letter) } else { user.modes.remove(letter) }
        let delta = on ? 1 : -1
        if letter == "i" { invisibleCount += delta }
        if letter == "o" { operatorCount += delta }
    }
}

/// The rooms: each live room's modes and lists, who is in which room (`Membership`), who is
/// invited where, and what is remembered of rooms that ended or were renamed.
/// Owner: `ServerState.roomBook`.
struct RoomBook {
    /// Folded room name to room. A room exists while it has members.
    var channels: [String: Channel] = [:]
    /// Skeletons of the folded room names, to the folded name.
    var channelSkeletons: [String: String] = [:]
    /// The room keys in order, for LIST made in steps.
    var sortedChannelKeys = SortedKeys()
    var membership = Membership()
    /// The rooms each user is invited to (the inverse of `Channel.invited`, changed with it).
    var invitations: [UserID: Set<String>] = [:]
    /// Rooms that ended while closed (+i, +k or +s) in this run of the server.
    var closedRooms: Set<String> = []
    /// Rooms renamed (RENAME), old folded name to new: a JOIN of the old name is pointed at the
    /// new while that room lives.
    var renamedRooms: [String: String] = [:]
    /// The rooms kept across restarts (RoomPersistence.swift).
    var roomRecords = RoomRecords()

    mutating func forgetInvitation(_ id: UserID, to key: String) {
        channels[key]?.invited.remove(id)
        invitations[id]?.remove(key)
        if invitations[id]?.isEmpty == true { invitations.removeValue(forKey: id) }
    }

    /// -i: the room's invitations lapse.
    mutating func clearInvitations(_ key: String) {
        for invitee in channels[key]?.invited ?? [] { forgetInvitation(invitee, to: key) }
    }
}

/// Accounts and credentials: the directory held in memory, its reloads, the password checks
/// on the worker and the login and registration throttles. Owner: `ServerState.accountBook`.
struct AccountBook {
    /// The accounts, held in memory (read at start, and again by the store worker whenever they
    /// change on disk): no NICK, login or REGISTER waits for the database. Nil while they could
    /// not be read: then every check fails closed (`accountsUnavailable`).
    var directory: AccountDirectory?
    var accountReloadPending = false
    /// Logins naming an unknown account, waiting for the accounts' read under way (`This`) or
    /// the one after it (`Next`). Owner: the session's SASL exchange; bound: one an open
    /// connection; end: that read's answer (a closed connection's is skipped then).
    var loginsAfterThisReload: [ConnectionID] = []
    var loginsAfterNextReload: [ConnectionID] = []
    var accountsFailing = false
    /// PBKDF2s handed to the worker and not answered yet.
    var pendingPasswordChecks = 0
    var pendingChecksPerAddress: [String: Int] = [:]
    /// Failed logins in the current minute, by `address KEY` and `account NAME`.
    var loginFailures: [String: (count: Int, since: Double)] = [:]
    /// Accounts made through REGISTER in the last hour, per address key.
    var accountsCreated: [String: [Double]] = [:]
    /// Keys the stand-in credentials of unknown account names (SCRAM salts that stay the same).
    let standInSecret = Crypto.randomBytes(32)
}

/// What the state keeps of history between the database and the connections: read markers,
/// each live room's last lines, and the writer's health. Owner: `ServerState.cache`.
/// (No row waiting for its commit is kept here: a read waits for the rows handed over before
/// it to be committed, `OutputOrder.read`, and then finds them in the database.)
struct HistoryCache {
    /// Each account's read markers (folded account, then conversation), read at start and kept
    /// as they move; written by the history writer. At most `connectionMarkerLimit` per account.
    var accountMarkers: [String: [String: Int64]] = [:]
    /// The read markers could not be read at start: MARKREAD of an account fails until a restart.
    var markersUnavailable = false
    /// The history writer's state (nil: history off): while it cannot store and too many rows
    /// wait, new messages are refused (`historyRefuses`).
    var historyHealth: HistoryHealth?
    /// Events not kept in history while storing failed, and whether the log has said so this burst.
    var eventsNotStored = 0
    var refusingLogged = false
    /// Each live room's last lines for the replay on joining (PRIVMSG and NOTICE, at most
    /// twice `replayOnJoin`), read once from the database and kept up to date as lines are said.
    /// Owner: the cache; bound: one per live room, `2 × replayOnJoin` rows each; end: the room's.
    var roomTails: [String: RoomTail] = [:]
    /// The msgids of rows a linked server sent after a split and this server stored, per room:
    /// a second link offering them before their commit finds them here. Owner: the cache; bound:
    /// the rows handed over and not committed (`splitRowsPerRoom` a room per link's offer); end:
    /// the second tick in a row at which nothing waits for a commit.
    var splitMerged: [String: Set<Int64>] = [:]
    var splitMergedIdle = false
    var nextHistorySerial: UInt64 = 0
}

/// The linked network (LinkState.swift): connections to other servers, the servers beyond
/// them by SID, every user by UUID (local ones too), and when to dial each configured link.
/// Owner: `ServerState.net`.
struct LinkedNetwork {
    var links: [ConnectionID: LinkSession] = [:]
    var servers: [String: RemoteServer] = [:]
    var usersByUUID: [String: User] = [:]
    var remoteUserCount = 0
    var linkRetries: [String: LinkRetry] = [:]
    /// Failed link authentications by address: repeated ones are refused at accept.
    var linkFailures = LinkFailures()
    /// Since when each chat-tui server we were split from (by folded name) may have missed what
    /// was said here: sent to it when the link heals (LinkHistory.swift).
    var splitSince: [String: Double] = [:]
}

/// The door: connections per address, recent arrivals, the unregistered, and wrong server
/// passwords. Owner: `ServerState.gate`.
struct Admission {
    /// Wrong server passwords per address in the current minute: past three, PASS from there
    /// is refused unchecked until the minute is over, and the log says so once.
    var passwordFailures: [String: (count: Int, since: Double)] = [:]
    /// Open connections per address key, the times of recent new ones, and the unregistered.
    var connectionsPerAddress: [String: Int] = [:]
    var recentConnections: [String: [Double]] = [:]
    var unregisteredConnections = 0
    /// The unregistered connections per network (`blockKey`), oldest first.
    var unregisteredByBlock: [String: [ConnectionID]] = [:]
    var ticksSincePrune = 0
    /// Addresses refused in the current window, so the log says so once.
    var refusedAddresses: Set<String> = []

    /// Registered or gone: no longer among those registering.
    mutating func leaveUnregistered(_ session: Session) {
        guard session.countedUnregistered else { return }
        unregisteredConnections -= 1
        session.countedUnregistered = false
        let block = ServerState.blockKey(session.user.address)
        unregisteredByBlock[block]?.removeAll { $0 == session.connection }
        if unregisteredByBlock[block]?.isEmpty == true { unregisteredByBlock[block] = nil }
    }

    /// A connection leaves the counts it was in.
    mutating func releaseLimits(_ session: Session) {
        if let key = session.limitKey {
            connectionsPerAddress[key, default: 1] -= 1
            if connectionsPerAddress[key] == 0 { connectionsPerAddress[key] = nil }
            session.limitKey = nil
        }
        leaveUnregistered(session)
    }
}

/// A room's last lines (`HistoryCache.roomTails`). While its first read is out (`loaded` false)
/// the lines said meanwhile gather here, to be merged with what the read finds: the read may
/// run before or after their commit. A class: a line said is appended after one look-up, with
/// no write back into the dictionary (that was 1,150 instructions a message in a room of 50).
final class RoomTail {
    var rows: [HistoryRow]
    var loaded: Bool

    init(rows: [HistoryRow] = [], loaded: Bool = false) {
        self.rows = rows
        self.loaded = loaded
    }
}
