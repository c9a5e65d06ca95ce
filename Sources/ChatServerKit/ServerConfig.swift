import ChatTransport
import IRCWire

/// An IRC operator: OPER NAME PASSWORD gives user mode +o when the password matches the hash.
public struct OperatorBlock: Sendable, Equatable {
    public var name: String
    /// `pbkdf2-sha256:ITERATIONS:SALT:HEX` (`chat-tui --hash-password` makes one, with
    /// 100,000 iterations); the older `sha256:SALT:HEX` (SHA-256 of salt and password) is still read.
    public var passwordHash: String

    public init(name: String, passwordHash: String) {
        self.name = name
        self.passwordHash = passwordHash
    }

    /// PBKDF2-HMAC-SHA-256 of the password. A random secret of 128 bits (the host's own
    /// operator login) needs no stretching: `iterations: 1` keeps OPER cheap for it.
    public static func hash(_ password: String, salt: String, iterations: Int = 100_000) -> String {
        let derived = Crypto.pbkdf2SHA256(password: Array(password.utf8), salt: Array(salt.utf8), iterations: iterations)
        return "pbkdf2-sha256:\(iterations):\(salt):" + Crypto.hex(derived)
    }

    /// Checked when OPER names no block, so an unknown name costs the same as a wrong password.
    static let standIn = OperatorBlock(name: "", passwordHash: hash("", salt: "stand-in"))

    public func accepts(_ password: String) -> Bool {
        let parts = passwordHash.split(separator: ":").map(String.init)
        let candidate: String
        if parts.count == 4, parts[0] == "pbkdf2-sha256", let iterations = Int(parts[1]), iterations > 0 {
            candidate = OperatorBlock.hash(password, salt: parts[2], iterations: iterations)
        } else if parts.count == 3, parts[0] == "sha256" {
            candidate = "sha256:\(parts[1]):" + Crypto.hex(Crypto.sha256(Array((parts[1] + password).utf8)))
        } else {
            return false
        }
        // Compared over the UTF-8 bytes in constant time: timing says nothing about how much matched.
        return Crypto.constantTimeEqual(Array(candidate.utf8), Array(passwordHash.utf8))
    }
}

/// Where uploads are kept and how much (`--upload-max-size`, `--upload-quota`, `--upload-days`).
public struct UploadSettings: Sendable {
    public var directory: String
    public var maxSize: Int
    public var quota: Int
    /// Bytes all uploads together may keep.
    public var total: Int
    /// 0: kept until the host deletes them.
    public var days: Int

    public init(directory: String, maxSize: Int = 100 << 20, quota: Int = 500 << 20, total: Int = 5 << 30, days: Int = 7) {
        self.directory = directory
        self.maxSize = maxSize
        self.quota = quota
        self.total = total
        self.days = days
    }
}

/// Everything `chat-tui --serve` can be told.
public struct ServerConfig: Sendable {
    /// The server's name, the source of its numerics.
    public var name = "chat-tui.local"
    public var network = "chat-tui"
    /// The network's icon, an image URL (`draft/ICON`), shown by clients that read it.
    public var networkIcon: String?
    /// Pages elsewhere allowed to open the WebSocket (`--web-origin`); the page's own origin always is.
    public var webOrigins: [String] = []
    /// The server's certificate as the web page shows it (SHA-256, AB:CD:… form), and whether
    /// it is self-signed (the page then asks the user to compare it with the host's screen).
    public var certificateFingerprint: String?
    public var certificateSelfSigned = false
    /// Files through the host on the web port (nil: none).
    public var uploads: UploadSettings?
    /// The web port as people outside reach it (`--web-url https://chat.example.org:8443`), for
    /// upload and file links; nil: the address each client reached this machine at.
    public var webURL: String?
    /// The room every registered user joins, or nil (`--room none`) for explicit JOINs only.
    public var room: String? = "#lobby"
    /// Lines of the message of the day; nil sends 422.
    public var motd: [String]?
    /// When set, a client must send this with PASS before registering.
    public var password: String?
    public var operators: [OperatorBlock] = []
    /// Nicknames nobody may take, nor anything that looks like them.
    /// (Not `root` or `admin`: those are login names, and the host's own user is named after its login.)
    /// How names fold (nicknames, rooms, masks): rfc1459 (`{}|~` are the lower case of `[]\^`) or
    /// ascii (letters only: InspIRCd 4's default, and many networks'). Linked servers must agree.
    public var casemapping: Casemapping = .rfc1459
    public var reservedNicks = ["NickServ", "ChanServ", "OperServ", "MemoServ", "HostServ", "BotServ", "Global", "services"]
    /// Lines of ADMIN: location, second location, e-mail.
    public var adminInfo = ["chat-tui host", "", ""]
    /// Seconds a connection may take to register.
    public var registrationTimeout: Double = 60
    /// Connections per address (an IPv6 /64), new connections per address per 10 minutes, and
    /// unregistered connections in all (ergo's 16 and 32 are the defaults); loopback is exempt.
    /// Nil: no limits (the benchmarks, which say so).
    public var connectionLimits: ConnectionLimits? = ConnectionLimits()
    /// Seconds of silence before the server sends PING.
    public var pingInterval: Double = 90
    /// Seconds after that PING with no reply before the connection is declared dead.
    public var pingTimeout: Double = 60
    public var nickLength = 30
    public var channelLength = 50
    // InspIRCd's defaults: with a 30-byte nick, 10-byte user and 64-byte host, a relayed TOPIC
    // or KICK of full length still fits in 512 bytes.
    public var topicLength = 307
    public var awayLength = 200
    public var kickLength = 255
    public var userLength = 10
    public var realnameLength = 100
    /// Targets one PRIVMSG, NOTICE or TAGMSG may name.
    public var maxTargets = 4
    /// Mode changes with a parameter in one MODE command.
    public var maxModes = 6
    /// Rooms one user may be in.
    public var channelLimit = 100
    /// Names one user may MONITOR.
    public var monitorLimit = 100
    /// draft/multiline: the most bytes of text and lines one batched message may have.
    public var multilineMaxBytes = 4096
    public var multilineMaxLines = 24
    /// Departed users WHOWAS remembers.
    public var whowasLimit = 1000
    /// Rooms invited to at once, per room kept (cleared when the invitee joins or the room ends).
    public var inviteListLimit = 100
    public var version = "chat-tui-" + ChatTUIVersion.number
    /// A Strict Transport Security policy to advertise (only with a certificate clients can
    /// verify): the TLS port, and how long clients should insist on TLS, in seconds.
    public var sts: (port: Int, duration: Int)?
    /// When the server started, seconds since 1970, for 003.
    public var createdAt: Double = 0
    /// How long the senders to a reader that fell behind wait for it (RuntimeBackpressure.swift):
    /// while it takes nothing, and in all, before it is given up on.
    public var readerStallSeconds = 2.0
    public var readerBehindSeconds = 10.0
    /// Web Push to accounts' browsers and phones (WebPush.swift): the VAPID key and who runs the
    /// server; nil turns it off (the start sets it when there are accounts).
    public var webPush: WebPushSettings?
    /// draft/account-registration: users may make accounts with REGISTER (`--registration open|closed`).
    public var accountRegistration = true
    /// What happens to someone using an account's name without logging in to it.
    public var nickProtection = NickProtection.rename(after: 30)
    /// One person on every device: every connection logged in to an account is a session of
    /// that account's one user (`--multiclient on|off`).
    public var multiclient = true
    /// Accounts whose user stays with no session left (`--always-on opt-in|opt-out|off`): opt-out,
    /// every account unless it says otherwise (PERSISTENCE, NickServ SET ALWAYS-ON).
    public var alwaysOn = AlwaysOnPolicy.optOut
    /// An always-on account nobody logged in to for this many days stops being always-on.
    public var alwaysOnExpireDays = 30.0
    /// Always-on users kept at once, server-wide; rooms kept per always-on user (past it, the
    /// rooms it joined last are not kept across a restart).
    public var alwaysOnLimit = 10_000
    public var alwaysOnRoomLimit = 50
    /// PBKDF2 iterations of accounts made with REGISTER.
    public var accountIterations = 100_000
    /// Failed logins allowed per minute from one address (an IPv6 /64) and for one account.
    public var loginFailuresPerAddress = 5
    public var loginFailuresPerAccount = 10
    /// Accounts one address may make per hour.
    public var accountsPerAddressPerHour = 3
    /// PBKDF2s waiting for the worker at once; past it, logins are told to try again.
    public var maxPendingPasswordChecks = 64
    /// Rooms looked at (LIST) or members answered (WHO #room) in one step of a long reply.
    public var longReplyStep = 256
    /// The most lines one CHATHISTORY request gets (ISUPPORT CHATHISTORY).
    public var chathistoryLimit = 100
    /// Rows that may wait for a history writer that cannot store them (a full disk), their
    /// senders' echoes held; past it, new messages are refused with FAIL TEMPORARILY_UNAVAILABLE.
    public var historyBacklog = 1000
    /// Lines of a room's history sent on joining to clients without draft/chathistory (0: none).
    public var replayOnJoin = 20
    /// Other servers this one links with (the spanning-tree protocol: `Links*.swift`).
    public var links = LinkSettings()

    public init() {}

    /// TARGMAX: how many targets each command takes. JOIN and PART are bounded by CHANLIMIT
    /// instead: clients rejoin all their rooms in one JOIN and do not all split it by TARGMAX.
    public var targetLimits: [String: Int] {
        ["PRIVMSG": maxTargets, "NOTICE": maxTargets, "TAGMSG": maxTargets, "NAMES": 1, "WHOIS": 1, "KICK": maxTargets]
    }

    /// The ISUPPORT tokens this server advertises in 005.
    public var isupport: ISupportTokens {
        let tokens: ISupportTokens = [
            ("AWAYLEN", String(awayLength)),
            ("BOT", "B"),
            ("CASEMAPPING", casemapping.rawValue),
            ("CHANLIMIT", "#:\(channelLimit)"),
            ("CHANMODES", ChannelModes.chanmodesToken),
            ("CHANNELLEN", String(channelLength)),
            ("CHANTYPES", "#"),
            ("ELIST", "CMNTU"),
            ("EXCEPTS", "e"),
            ("EXTBAN", ExtBan.token),
            ("HOSTLEN", "64"),
            ("INVEX", "I"),
            ("KEYLEN", String(ChannelModes.keyLength)),
            ("KICKLEN", String(kickLength)),
            ("MAXLIST", ChannelModes.maxListToken),
            ("MAXTARGETS", String(maxTargets)),
            ("MODES", String(maxModes)),
            ("MONITOR", String(monitorLimit)),
            ("NETWORK", network),
            ("NICKLEN", String(nickLength)),
            ("PREFIX", ChannelModes.prefixToken),
            ("STATUSMSG", "@+"),
            ("TARGMAX", targetLimits.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")),
            ("TOPICLEN", String(topicLength)),
            ("USERLEN", String(userLength)),
            ("UTF8ONLY", ""),
            ("WHOX", ""),
        ]
        guard let networkIcon else { return tokens }
        return tokens + [("draft/ICON", networkIcon)]
    }
}

public typealias ISupportTokens = [(String, String)]

/// `--nick-protection`: an account's name used by someone not logged in to it.
public enum NickProtection: Sendable, Equatable {
    /// Allowed, with a warning; renamed to a guest nickname after this many seconds (ergo's "timeout").
    case rename(after: Double)
    /// Refused at once (433), as ergo's "strict".
    case strict
    case off
}

/// How many connections one address may hold and open.
public struct ConnectionLimits: Sendable, Equatable {
    public var perAddress = 16
    public var newPerWindow = 32
    public var window: Double = 600
    public var unregistered = 2000
    /// Unregistered connections from one network (an IPv4 /24, an IPv6 /48) at once.
    public var unregisteredPerBlock = 256
    /// The registration timeout once half of `unregistered` is taken.
    public var registrationTimeoutUnderPressure: Double = 10
    /// Loopback connections skip these limits and the pacing (the host's screen, local tools).
    public var exemptLoopback = true
    /// Command pacing: lines a client may send at once, then per second after that
    /// (a 20-line paste goes through at once; a flood is slowed to 4 lines a second).
    public var burst = 20
    public var linesPerSecond: Double = 4
    /// Lines waiting for their turn per connection; past this the server stops reading it.
    public var queuedLines = 256
    /// CPU seconds of TLS handshakes one address may cost the loop per minute; past it, its
    /// new TLS connections are closed at once until the minute is over. (An X25519 handshake
    /// costs about 2 ms, so this is hundreds of them; the new-connection limit comes first.)
    public var handshakeCPUPerMinute = 1.0

    public init(perAddress: Int = 16, newPerWindow: Int = 32, window: Double = 600, unregistered: Int = 2000, exemptLoopback: Bool = true,
                burst: Int = 20, linesPerSecond: Double = 4, queuedLines: Int = 256) {
        self.perAddress = perAddress
        self.newPerWindow = newPerWindow
        self.window = window
        self.unregistered = unregistered
        self.exemptLoopback = exemptLoopback
        self.burst = burst
        self.linesPerSecond = linesPerSecond
        self.queuedLines = queuedLines
    }
}

/// Whether accounts stay present with no session (`--always-on`).
public enum AlwaysOnPolicy: String, Sendable {
    /// Always-on only for accounts that asked for it.
    case optIn = "opt-in"
    /// Always-on unless the account said otherwise.
    case optOut = "opt-out"
    /// Never: an account's user leaves with its last session.
    case off
}
