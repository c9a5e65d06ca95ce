#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import ChatClientKit
import ChatTransport
import IRCTestSupport
import IRCWire

@Suite("ChatClient under faults", .serialized)
struct FaultTests {
    @Test("server killed and restarted: reconnect, rejoin, and the message typed meanwhile arrives once")
    func killAndRestart() async throws {
        let port = try freePort()
        let home = TestHome("chat-tui-server")
        var server: ServerProcess? = try ServerProcess.chatTUI(port: port, home: home)
        var settings = config(port: port, nick: "alice", rooms: ["#extra"])
        settings.reconnect = ReconnectPolicy(initial: 1, maximum: 2)
        let alice = ChatClient(config: settings)
        let log = EventLog.watching(alice)
        await alice.start()
        _ = try await log.registered()
        try await log.line(in: "#extra", containing: "You joined")

        server?.kill9()
        server = nil
        try await log.next("disconnect") { if case .status(.disconnected) = $0 { return true } else { return false } }
        await alice.send("typed during the outage", to: "#lobby")
        let held = try await log.line(in: "#lobby", containing: "typed during the outage")
        #expect(held.isPending && held.isOwn, "shown at once with its text, marked as held")
        #expect(await log.view().conversation("#lobby")!.lines.contains { $0.text.hasPrefix("── connection lost") })

        let restartedAt = Monotonic.now()
        server = try ServerProcess.chatTUI(port: port, home: home)
        let watcher = try LineClient(port: port)
        try watcher.register("watcher")
        _ = try await log.registered(timeout: 15)
        try await log.line(in: "#extra", timeout: 15, containing: "You joined")
        #expect(await log.view().conversation("#lobby")!.lines.contains { $0.text == "── connected again ──" })
        #expect(!(await log.view().conversation("#lobby")!.lines.contains { $0.isPending }), "the held line turned into the sent one")
        let rejoined = Monotonic.now() - restartedAt
        // A marker sent after the queue was flushed: anything the flush sent twice comes before it.
        await alice.send("after the outage", to: "#lobby")
        let seen = try watcher.readUntil(timeout: 10) { $0.command == "PRIVMSG" && $0.params.last == "after the outage" }
        #expect(seen.filter { $0.command == "PRIVMSG" }.map { $0.params } == [["#lobby", "typed during the outage"], ["#lobby", "after the outage"]],
                "the held line arrives once, before what was typed after it")
        // Printed, not asserted (a loaded machine is slow): the waits above are what bound it.
        print("restart to rejoined: \(String(format: "%.2f", rejoined)) s")
        await alice.quit()
    }

    @Test("a server that accepts but never answers hits the registration timeout")
    func silentFromTheStart() async throws {
        let listeners = try Sockets.listen(bind: "127.0.0.1", port: 0)
        defer { listeners.forEach { close($0) } }
        var settings = config(port: Sockets.boundPort(listeners[0]), nick: "alice")
        settings.registrationTimeout = 1
        let client = ChatClient(config: settings)
        let log = EventLog.watching(client)
        await client.start()
        let event = try await log.next("disconnect") { if case .status(.disconnected) = $0 { return true } else { return false } }
        guard case .status(.disconnected(let reason)) = event else { return }
        #expect(reason.contains("registration timed out"))
        try await log.next("reconnecting") { if case .status(.reconnecting) = $0 { return true } else { return false } }
        await client.disconnect()
    }

    @Test("a server that goes silent mid-session is found dead by the heartbeat")
    func silentMidSession() async throws {
        let fake = try FakeServer()
        var settings = config(port: fake.port, nick: "alice")
        settings.pingInterval = 0.5
        settings.pingTimeout = 1
        let client = ChatClient(config: settings)
        let log = EventLog.watching(client)
        await client.start()
        _ = try await log.registered()
        let started = Monotonic.now()
        let event = try await log.next("disconnect") { if case .status(.disconnected) = $0 { return true } else { return false } }
        guard case .status(.disconnected(let reason)) = event else { return }
        #expect(reason.hasPrefix("ping timeout"))
        print("silent to ping timeout: \(String(format: "%.2f", Monotonic.now() - started)) s")
        #expect(fake.sawPing)
        await client.disconnect()
    }

    @Test("a line from the server that is not IRC is shown as skipped, with why (not dropped in silence); a blank line is nothing; past five, only counted")
    func unreadableLines() async throws {
        var junk = Array("\r\n".utf8)
        junk += Array(":fake NOTICE alice :a NUL".utf8) + [0] + Array(" here\r\n".utf8)
        junk += Array(":fake 12x3 alice :bad\r\n".utf8)
        for n in 0..<6 { junk += Array("@only-tags=\(n)\r\n".utf8) }
        junk += Array(":fake NOTICE alice :after the junk\r\n".utf8)
        let fake = try FakeServer(after: junk)
        let client = ChatClient(config: config(port: fake.port, nick: "alice"))
        let log = EventLog.watching(client)
        await client.start()
        _ = try await log.registered()
        try await log.line(in: "*", containing: "after the junk")
        let errors = await log.events.compactMap { event -> String? in if case .error(let text) = event { return text } else { return nil } }
        #expect(errors == [
            "the server sent a line that is not IRC (line contains a NUL byte), skipped: :fake NOTICE alice :a NUL^@ here",
            "the server sent a line that is not IRC (invalid command \"12x3\"), skipped: :fake 12x3 alice :bad",
            "the server sent a line that is not IRC (no command), skipped: @only-tags=0",
            "the server sent a line that is not IRC (no command), skipped: @only-tags=1",
            "the server sent a line that is not IRC (no command), skipped: @only-tags=2 (further such lines are skipped without a word)",
        ])
        await client.disconnect()
    }

    @Test("connection refused is reported and retried with backoff")
    func refused() async throws {
        let port = try freePort()
        let client = ChatClient(config: config(port: port, nick: "alice"))
        let log = EventLog.watching(client)
        await client.start()
        let event = try await log.next("disconnect") { if case .status(.disconnected) = $0 { return true } else { return false } }
        #expect(event == .status(.disconnected(reason: "connection refused by 127.0.0.1 port \(port)")))
        let retry = try await log.next("reconnecting") { if case .status(.reconnecting) = $0 { return true } else { return false } }
        guard case .status(.reconnecting(let seconds, _)) = retry else { return }
        #expect(seconds >= 0.4 && seconds <= 0.6)
        try await log.next("second attempt") { $0 == .status(.connecting(host: "127.0.0.1", port: port, attempt: 2)) }
        await client.disconnect()
        await client.send("after disconnect", to: "#lobby")
        try await log.next("not sent") { if case .notSent = $0 { return true } else { return false } }
    }
}

/// Welcomes one client and then never says another word.
final class FakeServer: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let seen = LogBox()
    var sawPing: Bool { seen.lines.contains { $0.hasPrefix("PING") } }

    /// `after`: bytes sent right after the welcome.
    init(after: [UInt8] = []) throws {
        let fds = try Sockets.listen(bind: "127.0.0.1", port: 0)
        listener = fds[0]
        port = Sockets.boundPort(listener)
        let fd = listener
        let seen = self.seen
        // The thread owns the listener and closes it when done: closing it from deinit while the
        // thread may still poll it would close a descriptor number someone else may have by then.
        Thread {
            defer { close(fd) }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 10_000) > 0 else { return }
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            var framer = LineFramer()
            var buffer = [UInt8](repeating: 0, count: 4096)
            var welcomed = false
            while true {
                let n = recv(client, &buffer, buffer.count, 0)
                if n <= 0 { break }
                for case .line(let line) in framer.feed(buffer[0..<n]) {
                    let text = String(decoding: line, as: UTF8.self)
                    seen.append(text)
                    if text.hasPrefix("USER") && !welcomed {
                        welcomed = true
                        let welcome = Array(":fake 001 alice :Welcome alice!a@127.0.0.1\r\n".utf8) + after
                        _ = welcome.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    }
                }
            }
            close(client)
        }.start()
    }


    @Test("a host name that does not resolve stops after three tries, saying so")
    func unresolvableHost() async throws {
        var settings = config(port: 6667, nick: "alice")
        settings.host = "nonexistent.invalid"
        settings.reconnect = ReconnectPolicy(initial: 0.05, maximum: 0.1, jitter: 0)
        let client = ChatClient(config: settings)
        let log = EventLog.watching(client)
        await client.start()
        let stopped = try await log.next(timeout: 30, "stop") { if case .status(.stopped) = $0 { return true } else { return false } }
        guard case .status(.stopped(let reason)) = stopped else { return }
        #expect(reason.hasPrefix("nonexistent.invalid was not found after 3 tries") && reason.hasSuffix("check the name"))
        let attempts = await log.all().filter { if case .status(.connecting) = $0 { return true } else { return false } }
        #expect(attempts.count == 3)
        await client.disconnect()
    }
}
