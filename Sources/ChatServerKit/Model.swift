import IRCWire

/// What `slot` holds, made and kept there first if it holds nothing: a side object (a
/// connection's web state, a session's exchanges) made only by those that use it.
func madeOnce<T: AnyObject>(_ slot: inout T?, _ make: () -> T) -> T {
    if let held = slot { return held }
    let made = make()
    slot = made
    return made
}

/// One connection as the server sees it: what it negotiated and its registration and heartbeat
/// state. A class: the state reads it from several tables and must not copy it apart.
final class Session {
    let connection: ConnectionID
    /// The user this connection speaks for: created with the connection, known to others once
    /// registered; a connection that logs in to an account whose user exists already becomes one
    /// more session of that user (multiclient, Presence.swift).
    var user: User
    /// The device this session is, as its client named it (SASL `account@device`, or `DEVICE`):
    /// what its own last-seen time is kept under. Nil: the session's address.
    var device: String?
    /// Its own AWAY text: the person is away when every session is (`User.away`).
    var away: String?
    /// RESUME before registering: the guest this connection comes back as.
    var resumes: User?
    /// The digest of the account login token this session logged in with or was given
    /// (LoginTokens.swift): what `RESUME FORGET` ends.
    var loginToken: [UInt8]?
    /// `host:port`, for logs.
    let peer: String
    var registered = false
    /// CAP LS or REQ before registration holds registration until CAP END.
    var capNegotiating = false
    /// 302 when the client sent `CAP LS 302` (values, and `cap-notify` implied).
    var capVersion = 0
    var caps = CapabilitySet() { didSet { variant = caps.variant } }
    /// How relayed messages are written for this connection, kept ready for every fan-out.
    private(set) var variant = RenderVariant()
    /// With a server password: PASS matched. Until then a NICK is only remembered, not
    /// claimed, so nobody can squat a name without the password.
    var passwordAccepted = false
    /// Came in over TLS (WHOIS 671; `sts` is offered as a duration, not a port).
    var secure = false
    /// Where this connection uploads files (`scheme://host:port` of the web port as this client
    /// reached us: https when it came over TLS), set by the runtime; nil: no uploads for it.
    var fileHostBase: String?
    /// Its secret upload URL's token (`/upload/TOKEN`), made with its 005, valid while it is connected.
    var uploadToken: String?
    /// Counted against its address's connection limit (what `removeSession` gives back).
    var limitKey: String?
    /// Counted among the unregistered connections.
    var countedUnregistered = false
    var pendingNick: String?
    var failedOperAttempts = 0
    /// The SASL exchange under way, and the chunks of its current message (in `exchanges`).
    var sasl: SASLExchange? { get { exchanges?.sasl } _modify { yield &madeExchanges.sasl } }
    var saslBuffer: String { get { exchanges?.saslBuffer ?? "" } _modify { yield &madeExchanges.saslBuffer } }
    /// A PBKDF2 for this connection (PLAIN, REGISTER, OPER) is on the worker: registration waits for it.
    var verifying = false
    var loginOfUnknownAccount = false
    /// The exchange under way (IDENTIFY, REGISTER) was asked of NickServ: it answers in NOTICEs.
    var viaNickServ = false
    /// Lines that arrived while `verifying`, handled in order once the answer is in.
    var heldLines: [[UInt8]] = []
    /// The label of the command whose answer is being checked (labeled-response).
    var deferredLabel: String?
    /// A reply made a step at a time (in `exchanges`), and the labeled-response batch it streams in.
    var longReply: LongReply? { get { exchanges?.longReply } _modify { yield &madeExchanges.longReply } }
    var replyBatch: String?
    /// The serials of its history reads on the store worker (`HistoryQuery`): one per
    /// CHATHISTORY, one per room of a JOIN whose last lines are not in memory yet.
    var historyQueries: Set<UInt64> = []
    /// Read markers of a connection without an account (MARKREAD): kept while it lives.
    var readMarkers: [String: Int64] = [:]
    /// draft/metadata-2: the keys this connection is told of (METADATA * SUB).
    var metadataSubscriptions: Set<String> = []
    /// Its next lines must wait: a password is being checked, history read, or a long reply made.
    var busy: Bool { verifying || !historyQueries.isEmpty || longReply != nil }
    /// The OPER name being checked.
    var operName: String?
    /// SHA-256 of the client certificate shown in the TLS handshake (uppercase hex), for SASL EXTERNAL.
    var clientCertificate: String?
    /// Holding an account's name without being logged in to it: renamed at this time.
    var nickProtectionDeadline: Double?
    /// Account names this connection already had its grace period for: taking one again is refused.
    var graceGiven: Set<String> = []
    /// A draft/multiline batch the client has opened and not yet closed (in `exchanges`).
    var openBatch: MultilineBatch? { get { exchanges?.openBatch } _modify { yield &madeExchanges.openBatch } }
    /// What a connection holds only while an exchange is under way (SASL, a long reply, a
    /// multiline batch: ~300 bytes), apart, so an idle connection does not carry it. Owner: this
    /// session; made at the first exchange; ends with the session.
    final class Exchanges {
        var sasl: SASLExchange?
        var saslBuffer = ""
        var longReply: LongReply?
        var openBatch: MultilineBatch?
    }
    private var exchanges: Exchanges?
    private var madeExchanges: Exchanges { madeOnce(&exchanges, Exchanges.init) }
    /// The state has forgotten this connection (`removeSession`): the runtime, which keeps the
    /// session to save a lookup per line, hands it nothing more.
    var gone = false
    /// The person this connection last wrote to directly, by the target bytes it used, and the
    /// line's start for them (`:nick!user@host PRIVMSG bob :`): a run of messages to one person
    /// finds them without folding and hashing the name, and writes each line in two copies.
    /// Valid while neither side's `prefixGeneration` moved (the target still holds that
    /// nickname, so the name is still theirs).
    var lastDirect: LastDirect?
    /// A class: read once per line, a struct of three references would cost three retains.
    final class LastDirect {
        let name: [UInt8]
        let user: User
        let generation: UInt64
        let senderGeneration: UInt64
        let notice: Bool
        let header: [UInt8]

        init(name: [UInt8], user: User, generation: UInt64, senderGeneration: UInt64, notice: Bool, header: [UInt8]) {
            self.name = name
            self.user = user
            self.generation = generation
            self.senderGeneration = senderGeneration
            self.notice = notice
            self.header = header
        }
    }
    let connectedAt: Double
    var lastActivity: Double
    var pingSentAt: Double?

    init(connection: ConnectionID, user: User, peer: String, now: Double) {
        self.connection = connection
        self.user = user
        self.peer = peer
        connectedAt = now
        lastActivity = now
    }

}

/// One person: the identity others see. The nickname lives here and nowhere else (the
/// registry maps folded names to users; memberships name users by ID).
final class User {
    let id: UserID
    /// The IP address the connection came from (WHOX `i`), whatever CHGHOST makes the host.
    let address: String
    /// The peer's address, as it appears in `nick!user@host` (CHGHOST may change it).
    var host: String { didSet { prefix = User.makePrefix(nick, username, host) } }
    var nick: String? { didSet { prefix = User.makePrefix(nick, username, host) } }
    var username: String? { didSet { prefix = User.makePrefix(nick, username, host) } }
    /// Counts changes of `prefix`, hence of the nickname (what `Session.lastDirect` checks).
    private(set) var prefixGeneration: UInt64 = 0
    var realname = ""
    /// Away as others see it: set when every session is away (the latest text), or when no
    /// session is left (always-on, "not connected").
    var away: String?
    /// An account's user kept with no session (always-on): in its rooms, its nickname held,
    /// counted online; what is said to it goes to history for its devices.
    var alwaysOn = false
    /// User modes that are plain flags (`i`, `w`, `B`, `o`).
    var modes: Set<Character> = []
    /// The account logged in to (SASL, in the trust issue); nil until then.
    var account: String?
    /// Its connections: one for a guest; every logged-in device for an account's user
    /// (multiclient); none for an always-on user nobody is connected as.
    var sessions: [Session] = []
    var lastSpoke: Double
    let signedOnAt: Double
    /// Names this user watches with MONITOR, folded, to the name as given.
    var monitoring: [String: String] = [:]
    /// Its name on a linked network: its server's SID and six characters (`LinkIDs`); the same
    /// on every node, so links name users by it.
    var uuid = ""
    /// When its nickname was taken (seconds since 1970): the older keeps a name two users
    /// collide on across a link.
    var nickTS = 0
    /// The server it lives on, when that is another node of a linked network (nil: here).
    var remote: RemoteServer?
    /// draft/metadata-2 keys and values, while connected.
    var metadata: [String: String] = [:]
    /// Invitations that came while no session was connected (always-on), shown to the next
    /// one to arrive: at most `missedInvitesLimit`, the oldest dropped.
    var missedInvites: [IRCMessage] = []
    /// Leaving for good (KILL, GHOST, expiry): its last session's end does not keep it.
    var ending = false
    /// A guest's secret for coming back as this user within a minute (`RESUME`), and until
    /// when it is kept with no session.
    var resumeToken: String?
    var resumeDeadline: Double?

    /// `nick!user@host`, kept ready: every relayed message carries it.
    private(set) var prefix: String { didSet { prefixGeneration &+= 1 } }

    static func makePrefix(_ nick: String?, _ user: String?, _ host: String) -> String {
        "\(nick ?? "*")!\(user ?? "unknown")@\(host)"
    }
    var replyName: String { nick ?? "*" }
    /// Registered on at least one connection: others can see and reach them.
    var isOnline: Bool { remote != nil || alwaysOn || sessions.contains(where: \.registered) }
    var isOperator: Bool { modes.contains("o") }
    var isBot: Bool { modes.contains("B") }
    var isInvisible: Bool { modes.contains("i") }

    init(id: UserID, host given: String, address: String? = nil, now: Double) {
        self.id = id
        // `::1` would read as a trailing parameter in 311 or 352: written `0::1`, as ircds do.
        let host = given.hasPrefix(":") ? "0" + given : given
        self.host = host
        self.address = address.map { $0.hasPrefix(":") ? "0" + $0 : $0 } ?? host
        lastSpoke = now
        signedOnAt = now
        prefix = User.makePrefix(nil, nil, host)
    }
}

/// A member's status in one room, with the member itself: a fan-out or NAMES reads the room
/// alone, with no lookup per member. The nickname stays on `User`, its one place.
struct MemberStatus {
    let user: User
    var op = false
    var voice = false

    /// `@+` with multi-prefix, else only the highest.
    func prefix(all: Bool) -> String {
        if all { return (op ? "@" : "") + (voice ? "+" : "") }
        return op ? "@" : (voice ? "+" : "")
    }

    func has(_ letter: Character) -> Bool { letter == "o" ? op : voice }
    mutating func set(_ letter: Character, _ on: Bool) { if letter == "o" { op = on } else { voice = on } }
}

/// One entry of a `+b`, `+e` or `+I` list.
struct ListEntry: Equatable {
    let mask: String
    /// The mask folded once, as bytes, for matching on every JOIN and message.
    let folded: [UInt8]
    let setBy: String
    let setAt: Double
}

/// A room: its modes, lists and topic. Its members are in `Membership`.
struct Channel {
    /// As first created (or renamed to), for display.
    var name: String
    let createdAt: Double
    var topic = ""
    var topicSetBy = ""
    var topicSetAt: Double = 0
    /// Flag modes that are on (`i`, `m`, `n`, `s`, `t`).
    var flags = FlagModes(["n", "t"])
    var key: String?
    var limit: Int?
    /// `b`, `e` and `I` lists.
    var lists = ModeLists()
    /// Users invited while the room is invite-only (INVITE), until they join, leave the server,
    /// or the room stops being +i. `ServerState.invitations` is the same, by invitee.
    var invited: Set<UserID> = []
    /// draft/metadata-2 keys and values, while the room lives.
    var metadata: [String: String] = [:]

    init(name: String, createdAt: Double) {
        self.name = name
        self.createdAt = createdAt
    }

    func has(_ flag: Character) -> Bool { flags.contains(flag) }
    /// The same by ASCII code, for the checks every room message makes (`FlagModes`).
    func has(code: UInt8) -> Bool { flags.contains(code: code) }
    var isSecret: Bool { flags.contains(code: UInt8(ascii: "s")) }

    /// `+nt` or, for members, `+klnt secret 10`.
    func modeParameters(showKey: Bool) -> [String] {
        var letters = "+" + flags.letters
        var arguments: [String] = []
        if let key { letters.append("k"); arguments.append(showKey ? key : "*") }
        if let limit { letters.append("l"); arguments.append(String(limit)) }
        return [letters] + arguments
    }
}

/// The flag modes of a room as bits: checked on every message a room receives, where a
/// `Set<Character>` lookup (hashing a Character) cost more than the rest of the check. A
/// letter's bit is its ASCII code from "A"; the hot checks name the code (`contains(code:)`,
/// a shift), not a Character (`asciiValue` and the rest: ~300 instructions each, four or five
/// a room message).
struct FlagModes: Equatable {
    private static let order: [Character] = ChannelModes.all.filter { $0.kind == .flag }.map(\.letter)
    private var bits: UInt64 = 0

    init(_ letters: [Character]) { for letter in letters { insert(letter) } }

    @inline(__always) private static func bit(code: UInt8) -> UInt64 {
        code >= 65 && code < 65 + 58 ? 1 << UInt64(code - 65) : 0
    }

    func contains(code: UInt8) -> Bool { bits & Self.bit(code: code) != 0 }
    func contains(_ letter: Character) -> Bool { letter.asciiValue.map(contains(code:)) ?? false }
    mutating func insert(_ letter: Character) {
        if Self.order.contains(letter), let code = letter.asciiValue { bits |= Self.bit(code: code) }
    }
    mutating func remove(_ letter: Character) { if let code = letter.asciiValue { bits &= ~Self.bit(code: code) } }
    /// The letters that are on, in alphabetical order.
    var letters: String { String(Self.order.filter(contains).sorted()) }
}

/// The `b`, `e` and `I` lists of a room.
struct ModeLists: Equatable {
    var bans: [ListEntry] = []
    var exceptions: [ListEntry] = []
    var inviteExceptions: [ListEntry] = []

    subscript(letter: Character) -> [ListEntry] {
        get {
            switch letter {
            case "b": return bans
            case "e": return exceptions
            default: return inviteExceptions
            }
        }
        set {
            switch letter {
            case "b": bans = newValue
            case "e": exceptions = newValue
            default: inviteExceptions = newValue
            }
        }
    }
}

/// Who is in which room, kept once: room → members with status, and user → rooms, changed
/// only through `add`, `remove` and `setStatus`, so the two directions cannot drift.
struct Membership {
    private(set) var members: [String: [UserID: MemberStatus]] = [:]
    private(set) var rooms: [UserID: Set<String>] = [:]
    /// Per room, its members' connections by the form relayed lines take for them, kept up to
    /// date as members come and go: a room message is handed to the runtime as these lists,
    /// with no walk over the members.
    private(set) var fanOut: [String: FanOut] = [:]
    /// Per room and form (multi-prefix, userhost-in-names: `NamesForm`), the NAMES list as a
    /// member sees it, entries separated by spaces: made on first use, extended by each join
    /// (a crowd arriving asks for it once per arrival), dropped on any other change to who is
    /// in the room or how one of them is shown.
    private var namesCache: [String: [Int: [UInt8]]] = [:]
    /// Stamps each room's lists whenever they change other than by growing (a member leaves,
    /// changes form, the room is made anew), so that two deliveries with the same stamp know
    /// the later lists begin with the earlier ones (the runtime gathers such deliveries).
    private var lastGeneration: UInt64 = 0

    func status(of user: UserID, in room: String) -> MemberStatus? { members[room]?[user] }
    func isMember(_ user: UserID, of room: String) -> Bool { members[room]?[user] != nil }
    func rooms(of user: UserID) -> Set<String> { rooms[user] ?? [] }
    func count(of room: String) -> Int { members[room]?.count ?? 0 }

    /// A room renamed (RENAME): its members, lists and names under the new key, its lists
    /// stamped anew (deliveries gathered under the old key are not continued under the new).
    mutating func rename(_ old: String, to new: String) {
        guard old != new, let roomMembers = members.removeValue(forKey: old) else { return }
        members[new] = roomMembers
        for user in roomMembers.keys {
            rooms[user]?.remove(old)
            rooms[user]?.insert(new)
        }
        if var lists = fanOut.removeValue(forKey: old) {
            lists.generation = nextGeneration()
            fanOut[new] = lists
        }
        namesCache[old] = nil
    }

    mutating func add(_ user: UserID, to room: String, _ status: MemberStatus) {
        members[room, default: [:]][user] = status
        rooms[user, default: []].insert(room)
        for session in status.user.sessions where session.registered {
            if fanOut[room] == nil { fanOut[room] = FanOut(generation: nextGeneration()) }
            fanOut[room]!.add(session.connection, session.variant)
        }
        if var forms = namesCache.removeValue(forKey: room) {
            // Taken out while extended, so each list grows in place rather than being copied.
            for form in Array(forms.keys) {
                var names = forms.removeValue(forKey: form)!
                if !names.isEmpty { names.append(UInt8(ascii: " ")) }
                Self.appendEntry(status, form: form, to: &names)
                forms[form] = names
            }
            namesCache[room] = forms
        }
    }

    private mutating func nextGeneration() -> UInt64 {
        lastGeneration += 1
        return lastGeneration
    }

    /// A member's nickname or host changed: its rooms' NAMES are made again when next asked.
    mutating func identityChanged(_ user: UserID) {
        for room in rooms[user] ?? [] { namesCache[room] = nil }
    }

    /// Form bits: 1 multi-prefix (every status symbol), 2 userhost-in-names (nick!user@host).
    static func namesForm(allPrefixes: Bool, userhost: Bool) -> Int { (allPrefixes ? 1 : 0) | (userhost ? 2 : 0) }

    /// Every member's NAMES entry, space-separated, in the given form.
    mutating func names(of room: String, form: Int) -> [UInt8] {
        if let cached = namesCache[room]?[form] { return cached }
        var names: [UInt8] = []
        for status in (members[room] ?? [:]).values where status.user.nick != nil {
            if !names.isEmpty { names.append(UInt8(ascii: " ")) }
            Self.appendEntry(status, form: form, to: &names)
        }
        namesCache[room, default: [:]][form] = names
        return names
    }

    static func appendEntry(_ status: MemberStatus, form: Int, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: status.prefix(all: form & 1 != 0).utf8)
        bytes.append(contentsOf: (form & 2 != 0 ? status.user.prefix : status.user.nick ?? "").utf8)
    }

    /// After a member's capabilities changed (CAP REQ once registered): its place in each room's lists.
    mutating func refresh(_ session: Session) {
        for room in rooms[session.user.id] ?? [] {
            // Taken out while changed, so the lists are changed in place, not copied.
            var lists = fanOut.removeValue(forKey: room) ?? FanOut()
            lists.remove(session.connection)
            lists.generation = nextGeneration()
            lists.add(session.connection, session.variant)
            fanOut[room] = lists
        }
    }

    /// One more session of a member (multiclient): it gets what is said in each of its user's rooms.
    mutating func attach(_ session: Session) {
        for room in rooms[session.user.id] ?? [] {
            if fanOut[room] == nil { fanOut[room] = FanOut(generation: nextGeneration()) }
            fanOut[room]!.add(session.connection, session.variant)
        }
    }

    /// A session of a member ended: its user stays in the rooms (another session, or always-on).
    mutating func detach(_ session: Session) {
        for room in rooms[session.user.id] ?? [] where fanOut[room] != nil {
            fanOut[room]!.remove(session.connection)
            fanOut[room]!.generation = nextGeneration()
        }
    }

    /// Removes the membership; says whether the room is now empty.
    @discardableResult
    mutating func remove(_ user: UserID, from room: String) -> Bool {
        let removed = members[room]?.removeValue(forKey: user)
        if fanOut[room] != nil {
            for session in removed?.user.sessions ?? [] { fanOut[room]!.remove(session.connection) }
            fanOut[room]!.generation = nextGeneration()
        }
        namesCache[room] = nil
        rooms[user]?.remove(room)
        if rooms[user]?.isEmpty == true { rooms.removeValue(forKey: user) }
        if members[room]?.isEmpty == true {
            members.removeValue(forKey: room)
            fanOut.removeValue(forKey: room)
            return true
        }
        return false
    }

    mutating func setStatus(_ user: UserID, in room: String, _ letter: Character, _ on: Bool) {
        members[room]?[user]?.set(letter, on)
        namesCache[room] = nil
    }

    /// Everyone who shares a room with `user`, without `user`, each once.
    func neighbours(of user: UserID) -> Set<UserID> {
        var result: Set<UserID> = []
        for room in rooms[user] ?? [] {
            for member in members[room]?.keys ?? [:].keys { result.insert(member) }
        }
        result.remove(user)
        return result
    }

    func sharesRoom(_ a: UserID, _ b: UserID) -> Bool {
        guard let mine = rooms[a] else { return false }
        return mine.contains { members[$0]?[b] != nil }
    }
}

/// One room's connections grouped by render variant, each connection's place known so that
/// leaving is a swap with the last of its group. (A member has one connection per session.)
struct FanOut {
    /// Changed by `Membership` on anything but growth: between two equal stamps, each group's
    /// connections only had more appended, and groups only added after the others.
    var generation: UInt64 = 0
    init(generation: UInt64 = 0) { self.generation = generation }
    private(set) var groups: [(variant: RenderVariant, connections: [ConnectionID])] = []
    private var place: [ConnectionID: (group: Int, index: Int)] = [:]

    var isEmpty: Bool { place.isEmpty }

    mutating func add(_ connection: ConnectionID, _ variant: RenderVariant) {
        guard place[connection] == nil else { return }
        let group: Int
        if let found = groups.firstIndex(where: { $0.variant == variant }) {
            group = found
        } else {
            groups.append((variant, []))
            group = groups.count - 1
        }
        place[connection] = (group, groups[group].connections.count)
        groups[group].connections.append(connection)
    }

    mutating func remove(_ connection: ConnectionID) {
        guard let (group, index) = place.removeValue(forKey: connection) else { return }
        let last = groups[group].connections.count - 1
        if index != last {
            let moved = groups[group].connections[last]
            groups[group].connections[index] = moved
            place[moved] = (group, index)
        }
        groups[group].connections.removeLast()
        // An emptied group stays (few variants exist; the runtime skips an empty list).
    }
}

/// A draft/multiline message being received: `BATCH +ref draft/multiline target`, its lines, `BATCH -ref`.
struct MultilineBatch {
    let reference: String
    let target: String
    /// The label and client tags of the opening BATCH, which stand for the whole message.
    let label: String?
    let clientTags: [IRCTag]
    /// PRIVMSG or NOTICE, from the first line; every line must agree.
    var command: String?
    var lines: [(text: String, concat: Bool)] = []
    var bytes = 0
    /// Set once a line broke the rules: the FAIL has been sent and the rest is dropped until `BATCH -`.
    var failed = false
}

/// A departed user, for WHOWAS.
struct WhowasEntry {
    let nick: String
    let foldedNick: String
    let username: String
    let host: String
    let realname: String
    let leftAt: Double
    let user: UserID
}
