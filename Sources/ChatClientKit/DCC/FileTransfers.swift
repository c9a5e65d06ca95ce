import ChatTransport
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
    /// Through the host's web port (/upload, /download), not peer to peer.
    public var viaHost = false

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

/// What happens to a transfer, as the actor and the worker threads report it.
public enum TransferEvent: Sendable, Equatable {
    /// Our active offer listens on this port.
    case listening(port: Int)
    /// The answer to our passive offer: we connect there and send.
    case connectTo(address: String, port: Int)
    /// The peer resumes (we send) or agreed to resume (we receive) from this byte.
    case resumeFrom(UInt64)
    /// /accept of an offer that has a partial file: we ask the sender to resume.
    case resumeAsked(from: UInt64)
    /// Where the file is saved (chosen at /accept, renamed when complete).
    case savingTo(String)
    case connecting
    /// The data connection is up; bytes flow from `position`.
    case started(position: UInt64, time: Double)
    case progress(UInt64)
    /// A download from the host learned the file's size from its answer.
    case sized(UInt64)
    /// /cancel or /reject: workers stop at their next chance.
    case cancelRequested
    /// The end: done, failed, rejected, expired or cancelled.
    case ended(TransferInfo.State, time: Double)
}

extension TransferInfo {
    /// Applies an event when the transfer's state allows it; returns false when it does not
    /// (a late report after the end, a progress before the start), leaving it unchanged.
    @discardableResult
    public mutating func apply(_ event: TransferEvent) -> Bool {
        switch event {
        case .listening(let port):
            guard state == .offered else { return false }
            self.port = port
        case .connectTo(let address, let port):
            guard state == .offered, passive, direction == .sending else { return false }
            self.address = address
            self.port = port
            state = .connecting
        case .resumeFrom(let position):
            guard state == .offered || state == .resuming, position < size || size == 0 else { return false }
            startOffset = position
            transferred = position
        case .resumeAsked(let position):
            guard state == .pending, direction == .receiving else { return false }
            state = .resuming
            startOffset = position
        case .savingTo(let path):
            guard direction == .receiving else { return false }
            localPath = path
        case .connecting:
            guard state == .pending || state == .resuming || state == .offered else { return false }
            state = .connecting
        case .started(let position, let time):
            guard state == .connecting || state == .offered else { return false }
            state = .active
            transferred = position
            startedAt = time
        case .progress(let bytes):
            guard state == .active else { return false }
            transferred = bytes
        case .sized(let bytes):
            guard state == .connecting, viaHost else { return false }
            size = bytes
        case .cancelRequested:
            guard !state.isFinished || state == .rejected else { return false }
            cancelRequested = true
        case .ended(let final, let time):
            guard final.isFinished else { return false }
            if state.isFinished {
                // /reject ends a transfer at once; the worker's later "cancelled" keeps it rejected.
                guard state == .rejected, final != .cancelled, final != .rejected else { return false }
            }
            state = final
            finishedAt = time
            if final == .rejected { cancelRequested = true }
        }
        return true
    }
}

/// Every transfer of one client: the one owner of their state, shared between the actor and
/// the worker threads. Each change is an event applied by `TransferInfo.apply`; what changed
/// is published (progress at most once per percent) so a screen draws it from its own view.
public final class FileTransfers: Sendable {
    private let table = Locked<(next: Int, items: [Int: TransferInfo])>((1, [:]))
    private let publish: @Sendable (TransferInfo) -> Void

    public init(publish: @escaping @Sendable (TransferInfo) -> Void = { _ in }) {
        self.publish = publish
    }

    public func snapshot() -> [TransferInfo] {
        table.withLock { $0.items.values.sorted { $0.id < $1.id } }
    }

    public subscript(id: Int) -> TransferInfo? {
        table.withLock { $0.items[id] }
    }

    func add(_ make: (Int) -> TransferInfo) -> TransferInfo {
        // Published under the lock, so the views see each transfer's changes in the order made.
        table.withLock { state in
            let info = make(state.next)
            state.items[info.id] = info
            state.next += 1
            publish(info)
            return info
        }
    }

    /// Applies an event; returns the transfer as it is now (nil for an unknown id).
    @discardableResult
    func record(_ id: Int, _ event: TransferEvent) -> TransferInfo? {
        table.withLock { state -> TransferInfo? in
            guard var info = state.items[id] else { return nil }
            let before = Int(info.fraction * 100)
            guard info.apply(event) else { return info }
            state.items[id] = info
            if case .progress = event, Int(info.fraction * 100) == before { return info }
            publish(info)
            return info
        }
    }

    func first(where match: (TransferInfo) -> Bool) -> TransferInfo? {
        table.withLock { $0.items.values.sorted { $0.id < $1.id }.first(where: match) }
    }

    public var hasActive: Bool {
        table.withLock { $0.items.values.contains { !$0.state.isFinished && $0.state != .pending } }
    }
}
