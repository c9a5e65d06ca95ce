#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import ChatClientKit
import ChatServerKit
import IRCTestSupport
import IRCWire

@Suite("refused lines, invitations and the server's replies in words", .serialized)
struct RefusalTests {
    @Test("a line a +m room refused is shown as refused and never sent after the server restarts")
    func refusedNeverResent() async throws {
        let port = try freePort()
        let directory = NSTemporaryDirectory() + "chat-tui-refused-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Our server on a fixed port with its history in the test's own directory, started twice.
        func startServer() throws -> ServerHandle {
            var settings = ServerConfig()
            settings.name = "test.server"
            return try ServerHandle.start(config: settings, bind: "127.0.0.1", port: port,
                                          history: HistoryOptions(path: directory + "/server.db")) { _ in }
        }
        var server = try startServer()
        defer { server.stop() }
        // bob reaches it through a proxy, so the test says when he may come back.
        let proxy = try CuttableProxy(to: port)
        let carol = try LineClient(port: port)
        try carol.register("carol")
        carol.send("JOIN #quiet")
        carol.send("MODE #quiet +m")
        carol.send("PRIVMSG #quiet :welcome")
        carol.send("PING :ready")
        _ = try carol.readUntil { $0.command == "PONG" }

        let bob = ChatClient(config: config(port: proxy.port, nick: "bob", rooms: ["#quiet"]))
        let log = EventLog.watching(bob)
        await bob.start()
        try await log.line(in: "#quiet", containing: "welcome")
        await bob.send("refused line", to: "#quiet")
        let refusal = try await log.next("the refusal") {
            if case .notSent("#quiet", "refused line", let reason) = $0 { return reason.contains("+m") }
            return false
        }
        #expect(refusal == .notSent(target: "#quiet", text: "refused line", reason: "refused by the server: Cannot send to channel (+m)"))
        #expect(await bob.state.sent.lines.isEmpty, "a refused line waits for nothing")

        proxy.cutAll()
        try await log.next("connection lost") { if case .connectionLost = $0 { return true } else { return false } }
        #expect(!(await log.view(nick: "bob").conversation("#quiet")!.lines.contains { $0.isPending }), "not held at the drop")
        server.stop()
        server = try startServer()
        // The room is made again without +m: a line sent now would reach dave.
        let dave = try LineClient(port: port)
        try dave.register("dave")
        dave.send("JOIN #quiet")
        _ = try dave.readUntil { $0.command == "366" }
        proxy.restore()
        // The gap's history has been read (what history lacks would be sent again here).
        try await log.line(in: "#quiet", timeout: 30, containing: "while you were away")
        await bob.send("after the restart", to: "#quiet")
        let seen = try dave.readUntil(timeout: 30) { $0.command == "PRIVMSG" && $0.params.last == "after the restart" }
        // (dave's join replays carol's "welcome" from history.)
        let said = seen.filter { $0.command == "PRIVMSG" }.compactMap { $0.params.last }
        #expect(!said.contains("refused line") && said.last == "after the restart", "\(said)")
        #expect(!(await log.view(nick: "bob").conversation("#quiet")!.lines.contains { $0.isPending }))
        await bob.quit()
        _ = proxy
    }

    @Test("an invitation is shown where the invitee is looking, unread and ringing; the inviter sees it was sent")
    func invitationVisible() async throws {
        let server = try TestServer()
        let alice = ChatClient(config: config(port: server.port, nick: "alice", rooms: ["#secret"]))
        let bob = ChatClient(config: config(port: server.port, nick: "bob", rooms: ["#dev"]))
        let aliceLog = EventLog.watching(alice), bobLog = EventLog.watching(bob)
        await alice.start()
        try await aliceLog.line(in: "#secret", containing: "You joined #secret")
        await alice.sendCommand(IRCMessage("MODE", "#secret", "+i"), replyIn: .room("#secret"))
        try await aliceLog.line(in: "#secret", containing: "set mode +i")
        await bob.start()
        try await bobLog.line(in: "#lobby", containing: "You joined #lobby")
        try await bobLog.line(in: "#dev", containing: "You joined #dev")
        // bob typed last in #lobby, and is looking at #dev (his screen said so).
        await bob.replyIn(.room("#lobby"))
        await bob.looking(at: .room("#dev"))

        await alice.sendCommand(IRCMessage("INVITE", "bob", "#secret"), replyIn: .room("#secret"))
        let invitation = try await bobLog.line(in: "#dev", containing: "invites you")
        #expect(invitation.text == "alice invites you to #secret — /join #secret")
        #expect(invitation.isHighlight, "it rings like a mention")
        let dev = await bobLog.view(nick: "bob").conversation("#dev")!
        #expect(dev.unread == 1 && dev.mentioned)
        #expect(!(await bobLog.view(nick: "bob").conversation("#lobby")!.lines.contains { $0.text.contains("invites you") }))
        try await aliceLog.line(in: "#secret", containing: "invited bob to #secret")

        let bobServer = await bobLog.view(nick: "bob")[.server]!.lines.map(\.text)
        #expect(!bobServer.contains { $0.contains("INVITE") }, "\(bobServer)")
        await alice.quit()
        await bob.quit()
    }

    @Test("without an account our server keeps the connection's read markers: reading answers with the marker, nothing in the server window")
    func markersWithoutAccount() async throws {
        let server = try TestServer(history: HistoryOptions(path: NSTemporaryDirectory() + "chat-tui-nomarkers-\(UUID().uuidString).db"))
        let alice = ChatClient(config: config(port: server.port, nick: "alice"))
        let log = EventLog.watching(alice)
        await alice.start()
        try await log.line(in: "#lobby", containing: "You joined #lobby")
        let bob = try server.client()
        try bob.register("bob")
        for n in 1...3 {
            bob.send("PRIVMSG #lobby :news \(n)")
            try await log.line(in: "#lobby", containing: "news \(n)")
            await alice.markRead(.room("#lobby"))
        }
        // Answered after every MARKREAD before it.
        await alice.sendCommand(IRCMessage("WHOIS", "alice"))
        try await log.line(in: "*", containing: "End of")
        let lines = await log.view()[.server]!.lines.map(\.text)
        #expect(!lines.contains { $0.contains("marker") || $0.contains("FAIL") || $0.hasPrefix(":") }, "\(lines)")
        #expect(await alice.state.markerRequest(for: .room("#lobby")) != nil, "markers go on being sent")
        await alice.quit()
    }
}

@Suite("read markers refused by another server")
struct MarkersRefusedTests {
    @Test("a server that keeps markers only for accounts (FAIL MARKREAD ACCOUNT_REQUIRED, as ergo answers): said once, none sent again")
    func accountRequired() throws {
        let (state, _) = fold([":srv CAP alice ACK :draft/read-marker"] + welcome + [
            ":bob!b@h PRIVMSG #lobby :news",
            ":srv FAIL MARKREAD ACCOUNT_REQUIRED #lobby :You must be logged in",
            ":srv FAIL MARKREAD ACCOUNT_REQUIRED #lobby :You must be logged in",
        ])
        let lines = state.book[.server]?.lines.map(\.text) ?? []
        #expect(lines.filter { $0.contains("marker") } == ["Read markers are kept only for a logged-in account: log in (SASL) to share what you have read between windows (ACCOUNT_REQUIRED)"])
        #expect(state.markerRequest(for: .room("#lobby")) == nil, "no MARKREAD is sent again")
    }
}

@Suite("the server's replies in words")
struct ServerReplyWordsTests {
    func shown(_ line: String, replyIn: ConversationID? = nil) throws -> [String] {
        var state = ClientState(nick: "alice")
        _ = state.apply(try IRCMessage(parsing: ":srv 001 alice :Welcome"), now: 0)
        _ = state.apply(try IRCMessage(parsing: ":alice!a@h JOIN #room"), now: 0)
        state.replyConversation = replyIn
        return state.apply(try IRCMessage(parsing: line), now: 1).compactMap {
            if case .line(let id, let line) = $0 { return "\(id) \(line.text)" }
            return nil
        }
    }

    @Test("FAIL of a known command says what failed, with the server's words and the code")
    func knownFailure() throws {
        #expect(try shown(":srv FAIL JOIN TEMPORARILY_UNAVAILABLE #other :Try again later")
                == ["(server) Could not join #other: Try again later (TEMPORARILY_UNAVAILABLE)"])
        #expect(try shown(":srv FAIL CHATHISTORY INVALID_PARAMS #room :Bad", replyIn: .room("#room"))
                == ["#room History could not be fetched: Bad (INVALID_PARAMS)"])
    }

    @Test("an unknown standard reply or command is the server's words with its code, never the raw line")
    func unknownReply() throws {
        #expect(try shown(":srv WARN FROB SLOW :Frobbing is slow today") == ["(server) the server says: Frobbing is slow today (SLOW)"])
        #expect(try shown(":srv NOTE * RESTARTING :Restart in 5 minutes") == ["(server) the server says: Restart in 5 minutes (RESTARTING)"])
        #expect(try shown(":srv WIBBLE alice :something new") == ["(server) the server says: something new (WIBBLE)"])
    }

    @Test("a FAIL PRIVMSG without a line waiting for it is still words")
    func failPrivmsgWithoutLine() throws {
        #expect(try shown(":srv FAIL PRIVMSG TEMPORARILY_UNAVAILABLE #room :History is down")
                == ["#room Not sent to #room: History is down (TEMPORARILY_UNAVAILABLE)"])
    }

    @Test("a FAIL PRIVMSG for a line waiting for its echo refuses that line: not held, not resent")
    func failPrivmsgRefusesLine() throws {
        var state = ClientState(nick: "alice")
        _ = state.apply(try IRCMessage(parsing: ":srv 001 alice :Welcome"), now: 0)
        state.sending(SentLines.Line(target: "#room", text: "hello", isAction: false))
        let events = state.apply(try IRCMessage(parsing: ":srv FAIL PRIVMSG TEMPORARILY_UNAVAILABLE #room :Try later"), now: 1)
        #expect(events == [.notSent(target: "#room", text: "hello", reason: "refused by the server: Try later (TEMPORARILY_UNAVAILABLE)")])
        _ = state.connectionLost(now: 2)
        #expect(state.holdUnconfirmed(now: 2).events.isEmpty)
        #expect(state.takeHeld(where: { _ in true }).lines.isEmpty)
    }
}
