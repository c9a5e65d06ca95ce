#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import Testing
import ChatServerKit
import ChatStore
import ChatTransport
import IRCWire

/// A plain IRC client over a real socket, for integration tests: send lines, wait for lines.
public final class LineClient {
    public let fd: Int32
    private var framer = LineFramer()
    private var pending: [IRCMessage] = []
    public private(set) var nick: String

    public init(port: Int, host: String = "127.0.0.1", nick: String = "") throws {
        fd = try Sockets.connect(host: host, port: port, timeout: 5)
        self.nick = nick
    }

    private var closed = false

    deinit { if !closed { close(fd) } }

    /// Closes the socket now (with SO_LINGER 0 set, a reset); the descriptor is not closed again later.
    public func closeNow() {
        guard !closed else { return }
        closed = true
        close(fd)
    }

    public func send(_ line: String) {
        sendBytes(Array((line + "\r\n").utf8))
    }

    public func sendBytes(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Registers and waits for the end of the automatic room join.
    @discardableResult
    public func register(_ nick: String, caps: [String] = [], room: String = "#lobby") throws -> [IRCMessage] {
        self.nick = nick
        if !caps.isEmpty {
            send("CAP LS 302")
            send("CAP REQ :\(caps.joined(separator: " "))")
            send("CAP END")
        }
        send("NICK \(nick)")
        send("USER \(nick.unicodeScalars.allSatisfy(\.isASCII) ? nick : "u") 0 * :Test \(nick)")
        return try readUntil { $0.command == "366" && $0.params[1] == room }
    }

    /// Reads one message, waiting at most `timeout` seconds; nil on timeout or close.
    public func next(timeout: Double = 5) -> IRCMessage? {
        if !pending.isEmpty { return pending.removeFirst() }
        let deadline = Monotonic.now() + timeout
        while pending.isEmpty {
            let remaining = deadline - Monotonic.now()
            if remaining <= 0 { return nil }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, Int32(remaining * 1000)) > 0 else { return nil }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return nil }
            for framed in framer.feed(buffer[0..<n]) {
                if case .line(let line) = framed, let message = try? IRCMessage(bytes: line) {
                    pending.append(message)
                }
            }
        }
        return pending.removeFirst()
    }

    public struct Timeout: Error, CustomStringConvertible {
        public let description: String
    }

    /// Reads until `match` is true; returns everything read, the match last.
    @discardableResult
    public func readUntil(timeout: Double = 5, sourceLocation: SourceLocation = #_sourceLocation,
                   _ match: (IRCMessage) -> Bool) throws -> [IRCMessage] {
        var seen: [IRCMessage] = []
        while let message = next(timeout: timeout) {
            seen.append(message)
            if match(message) { return seen }
        }
        throw Timeout(description: "\(nick): no matching line; saw:\n" + seen.map(\.line).joined(separator: "\n"))
    }

    /// The first message with `command` (and, if given, that parameter 1 equals `param1`).
    @discardableResult
    public func expect(_ command: String, timeout: Double = 5) throws -> IRCMessage {
        try readUntil(timeout: timeout) { $0.command == command }.last!
    }

    /// Reads whatever arrives within `timeout`.
    public func drain(timeout: Double = 0.2) -> [IRCMessage] {
        var seen: [IRCMessage] = []
        while let message = next(timeout: timeout) { seen.append(message) }
        return seen
    }

    /// True when the server closed the connection within `timeout`.
    public func waitForClose(timeout: Double = 5) -> Bool {
        let deadline = Monotonic.now() + timeout
        while Monotonic.now() < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 100) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return true }
            for framed in framer.feed(buffer[0..<n]) {
                if case .line(let line) = framed, let message = try? IRCMessage(bytes: line) { pending.append(message) }
            }
        }
        return false
    }

    /// Messages already read but not yet taken.
    public var buffered: [IRCMessage] { pending }
}

/// A running server on a free loopback port, with its log lines.
public final class TestServer {
    public let handle: ServerHandle
    public var port: Int { handle.port }

    /// `tls`: a TLS port too, with this context (see `TestCertificate`).
    public init(configure: (inout ServerConfig) -> Void = { _ in }, bind: String? = "127.0.0.1", sendQueueLimit: Int = 1 << 20,
                tls: TLSContext? = nil, accounts: AccountStore? = nil, history: HistoryOptions? = nil) throws {
        var config = ServerConfig()
        config.name = "test.server"
        configure(&config)
        let box = LogBox()
        handle = try ServerHandle.start(config: config, bind: bind, port: 0, tls: tls.map { (port: 0, context: $0) },
                                        accounts: accounts, history: history, sendQueueLimit: sendQueueLimit) { box.append($0) }
        logBox = box
    }

    /// The TLS port, when started with `tls`.
    public var tlsPort: Int? { handle.tlsPort }

    private let logBox: LogBox

    public var logLines: [String] { logBox.lines }

    public func client() throws -> LineClient { try LineClient(port: port) }

    deinit { handle.stop() }
}

public final class LogBox: Sendable {
    public init() {}
    private let storage = Mutex<[String]>([])
    public func append(_ line: String) { storage.withLock { $0.append(line) } }
    public var lines: [String] { storage.withLock { $0 } }
}


/// A TCP proxy on a free loopback port in front of a server, that a test can cut (every
/// connection through it dropped, new ones refused) and restore: a network outage on demand.
public final class CuttableProxy: @unchecked Sendable {
    public let port: Int
    private let listener: Int32
    private let upstream: Int
    private let lock = NSLock()
    private var pairs: [(Int32, Int32)] = []
    private var cut = false
    private var stopped = false
    /// Bytes from the client (upstream) or from the server (downstream) are held, not passed on,
    /// while set: a message that reached one side and not the other when the line is cut.
    private var holding: (upstream: Bool, downstream: Bool) = (false, false)
    public private(set) var heldUpstreamBytes = 0
    /// The last cut left the server's side open (it still thinks the client is there).
    private var halfOpen = false

    public func hold(upstream: Bool = false, downstream: Bool = false) {
        lock.lock(); holding = (upstream, downstream); lock.unlock()
    }

    /// Bytes from the client the proxy is holding back now.
    public var upstreamHeld: Int { lock.lock(); defer { lock.unlock() }; return heldUpstreamBytes }

    public init(to upstream: Int) throws {
        self.upstream = upstream
        let fds = try Sockets.listen(bind: "127.0.0.1", port: 0)
        listener = fds[0]
        port = Sockets.boundPort(listener)
        // The listener is non-blocking: this thread polls it.
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    private func acceptLoop() {
        while true {
            lock.lock(); let done = stopped; lock.unlock()
            if done { return }
            var pfd = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 50) > 0 else { continue }
            guard let (client, _) = (try? Accept.next(listener)) ?? nil else { continue }
            lock.lock(); let refusing = cut; lock.unlock()
            guard !refusing, let server = try? Sockets.connect(host: "127.0.0.1", port: upstream, timeout: 5) else {
                Glibc.shutdown(client, Int32(SHUT_RDWR)); close(client)
                continue
            }
            _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) & ~O_NONBLOCK)
            _ = fcntl(server, F_SETFL, fcntl(server, F_GETFL) & ~O_NONBLOCK)
            lock.lock(); pairs.append((client, server)); lock.unlock()
            for (from, to, upstream) in [(client, server, true), (server, client, false)] {
                Thread { [self] in pump(from, to, upstream: upstream) }.start()
            }
        }
    }

    private func pump(_ from: Int32, _ to: Int32, upstream: Bool) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(from, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            // Held: kept back until the hold is lifted (then passed on) or the line is cut (then lost).
            while true {
                lock.lock()
                let held = upstream ? holding.upstream : holding.downstream
                let isCut = cut
                if held && upstream { heldUpstreamBytes = n }
                lock.unlock()
                if isCut { return }
                if !held { break }
                usleep(1000)
            }
            var sent = 0
            while sent < n {
                let m = buffer.withUnsafeBytes { Glibc.send(to, $0.baseAddress! + sent, n - sent, Int32(MSG_NOSIGNAL)) }
                if m <= 0 { return }
                sent += m
            }
        }
        lock.lock(); let keepServer = halfOpen && upstream; lock.unlock()
        if !keepServer { Glibc.shutdown(to, Int32(SHUT_RDWR)) }
    }

    /// Drops every connection through the proxy and refuses new ones until `restore`.
    /// `keepServerSide`: only the client's side goes (a half-open connection: the server
    /// goes on delivering to it until it times out).
    public func cutAll(keepServerSide: Bool = false) {
        lock.lock()
        cut = true
        halfOpen = keepServerSide
        let open = pairs
        pairs = []
        lock.unlock()
        for (a, b) in open {
            Glibc.shutdown(a, Int32(SHUT_RDWR))
            if !keepServerSide { Glibc.shutdown(b, Int32(SHUT_RDWR)) }
        }
    }

    public func restore() {
        lock.lock(); cut = false; holding = (false, false); heldUpstreamBytes = 0; lock.unlock()
    }

    deinit {
        lock.lock(); stopped = true; lock.unlock()
        cutAll()
    }
}

/// A real account database in a temporary file, with these accounts (password "correct horse").
/// 4096 iterations: SCRAM's minimum, quick in tests.
public func accountStore(_ names: [String] = ["alice"]) throws -> AccountStore {
    let path = NSTemporaryDirectory() + "chat-tui-test-accounts-\(UUID().uuidString).db"
    let store = try AccountStore(database: Database(path: path))
    for name in names {
        try store.add(name: name, credential: SCRAMCredential.derive(password: "correct horse", iterations: 4096), now: 1)
    }
    return store
}

/// A self-signed certificate made in a temporary directory, for TLS tests.
public struct TestCertificate {
    public let directory: String
    public let context: TLSContext
    public let fingerprint: String

    public init(name: String = "test.server") throws {
        directory = NSTemporaryDirectory() + "chat-tui-cert-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let certificate = directory + "/cert.pem", key = directory + "/key.pem"
        _ = try TLSCertificates.ensureSelfSigned(certificate: certificate, key: key, name: name)
        context = try TLSContext.server(certificate: certificate, key: key)
        fingerprint = TLSCertificates.fingerprint(ofFile: certificate) ?? ""
    }
}
