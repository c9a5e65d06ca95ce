import ChatLink
import ChatStore
import IRCWire

/// A server of the linked network other than this one.
final class RemoteServer {
    let sid: String
    let name: String
    let description: String
    /// Servers between us and it, plus one (1: linked directly).
    let hops: Int
    /// The link it is reached through.
    let route: ConnectionID
    /// The SID of the server that introduced it (nil: the link's own peer).
    let parent: String?
    /// Its users, so a split removes them without a walk over everyone.
    var users: Set<UserID> = []

    init(sid: String, name: String, description: String, hops: Int, route: ConnectionID, parent: String?) {
        self.sid = sid
        self.name = name
        self.description = description
        self.hops = hops
        self.route = route
        self.parent = parent
    }
}

/// One connection to another server: the handshake's progress and what the peer said of itself.
final class LinkSession {
    enum Phase: Equatable {
        /// Waiting for the peer's `CAPAB END`.
        case capabilities
        /// Waiting for its `SERVER` (with the password).
        case authentication
        /// Linked (its burst may still be arriving).
        case linked
    }

    let connection: ConnectionID
    let peer: String
    /// The block we dialled it by (nil: it connected to our link port).
    let dialled: LinkBlock?
    let secure: Bool
    var phase = Phase.capabilities
    var capab = Capab()
    /// Bytes and lines it sent before authenticating: bounded (`LinkSession.preAuthBytes`,
    /// `preAuthLines`), or one connection could grow the server without end before any password.
    var preAuthBytes = 0
    var preAuthLines = 0
    /// A real CAPAB block is a few KiB (InspIRCd's with every module about 8); past these the
    /// peer is refused.
    static let preAuthByteLimit = 64 * 1024
    static let preAuthLineLimit = 500
    /// The block its `SERVER` line matched.
    var block: LinkBlock?
    /// The server at the other end, once authenticated.
    var server: RemoteServer?
    /// SHA-256 of the certificate it showed (uppercase hex), when over TLS.
    var certificate: String?
    /// We have sent our own burst: it takes the network's events from now on.
    var burstSent = false
    let connectedAt: Double
    var lastActivity: Double
    var pingSentAt: Double?
    /// When it authenticated: what was said here after that went to it live.
    var linkedAt: Double = 0
    /// History rows it sent after a split, by room (folded), until its `HISTORYEND` for the room.
    var incomingRows: [String: [HistoryRow]] = [:]
    var incomingCount = 0

    /// The peer is a chat-tui server (`CHATTUI` in its CAPAB): history is exchanged after a split.
    var isChatTUI: Bool { capab.capabilities["CHATTUI"] != nil }

    init(connection: ConnectionID, peer: String, dialled: LinkBlock?, secure: Bool, now: Double) {
        self.connection = connection
        self.peer = peer
        self.dialled = dialled
        self.secure = secure
        connectedAt = now
        lastActivity = now
    }

    /// Its name for logs: the server's name once known.
    var name: String { server?.name ?? block?.name ?? dialled?.name ?? peer }
}

/// When to dial a configured link again: 1 s after a drop, doubling to 30 s (a split heals
/// within 30 s of the network coming back; InspIRCd's autoconnect is a fixed period).
struct LinkRetry {
    var failures = 0
    var next: Double = 0
    /// A dial is under way (the runtime answers with `linkConnected` or `linkDialFailed`).
    var dialling = false

    mutating func failed(now: Double) {
        failures += 1
        next = now + min(30, Double(1 << min(failures - 1, 5)))
    }
}

/// Failed link authentications by address (a /64 for IPv6: `ServerState.throttleKey`): past
/// `limit` in `window` seconds, the address's next connections to the link port are closed at
/// once until the window has passed since its last failure. Owner: the state; bound:
/// `maxAddresses` (past it the oldest are forgotten); end: `window` after the last failure.
struct LinkFailures {
    private var byAddress: [String: (count: Int, last: Double)] = [:]
    static let limit = 3
    static let window = 60.0
    static let maxAddresses = 4096

    mutating func failed(_ key: String, now: Double) {
        var entry = byAddress[key] ?? (0, now)
        if now - entry.last > Self.window { entry.count = 0 }
        entry.count += 1
        entry.last = now
        if byAddress[key] == nil && byAddress.count >= Self.maxAddresses {
            byAddress = byAddress.filter { now - $0.value.last <= Self.window }
            if byAddress.count >= Self.maxAddresses, let oldest = byAddress.min(by: { $0.value.last < $1.value.last }) { byAddress[oldest.key] = nil }
        }
        byAddress[key] = entry
    }

    /// (An entry past its window is forgotten by the next `failed` that needs the room.)
    func refuses(_ key: String, now: Double) -> Bool {
        guard let entry = byAddress[key], now - entry.last <= Self.window else { return false }
        return entry.count >= Self.limit
    }

    var count: Int { byAddress.count }
}
