import Foundation
import Testing
import ChatClientKit
import ChatTransport
import IRCTestSupport
import IRCWire

@Suite("a direct message held for someone not back yet", .serialized)
struct HeldDirectTests {
    @Test("held through a reconnect without bob, sent once when MONITOR says he is online")
    func heldUntilBobIsBack() async throws {
        let server = try TestServer()
        let proxy = try CuttableProxy(to: server.port)
        let alice = ChatClient(config: config(port: proxy.port, nick: "alice"))
        let log = EventLog.watching(alice)
        await alice.start()
        _ = try await log.registered()
        proxy.cutAll()
        try await log.next("connection lost") { if case .connectionLost = $0 { return true } else { return false } }
        await alice.send("typed while the server was away", to: "bob")
        proxy.restore()
        _ = try await log.registered(timeout: 15)
        // bob is not there: the line stays held, and the conversation says until when.
        try await log.line(in: "bob", containing: "held until they are back")
        #expect(!(await log.all()).contains { if case .notSent = $0 { return true } else { return false } })
        #expect(await log.view().conversation("bob")!.lines.contains { $0.isPending && $0.text == "typed while the server was away" })

        let bob = try server.client()
        // The held line may come while bob is still registering (MONITOR answers at once).
        let registering = try bob.register("bob")
        let held = { (m: IRCMessage) in m.command == "PRIVMSG" && m.params.last == "typed while the server was away" }
        if !registering.contains(where: held) {
            let got = try? bob.readUntil(timeout: 10, held)
            if got == nil { Issue.record("server: \(server.logLines.suffix(20).joined(separator: "\n"))") }
        }
        // A line after it: anything sent twice would come before this one.
        await alice.send("and now live", to: "bob")
        let seen = try bob.readUntil { $0.command == "PRIVMSG" && $0.params.last == "and now live" }
        #expect(seen.filter { $0.command == "PRIVMSG" }.map { $0.params.last ?? "" } == ["and now live"], "the held line arrived once")
        // The held copy leaves the screen (its event may trail what bob read: waited for).
        try await log.next("the held copy done") { if case .pendingDone(.direct("bob"), _) = $0 { return true } else { return false } }
        #expect(!(await log.view().conversation("bob")!.lines.contains { $0.isPending }), "no longer shown as held")
        await alice.quit()
    }

    @Test("through the reducer: typed offline, sent at the welcome, a 401 holds it with MONITOR; cancelled, it is not sent, with its text")
    func cancelled() {
        var state = ClientState(nick: "alice")
        let typed = state.send("hi", to: "bob", isAction: false, queueing: true, now: 1)
        #expect(typed.actions.isEmpty && typed.events.contains { if case .line(_, let line) = $0 { return line.isPending } else { return false } })
        let welcomed = state.receive(IRCMessage("001", "alice", "Welcome"), now: 1)
        #expect(welcomed.actions == [.sendLine(IRCMessage("PRIVMSG", "bob", "hi"), SentLines.Line(target: "bob", text: "hi", isAction: false))])
        _ = state.receive(IRCMessage("005", "alice", "MONITOR=100", "are supported"), now: 1)
        let absent = state.receive(IRCMessage(source: "test.server", command: "401", params: ["alice", "bob", "No such nick"]), now: 2)
        #expect(absent.events.contains { if case .line(_, let line) = $0 { return line.isPending && line.text == "hi" } else { return false } })
        #expect(absent.actions == [.send(IRCMessage("MONITOR", "+", "bob"))])
        let cancelling = state.userCancelledHeld(for: "Bob", now: 3)
        #expect(cancelling.events.contains(.notSent(target: "bob", text: "hi", reason: "cancelled")))
        #expect(cancelling.actions == [.send(IRCMessage("MONITOR", "-", "bob"))])
        // Online later: nothing is left to send.
        let online = state.receive(IRCMessage(source: "test.server", command: "730", params: ["alice", "bob!b@h"]), now: 3)
        #expect(online.actions.isEmpty)
    }

    @Test("held for bob, then MONITOR says he is online: the line goes, and MONITOR stops watching him")
    func deliveredWhenBack() {
        var state = ClientState(nick: "alice")
        _ = state.receive(IRCMessage("001", "alice", "Welcome"), now: 1)
        _ = state.receive(IRCMessage("005", "alice", "MONITOR=100", "are supported"), now: 1)
        _ = state.holdForPerson("bob", text: "hi", isAction: false, now: 2)
        let online = state.receive(IRCMessage(source: "test.server", command: "730", params: ["alice", "bob!b@h"]), now: 3)
        #expect(online.actions == [.sendLine(IRCMessage("PRIVMSG", "bob", "hi"), SentLines.Line(target: "bob", text: "hi", isAction: false)),
                                   .send(IRCMessage("MONITOR", "-", "bob"))])
        #expect(online.events.contains { if case .pendingDone(.direct("bob"), _) = $0 { return true } else { return false } })
    }

    @Test("without MONITOR the line stays held and the conversation says the server cannot tell")
    func noMonitor() {
        var state = ClientState(nick: "alice")
        _ = state.receive(IRCMessage("001", "alice", "Welcome"), now: 1)
        let events = state.holdForPerson("bob", text: "hi", isAction: false, now: 2)
        #expect(events.contains { if case .line(_, let line) = $0 { return line.text.contains("cannot say when they are back") } else { return false } })
        // No MONITOR was asked for: the next change carries only its own action.
        #expect(state.receive(IRCMessage("PING", "x"), now: 3).actions == [.send(IRCMessage("PONG", "x"))])
    }
}

@Suite("ending the connection yourself", .serialized)
struct UserStopTests {
    static func aliceInTheLobby() async throws -> (TestServer, ChatClient, EventLog) {
        let server = try TestServer()
        let alice = ChatClient(config: config(port: server.port, nick: "alice", rooms: ["#lobby"]))
        let log = EventLog.watching(alice)
        await alice.start()
        _ = try await log.registered()
        try await log.line(in: "#lobby", containing: "You joined")
        return (server, alice, log)
    }

    @Test("/quit leaves no 'connection lost … held' marker in any conversation")
    func quitWithoutDropMarkers() async throws {
        let (server, alice, log) = try await Self.aliceInTheLobby()
        defer { _ = server }
        await alice.openConversation("bob")
        await alice.quit()
        #expect(try await log.stopReason() == "you quit")
        let markers = await log.all().filter { if case .line(_, let line) = $0 { return line.text.hasPrefix("── connection lost") } else { return false } }
        #expect(markers.isEmpty, "\(markers)")
    }

    @Test("/disconnect leaves no drop marker either")
    func disconnectWithoutDropMarkers() async throws {
        let (server, alice, log) = try await Self.aliceInTheLobby()
        defer { _ = server }
        await alice.disconnect()
        #expect(try await log.stopReason() == "disconnected by you")
        #expect(!(await log.all()).contains { if case .line(_, let line) = $0 { return line.text.hasPrefix("── connection lost") } else { return false } })
    }
}

extension HeldDirectTests {
    @Test("soak finding: a line typed to someone while an earlier one waits for them to come back waits behind it; both go in order when MONITOR says they are online")
    func laterLineWaitsBehindHeld() {
        var state = ClientState(nick: "alice")
        _ = state.send("first", to: "bob", isAction: false, queueing: true, now: 1)
        _ = state.receive(IRCMessage("001", "alice", "Welcome"), now: 1)
        _ = state.receive(IRCMessage("005", "alice", "MONITOR=100", "are supported"), now: 1)
        _ = state.receive(IRCMessage(source: "test.server", command: "401", params: ["alice", "bob", "No such nick"]), now: 2)
        let typed = state.send("second", to: "bob", isAction: false, queueing: true, now: 3)
        #expect(!typed.actions.contains { if case .sendLine = $0 { return true } else { return false } }, "not ahead of \"first\"")
        #expect(typed.events.contains { if case .line(_, let line) = $0 { return line.isPending && line.text == "second" } else { return false } })
        let online = state.receive(IRCMessage(source: "test.server", command: "730", params: ["alice", "bob!b@h"]), now: 4)
        let sent = online.actions.compactMap { if case .sendLine(let message, _) = $0 { return message.params.last } else { return nil } }
        #expect(sent == ["first", "second"])
    }
}

extension HeldDirectTests {
    /// alice with echo-message and MONITOR, "one" typed to bob offline and flushed at the welcome.
    static func welcomedWithOneForBob() -> ClientState {
        var state = ClientState(nick: "alice")
        _ = state.receive(IRCMessage("CAP", "*", "LS", "echo-message"), now: 0)
        _ = state.send("one", to: "bob", isAction: false, queueing: true, now: 1)
        _ = state.receive(IRCMessage("CAP", "alice", "ACK", "echo-message"), now: 1)
        _ = state.receive(IRCMessage("001", "alice", "Welcome"), now: 1)
        _ = state.receive(IRCMessage("005", "alice", "MONITOR=100", "are supported"), now: 1)
        return state
    }

    @Test("soak finding: a line flushed at the welcome and echoed is delivered; a later 401 from that person is another line's, and the delivered one is not held and sent again")
    func echoedFlushedLineIsDone() {
        var state = Self.welcomedWithOneForBob()
        _ = state.receive(IRCMessage(source: "alice!a@h", command: "PRIVMSG", params: ["bob", "one"]), now: 2)
        _ = state.send("two", to: "bob", isAction: false, queueing: true, now: 3)
        let absent = state.receive(IRCMessage(source: "test.server", command: "401", params: ["alice", "bob", "No such nick"]), now: 4)
        #expect(!absent.events.contains { if case .line(_, let line) = $0 { return line.isPending && line.text == "one" } else { return false } },
                "\"one\" was delivered: not held again")
        let online = state.receive(IRCMessage(source: "test.server", command: "730", params: ["alice", "bob!b@h"]), now: 5)
        let sent = online.actions.compactMap { if case .sendLine(let message, _) = $0 { return message.params.last } else { return nil } }
        #expect(!sent.contains("one"))
    }

    @Test("soak finding: a flushed line answered by 401 waits for the person only, not for an echo too (a drop then would send it twice)")
    func refusedFlushedLineLeavesSent() {
        var state = Self.welcomedWithOneForBob()
        _ = state.receive(IRCMessage(source: "test.server", command: "401", params: ["alice", "bob", "No such nick"]), now: 2)
        #expect(state.sent.lines.isEmpty, "held for bob, not waiting for an echo")
        let online = state.receive(IRCMessage(source: "test.server", command: "730", params: ["alice", "bob!b@h"]), now: 3)
        let sent = online.actions.compactMap { if case .sendLine(let message, _) = $0 { return message.params.last } else { return nil } }
        #expect(sent == ["one"])
        #expect(state.sent.lines.map(\.text) == ["one"], "now waiting for its echo, once")
    }
}

extension HeldDirectTests {
    /// alice registered with echo-message and MONITOR (or not).
    static func registered(monitor: Bool) -> ClientState {
        var state = ClientState(nick: "alice")
        _ = state.receive(IRCMessage("CAP", "*", "LS", "echo-message"), now: 0)
        _ = state.receive(IRCMessage("CAP", "alice", "ACK", "echo-message"), now: 0)
        _ = state.receive(IRCMessage("001", "alice", "Welcome"), now: 1)
        if monitor { _ = state.receive(IRCMessage("005", "alice", "MONITOR=100", "are supported"), now: 1) }
        return state
    }

    static func sentTexts(_ reduction: Reduction) -> [String] {
        reduction.actions.compactMap { if case .sendLine(let message, _) = $0 { return message.params.last } else { return nil } }
    }

    @Test("soak finding: a line typed to someone who is not on the server now (401) is theirs when they are back, not left waiting for an echo to go again at the next drop after later lines")
    func liveLineRefusedWaitsForPerson() {
        var state = Self.registered(monitor: true)
        #expect(Self.sentTexts(state.send("one", to: "bob", isAction: false, queueing: true, now: 2)) == ["one"])
        let absent = state.receive(IRCMessage(source: "test.server", command: "401", params: ["alice", "bob", "No such nick/channel"]), now: 2)
        #expect(state.sent.lines.isEmpty, "answered: not waiting for an echo")
        #expect(absent.events.contains { if case .line(_, let line) = $0 { return line.isPending && line.text == "one" } else { return false } })
        #expect(absent.actions == [.send(IRCMessage("MONITOR", "+", "bob"))])
        #expect(Self.sentTexts(state.send("two", to: "bob", isAction: false, queueing: true, now: 3)).isEmpty, "behind \"one\"")
        let online = state.receive(IRCMessage(source: "test.server", command: "730", params: ["alice", "bob!b@h"]), now: 4)
        #expect(Self.sentTexts(online) == ["one", "two"])
    }

    @Test("without MONITOR a line typed to someone not on the server is not sent, in words, and nothing waits for its echo")
    func liveLineRefusedWithoutMonitor() {
        var state = Self.registered(monitor: false)
        _ = state.send("one", to: "bob", isAction: false, queueing: true, now: 2)
        let absent = state.receive(IRCMessage(source: "test.server", command: "401", params: ["alice", "bob", "No such nick/channel"]), now: 2)
        #expect(absent.events.contains(.notSent(target: "bob", text: "one", reason: "bob is not on the server now")))
        #expect(state.sent.lines.isEmpty)
    }

    @Test("against our server: a line to someone reconnecting is held, and goes before what was typed after it once they are back")
    func liveLineHeldAgainstServer() async throws {
        let server = try TestServer()
        let alice = ChatClient(config: config(port: server.port, nick: "alice"))
        let log = EventLog.watching(alice)
        await alice.start()
        _ = try await log.registered()
        await alice.send("while you were away", to: "bob")
        try await log.line(in: "bob", containing: "held until they are back")
        await alice.send("typed after it", to: "bob")
        let bob = try server.client()
        var seen = try bob.register("bob")
        if !seen.contains(where: { $0.command == "PRIVMSG" && $0.params.last == "typed after it" }) {
            seen += try bob.readUntil { $0.command == "PRIVMSG" && $0.params.last == "typed after it" }
        }
        #expect(seen.filter { $0.command == "PRIVMSG" }.map { $0.params.last ?? "" } == ["while you were away", "typed after it"])
        await alice.quit()
    }
}
