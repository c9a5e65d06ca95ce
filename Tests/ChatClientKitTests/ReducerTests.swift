import Testing
@testable import ChatClientKit
import IRCWire

/// The one reducer: each server line and each request of the user's goes into `ClientState`
/// and comes out as a `Reduction` (events, then actions), which is all the actor performs.
@Suite("the client's one reducer")
struct ReducerTests {
    static func settings(nick: String = "alice") -> Registration.Settings {
        Registration.Settings(nick: nick, userName: "al", realName: "Alice", wantedCapabilities: ["echo-message", "batch", "draft/chathistory"], nonce: "n")
    }

    @Test("a connection from its first line to the welcome: CAP, NICK, USER; CAP END; at 001 OPER, the rooms and the held lines, in that order")
    func welcome() {
        var state = ClientState(nick: "alice", keepsLines: false, registration: Self.settings())
        state.wantedRooms = ["#lobby", "#dev"]
        state.operLogin = ("alice", "secret")
        let typed = state.send("hello while offline", to: "#lobby", isAction: false, queueing: true, now: 1)
        #expect(typed.actions.isEmpty, "nothing is written before the welcome")
        let started = state.connectionStarted()
        #expect(started.actions == [.send(IRCMessage("CAP", "LS", "302")), .send(IRCMessage("NICK", "alice")),
                                    .send(IRCMessage(command: "USER", params: ["al", "0", "*", "Alice"]))])
        let listed = state.receive(try! IRCMessage(parsing: ":srv CAP * LS :echo-message batch draft/chathistory"), now: 2)
        #expect(listed.actions == [.send(IRCMessage("CAP", "REQ", "echo-message batch draft/chathistory"))])
        let acked = state.receive(try! IRCMessage(parsing: ":srv CAP alice ACK :echo-message batch draft/chathistory"), now: 2)
        #expect(acked.actions == [.send(IRCMessage("CAP", "END"))])
        #expect(!state.isRegistered)
        let welcomed = state.receive(try! IRCMessage(parsing: ":srv 001 alice :Welcome alice!al@h"), now: 3)
        #expect(state.isRegistered && state.capabilities.contains("echo-message"))
        #expect(welcomed.actions == [
            .send(IRCMessage("OPER", "alice", "secret")),
            .send(IRCMessage("JOIN", "#lobby,#dev")),
            .sendLine(IRCMessage("PRIVMSG", "#lobby", "hello while offline"), SentLines.Line(target: "#lobby", text: "hello while offline", isAction: false)),
        ])
        #expect(welcomed.events.contains(.status(.registered(nick: "alice"))))
        #expect(welcomed.events.contains { if case .pendingDone(.room("#lobby"), _) = $0 { return true } else { return false } },
                "the held copy leaves the screen as the line goes")
        // Our JOIN asks the room's history in the same change that shows it.
        let joined = state.receive(try! IRCMessage(parsing: ":alice!al@h JOIN #lobby"), now: 4)
        #expect(joined.actions == [.send(IRCMessage("CHATHISTORY", "LATEST", "#lobby", "*", "50"))])
    }

    @Test("PING, CTCP VERSION and a file offer are decided here too: PONG, the NOTICE answer, a DCC action")
    func connectionLines() {
        var state = ClientState(nick: "alice", keepsLines: false)
        _ = state.receive(IRCMessage("001", "alice", "Welcome"), now: 1)
        #expect(state.receive(IRCMessage("PING", "token"), now: 2) == Reduction(actions: [.send(IRCMessage("PONG", "token"))]))
        let version = state.receive(try! IRCMessage(parsing: ":bob!b@h PRIVMSG alice :\u{1}VERSION\u{1}"), now: 2)
        #expect(version.actions == [.send(IRCMessage("NOTICE", "bob", "\u{1}VERSION chat-tui 0.2 (Swift, terminal IRC client)\u{1}"))])
        let offer = state.receive(try! IRCMessage(parsing: ":bob!b@h.example PRIVMSG alice :\u{1}DCC SEND notes.txt 2130706433 5000 12\u{1}"), now: 2)
        #expect(offer.events.isEmpty)
        guard case .dcc(_, let from, let host)? = offer.actions.first else { Issue.record("no DCC action: \(offer.actions)"); return }
        #expect(from == "bob" && host == "h.example")
        let lag = state.receive(IRCMessage("PONG", "srv", "chat-tui-lag-1.5"), now: 2)
        #expect(lag.events == [.lag(0.5)] && lag.actions.isEmpty)
    }

    @Test("ERROR closes the connection: an error line, or the answer to our QUIT as news")
    func error() {
        var state = ClientState(nick: "alice", keepsLines: false)
        _ = state.receive(IRCMessage("001", "alice", "Welcome"), now: 1)
        let closed = state.receive(IRCMessage("ERROR", "Closing Link: h (Killed)"), now: 2)
        #expect(closed.actions == [.close(reason: "closed by the server: h (Killed)")])
        #expect(state.serverError == "h (Killed)")
        #expect(closed.events.contains { if case .line(.server, let line) = $0 { return line.kind == .error } else { return false } })
        state.userStopping = true
        let quit = state.receive(IRCMessage("ERROR", "Closing Link: h (Quit: bye)"), now: 3)
        #expect(quit.events.contains { if case .line(.server, let line) = $0 { return line.kind == .info && line.text == "The server closed the connection as asked: h (Quit: bye)" } else { return false } })
    }

    @Test("registered is one fact: the registration's phase, gone with the connection")
    func registeredOnce() {
        var state = ClientState(nick: "alice", keepsLines: false)
        #expect(!state.isRegistered)
        _ = state.receive(IRCMessage("001", "alice", "Welcome"), now: 1)
        #expect(state.isRegistered && state.registration.phase == .registered)
        _ = state.connectionLost(reason: "reset", now: 2)
        #expect(!state.isRegistered && state.registration.phase != .registered)
    }

    @Test("a nickname taken at registration is said in words, not changed silently")
    func nickTaken() {
        var state = ClientState(nick: "alice", keepsLines: false, registration: Self.settings())
        _ = state.connectionStarted()
        let taken = state.receive(try! IRCMessage(parsing: ":srv 433 * alice :Nickname is already in use"), now: 1)
        #expect(taken.actions == [.send(IRCMessage("NICK", "alice_"))])
        #expect(taken.events.contains { if case .line(.server, let line) = $0 { return line.text == "The nickname alice is taken: trying alice_ (/nick alice once it is free)" } else { return false } })
    }

    @Test("a failed write holds the line for the next connection; a command while offline is refused in words")
    func offline() {
        var state = ClientState(nick: "alice", keepsLines: false)
        _ = state.receive(IRCMessage("001", "alice", "Welcome"), now: 1)
        let sent = state.send("hi", to: "#lobby", isAction: false, queueing: true, now: 2)
        guard case .sendLine(_, let line)? = sent.actions.first else { Issue.record("not sent: \(sent)"); return }
        let failed = state.writeFailed(line, now: 2)
        #expect(failed.events.contains { if case .line(_, let shown) = $0 { return shown.isPending && shown.text == "hi" } else { return false } })
        #expect(state.queue.map(\.text) == ["hi"])
        let refused = state.command(IRCMessage("TOPIC", "#lobby", "x"), connected: false)
        #expect(refused.events == [.error("not connected: TOPIC not sent")] && refused.actions.isEmpty)
        _ = state.command(IRCMessage("JOIN", "#a,#b"), connected: false)
        _ = state.command(IRCMessage("PART", "#A"), connected: false)
        #expect(state.wantedRooms == ["#b"], "JOIN and PART change the rooms rejoined, whether or not they could be sent")
    }

    @Test("user counts are quiet in the welcome and answered after it; modes, time and an empty quit reason in words")
    func replies() {
        var state = ClientState(nick: "alice")
        func texts(_ line: String) -> [String] {
            state.apply(try! IRCMessage(parsing: line), now: 5).compactMap { if case .line(_, let l) = $0 { return l.text } else { return nil } }
        }
        _ = texts(":srv 001 alice :Welcome")
        #expect(texts(":srv 251 alice :There are 3 users on 1 server").isEmpty, "the welcome's counts are not news")
        _ = texts(":srv 376 alice :End of /MOTD command")
        #expect(texts(":srv 251 alice :There are 3 users on 1 server") == ["There are 3 users on 1 server"], "an answer to /quote LUSERS")
        #expect(texts(":srv 252 alice 1 :operators online") == ["1 operators online"])
        #expect(texts(":srv 253 alice :unknown connections") == ["unknown connections"], "short forms do not crash")
        #expect(texts(":srv 221 alice +iw") == ["Your modes: +iw"])
        #expect(texts(":srv 391 alice chat-tui.local 1796231486 0 :2026-12-02T17:11:26Z") == ["Time on chat-tui.local: 2026-12-02T17:11:26Z"])
        _ = texts(":alice!a@h JOIN #lobby")
        _ = texts(":bob!b@h JOIN #lobby")
        #expect(texts(":bob!b@h QUIT :Quit: ") == ["bob quit"], "no empty parentheses")
    }
}

/// What the chaos soak (chat-soak) found in the client, kept as tests.
@Suite("the client: soak findings")
struct SoakFindingTests {
    static func connect(_ state: inout ClientState, at now: Double) {
        _ = state.connectionStarted()
        _ = state.receive(try! IRCMessage(parsing: ":srv CAP * LS :echo-message batch draft/chathistory server-time message-tags"), now: now)
        _ = state.receive(try! IRCMessage(parsing: ":srv CAP alice ACK :echo-message batch draft/chathistory server-time message-tags"), now: now)
        _ = state.receive(try! IRCMessage(parsing: ":srv 001 alice :Welcome alice!al@h"), now: now)
    }

    static func line(_ text: String) -> IRCMessage { try! IRCMessage(parsing: text) }

    /// The clock as the server's times (2026-01-01T00:00:00Z and on).
    static let t = 1_767_225_600.0

    /// alice, connected with history and echo-message, in #lobby.
    static func inLobby() -> ClientState {
        var state = ClientState(nick: "alice", keepsLines: true, registration: ReducerTests.settings())
        state.wantedRooms = ["#lobby"]
        connect(&state, at: t + 1)
        _ = state.receive(line(":alice!al@h JOIN #lobby"), now: t + 2)
        return state
    }

    @Test("soak finding: our line stored but its echo lost while someone's later line was shown: history is read from before ours, ours is found, not sent twice, nothing counted as missed")
    func echoOvertaken() {
        let t = Self.t
        var state = Self.inLobby()
        _ = state.receive(Self.line(":srv BATCH +h1 chathistory #lobby"), now: t + 2)
        _ = state.receive(Self.line("@batch=h1;msgid=m1;time=2026-01-01T00:00:01.000Z :bob!b@h PRIVMSG #lobby :before"), now: t + 2)
        _ = state.receive(Self.line(":srv BATCH -h1"), now: t + 2)
        let typed = state.send("mine", to: "#lobby", isAction: false, queueing: true, now: t + 3)
        #expect(typed.actions == [.sendLine(IRCMessage("PRIVMSG", "#lobby", "mine"), SentLines.Line(target: "#lobby", text: "mine", isAction: false))])
        // Bob's next line reaches us; our echo (held by the server until its commit) never does.
        _ = state.receive(Self.line("@msgid=m3;time=2026-01-01T00:00:03.000Z :bob!b@h PRIVMSG #lobby :after yours"), now: t + 3)
        _ = state.connectionLost(reason: "reset", now: t + 4)
        _ = state.holdUnconfirmed(now: t + 4)
        Self.connect(&state, at: t + 5)
        let joined = state.receive(Self.line(":alice!al@h JOIN #lobby"), now: t + 5)
        #expect(joined.actions == [.send(IRCMessage("CHATHISTORY", "AFTER", "#lobby", "msgid=m1", "100"))], "from before our line, not from m3")
        _ = state.receive(Self.line(":srv BATCH +h2 chathistory #lobby"), now: t + 5)
        _ = state.receive(Self.line("@batch=h2;msgid=m2;time=2026-01-01T00:00:02.000Z :alice!al@h PRIVMSG #lobby :mine"), now: t + 5)
        _ = state.receive(Self.line("@batch=h2;msgid=m3;time=2026-01-01T00:00:03.000Z :bob!b@h PRIVMSG #lobby :after yours"), now: t + 5)
        let ended = state.receive(Self.line(":srv BATCH -h2"), now: t + 5)
        #expect(!ended.actions.contains { if case .sendLine = $0 { return true } else { return false } }, "found in history: not sent again")
        let texts = state.book.conversation("#lobby")!.lines.filter { $0.kind == .message }.map(\.text)
        #expect(texts == ["before", "mine", "after yours"], "each once, in order")
        #expect(state.book.conversation("#lobby")!.lines.contains { $0.text == "── nothing was said here while you were away ──" },
                "bob's line was shown already: not counted as missed")
        // It reads after "connected again" (tour: it came before it).
        let notes = state.book.conversation("#lobby")!.lines.map(\.text).filter { $0.hasPrefix("──") }
        #expect(notes.suffix(2) == ["── connected again ──", "── nothing was said here while you were away ──"], "\(notes)")
    }
}

extension SoakFindingTests {
    @Test("soak finding: our echo, which the server sends once stored, after someone's later line: shown at its place by time, once")
    func lateEchoInPlace() {
        let t = Self.t
        var state = Self.inLobby()
        _ = state.send("mine", to: "#lobby", isAction: false, queueing: true, now: t + 2)
        _ = state.receive(Self.line("@msgid=m3;time=2026-01-01T00:00:03.000Z :bob!b@h PRIVMSG #lobby :after yours"), now: t + 3)
        _ = state.receive(Self.line("@msgid=m2;time=2026-01-01T00:00:02.000Z :alice!al@h PRIVMSG #lobby :mine"), now: t + 3)
        _ = state.receive(Self.line("@msgid=m2;time=2026-01-01T00:00:02.000Z :alice!al@h PRIVMSG #lobby :mine"), now: t + 4)
        let texts = state.book.conversation("#lobby")!.lines.filter { $0.kind == .message && !$0.isPending }.map(\.text)
        #expect(texts == ["mine", "after yours"])
    }
}

extension SoakFindingTests {
    /// alice in #lobby, shown `line` (msgid m1), said "one" to `target`, lost the connection
    /// before its echo and is welcomed again: "one" is held.
    static func heldOne(to target: String, after line: String) -> ClientState {
        var state = inLobby()
        _ = state.receive(Self.line("@msgid=m1;time=2026-01-01T00:00:01.000Z " + line), now: t + 2)
        _ = state.send("one", to: target, isAction: false, queueing: true, now: t + 2)
        _ = state.connectionLost(reason: "reset", now: t + 3)
        _ = state.holdUnconfirmed(now: t + 3)
        connect(&state, at: t + 4)
        return state
    }

    static func sentTexts(_ actions: [ClientAction]) -> [String] {
        actions.compactMap { if case .sendLine(let message, _) = $0 { return message.params.last } else { return nil } }
    }

    @Test("soak finding: the first line to a person, held after a drop with nothing shown before it: their latest lines are read first, and found there it is not sent again")
    func heldFirstDirectLine() {
        let t = Self.t
        var state = Self.inLobby()
        _ = state.send("first to bob", to: "bob", isAction: false, queueing: true, now: t + 2)
        _ = state.connectionLost(reason: "reset", now: t + 3)
        _ = state.holdUnconfirmed(now: t + 3)
        let back = { () -> Reduction in
            _ = state.connectionStarted()
            _ = state.receive(Self.line(":srv CAP * LS :echo-message batch draft/chathistory server-time message-tags"), now: t + 4)
            _ = state.receive(Self.line(":srv CAP alice ACK :echo-message batch draft/chathistory server-time message-tags"), now: t + 4)
            return state.receive(Self.line(":srv 001 alice :Welcome alice!al@h"), now: t + 4)
        }()
        #expect(back.actions.contains(.send(IRCMessage("CHATHISTORY", "LATEST", "bob", "*", "50"))))
        #expect(Self.sentTexts(back.actions).isEmpty, "not sent again before history answers")
        _ = state.receive(Self.line(":srv BATCH +d1 chathistory bob"), now: t + 4)
        _ = state.receive(Self.line("@batch=d1;msgid=m2;time=2026-01-01T00:00:02.000Z :alice!al@h PRIVMSG bob :first to bob"), now: t + 4)
        let ended = state.receive(Self.line(":srv BATCH -d1"), now: t + 4)
        #expect(Self.sentTexts(ended.actions).isEmpty, "the server had it")
        let lines = state.book.conversation("bob")!.lines.filter { $0.kind == .message }
        #expect(lines.map(\.text) == ["first to bob"] && lines.allSatisfy { !$0.isPending })
    }

    @Test("soak finding: a line typed after the reconnect waits behind our held line of that room, which goes first once history has not got it")
    func typedAfterHeld() {
        let t = Self.t
        var state = Self.heldOne(to: "#lobby", after: ":bob!b@h PRIVMSG #lobby :hello")
        let joined = state.receive(Self.line(":alice!al@h JOIN #lobby"), now: t + 4)
        #expect(joined.actions == [.send(IRCMessage("CHATHISTORY", "AFTER", "#lobby", "msgid=m1", "100"))])
        let typed = state.send("two", to: "#lobby", isAction: false, queueing: true, now: t + 5)
        #expect(Self.sentTexts(typed.actions).isEmpty, "waits behind \"one\"")
        _ = state.receive(Self.line(":srv BATCH +h1 chathistory #lobby"), now: t + 5)
        let ended = state.receive(Self.line(":srv BATCH -h1"), now: t + 5)
        #expect(Self.sentTexts(ended.actions) == ["one", "two"], "in the order typed")
        let pending = state.book.conversation("#lobby")!.lines.filter(\.isPending)
        #expect(pending.isEmpty, "both shown as sent, waiting for their echoes")
    }
}

extension SoakFindingTests {
    @Test("soak finding: a message read from history, then its live copy after our own \"connected again\" line (the client's clock): shown once")
    func liveCopyAfterHistory() {
        var conversation = Conversation(id: .room("#lobby"), name: "#lobby")
        var history = ChatLine(time: 100.5, kind: .message, sender: "bob", text: "hi")
        history.msgid = "m1"
        history.isHistory = true
        let first = conversation.insert(history)
        let info = conversation.insert(ChatLine(time: 101.0, kind: .info, text: "── connected again ──"))
        var live = history
        live.isHistory = false
        let again = conversation.insert(live)
        #expect(first && info)
        #expect(!again, "the same msgid is the same message, wherever it would fall")
        #expect(conversation.lines.map(\.text) == ["hi", "── connected again ──"])
        #expect(conversation.contains(msgid: "m1"))
    }
}

extension SoakFindingTests {
    @Test("soak finding: a line queued behind a held one goes as soon as the held one is gone, whatever took it (here its echo), not at the next reconnect")
    func queuedGoesWhenHeldIsGone() {
        let t = Self.t
        var state = Self.heldOne(to: "bob", after: ":bob!b@h PRIVMSG alice :hello")
        let typed = state.send("two", to: "bob", isAction: false, queueing: true, now: t + 5)
        #expect(Self.sentTexts(typed.actions).isEmpty, "behind the held \"one\"")
        // "one"'s echo, late, from the old connection's server: it is done, and "two" may go.
        let echoed = state.receive(Self.line("@msgid=m2;time=2026-01-01T00:00:02.000Z :alice!al@h PRIVMSG bob :one"), now: t + 5)
        #expect(Self.sentTexts(echoed.actions) == ["two"])
    }
}
