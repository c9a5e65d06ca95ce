import Synchronization

/// One file transfer, as the front end shows it.
public struct TransferInfo: Sendable, Equatable {
    public enum Direction: Sendable, Equatable { case sending, receiving }

    public enum State: Sendable, Equatable {
        /// We offered; waiting for the peer to connect (or to answer a passive offer).
        case offered
        /// Someone offered us a file; waiting for /accept or /reject.
        case pending
        /// We asked to resume and wait for the sender's ACCEPT.
        case resuming
        case connecting
        case active
        case done(sha256: String, seconds: Double)
        case failed(String)
        case rejected
        case expired
        case cancelled

        public var isFinished: Bool {
            switch self {
            case .done, .failed, .rejected, .expired, .cancelled: return true
            default: return false
            }
        }
    }

    public let id: Int
    public let direction: Direction
    public let peer: String
    /// The name as offered (sending: the name we offer; receiving: the name the sender gave).
    public let offeredName: String
    /// On our disk: the file we send, or the file we save to.
    public var localPath: String
    public var size: UInt64
    public var transferred: UInt64 = 0
    /// Where a resumed transfer started.
    public var startOffset: UInt64 = 0
    public var state: State
    public var passive = false
    public var token: String?
    /// The peer's address and port (receiving), or our listening port (sending).
    public var address = ""
    public var port = 0
    public var offeredAt: Double
    public var startedAt: Double?
    public var finishedAt: Double?
    /// Set by /cancel or /reject; workers stop at the next chance.
    public var cancelRequested = false

    public init(id: Int, direction: Direction, peer: String, offeredName: String, localPath: String, size: UInt64,
                state: State, passive: Bool = false, token: String? = nil, address: String = "", port: Int = 0, offeredAt: Double) {
        self.id = id
        self.direction = direction
        self.peer = peer
        self.offeredName = offeredName
        self.localPath = localPath
        self.size = size
        self.state = state
        self.passive = passive
        self.token = token
        self.address = address
        self.port = port
        self.offeredAt = offeredAt
    }

    /// Bytes per second since the transfer started.
    public func rate(now: Double) -> Double {
        guard let startedAt else { return 0 }
        let elapsed = (finishedAt ?? now) - startedAt
        return elapsed > 0 ? Double(transferred - startOffset) / elapsed : 0
    }

    public var fraction: Double { size == 0 ? 1 : min(1, Double(transferred) / Double(size)) }
}

/// Every transfer of one client, shared between the actor, the worker threads and the screen.
public final class FileTransfers: Sendable {
    private let table = Mutex<(next: Int, items: [Int: TransferInfo])>((1, [:]))

    public init() {}

    public func snapshot() -> [TransferInfo] {
        table.withLock { $0.items.values.sorted { $0.id < $1.id } }
    }

    public subscript(id: Int) -> TransferInfo? {
        table.withLock { $0.items[id] }
    }

    func add(_ make: (Int) -> TransferInfo) -> TransferInfo {
        table.withLock { state in
            let info = make(state.next)
            state.items[info.id] = info
            state.next += 1
            return info
        }
    }

    @discardableResult
    func update(_ id: Int, _ change: (inout TransferInfo) -> Void) -> TransferInfo? {
        table.withLock { state in
            guard state.items[id] != nil else { return nil }
            change(&state.items[id]!)
            return state.items[id]
        }
    }

    func first(where match: (TransferInfo) -> Bool) -> TransferInfo? {
        table.withLock { $0.items.values.sorted { $0.id < $1.id }.first(where: match) }
    }

    public var hasActive: Bool {
        table.withLock { $0.items.values.contains { !$0.state.isFinished && $0.state != .pending } }
    }
}
