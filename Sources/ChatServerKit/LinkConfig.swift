import ChatLink

/// One server this one links with (`--link NAME=HOST:PORT`, or a `[link NAME]` section).
public struct LinkBlock: Sendable, Equatable {
    /// The peer's server name, as its `SERVER` line gives it.
    public var name: String
    /// Where to connect to it; nil: it connects to us (`--link-port`) and we never dial.
    public var host: String?
    public var port: Int
    /// Sent in our `SERVER` line and expected in theirs.
    public var password: String
    /// TLS on the link (the default); off only on a trusted network, as InspIRCd allows.
    public var tls: Bool
    /// The SHA-256 of the peer's certificate (hex, colons allowed): with TLS, a link whose peer
    /// shows another is refused. Nil: any certificate, said in the log at every link.
    public var fingerprint: String?

    public init(name: String, host: String? = nil, port: Int = 7000, password: String, tls: Bool = true, fingerprint: String? = nil) {
        self.name = name
        self.host = host
        self.port = port
        self.password = password
        self.tls = tls
        self.fingerprint = fingerprint
    }

    /// The fingerprint as the state compares it: uppercase hex, no colons.
    var pinned: String? {
        fingerprint.map { String($0.uppercased().filter { $0 != ":" }) }
    }
}

/// How this server takes part in a linked network.
public struct LinkSettings: Sendable, Equatable {
    /// The server's ID (`--sid`); derived from the name when nil.
    public var sid: String?
    /// The servers it links with.
    public var blocks: [LinkBlock] = []
    /// What other servers show of this one (`SERVER`'s description).
    public var description = "chat-tui"
    /// Seconds of silence on a link before a PING, and after it before the link is dropped.
    public var pingInterval: Double = 60
    public var pingTimeout: Double = 60

    public init() {}
}

extension ServerConfig {
    /// The SID this server uses: the configured one, or one made from its name.
    public var sid: String { links.sid ?? LinkIDs.sid(fromName: name) }
}
