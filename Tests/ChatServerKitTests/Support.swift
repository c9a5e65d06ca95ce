#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import Testing
@testable import ChatServerKit
import ChatTransport
import IRCWire

/// A plain IRC client over a real socket, for integration tests: send lines, wait for lines.
final class LineClient {
    let fd: Int32
    private var framer = LineFramer()
    private var pending: [IRCMessage] = []
    private(set) var nick: String

    init(port: Int, host: String = "127.0.0.1", nick: String = "") throws {
        fd = try Sockets.connect(host: host, port: port, timeout: 5)
        self.nick = nick
    }

    deinit { close(fd) }

    func send(_ line: String) {
        sendBytes(Array((line + "\r\n").utf8))
    }

    func sendBytes(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Registers and waits for the end of the automatic room join.
    @discardableResult
    func register(_ nick: String, caps: [String] = [], room: String = "#lobby") throws -> [IRCMessage] {
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
    func next(timeout: Double = 5) -> IRCMessage? {
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

    struct Timeout: Error, CustomStringConvertible {
        let description: String
    }

    /// Reads until `match` is true; returns everything read, the match last.
    @discardableResult
    func readUntil(timeout: Double = 5, sourceLocation: SourceLocation = #_sourceLocation,
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
    func expect(_ command: String, timeout: Double = 5) throws -> IRCMessage {
        try readUntil(timeout: timeout) { $0.command == command }.last!
    }

    /// Reads whatever arrives within `timeout`.
    func drain(timeout: Double = 0.2) -> [IRCMessage] {
        var seen: [IRCMessage] = []
        while let message = next(timeout: timeout) { seen.append(message) }
        return seen
    }

    /// True when the server closed the connection within `timeout`.
    func waitForClose(timeout: Double = 5) -> Bool {
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
    var buffered: [IRCMessage] { pending }
}

/// A running server on a free loopback port, with its log lines.
final class TestServer {
    let handle: ServerHandle
    var port: Int { handle.port }

    init(configure: (inout ServerConfig) -> Void = { _ in }, bind: String? = "127.0.0.1", sendQueueLimit: Int = 1 << 20) throws {
        var config = ServerConfig()
        config.name = "test.server"
        configure(&config)
        let box = LogBox()
        handle = try ServerHandle.start(config: config, bind: bind, port: 0, sendQueueLimit: sendQueueLimit) { box.append($0) }
        logBox = box
    }

    private let logBox: LogBox

    var logLines: [String] { logBox.lines }

    func client() throws -> LineClient { try LineClient(port: port) }

    deinit { handle.stop() }
}

final class LogBox: Sendable {
    private let storage = Mutex<[String]>([])
    func append(_ line: String) { storage.withLock { $0.append(line) } }
    var lines: [String] { storage.withLock { $0 } }
}

/// Drives `ServerState` directly, with no sockets: connect, send lines, read the outbox.
struct Harness {
    var state: ServerState
    var now: Double = 1_000_000
    private var nextID: UInt64 = 1
    var out = Outbox()

    init(configure: (inout ServerConfig) -> Void = { _ in }) {
        var config = ServerConfig()
        config.name = "test.server"
        configure(&config)
        state = ServerState(config: config)
    }

    mutating func connect() -> ConnectionID {
        let id = ConnectionID(nextID)
        nextID += 1
        state.connected(id, host: "127.0.0.1", peer: "127.0.0.1:\(40000 + id.raw)", now: now)
        _ = state.takeOutbox()
        return id
    }

    /// Sends lines from `id` and returns the outbox they produced.
    @discardableResult
    mutating func send(_ id: ConnectionID, _ lines: String...) -> Outbox {
        for line in lines { state.received(Array(line.utf8), from: id, now: now) }
        out = state.takeOutbox()
        return out
    }

    mutating func register(_ nick: String, caps: [String] = []) -> ConnectionID {
        let id = connect()
        if !caps.isEmpty { send(id, "CAP REQ :\(caps.joined(separator: " "))") }
        send(id, "NICK \(nick)", "USER u 0 * :Real \(nick)", "CAP END")
        return id
    }

    mutating func tick(advance seconds: Double) -> Outbox {
        now += seconds
        state.tick(now: now)
        out = state.takeOutbox()
        return out
    }

    func lines(to id: ConnectionID) -> [String] { out.messages(to: id).map(\.line) }

    /// The names in the 353 replies to `id`, as a set: the server does not sort them.
    func names(to id: ConnectionID) -> Set<String> {
        Set(out.messages(to: id).filter { $0.command == "353" }.flatMap { $0.params[3].split(separator: " ").map(String.init) })
    }
    func commands(to id: ConnectionID) -> [String] { out.messages(to: id).map(\.command) }
}
