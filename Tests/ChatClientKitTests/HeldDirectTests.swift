import Foundation
import Testing
@testable import ChatClientKit
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
        // What a quit now would leave unsent (the screen says it on the terminal after it closes).
        #expect(await alice.unsentHeld == ["to bob: typed while the server was away"])

        let bob = try server.client()
        let registering = try bob.register("bob")
        let held = { (m: IRCMessage) in m.command == "PRIVMSG" && m.params.last == "typed while the server was away" }
        // bob was never seen logged in to an account: whoever has the name now may be someone
        // else, so nothing goes on its own; the user is asked (issue 42, item 2).
        try await log.line(in: "bob", containing: "bob is back — they may be someone else: /send-held bob sends what is held")
        #expect(!registering.contains(where: held))
        await alice.sendHeld(for: "bob")
        _ = try bob.readUntil(timeout: 10, held)
        // A line after it: anything sent twice would come before this one.
        await alice.send("and now live", to: "bob")
        let seen = try bob.readUntil { $0.command == "PRIVMSG" && $0.params.last == "and now live" }
        #expect(seen.filter { $0.command == "PRIVMSG" }.map { $0.params.last ?? "" } == ["and now live"], "the held line arrived once")
        // The held copy leaves the screen (its event may trail what bob read: waited for).
        try await log.next("the held copy done") { if case .pendingDone(.direct("bob"), _) = $0 { return true } else { return false } }
        #expect(!(await log.view().conversation("bob")!.lines.contains { $0.isPending }), "no longer shown as held")
        await alice.quit()
    }

    @Test("over sockets: a line held for bob's account is not given to a guest who takes his nickname, and reaches bob when he is back (issue 42, item 2)")
    func impostorGetsNothing() async throws {
        // Not always-on: the server lets bob's nickname go when he leaves (so a guest can take
        // it) and the client holds the line (PresenceTests: always-on keeps both).
        let server = try TestServer(configure: { $0.alwaysOn = .off }, accounts: try accountStore(["alice", "bob"]))
        let alice = ChatClient(config: ClientDirectGapTests.alice(port: server.port))
        let log = EventLog.watching(alice)
        await alice.start()
        _ = try await log.registered()
        let bob = try ClientDirectGapTests.loggedIn(server, "bob")
        try await log.line(in: "#lobby", containing: "bob")
        bob.send("QUIT :back soon")
        try await log.line(in: "#lobby", containing: "back soon")
        await alice.send("the wifi password is hunter2", to: "bob")
        try await log.line(in: "bob", containing: "held until they are back")
        let guest = try server.client()
        _ = try guest.register("bob")
        try await log.line(in: "bob", containing: "bob is back, but not logged in, not as bob, the account your lines were for: not sent")
        guest.send("PING :after")
        let seen = try guest.readUntil { $0.command == "PONG" }
        #expect(!seen.contains { $0.command == "PRIVMSG" }, "the guest got nothing")
        guest.send("QUIT")
        _ = try guest.readUntil { $0.command == "ERROR" }
        let real = try ClientDirectGapTests.loggedIn(server, "bob")
        _ = try real.readUntil(timeout: 10) { $0.command == "PRIVMSG" && $0.params.last == "the wifi password is hunter2" }
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

    @Test("/msg typed in a room to someone not on the server: the held note is said in the room too, where it was typed")
    func heldNoteWhereTyped() {
        // With echo-message a line waits for its echo, so the 401 is its answer (without it,
        // the 401 itself is said where the line was typed).
        var state = MultilineSendingTests().registered("echo-message")
        _ = state.receive(IRCMessage("005", "alice", "MONITOR=100", "are supported"), now: 1)
        _ = state.receive(try! IRCMessage(parsing: ":alice!a@h JOIN #lobby"), now: 1)
        state.replyConversation = .room("#lobby")
        _ = state.send("are you there?", to: "ghost", isAction: false, queueing: true, now: 2)
        let absent = state.receive(IRCMessage(source: "test.server", command: "401", params: ["alice", "ghost", "No such nick"]), now: 3)
        let inRoom = absent.events.compactMap { event -> String? in
            if case .line(.room("#lobby"), let line) = event { return line.text } else { return nil }
        }
        #expect(inRoom == ["ghost is not on the server now: held until they are back (sent then; /cancel ghost gives up) — in the conversation with ghost"])
    }

    @Test("held for bob's account: MONITOR says the nickname is online, WHOX says whose it is; an impostor gets nothing, bob himself gets the line (issue 42, item 2)")
    func deliveredToTheAccount() throws {
        var state = ClientState(nick: "alice")
        state.capabilities = ["account-tag", "extended-join"]
        _ = state.receive(IRCMessage("001", "alice", "Welcome"), now: 1)
        _ = state.receive(IRCMessage("005", "alice", "MONITOR=100", "WHOX", "are supported"), now: 1)
        _ = state.receive(try IRCMessage(parsing: ":bob!b@h JOIN #lobby bob :Bob"), now: 1)
        #expect(state.accountsSeen.account(of: "bob") == "bob")
        _ = state.receive(try IRCMessage(parsing: ":bob!b@h QUIT :gone"), now: 1)
        _ = state.holdForPerson("bob", text: "the wifi password is hunter2", isAction: false, now: 2)
        #expect(state.held.waiting["bob"]?.person == .account("bob"))
        // A guest takes the nickname: online, but not bob's account.
        let online = state.receive(IRCMessage(source: "test.server", command: "730", params: ["alice", "bob!x@elsewhere"]), now: 3)
        #expect(online.actions == [.send(IRCMessage("WHO", "bob", "%tna,847"))], "asked whose it is; nothing sent")
        let impostor = state.receive(IRCMessage(source: "test.server", command: "354", params: ["alice", "847", "bob", "0"]), now: 3)
        #expect(impostor.actions.isEmpty)
        #expect(impostor.events.contains { if case .line(.direct("bob"), let line) = $0 {
            return line.text.hasPrefix("bob is back, but not logged in, not as bob, the account your lines were for: not sent") } else { return false } })
        // The guest leaves; bob himself comes back.
        _ = state.receive(IRCMessage(source: "test.server", command: "731", params: ["alice", "bob"]), now: 4)
        let back = state.receive(IRCMessage(source: "test.server", command: "730", params: ["alice", "bob!b@h"]), now: 5)
        #expect(back.actions == [.send(IRCMessage("WHO", "bob", "%tna,847"))])
        let himself = state.receive(IRCMessage(source: "test.server", command: "354", params: ["alice", "847", "bob", "Bob"]), now: 5)
        #expect(himself.actions == [.sendLine(IRCMessage("PRIVMSG", "bob", "the wifi password is hunter2"),
                                              SentLines.Line(target: "bob", text: "the wifi password is hunter2", isAction: false)),
                                    .send(IRCMessage("MONITOR", "-", "bob"))])
        #expect(himself.events.contains { if case .pendingDone(.direct("bob"), _) = $0 { return true } else { return false } })
        #expect(state.held.waiting.isEmpty)
    }

    @Test("held for someone never seen with an account: back online, nothing is sent; the user is asked once, and /send-held sends it")
    func askedWhenUnknown() {
        var state = ClientState(nick: "alice")
        _ = state.receive(IRCMessage("001", "alice", "Welcome"), now: 1)
        _ = state.receive(IRCMessage("005", "alice", "MONITOR=100", "WHOX", "are supported"), now: 1)
        _ = state.holdForPerson("bob", text: "hi", isAction: false, now: 2)
        let online = state.receive(IRCMessage(source: "test.server", command: "730", params: ["alice", "bob!b@h"]), now: 3)
        #expect(online.actions.isEmpty)
        #expect(online.events.contains { if case .line(.direct("bob"), let line) = $0 {
            return line.text == "bob is back — they may be someone else: /send-held bob sends what is held, /cancel bob gives it up" } else { return false } })
        let again = state.receive(IRCMessage(source: "test.server", command: "730", params: ["alice", "bob!b@h"]), now: 3)
        #expect(again.events.isEmpty, "asked once")
        let sent = state.userSentHeld(for: "Bob", now: 4)
        #expect(sent.actions == [.sendLine(IRCMessage("PRIVMSG", "bob", "hi"), SentLines.Line(target: "bob", text: "hi", isAction: false)),
                                 .send(IRCMessage("MONITOR", "-", "bob"))])
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
        _ = state.receive(IRCMessage("005", "alice", "MONITOR=100", "WHOX", "are supported"), now: 1)
        Self.knowBob(&state)
        _ = state.receive(IRCMessage(source: "test.server", command: "401", params: ["alice", "bob", "No such nick"]), now: 2)
        let typed = state.send("second", to: "bob", isAction: false, queueing: true, now: 3)
        #expect(!typed.actions.contains { if case .sendLine = $0 { return true } else { return false } }, "not ahead of \"first\"")
        #expect(typed.events.contains { if case .line(_, let line) = $0 { return line.isPending && line.text == "second" } else { return false } })
        let online = Self.bobBack(&state, now: 4)
        let sent = online.actions.compactMap { if case .sendLine(let message, _) = $0 { return message.params.last } else { return nil } }
        #expect(sent == ["first", "second"])
    }

    /// bob seen logged in to his account (extended-join): lines held for him wait for that account.
    static func knowBob(_ state: inout ClientState) {
        _ = state.receive(IRCMessage(source: "bob!b@h", command: "JOIN", params: ["#lobby", "bob", "Bob"]), now: 1)
    }

    /// MONITOR says bob is online and WHOX that it is his account: what the second answer does.
    static func bobBack(_ state: inout ClientState, now: Double) -> Reduction {
        _ = state.receive(IRCMessage(source: "test.server", command: "730", params: ["alice", "bob!b@h"]), now: now)
        return state.receive(IRCMessage(source: "test.server", command: "354", params: ["alice", "847", "bob", "bob"]), now: now)
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
        _ = state.receive(IRCMessage("005", "alice", "MONITOR=100", "WHOX", "are supported"), now: 1)
        knowBob(&state)
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
        let online = Self.bobBack(&state, now: 5)
        let sent = online.actions.compactMap { if case .sendLine(let message, _) = $0 { return message.params.last } else { return nil } }
        #expect(!sent.contains("one"))
    }

    @Test("soak finding: a flushed line answered by 401 waits for the person only, not for an echo too (a drop then would send it twice)")
    func refusedFlushedLineLeavesSent() {
        var state = Self.welcomedWithOneForBob()
        _ = state.receive(IRCMessage(source: "test.server", command: "401", params: ["alice", "bob", "No such nick"]), now: 2)
        #expect(state.sent.lines.isEmpty, "held for bob, not waiting for an echo")
        let online = Self.bobBack(&state, now: 3)
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
        if monitor { _ = state.receive(IRCMessage("005", "alice", "MONITOR=100", "WHOX", "are supported"), now: 1) }
        knowBob(&state)
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
        let online = Self.bobBack(&state, now: 4)
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
        // bob has no account: alice is asked before anything goes to whoever has the name.
        try await log.line(in: "bob", containing: "they may be someone else")
        await alice.sendHeld(for: "bob")
        if !seen.contains(where: { $0.command == "PRIVMSG" && $0.params.last == "typed after it" }) {
            seen += try bob.readUntil { $0.command == "PRIVMSG" && $0.params.last == "typed after it" }
        }
        #expect(seen.filter { $0.command == "PRIVMSG" }.map { $0.params.last ?? "" } == ["while you were away", "typed after it"])
        await alice.quit()
    }
}
