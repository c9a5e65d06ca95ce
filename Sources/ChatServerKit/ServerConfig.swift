/// Everything `chat-tui --serve` can be told.
public struct ServerConfig: Sendable {
    /// The server's name, the source of its numerics.
    public var name = "chat-tui.local"
    public var network = "chat-tui"
    /// The room every registered user joins.
    public var room = "#lobby"
    /// Lines of the message of the day; nil sends 422.
    public var motd: [String]?
    /// When set, a client must send this with PASS before registering.
    public var password: String?
    /// Seconds a connection may take to register.
    public var registrationTimeout: Double = 60
    /// Seconds of silence before the server sends PING.
    public var pingInterval: Double = 90
    /// Seconds after that PING with no reply before the connection is declared dead.
    public var pingTimeout: Double = 60
    public var nickLength = 30
    public var channelLength = 50
    public var topicLength = 390
    public var awayLength = 200
    public var kickLength = 390
    /// Targets one PRIVMSG or NOTICE may name.
    public var maxTargets = 4
    public var version = "chat-tui-0.1"
    /// When the server started, seconds since 1970, for 003.
    public var createdAt: Double = 0

    public init() {}

    /// The ISUPPORT tokens this server advertises in 005.
    public var isupport: ISupportTokens {
        [
            ("AWAYLEN", String(awayLength)),
            ("CASEMAPPING", "rfc1459"),
            ("CHANLIMIT", "#:"),
            ("CHANMODES", ",,,nt"),
            ("CHANNELLEN", String(channelLength)),
            ("CHANTYPES", "#"),
            ("KICKLEN", String(kickLength)),
            ("MODES", "4"),
            ("NETWORK", network),
            ("NICKLEN", String(nickLength)),
            ("PREFIX", "(ov)@+"),
            ("TARGMAX", "PRIVMSG:\(maxTargets),NOTICE:\(maxTargets),TAGMSG:\(maxTargets),NAMES:1,WHOIS:1,KICK:1"),
            ("TOPICLEN", String(topicLength)),
            ("UTF8ONLY", ""),
        ]
    }
}

public typealias ISupportTokens = [(String, String)]
