#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import ChatClientKit
import ChatTransport
import IRCTestSupport

/// Collects a client's events as they come, so a test can wait for the next one it cares about.
actor EventLog {
    private(set) var events: [ClientEvent] = []
    private var cursor = 0

    static func watching(_ client: ChatClient) -> EventLog {
        let log = EventLog()
        // The stream, not the client: a watcher that held the client would keep it (and its
        // connection) alive past the test, which LeakSanitizer reports. The stream ends when
        // the client goes.
        let events = client.events
        Task { for await event in events { await log.append(event) } }
        return log
    }

    private func append(_ event: ClientEvent) { events.append(event) }

    struct Timeout: Error, CustomStringConvertible { let description: String }

    /// Waits for the next event (after the last one matched) that satisfies `match`.
    @discardableResult
    func next(timeout: Double = 10, _ what: String = "event", _ match: @Sendable (ClientEvent) -> Bool) async throws -> ClientEvent {
        let deadline = Monotonic.now() + timeout
        while Monotonic.now() < deadline {
            while cursor < events.count {
                let event = events[cursor]
                cursor += 1
                if match(event) { return event }
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw Timeout(description: "no \(what) within \(timeout) s; events:\n" + events.map { "\($0)" }.joined(separator: "\n"))
    }

    func registered(timeout: Double = 10) async throws -> String {
        let event = try await next(timeout: timeout, "registration") {
            if case .status(.registered) = $0 { return true } else { return false }
        }
        guard case .status(.registered(let nick)) = event else { return "" }
        return nick
    }

    /// Waits for the client to stop for good and returns why.
    func stopReason(timeout: Double = 10) async throws -> String {
        let event = try await next(timeout: timeout, "stop") { if case .status(.stopped) = $0 { return true } else { return false } }
        guard case .status(.stopped(let reason)) = event else { return "" }
        return reason
    }

    @discardableResult
    func line(in conversation: String, timeout: Double = 10, containing text: String) async throws -> ChatLine {
        let event = try await next(timeout: timeout, "line \"\(text)\" in \(conversation)") {
            if case .line(let c, let line) = $0, c == .server ? conversation == "*" : c.key == conversation.lowercased(), line.text.contains(text) { return true }
            return false
        }
        guard case .line(_, let line) = event else { fatalError() }
        return line
    }

    func all() -> [ClientEvent] { events }

    /// The conversations as a screen would see them: every event so far applied to a book.
    func view(nick: String = "alice") -> ConversationBook {
        var book = ConversationBook(nick: nick)
        for event in events { book.apply(event) }
        return book
    }
}

func freePort() throws -> Int {
    let fds = try Sockets.listen(bind: "127.0.0.1", port: 0)
    defer { fds.forEach { close($0) } }
    return Sockets.boundPort(fds[0])
}

func waitForPort(_ port: Int, timeout: Double = 10) throws {
    let deadline = Monotonic.now() + timeout
    while Monotonic.now() < deadline {
        if let fd = try? Sockets.connect(host: "127.0.0.1", port: port, timeout: 0.5) {
            close(fd)
            return
        }
        usleep(50_000)
    }
    throw EventLog.Timeout(description: "nothing listens on port \(port)")
}

/// A server program run for a test: our binary or ngircd. Every one runs with a `TestHome` of
/// its own (HOME, XDG folders, data directory), never the user's, and is stopped when the test
/// lets go of it.
final class ServerProcess {
    let child: ChildProcess
    let port: Int
    let home: TestHome
    var tlsPort = 0

    init(executable: String, arguments: [String], port: Int, home: TestHome = TestHome()) throws {
        self.port = port
        self.home = home
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw EventLog.Timeout(description: "\(executable) is missing (make test builds and installs what it needs)")
        }
        child = try ChildProcess(executable: executable, arguments: arguments, environment: home.environment)
        try waitForPort(port)
    }

    // Stopped before its home is removed.
    deinit { child.stop() }

    /// Our own server, from the build these tests came from. `home`: the one an earlier server of
    /// this test used, to restart on its data.
    static func chatTUI(port: Int, extra: [String] = [], home: TestHome = TestHome("chat-tui-server")) throws -> ServerProcess {
        try ServerProcess(executable: builtProgram("chat-tui"),
                          arguments: ["--serve", "--headless", "--bind", "127.0.0.1", "--port", String(port), "--tls-port", "0", "--web-port", "0",
                                      "--data-dir", home.dataDirectory] + extra,
                          port: port, home: home)
    }

    /// ngircd from Debian with a configuration written for this test.
    /// `tls`: also a TLS port (`tlsPort`) with this certificate.
    static func ngircd(tls: TestCertificate? = nil) throws -> ServerProcess {
        let port = try freePort()
        let tlsPort = tls == nil ? 0 : try freePort()
        let home = TestHome("ngircd")
        let directory = URL(fileURLWithPath: home.path)
        let config = """
        [Global]
        \tName = irc.ngircd.test
        \tInfo = chat-tui interop test
        \tListen = 127.0.0.1
        \tPorts = \(port)
        \tMotdPhrase = "ngircd for chat-tui tests"
        [Limits]
        \tMaxConnectionsIP = 0
        [Options]
        \tDNS = no
        \tIdent = no
        \tPAM = no
        """ + (tls.map { """

        [SSL]
        \tCertFile = \($0.directory)/cert.pem
        \tKeyFile = \($0.directory)/key.pem
        \tPorts = \(tlsPort)
        """ } ?? "")
        let path = directory.appendingPathComponent("ngircd.conf")
        try config.write(to: path, atomically: true, encoding: .utf8)
        let process = try ServerProcess(executable: "/usr/sbin/ngircd", arguments: ["-n", "-f", path.path], port: port, home: home)
        process.tlsPort = tlsPort
        if tls != nil { try waitForPort(tlsPort) }
        return process
    }

    func kill9() {
        child.signal(SIGKILL)
        child.wait(timeout: 5)
    }
}

func config(port: Int, nick: String, rooms: [String] = []) -> ClientConfig {
    var config = ClientConfig(host: "127.0.0.1", port: port, nick: nick)
    config.rooms = rooms
    config.reconnect = ReconnectPolicy(initial: 0.5, maximum: 2)
    return config
}
