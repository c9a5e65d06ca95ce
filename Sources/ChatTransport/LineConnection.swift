#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import IRCWire

/// One client connection as lines over a non-blocking socket, with bounded queues both ways.
/// One I/O thread polls the socket and a wake-up pipe: it frames what arrives and hands it out
/// in order through `input` (ending with `.closed` only after every complete line before it),
/// and it sends what `write` queued. `write` and `close` never block: a write past the output
/// bound, or output that makes no progress for `writeTimeout`, closes the connection with a
/// reason; past `inputLimit` untaken lines the thread stops reading, so a flooding peer fills
/// its own send buffer and TCP pushes back, not our memory. Used from any task or actor.
public final class LineConnection: Sendable {
    public enum Input: Sendable, Equatable {
        case line([UInt8])
        /// A line longer than the framer's cap arrived and was discarded.
        case overlong(discardedBytes: Int)
        /// The connection ended; nothing follows. `reason` is for the user.
        case closed(reason: String)
    }

    private struct Shared {
        /// Bytes queued for the peer, from `sentOffset` on.
        var output: [UInt8] = []
        var sentOffset = 0
        /// Set by `close(reason:)` (or the I/O thread) so `input` ends with why we hung up.
        var closeReason: String?
        /// Given up as dead (`close(reason:abortive: true)`): reset, not closed in order.
        var abortive = false
        /// Lines handed out and not yet taken (`taken()`).
        var pending = 0
        /// The most lines that were ever waiting at once (for tests: it stays at the limit).
        var highWater = 0
        /// Some byte came from the peer.
        var receivedAny = false
        /// The peer answered our plain text with a TLS record (an alert or a handshake).
        var answeredWithTLS = false
        var queuedBytes: Int { output.count - sentOffset }
    }

    /// The most inputs that ever waited for the consumer at once.
    public var pendingHighWater: Int { shared.withLock { $0.highWater } }
    /// Lines handed out and not yet taken.
    public var waitingLines: Int { shared.withLock { $0.pending } }
    /// Nothing at all came from the peer (a server that closed without a word).
    public var receivedNothing: Bool { shared.withLock { !$0.receivedAny } }
    /// A plain-text connection whose first bytes from the peer were a TLS record (0x15 or 0x16,
    /// then 0x03): the port speaks TLS.
    public var answeredWithTLS: Bool { shared.withLock { $0.answeredWithTLS } }

    /// The start of a `TransportError.tls` reason when a TLS hello was answered in plain
    /// text; the server's text follows.
    public static let plainTextAnswer = "the server answered in plain text: "

    /// Whether bytes begin a TLS record: an alert (0x15) or a handshake (0x16), then a 0x03 version byte.
    public static func isTLSRecord(_ bytes: some Collection<UInt8>) -> Bool {
        var iterator = bytes.makeIterator()
        guard let first = iterator.next(), let second = iterator.next() else { return false }
        return (first == 0x15 || first == 0x16) && second == 0x03
    }

    /// How many lines may wait for the consumer before the thread stops reading.
    public static let inputLimit = 2048
    /// Bytes that may wait to be sent: a server that reads nothing for this long is stuck.
    public static let outputLimit = 1 << 20
    /// Seconds queued output may make no progress before the connection is declared stuck.
    public static let writeTimeout: Double = 30

    public let input: AsyncStream<Input>
    /// `host:port` of the peer.
    public let peer: String
    /// The address of our end, for DCC offers later.
    public let localHost: String
    private let shared: Locked<Shared>
    private let fd: Int32
    /// The I/O thread sleeps in poll on the socket and on this (the server loop's eventfd kind).
    private let wakeup: Wakeup
    /// Seconds on a clock that never jumps (a test's own clock in tests).
    private let clock: @Sendable () -> Double
    /// The TLS session, when the connection is TLS (used by the I/O thread only, after the
    /// handshake finished on the connect thread).
    private let tls: TLSBox?
    /// The server's certificate, on a TLS connection.
    public let certificate: PeerCertificate?

    private init(fd: Int32, tls: TLSSession?, wakeup: Wakeup, clock: @escaping @Sendable () -> Double) {
        self.wakeup = wakeup
        self.fd = fd
        self.clock = clock
        self.tls = tls.map(TLSBox.init)
        certificate = tls.map { PeerCertificate(fingerprint: $0.peerFingerprint.map(TLSCertificates.format) ?? "", problem: $0.verificationProblem) }
        peer = SocketAddress.peer(of: fd).map(SocketAddress.describe) ?? "?"
        localHost = SocketAddress.local(of: fd).map(SocketAddress.host(of:)) ?? "?"
        shared = Locked(Shared())
        let (stream, continuation) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .unbounded)
        input = stream
        let loop = IOLoop(connection: self, continuation: continuation)
        Threads.start(name: "chat-tui io \(peer)") { loop.run() }
    }

    deinit {
        Glibc.close(fd)
    }

    /// Resolves and connects off the caller's thread; cancelling the calling task gives up at
    /// once (`.cancelled`), whatever the connect was waiting for (a slow name lookup included:
    /// its thread finishes on its own and closes what it got).
    /// `tls`: speak TLS, checking the certificate against `host` (the outcome is
    /// `certificate`; deciding whether to go on is the caller's).
    public static func open(host: String, port: Int, timeout: Double, tls: TLSContext? = nil,
                            clock: @escaping @Sendable () -> Double = Monotonic.now) async throws(TransportError) -> LineConnection {
        Sockets.ignoreSIGPIPE()
        let attempt = try ConnectAttempt()
        let wakeup = try Wakeup()
        let result: Result<Connected, TransportError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                guard attempt.wait(continuation) else { return }
                Threads.start(name: "chat-tui connect") {
                    let outcome = Result { () throws(TransportError) -> Connected in
                        let deadline = Monotonic.now() + timeout
                        let fd = try Sockets.connect(host: host, port: port, timeout: timeout, cancel: attempt.cancel.fd, nonBlocking: true)
                        guard let tls else { return Connected(fd: fd, session: nil) }
                        do throws(TransportError) {
                            return Connected(fd: fd, session: try handshake(TLSSession(context: tls, fd: fd, server: false, hostName: host),
                                                                           fd: fd, cancel: attempt.cancel.fd, deadline: deadline, host: host, port: port))
                        } catch {
                            Glibc.close(fd)
                            throw error
                        }
                    }
                    attempt.finish(outcome)
                }
            }
        } onCancel: {
            attempt.giveUp()
        }
        let connected = try result.get()
        return LineConnection(fd: connected.fd, tls: connected.session?.session, wakeup: wakeup, clock: clock)
    }

    /// A connected socket and its TLS session, handed from the connect thread to the caller.
    struct Connected: @unchecked Sendable {
        let fd: Int32
        let session: TLSBox?
        init(fd: Int32, session: TLSSession?) {
            self.fd = fd
            self.session = session.map(TLSBox.init)
        }
    }

    /// Runs a client handshake to its end on the connect thread, polling the socket and the
    /// cancel pipe, within the connect timeout.
    /// Before the server's first record the socket is peeked at: an answer that is not TLS
    /// (a plain-text port's ERROR) fails with its text after `plainTextAnswer`.
    static func handshake(_ session: TLSSession, fd: Int32, cancel: Int32, deadline: Double, host: String, port: Int) throws(TransportError) -> TLSSession {
        var peeked = false
        while true {
            let events: Int16
            if !peeked, let text = plainTextWaiting(fd) {
                throw .tls(host: host, port: port, reason: Self.plainTextAnswer + text)
            }
            switch session.handshake() {
            case .done: return session
            case .wantRead: events = Int16(POLLIN)
            case .wantWrite: events = Int16(POLLOUT)
            case .failed(let reason):
                // The session may have read the start of a plain answer as a record header and
                // failed on it: the rest of the line is still waiting.
                if !peeked, let text = plainTextWaiting(fd) { throw .tls(host: host, port: port, reason: Self.plainTextAnswer + text) }
                throw .tls(host: host, port: port, reason: reason)
            }
            let remaining = deadline - Monotonic.now()
            if remaining <= 0 { throw .tls(host: host, port: port, reason: "the TLS handshake timed out") }
            var pfds = [pollfd(fd: fd, events: events, revents: 0), pollfd(fd: cancel, events: Int16(POLLIN), revents: 0)]
            _ = poll(&pfds, 2, Int32(max(1, remaining * 1000)))
            if pfds[1].revents != 0 { throw .cancelled }
            if pfds[0].revents & Int16(POLLIN) != 0, !peeked {
                if let text = plainTextWaiting(fd) { throw .tls(host: host, port: port, reason: Self.plainTextAnswer + text) }
                peeked = peekedAnything(fd)
            }
        }
    }

    /// The first line waiting on the socket when it is not a TLS record, left unread.
    private static func plainTextWaiting(_ fd: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: 512)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_PEEK | MSG_DONTWAIT)) }
        guard n > 0, !(0x14...0x17).contains(buffer[0]), buffer[0] >= 0x20 || buffer[0] == 0x09 else { return nil }
        let line = buffer[0..<n].prefix { $0 != 0x0A && $0 != 0x0D }
        return String(decoding: line, as: UTF8.self)
    }

    private static func peekedAnything(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
    }

    /// One connect: whichever comes first, its result or a cancel, answers the caller once.
    private final class ConnectAttempt: Sendable {
        private struct State {
            var continuation: CheckedContinuation<Result<Connected, TransportError>, Never>?
            var cancelled = false
            var finished = false
        }
        private let state = Locked(State())
        /// Signalled when the caller gives up; the connect polls it.
        let cancel: Wakeup

        init() throws(TransportError) { cancel = try Wakeup() }

        /// Keeps the continuation; false (answered already) when the task was cancelled before.
        func wait(_ continuation: CheckedContinuation<Result<Connected, TransportError>, Never>) -> Bool {
            let cancelled = state.withLock { state -> Bool in
                if state.cancelled { return true }
                state.continuation = continuation
                return false
            }
            if cancelled { continuation.resume(returning: .failure(.cancelled)) }
            return !cancelled
        }

        func giveUp() {
            let waiting = state.withLock { state -> CheckedContinuation<Result<Connected, TransportError>, Never>? in
                guard !state.finished, !state.cancelled else { return nil }
                state.cancelled = true
                cancel.signal()
                defer { state.continuation = nil }
                return state.continuation
            }
            waiting?.resume(returning: .failure(.cancelled))
        }

        /// The connect thread's result: to the caller, or closed when the caller has gone.
        func finish(_ result: Result<Connected, TransportError>) {
            let waiting = state.withLock { state -> CheckedContinuation<Result<Connected, TransportError>, Never>? in
                state.finished = true
                defer { state.continuation = nil }
                return state.continuation
            }
            if let waiting {
                waiting.resume(returning: result)
            } else if case .success(let connected) = result {
                Glibc.close(connected.fd)
            }
        }
    }

    /// Queues bytes (whole lines) for the peer; never blocks. Past `outputLimit` waiting bytes
    /// the connection is closed: the peer stopped reading.
    public func write(_ bytes: [UInt8]) throws(TransportError) {
        let failure: TransportError? = shared.withLock { state in
            guard state.closeReason == nil else { return .closed }
            if state.queuedBytes + bytes.count > Self.outputLimit {
                state.closeReason = "the server stopped reading (\(state.queuedBytes) bytes waiting to be sent)"
                return .outputFull(bytes: state.queuedBytes)
            }
            state.output += bytes
            return nil
        }
        wake()
        if let failure { throw failure }
    }

    public func write(_ message: IRCMessage) throws(TransportError) {
        try write(message.serialized())
    }

    /// Hangs up without waiting: what is queued is dropped. `input` then ends with `.closed(reason)`.
    /// `abortive`: the connection is given up as dead (no answer to a ping): it is reset, so
    /// the kernel drops what it still holds unacknowledged too. A graceful close would keep
    /// sending that after we left, and a line we send again on the next connection would
    /// then reach the server twice, late (found by the chaos soak).
    public func close(reason: String, abortive: Bool = false) {
        shared.withLock { state in
            if state.closeReason == nil { state.closeReason = reason }
            if abortive { state.abortive = true }
        }
        wake()
    }

    /// Bytes queued and not yet sent.
    public var queuedBytes: Int { shared.withLock { $0.queuedBytes } }

    /// The consumer took one input: the thread may read again when it had stopped.
    public func taken() {
        let resume = shared.withLock { state -> Bool in
            state.pending = max(0, state.pending - 1)
            return state.pending == Self.inputLimit / 2
        }
        if resume { wake() }
    }

    private func wake() { wakeup.signal() }

    /// The I/O thread: poll, read while the consumer keeps up, send what is queued.
    private struct IOLoop: @unchecked Sendable {
        // `connection` is used only through its Mutex and its descriptors; the continuation is Sendable.
        let connection: LineConnection
        let continuation: AsyncStream<Input>.Continuation

        func run() {
            let fd = connection.fd
            var framer = LineFramer()
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            let now = connection.clock
            // When output last moved: set when it starts waiting, and on every byte sent.
            var lastProgress = now()
            var waiting = false
            var reason = "connection closed"
            loop: while true {
                let (closing, room, queued) = connection.shared.withLock { state in
                    (state.closeReason, LineConnection.inputLimit - state.pending, state.queuedBytes)
                }
                let reading = room > 0
                if let closing {
                    // One last try, without waiting, to send what is queued (a QUIT).
                    _ = flush(fd)
                    reason = closing
                    break
                }
                if queued == 0 {
                    waiting = false
                } else if !waiting {
                    // Output starts waiting now, however long the connection was idle before.
                    waiting = true
                    lastProgress = now()
                }
                if queued > 0 && now() - lastProgress > LineConnection.writeTimeout {
                    reason = "the server stopped reading (nothing sent for \(Int(LineConnection.writeTimeout)) s)"
                    break
                }
                var events: Int16 = 0
                if reading { events |= Int16(POLLIN) }
                if queued > 0 { events |= Int16(POLLOUT) }
                // A socket we neither read nor write is left out (fd -1), or its ERR/HUP would
                // wake poll at once, again and again, until the consumer catches up.
                var pfds = [pollfd(fd: events == 0 ? -1 : fd, events: events, revents: 0),
                            pollfd(fd: connection.wakeup.fd, events: Int16(POLLIN), revents: 0)]
                // Plaintext the TLS session already holds is readable now, whatever the socket says.
                let held = reading && (connection.tls?.session.buffered ?? false)
                let ready = poll(&pfds, 2, held ? 0 : queued > 0 ? 500 : -1)
                if ready < 0 && errno != EINTR { reason = "poll failed: \(TransportError.errnoText(errno))"; break }
                if pfds[1].revents != 0 {
                    connection.wakeup.drain()
                }
                let revents = Int32(pfds[0].revents)
                if revents & Int32(POLLOUT) != 0 || (queued > 0 && revents & Int32(POLLERR | POLLHUP) == 0) {
                    let (failure, progressed) = flush(fd)
                    if let failure { reason = failure; break }
                    if progressed { lastProgress = now() }
                }
                if reading && (held || revents & Int32(POLLIN | POLLERR | POLLHUP) != 0) {
                    // Every line ends in a byte of its own, so reading no more bytes than there is
                    // room for lines keeps the untaken lines at the limit, never past it.
                    let count: Int
                    if let session = connection.tls?.session {
                        switch session.read(into: &buffer, limit: room) {
                        case .data(let n): count = n
                        case .wouldBlock: continue
                        case .endOfStream: count = 0
                        case .failed(let code): count = -1; errno = code
                        }
                    } else {
                        count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, min($0.count, room), 0) }
                    }
                    if count > 0 {
                        let first = connection.shared.withLock { state -> Bool in
                            defer { state.receivedAny = true }
                            return !state.receivedAny
                        }
                        if first, connection.tls == nil, LineConnection.isTLSRecord(buffer[0..<count]) {
                            connection.shared.withLock { $0.answeredWithTLS = true }
                            reason = "the server answered with TLS"
                            break loop
                        }
                        var framed: [Input] = []
                        buffer.withUnsafeBufferPointer { raw in
                            framer.feed(buffer: UnsafeBufferPointer(rebasing: raw[0..<count])) { piece in
                                switch piece {
                                case .line(let line): framed.append(.line(line))
                                case .overlong(let discarded): framed.append(.overlong(discardedBytes: discarded))
                                }
                            }
                        }
                        // Counted before they are handed out, so a `taken()` never runs ahead of the count.
                        if !framed.isEmpty {
                            connection.shared.withLock { $0.pending += framed.count; $0.highWater = max($0.highWater, $0.pending) }
                            for input in framed { continuation.yield(input) }
                        }
                        continue
                    }
                    let code = errno
                    if count < 0 && (code == EAGAIN || code == EWOULDBLOCK || code == EINTR) { continue }
                    if let ours = connection.shared.withLock({ $0.closeReason }) {
                        reason = ours
                    } else if count == 0 {
                        reason = "connection closed by the server"
                    } else if code == ECONNRESET {
                        reason = "connection reset by the server"
                    } else {
                        reason = "read error: \(TransportError.errnoText(code))"
                    }
                    break loop
                }
            }
            connection.shared.withLock { state in
                if state.closeReason == nil { state.closeReason = reason }
                state.output = []
                state.sentOffset = 0
            }
            if connection.shared.withLock({ $0.abortive }) {
                // SO_LINGER 0: the kernel discards what is unsent or unacknowledged and resets.
                var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
                Glibc.shutdown(fd, Int32(SHUT_RD))
            } else {
                connection.tls?.session.shutdown()
                Glibc.shutdown(fd, Int32(SHUT_RDWR))
            }
            continuation.yield(.closed(reason: reason))
            continuation.finish()
        }

        /// Sends what is queued until the kernel's buffer is full; a reason when the send
        /// failed, and whether any byte went.
        func flush(_ fd: Int32) -> (String?, Bool) {
            connection.shared.withLock { state -> (String?, Bool) in
                let start = state.sentOffset
                while state.sentOffset < state.output.count {
                    let n: Int
                    if let session = connection.tls?.session {
                        let offset = state.sentOffset
                        guard let written = state.output.withUnsafeBytes({ session.write(UnsafeRawBufferPointer(rebasing: $0[offset...])) }) else {
                            return ("write failed (TLS)", false)
                        }
                        if written == 0 { break }
                        n = written
                    } else {
                        n = state.output.withUnsafeBytes {
                            Glibc.send(fd, $0.baseAddress! + state.sentOffset, $0.count - state.sentOffset, Int32(MSG_NOSIGNAL))
                        }
                    }
                    if n > 0 { state.sentOffset += n; continue }
                    let code = errno
                    if n < 0 && code == EINTR { continue }
                    if n < 0 && (code == EAGAIN || code == EWOULDBLOCK) { break }
                    return ("write failed: \(TransportError.errnoText(code))", false)
                }
                let progressed = state.sentOffset > start
                // Compact once the sent part is most of the buffer, so it never grows past the bound.
                if state.sentOffset == state.output.count {
                    state.output.removeAll(keepingCapacity: state.output.capacity <= 64 * 1024)
                    state.sentOffset = 0
                } else if state.sentOffset > 64 * 1024 {
                    state.output.removeFirst(state.sentOffset)
                    state.sentOffset = 0
                }
                return (nil, progressed)
            }
        }
    }
}

/// A TLS session handed between threads: made and shaken hands on the connect thread, then
/// used only by the connection's I/O thread.
final class TLSBox: @unchecked Sendable {
    let session: TLSSession
    init(_ session: TLSSession) { self.session = session }
}

/// The server's certificate as a TLS client saw it.
public struct PeerCertificate: Sendable, Equatable {
    /// SHA-256 of the certificate, `AB:CD:…`.
    public let fingerprint: String
    /// Why it did not verify against the system's trust store for the host name; nil when it did.
    public let problem: String?
}
