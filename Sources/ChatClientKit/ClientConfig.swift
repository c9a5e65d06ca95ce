import ChatTransport

/// How a `ChatClient` connects and behaves.
public struct ClientConfig: Sendable {
    public var host: String
    public var port: Int = 6667
    public var nick: String
    public var user: String?
    public var realName = "chat-tui user"
    public var password: String?
    /// Sent as `OPER NAME PASSWORD` after every registration (the host's own user on `--serve`).
    public var operLogin: (name: String, password: String)?
    /// `/ignore` masks (`nick!user@host`, `*` and `?`): their messages, notices, actions and
    /// file offers are dropped on arrival.
    public var ignoreMasks: [String] = []
    /// Words and a pattern that mark a line like a mention.
    public var highlights = Highlights()
    /// Where plain-text logs go (the text-logs setting; nil: none), and the local zone's offset
    /// from UTC in seconds, for their times and days.
    public var textLogDirectory: String?
    public var utcOffset = 0
    /// Rooms to join after registering (and to rejoin after a reconnect).
    public var rooms: [String] = []
    /// Where the rooms one is in are kept for the next start (`JoinedRooms`; nil: not kept).
    public var joinedRoomsPath: String?
    /// Where the read positions are kept for the next start (`ReadPositions`; nil: not kept).
    public var readPositionsPath: String?
    /// Conversations closed last time (`ConversationID` descriptions): not restored from the log.
    public var closedConversations: Set<String> = []
    /// Seconds to wait for the TCP connection.
    public var connectTimeout: Double = 10
    /// Seconds from connection to 001 before giving up on this attempt.
    public var registrationTimeout: Double = 30
    /// Seconds of silence before we send PING.
    public var pingInterval: Double = 30
    /// Seconds without any answer before the connection is declared dead.
    public var pingTimeout: Double = 60
    public var reconnect = ReconnectPolicy()
    /// Messages held while offline; past this, new ones are reported as not sent.
    public var offlineQueueLimit = 100
    public var scrollbackLimit = 4_096
    /// Direct conversations kept open; past this, the least recently active ones are closed
    /// (strangers' before ours), their lines still in the log. 200 strangers writing at once
    /// is a flood, not a conversation; 200,000 of them must not cost 200,000 conversations.
    public var directConversationLimit = 200
    /// Where received files go.
    public var downloadDirectory = (Environment["HOME"] ?? "/tmp") + "/Downloads/chat-tui"
    /// Ports to listen on for DCC (nil: any free port).
    public var dccPorts: ClosedRange<Int>?
    /// The address to offer in DCC SEND (nil: our end of the server connection).
    public var dccAddress: String?
    /// Offers larger than this are refused.
    public var dccMaxSize: UInt64 = 10 << 30
    /// Offers from these nicknames are accepted without asking.
    public var dccAutoAcceptFrom: [String] = []
    /// Seconds an offer waits for the peer before its port is closed.
    public var dccOfferTimeout: Double = 300
    /// Typing notices (`+typing`) are sent while the user writes (`--typing off`: never).
    public var sendsTyping = true
    /// The capabilities we ask for when a server offers them.
    public var wantedCapabilities: [String] = ["message-tags", "server-time", "echo-message", "multi-prefix", "away-notify",
                                               "batch", "draft/chathistory", "draft/read-marker", "draft/multiline",
                                               "draft/message-redaction", "draft/channel-rename", "draft/metadata-2",
                                               // Who is logged in to which account: held lines are for a person (HeldDirect).
                                               "account-tag", "extended-join", "account-notify", "extended-monitor",
                                               // The server keeps our account present while we are away.
                                               "draft/persistence",
                                               // /search asks the server too where it keeps history.
                                               "soju.im/search"]

    public init(host: String, port: Int = 6667, nick: String) {
        self.host = host
        self.port = port
        self.nick = nick
    }

    /// What registration needs of this configuration.
    var registrationSettings: Registration.Settings {
        Registration.Settings(nick: nick, userName: userName, realName: realName, password: password,
                              wantedCapabilities: wantedCapabilities, sasl: sasl)
    }

    /// Speak TLS (the default for port 6697).
    public var tls = false
    /// The server certificate's SHA-256 (hex, colons optional): only that certificate is accepted.
    public var tlsFingerprint: String?
    /// The client's own log of every line shown (SQLite with full-text search); nil: none (`--no-logs`).
    public var logPath: String?
    /// Certificates the user chose to trust, `host:port FINGERPRINT` per line (like SSH's known_hosts).
    public var knownServersPath: String?

    /// The account to log in to with SASL (`--sasl-user`): SCRAM-SHA-256 when offered, PLAIN
    /// only over TLS unless `saslPlainInsecure`, EXTERNAL with a client certificate.
    public var saslAccount: String?
    public var saslPassword: String?
    /// This device's name, sent after the account (`alice@laptop`) to a server that keeps an
    /// account present across devices (it offers `draft/persistence`): it then remembers what
    /// this device has seen (`--device`; nil: not sent).
    public var device: String?
    public var saslPlainInsecure = false
    /// A client certificate (PEM) to present over TLS, and its key (nil: in the same file).
    public var tlsClientCertificate: String?
    public var tlsClientKey: String?

    var sasl: SASLLogin? {
        saslAccount.map { SASLLogin(account: $0, password: saslPassword, allowPlain: tls || saslPlainInsecure,
                                    external: tls && tlsClientCertificate != nil, device: device) }
    }

    /// A USER name: our nickname when it is plain ASCII, else a safe stand-in.
    var userName: String {
        if let user, !user.isEmpty { return user }
        let ascii = nick.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }
        let name = String(String.UnicodeScalarView(ascii.prefix(10)))
        return name.isEmpty ? "chattui" : name.lowercased()
    }
}
