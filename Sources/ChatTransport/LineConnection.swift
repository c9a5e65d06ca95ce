#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import IRCWire

/// One client connection as lines: a reader thread frames what arrives and hands it out in
/// order through `input`, ending with `.closed` only after every complete line before it;
/// `write` sends whole lines with a write timeout. Used from any task or actor.
public final class LineConnection: Sendable {
    public enum Input: Sendable, Equatable {
        case line([UInt8])
        /// A line longer than the framer's cap arrived and was discarded.
        case overlong(discardedBytes: Int)
        /// The connection ended; nothing follows. `reason` is for the user.
        case closed(reason: String)
    }

    private struct Shared {
        var fd: Int32
        /// Set by `close(reason:)` so the reader reports why we hung up.
        var closeReason: String?
        /// Lines handed out and not yet taken (`taken()`): past `inputLimit` the reader stops
        /// reading, so a flooding server fills its own send buffer, not our memory.
        var pending = 0
        /// The most lines that were ever waiting at once (for tests: it stays at the limit).
        var highWater = 0
    }

    /// The most inputs that ever waited for the consumer at once.
    public var pendingHighWater: Int { shared.withLock { $0.highWater } }

    /// How many lines may wait for the consumer before the reader pauses.
    public static let inputLimit = 2048
    /// Wakes the paused reader once the consumer has caught up to half the limit.
    private let resume = DispatchSemaphore(value: 0)

    public let input: AsyncStream<Input>
    /// `host:port` of the peer.
    public let peer: String
    /// The address of our end, for DCC offers later.
    public let localHost: String
    private let shared: Mutex<Shared>

    /// Seconds a single write may block before the connection is declared stuck.
    public static let writeTimeout: Double = 10

    private init(fd: Int32) {
        peer = SocketAddress.peer(of: fd).map(SocketAddress.describe) ?? "?"
        localHost = SocketAddress.local(of: fd).map(SocketAddress.host(of:)) ?? "?"
        var timeout = timeval(tv_sec: Int(Self.writeTimeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        shared = Mutex(Shared(fd: fd, closeReason: nil))
        let (stream, continuation) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .unbounded)
        input = stream
        let reader = Reader(fd: fd, shared: self, continuation: continuation)
        let thread = Thread { reader.run() }
        thread.name = "chat-tui reader \(peer)"
        thread.start()
    }

    deinit {
        shared.withLock { state in
            if state.fd >= 0 { Glibc.close(state.fd); state.fd = -1 }
        }
    }

    /// Resolves and connects off the caller's thread (connect blocks for up to `timeout`).
    public static func open(host: String, port: Int, timeout: Double) async throws(TransportError) -> LineConnection {
        Sockets.ignoreSIGPIPE()
        let result: Result<Int32, TransportError> = await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: Result { () throws(TransportError) -> Int32 in
                    try Sockets.connect(host: host, port: port, timeout: timeout)
                })
            }
            thread.start()
        }
        return LineConnection(fd: try result.get())
    }

    /// Sends bytes (whole lines), blocking at most `writeTimeout`.
    public func write(_ bytes: [UInt8]) throws(TransportError) {
        let failure: TransportError? = shared.withLock { state in
            guard state.fd >= 0, state.closeReason == nil else { return .closed }
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { Glibc.send(state.fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
                if n > 0 { offset += n; continue }
                let code = errno
                if n < 0 && code == EINTR { continue }
                if n < 0 && (code == EAGAIN || code == EWOULDBLOCK) {
                    state.closeReason = "the server stopped reading (write timed out after \(Int(Self.writeTimeout)) s)"
                    Glibc.shutdown(state.fd, Int32(SHUT_RDWR))
                    return .closed
                }
                return .system(call: "send", errno: code)
            }
            return nil
        }
        if let failure { throw failure }
    }

    public func write(_ message: IRCMessage) throws(TransportError) {
        try write(message.serialized())
    }

    /// Hangs up. The reader then ends `input` with `.closed(reason)`.
    public func close(reason: String) {
        shared.withLock { state in
            guard state.fd >= 0 else { return }
            if state.closeReason == nil { state.closeReason = reason }
            Glibc.shutdown(state.fd, Int32(SHUT_RDWR))
        }
    }

    fileprivate func takeCloseReason() -> String? {
        shared.withLock { $0.closeReason }
    }

    /// The consumer took one input: the reader may go on when it was waiting.
    public func taken() {
        let wake = shared.withLock { state -> Bool in
            state.pending = max(0, state.pending - 1)
            return state.pending == Self.inputLimit / 2
        }
        if wake { resume.signal() }
    }

    /// Called by the reader after handing out a line: waits while too many are untaken, waking
    /// every half second to notice a close.
    fileprivate func handedOut() {
        shared.withLock { $0.pending += 1; $0.highWater = max($0.highWater, $0.pending) }
        while shared.withLock({ $0.pending >= Self.inputLimit && $0.closeReason == nil }) {
            _ = resume.wait(timeout: .now() + 0.5)
        }
    }

    /// The reader thread's loop. It keeps the connection alive until the socket ends.
    private struct Reader: @unchecked Sendable {
        // `shared` is used only through its Mutex; the continuation is Sendable.
        let fd: Int32
        let shared: LineConnection
        let continuation: AsyncStream<Input>.Continuation

        func run() {
            var framer = LineFramer()
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            var reason: String
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count > 0 {
                    buffer.withUnsafeBufferPointer { raw in
                        framer.feed(buffer: UnsafeBufferPointer(rebasing: raw[0..<count])) { framed in
                            switch framed {
                            case .line(let line): continuation.yield(.line(line)); shared.handedOut()
                            case .overlong(let discarded): continuation.yield(.overlong(discardedBytes: discarded)); shared.handedOut()
                            }
                        }
                    }
                    continue
                }
                if count < 0 && errno == EINTR { continue }
                let code = errno
                if let ours = shared.takeCloseReason() {
                    reason = ours
                } else if count == 0 {
                    reason = "connection closed by the server"
                } else if code == ECONNRESET {
                    reason = "connection reset by the server"
                } else {
                    reason = "read error: \(TransportError.errnoText(code))"
                }
                break
            }
            continuation.yield(.closed(reason: reason))
            continuation.finish()
        }
    }
}
