import Foundation
import Testing
@testable import ChatServerKit
import ChatStore
import IRCTestSupport
import IRCWire

func historyStore() throws -> HistoryStore {
    try HistoryStore(database: Database(path: NSTemporaryDirectory() + "chat-tui-history-\(UUID().uuidString).db"))
}

extension Harness {
    init(historyOf store: HistoryStore, accounts: AccountStore? = nil, configure: (inout ServerConfig) -> Void = { _ in }) {
        self.init(accounts: accounts, history: store) {
            $0.accountIterations = 4096
            configure(&$0)
        }
    }

    /// The lines of the chathistory batch in the last outbox to `id` (without the BATCH lines).
    func historyLines(to id: ConnectionID) -> [IRCMessage] {
        out.messages(to: id).filter { $0.command != "BATCH" }
    }
}

@Suite("server state: history and chathistory")
struct StateHistoryTests {
    let caps = ["draft/chathistory", "batch", "server-time", "message-tags", "echo-message"]

    @Test("with history: caps, ISUPPORT CHATHISTORY=100 and MSGREFTYPES; LATEST gives the room's lines with their msgid and time, oldest first")
    func latest() throws {
        var h = Harness(historyOf: try historyStore())
        let alice = h.register("alice", caps: caps)
        #expect(h.out.messages(to: alice).filter { $0.command == "005" }.flatMap(\.params).contains("CHATHISTORY=100"))
        var sent: [(String, String)] = []
        for n in 0..<5 {
            h.now += 1
            h.send(alice, "PRIVMSG #lobby :line \(n)")
            let echo = h.out.messages(to: alice)[0]
            sent.append((echo.tag("msgid")!, echo.tag("time")!))
        }
        let bob = h.register("bob", caps: caps)
        h.send(bob, "CHATHISTORY LATEST #lobby * 3")
        let lines = h.out.messages(to: bob)
        #expect(lines.first?.command == "BATCH" && lines.first?.params.suffix(2) == ["chathistory", "#lobby"])
        let replayed = h.historyLines(to: bob)
        #expect(replayed.map { $0.params.last! } == ["line 2", "line 3", "line 4"])
        #expect(replayed.map { $0.tag("msgid")! } == sent[2...].map(\.0), "the original msgids")
        #expect(replayed.map { $0.tag("time")! } == sent[2...].map(\.1), "the original times")
        #expect(replayed.allSatisfy { $0.source?.hasPrefix("alice!") == true && $0.tag("batch") != nil })
        // BEFORE and AFTER a msgid, AROUND, BETWEEN.
        h.send(bob, "CHATHISTORY BEFORE #lobby msgid=\(sent[2].0) 10")
        #expect(h.historyLines(to: bob).map { $0.params.last! } == ["line 0", "line 1"])
        h.send(bob, "CHATHISTORY AFTER #lobby msgid=\(sent[2].0) 1")
        #expect(h.historyLines(to: bob).map { $0.params.last! } == ["line 3"])
        h.send(bob, "CHATHISTORY BETWEEN #lobby msgid=\(sent[0].0) msgid=\(sent[4].0) 10")
        #expect(h.historyLines(to: bob).map { $0.params.last! } == ["line 1", "line 2", "line 3"])
        h.send(bob, "CHATHISTORY AROUND #lobby msgid=\(sent[2].0) 3")
        #expect(h.historyLines(to: bob).map { $0.params.last! } == ["line 1", "line 2", "line 3"])
        h.send(bob, "CHATHISTORY AFTER #lobby timestamp=\(sent[3].1) 10")
        #expect(h.historyLines(to: bob).map { $0.params.last! } == ["line 4"], "after a message's own time: strictly after it")
        h.send(bob, "CHATHISTORY LATEST #lobby msgid=\(sent[3].0) 10")
        #expect(h.historyLines(to: bob).map { $0.params.last! } == ["line 4"], "LATEST after what the client has")
    }

    @Test("a reaction (TAGMSG with +draft/react and +draft/reply) is kept and served by CHATHISTORY; typing is never kept")
    func reactionsInHistory() throws {
        var h = Harness(historyOf: try historyStore())
        let alice = h.register("alice", caps: caps)
        h.send(alice, "PRIVMSG #lobby :hello")
        let parent = h.out.messages(to: alice)[0].tag("msgid")!
        h.now += 1
        h.send(alice, "@+typing=active TAGMSG #lobby")
        #expect(h.out.deliveries.allSatisfy { $0.rows.isEmpty }, "typing is not stored")
        h.send(alice, "@+draft/react=👍;+draft/reply=\(parent) TAGMSG #lobby")
        h.send(alice, "@+draft/reply=\(parent) PRIVMSG #lobby :a reply")
        let bob = h.register("bob", caps: caps)
        h.send(bob, "CHATHISTORY LATEST #lobby * 10")
        let lines = h.historyLines(to: bob)
        #expect(lines.map(\.command) == ["PRIVMSG", "TAGMSG", "PRIVMSG"])
        #expect(lines[1].tag("+draft/react") == "👍" && lines[1].tag("+draft/reply") == parent)
        #expect(lines[2].tag("+draft/reply") == parent)
    }

    @Test("BETWEEN with msgid bounds among messages of one millisecond: ordered by time, then msgid, both ways")
    func betweenSameMillisecond() throws {
        var h = Harness(historyOf: try historyStore())
        let alice = h.register("alice", caps: caps)
        var ids: [String] = []
        for n in 0..<6 {
            h.send(alice, "PRIVMSG #lobby :same \(n)")
            ids.append(h.out.messages(to: alice)[0].tag("msgid")!)
        }
        let bob = h.register("bob", caps: caps)
        h.send(bob, "CHATHISTORY BETWEEN #lobby msgid=\(ids[1]) msgid=\(ids[4]) 10")
        #expect(h.historyLines(to: bob).map { $0.params.last! } == ["same 2", "same 3"])
        h.send(bob, "CHATHISTORY BETWEEN #lobby msgid=\(ids[4]) msgid=\(ids[1]) 10")
        #expect(h.historyLines(to: bob).map { $0.params.last! } == ["same 2", "same 3"], "oldest first either way")
        h.send(bob, "CHATHISTORY BETWEEN #lobby msgid=\(ids[0]) msgid=\(ids[5]) 2")
        #expect(h.historyLines(to: bob).map { $0.params.last! } == ["same 1", "same 2"], "the limit from the first bound")
        h.send(bob, "CHATHISTORY BETWEEN #lobby msgid=\(ids[5]) msgid=\(ids[0]) 2")
        #expect(h.historyLines(to: bob).map { $0.params.last! } == ["same 3", "same 4"], "backwards: the limit from the first bound")
    }

    @Test("FAIL codes: unknown subcommand, missing parameters, a bad limit or reference")
    func failures() throws {
        var h = Harness(historyOf: try historyStore())
        let alice = h.register("alice", caps: caps)
        h.send(alice, "CHATHISTORY SIDEWAYS #lobby * 10")
        #expect(h.lines(to: alice).first?.hasPrefix(":test.server FAIL CHATHISTORY INVALID_PARAMS SIDEWAYS") == true)
        h.send(alice, "CHATHISTORY LATEST #lobby")
        #expect(h.lines(to: alice).first?.hasPrefix(":test.server FAIL CHATHISTORY NEED_MORE_PARAMS LATEST") == true)
        h.send(alice, "CHATHISTORY LATEST #lobby * none")
        #expect(h.lines(to: alice).first?.hasPrefix(":test.server FAIL CHATHISTORY INVALID_PARAMS LATEST none") == true)
        h.send(alice, "CHATHISTORY BEFORE #lobby yesterday 10")
        #expect(h.lines(to: alice).first?.hasPrefix(":test.server FAIL CHATHISTORY INVALID_PARAMS BEFORE yesterday") == true)
    }

    @Test("privacy: a room's history only to its members, a +s room's too; outsiders get INVALID_TARGET, as for a room that does not exist")
    func roomPrivacy() throws {
        var h = Harness(historyOf: try historyStore())
        let alice = h.register("alice", caps: caps)
        h.send(alice, "JOIN #secret", "MODE #secret +s", "PRIVMSG #secret :for members")
        let mallory = h.register("mallory", caps: caps)
        h.send(mallory, "CHATHISTORY LATEST #secret * 10")
        #expect(h.lines(to: mallory) == [":test.server FAIL CHATHISTORY INVALID_TARGET LATEST #secret :Messages could not be retrieved"])
        h.send(mallory, "CHATHISTORY BEFORE #nowhere timestamp=2026-12-01T10:00:00.000Z 10")
        #expect(h.lines(to: mallory) == [":test.server FAIL CHATHISTORY INVALID_TARGET BEFORE #nowhere :Messages could not be retrieved"])
        h.send(alice, "CHATHISTORY LATEST #secret * 10")
        #expect(h.historyLines(to: alice).map { $0.params.last! }.contains("for members"))
    }

    @Test("privacy: direct messages are served only to a client logged in to one of the two accounts, never to a nickname thief")
    func directPrivacy() throws {
        let accounts = try accountStore(["alice", "bob"])
        // Not always-on: bob's nickname is free once he leaves (always-on holds it: PresenceTests).
        var h = Harness(historyOf: try historyStore(), accounts: accounts) { $0.alwaysOn = .off }
        let alice = h.loggedIn("alice", caps: caps)
        let bob = h.loggedIn("bob", caps: caps)
        h.send(alice, "PRIVMSG bob :just between us")
        h.send(bob, "QUIT")
        // A thief takes bob's nickname (without logging in) and asks for the conversation with alice.
        let thief = h.register("bob", caps: caps)
        h.send(thief, "CHATHISTORY LATEST alice * 10")
        #expect(h.lines(to: thief) == [":test.server FAIL CHATHISTORY INVALID_TARGET LATEST alice :Messages could not be retrieved"])
        // The real bob, logged in again, reads it.
        let real = h.loggedIn("bobby", account: "bob", caps: caps)
        h.send(real, "CHATHISTORY LATEST alice * 10")
        #expect(h.historyLines(to: real).map { $0.params.last! } == ["just between us"])
        h.send(alice, "CHATHISTORY TARGETS timestamp=1970-01-01T00:00:00.000Z timestamp=2100-01-01T00:00:00.000Z 10")
        let targets = h.historyLines(to: alice).filter { $0.params.first == "TARGETS" }
        #expect(Set(targets.map { $0.params[1] }) == ["#lobby", "bob"])
        #expect(targets.allSatisfy { ServerTime.parse($0.params[2]) != nil }, "the spec's bare timestamp, not timestamp=…: \(targets)")
        // Two people without accounts: their private messages are not kept at all.
        let carol = h.register("carol", caps: caps), dave = h.register("dave", caps: caps)
        h.send(carol, "PRIVMSG dave :unkept")
        #expect(h.out.deliveries.allSatisfy { $0.rows.isEmpty })
        _ = dave
    }

    @Test("event-playback: JOIN, PART, QUIT and TOPIC come back only to clients that asked for them")
    func eventPlayback() throws {
        var h = Harness(historyOf: try historyStore())
        let alice = h.register("alice", caps: caps)
        h.send(alice, "TOPIC #lobby :news", "PRIVMSG #lobby :hello")
        let watcher = h.register("watcher", caps: caps + ["draft/event-playback"])
        let plainClient = h.register("plain", caps: caps)
        h.send(watcher, "CHATHISTORY LATEST #lobby * 10")
        #expect(h.historyLines(to: watcher).map(\.command) == ["JOIN", "TOPIC", "PRIVMSG", "JOIN", "JOIN"], "alice, her topic and line, watcher, plain")
        h.send(plainClient, "CHATHISTORY LATEST #lobby * 10")
        #expect(h.historyLines(to: plainClient).map(\.command) == ["PRIVMSG"])
    }

    @Test("a stored message is serialised once: history's row and the plain recipients' line are the same bytes; other forms are made apart")
    func storedLineReused() throws {
        var h = Harness(historyOf: try historyStore())
        let alice = h.register("alice", caps: caps)
        _ = h.register("bob", caps: caps)
        let carol = h.register("carol")
        // Without tags the plain form is the row's line; with a client tag the plain form drops it.
        for (text, plainIsRow) in [("PRIVMSG #lobby :hello there", true), ("@+draft/reply=x PRIVMSG #lobby :an answer", false)] {
            h.send(alice, text)
            let delivery = try #require(h.out.deliveries.first { $0.message.command == "PRIVMSG" })
            let serialized = try #require(delivery.serialized)
            #expect(serialized == delivery.message.serialized())
            #expect(delivery.rows.map { Array($0.line.utf8) + [13, 10] } == [serialized])
            #expect(delivery.groups.count == 2, "bob's form and carol's")
            for group in delivery.groups {
                let rendered = Rendering.render(delivery.message, delivery.stamp, group.variant, serialized: serialized)
                #expect(rendered == Rendering.render(delivery.message, delivery.stamp, group.variant))
                #expect((rendered == serialized) == (group.connections.contains(carol) && plainIsRow))
            }
        }
    }

    @Test("QUIT: from one room through the room's lists (the quitter skipped), from two through the neighbours; every other member once, a row per room")
    func quitRoutes() throws {
        var h = Harness(historyOf: try historyStore())
        let alice = h.register("alice", caps: caps)
        let bob = h.register("bob", caps: caps)
        let carol = h.register("carol")
        h.send(bob, "QUIT :one room")
        let one = try #require(h.out.deliveries.first { $0.message.command == "QUIT" })
        #expect(one.lists?.room == "#lobby", "the room's kept lists, not a list made for this QUIT")
        #expect(Set(one.recipients) == [alice, carol])
        #expect(one.rows.map(\.target) == ["#lobby"])
        #expect(!h.out.messages(to: bob).contains { $0.command == "QUIT" }, "the quitter gets ERROR, not its own QUIT")
        h.send(alice, "JOIN #side")
        h.send(carol, "JOIN #side")
        let dave = h.register("dave")
        h.send(alice, "QUIT :two rooms")
        let two = try #require(h.out.deliveries.first { $0.message.command == "QUIT" })
        #expect(two.lists == nil)
        #expect(two.recipients.sorted() == [carol, dave], "carol shares both rooms and is told once")
        #expect(two.rows.map(\.target).sorted() == ["#lobby", "#side"])
    }

    @Test("KILL of a user in one room by an operator in it with a label: the QUIT comes once to the operator, in its labelled reply, and to the rest through the room's lists")
    func killWithLabel() throws {
        var h = Harness(historyOf: try historyStore()) { $0.operators = [OperatorBlock(name: "root", passwordHash: OperatorBlock.hash("pw", salt: "s"))] }
        let oper = h.register("oper", caps: caps + ["labeled-response"])
        h.send(oper, "OPER root pw")
        let eve = h.register("eve")
        let frank = h.register("frank")
        h.send(oper, "@label=k1 KILL eve :enough")
        let quit = try #require(h.out.deliveries.first { $0.message.command == "QUIT" })
        #expect(quit.lists?.room == "#lobby")
        #expect(Set(quit.recipients) == [frank])
        let toOper = h.out.messages(to: oper)
        #expect(toOper.filter { $0.command == "QUIT" }.count == 1)
        #expect(toOper.contains { $0.tag("label") == "k1" })
        // The killed user sees the KILL and its own QUIT once (sent to it directly), not a second from the room.
        #expect(h.out.messages(to: eve).filter { $0.command == "QUIT" }.count == 1)
    }

    @Test("a client without chathistory gets the room's last lines when it joins, with server-time when it has it")
    func replayOnJoin() throws {
        var h = Harness(historyOf: try historyStore()) { $0.replayOnJoin = 2 }
        let alice = h.register("alice", caps: caps)
        for n in 0..<3 { h.send(alice, "PRIVMSG #lobby :earlier \(n)") }
        let old = h.register("oldschool")
        #expect(h.out.messages(to: old).filter { $0.command == "PRIVMSG" }.map { $0.params.last! } == ["earlier 1", "earlier 2"])
        let timed = h.register("timed", caps: ["server-time"])
        #expect(h.out.messages(to: timed).filter { $0.command == "PRIVMSG" }.allSatisfy { $0.tag("time") != nil })
        let modern = h.register("modern", caps: caps)
        #expect(!h.out.messages(to: modern).contains { $0.command == "PRIVMSG" }, "it asks for itself")
    }

    @Test("the sender's echo of a stored message waits for the commit; others do not wait")
    func echoAfterCommit() throws {
        var h = Harness(historyOf: try historyStore())
        let alice = h.register("alice", caps: caps)
        let bob = h.register("bob")
        h.send(alice, "PRIVMSG #lobby :kept")
        #expect(h.out.items.contains { if case .sendAfterCommit(let id, _, _) = $0 { return id == alice } else { return false } })
        #expect(h.out.deliveries.contains { $0.recipients.contains(bob) })
    }

    @Test("the sender's echo of a multiline batch waits for the commit of its stored lines too")
    func multilineEchoAfterCommit() throws {
        var h = Harness(historyOf: try historyStore())
        let alice = h.register("alice", caps: caps + ["draft/multiline"])
        h.send(alice, "BATCH +m draft/multiline #lobby", "@batch=m PRIVMSG #lobby :one", "@batch=m PRIVMSG #lobby :two", "BATCH -m")
        #expect(h.out.items.contains { if case .sendAfterCommit(let id, _, _) = $0 { return id == alice } else { return false } })
        #expect(h.out.items.compactMap { if case .storeRows(let rows) = $0 { return rows.count } else { return nil } } == [1],
                "one row for the message")
    }

    @Test("a multiline message in history: one row; served as its batch (blank line, concat and msgid kept) to multiline clients, as lines to others")
    func multilineInHistory() throws {
        var h = Harness(historyOf: try historyStore())
        let alice = h.register("alice", caps: caps + ["draft/multiline"])
        h.send(alice, "BATCH +m draft/multiline #lobby", "@batch=m PRIVMSG #lobby :one", "@batch=m PRIVMSG #lobby :",
               "@batch=m;draft/multiline-concat PRIVMSG #lobby :-two", "BATCH -m")
        let msgid = h.out.messages(to: alice).first { $0.command == "BATCH" }?.tag("msgid")
        let modern = h.register("modern", caps: caps + ["draft/multiline"])
        h.send(modern, "CHATHISTORY LATEST #lobby * 10")
        let got = h.out.messages(to: modern)
        #expect(got.map(\.command) == ["BATCH", "BATCH", "PRIVMSG", "PRIVMSG", "PRIVMSG", "BATCH", "BATCH"])
        let outer = String(got[0].params[0].dropFirst()), inner = String(got[1].params[0].dropFirst())
        #expect(got[1].params.suffix(2) == ["draft/multiline", "#lobby"] && got[1].tag("batch") == outer && got[1].tag("msgid") == msgid)
        #expect(got[2...4].map { $0.params[1] } == ["one", "", "-two"] && got[2...4].allSatisfy { $0.tag("batch") == inner && $0.tag("msgid") == nil })
        #expect(got[4].tag("draft/multiline-concat") != nil)
        #expect(got[5].params == ["-" + inner] && got[5].tag("batch") == outer && got[6].params == ["-" + outer])
        let old = h.register("old", caps: caps)
        h.send(old, "CHATHISTORY LATEST #lobby * 10")
        let lines = h.historyLines(to: old)
        #expect(lines.map { $0.params[1] } == ["one", "-two"])
        #expect(lines.map { $0.tag("msgid") } == [msgid, nil])
        // A client without chathistory gets it on joining, as lines.
        let plain = h.register("plain", caps: ["server-time"])
        #expect(h.out.messages(to: plain).filter { $0.command == "PRIVMSG" }.map { $0.params[1] } == ["one", "-two"])
    }

    @Test("MARKREAD: needs an account; set moves forward only and reaches the account's other connections; get answers")
    func readMarkers() throws {
        let accounts = try accountStore(["alice"])
        var h = Harness(historyOf: try historyStore(), accounts: accounts)
        let first = h.saslClient("alice", caps: "sasl draft/read-marker")
        h.send(first, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "correct horse"), "CAP END")
        let second = h.saslClient("alice2", caps: "sasl draft/read-marker")
        h.send(second, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "correct horse"), "CAP END")
        h.send(first, "MARKREAD #lobby")
        #expect(h.lines(to: first) == [":test.server MARKREAD #lobby *"])
        h.send(first, "MARKREAD #lobby timestamp=2026-12-01T10:00:00.000Z")
        #expect(h.lines(to: first) == [":test.server MARKREAD #lobby timestamp=2026-12-01T10:00:00.000Z"])
        #expect(h.lines(to: second) == [":test.server MARKREAD #lobby timestamp=2026-12-01T10:00:00.000Z"])
        h.send(second, "MARKREAD #lobby timestamp=2026-12-01T09:00:00.000Z")
        #expect(h.lines(to: second) == [":test.server MARKREAD #lobby timestamp=2026-12-01T10:00:00.000Z"], "never backwards")
    }

    @Test("MARKREAD without an account: this connection's marker, kept while it lives, forward only; another connection has its own")
    func readMarkersWithoutAccount() throws {
        var h = Harness(historyOf: try historyStore())
        let anonymous = h.register("anon", caps: ["draft/read-marker"])
        h.send(anonymous, "MARKREAD #lobby")
        #expect(h.lines(to: anonymous) == [":test.server MARKREAD #lobby *"])
        h.send(anonymous, "MARKREAD bob timestamp=2026-12-01T10:00:00.000Z")
        #expect(h.lines(to: anonymous) == [":test.server MARKREAD bob timestamp=2026-12-01T10:00:00.000Z"])
        h.send(anonymous, "MARKREAD bob timestamp=2026-12-01T09:00:00.000Z")
        #expect(h.lines(to: anonymous) == [":test.server MARKREAD bob timestamp=2026-12-01T10:00:00.000Z"], "never backwards")
        h.send(anonymous, "MARKREAD BOB")
        #expect(h.lines(to: anonymous) == [":test.server MARKREAD BOB timestamp=2026-12-01T10:00:00.000Z"], "under the casemapping")
        let other = h.register("other", caps: ["draft/read-marker"])
        h.send(other, "MARKREAD bob")
        #expect(h.lines(to: other) == [":test.server MARKREAD bob *"])
    }

    @Test("MARKREAD errors, before any account check: NEED_MORE_PARAMS without a target, INVALID_PARAMS for '*' or a malformed time")
    func readMarkerErrors() throws {
        var h = Harness(historyOf: try historyStore())
        let anonymous = h.register("anon", caps: ["draft/read-marker"])
        h.send(anonymous, "MARKREAD")
        #expect(h.lines(to: anonymous) == [":test.server FAIL MARKREAD NEED_MORE_PARAMS :Missing parameters"])
        h.send(anonymous, "MARKREAD #lobby *")
        #expect(h.lines(to: anonymous) == [":test.server FAIL MARKREAD INVALID_PARAMS #lobby * :The marker is a timestamp= reference"])
        h.send(anonymous, "MARKREAD #lobby timestamp=yesterday")
        #expect(h.lines(to: anonymous) == [":test.server FAIL MARKREAD INVALID_PARAMS #lobby timestamp=yesterday :The marker is a timestamp= reference"])
    }

    @Test("a JOIN with read-marker: MARKREAD after the JOIN and before the end of the names (the spec's order), with the marker set earlier")
    func markerOnJoin() throws {
        var h = Harness(historyOf: try historyStore()) { $0.room = nil }
        let anonymous = h.register("anon", caps: ["draft/read-marker"])
        h.send(anonymous, "MARKREAD #den timestamp=2026-12-01T10:00:00.000Z")
        h.send(anonymous, "JOIN #den")
        #expect(h.commands(to: anonymous) == ["JOIN", "MARKREAD", "353", "366"])
        #expect(h.lines(to: anonymous)[1] == ":test.server MARKREAD #den timestamp=2026-12-01T10:00:00.000Z")
        let plain = h.register("plain")
        h.send(plain, "JOIN #den")
        #expect(!h.commands(to: plain).contains("MARKREAD"), "only with the cap")
    }
}

@Suite("server state: history against takeovers")
struct StateHistoryTakeoverTests {
    let caps = ["draft/chathistory", "batch", "server-time", "message-tags"]

    @Test("a closed room that ended keeps its history from whoever makes a room of that name next")
    func closedRoomRemade() throws {
        var h = Harness(historyOf: try historyStore()) { $0.room = nil }
        let alice = h.register("alice", caps: caps)
        h.send(alice, "JOIN #staff", "MODE #staff +i", "PRIVMSG #staff :the secret plan", "PART #staff")
        h.now += 10
        let mallory = h.register("mallory", caps: caps)
        h.send(mallory, "JOIN #staff", "PRIVMSG #staff :mine now")
        h.send(mallory, "CHATHISTORY LATEST #staff * 10")
        #expect(h.historyLines(to: mallory).map { $0.params.last! } == ["mine now"])
        // An open room that ended: whoever joins next reads it (as in ergo by default).
        h.send(alice, "JOIN #open", "PRIVMSG #open :for anyone", "PART #open")
        h.send(mallory, "JOIN #open")
        h.send(mallory, "CHATHISTORY LATEST #open * 10")
        #expect(h.historyLines(to: mallory).map { $0.params.last! } == ["for anyone"])
    }

    @Test("a deleted account's direct messages are gone: the next owner of the name reads nothing")
    func deletedAccount() throws {
        let path = NSTemporaryDirectory() + "chat-tui-deleted-\(UUID().uuidString).db"
        let accounts = try AccountStore(database: Database(path: path))
        for name in ["alice", "bob_"] { try accounts.add(name: name, credential: SCRAMCredential.derive(password: "correct horse", iterations: 4096), now: 1) }
        let history = try HistoryStore(database: Database(path: path))
        var h = Harness(historyOf: history, accounts: accounts)
        let alice = h.loggedIn("alice", caps: caps)
        _ = h.loggedIn("bob_", caps: caps)
        h.send(alice, "PRIVMSG bob_ :private to the old bob_")
        #expect(try history.conversations(of: "a:bob_", from: 0, to: .max, limit: 10).count == 1)
        try accounts.delete(key: "bob_")
        #expect(try history.conversations(of: "a:bob_", from: 0, to: .max, limit: 10).isEmpty)
        #expect(try history.rows("dm a:alice a:bob_", .after, 0, limit: 10, kinds: .all).isEmpty)
        #expect(try history.conversations(of: "a:alice", from: 0, to: .max, limit: 10).isEmpty, "the conversation is gone for both")
    }
}

@Suite("server state: history reads off the loop (issue 23, item 1)")
struct StateHistoryReadTests {
    let caps = ["draft/chathistory", "batch", "server-time", "message-tags", "echo-message", "labeled-response"]

    func reads(_ outbox: Outbox) -> Int {
        outbox.items.filter { if case .readHistory = $0 { return true } else { return false } }.count
    }

    @Test("CHATHISTORY is a read for the store worker: the client's next lines wait for its answer, and the label goes with the answer")
    func chathistoryWaits() throws {
        var h = Harness(historyOf: try historyStore())
        let alice = h.register("alice", caps: caps)
        h.send(alice, "PRIVMSG #lobby :one", "PRIVMSG #lobby :two")
        h.holdingReads = true
        let asked = h.send(alice, "@label=q1 CHATHISTORY LATEST #lobby * 10", "PING :after")
        #expect(reads(asked) == 1)
        #expect(asked.messages(to: alice).isEmpty, "nothing yet: not the batch, not the PONG that waits behind it")
        h.releaseReads()
        let lines = h.out.messages(to: alice)
        // The answer is one chathistory batch: the label on its opening line (labeled-response: "an existing type applicable to the entire response").
        #expect(lines.first?.command == "BATCH" && lines.first?.tag("label") == "q1" && lines.first?.params.suffix(2) == ["chathistory", "#lobby"])
        #expect(lines.filter { $0.command == "PRIVMSG" }.map { $0.params.last! } == ["one", "two"])
        #expect(lines.last?.command == "PONG", "the PING after it is answered after it: \(lines.map(\.command))")
    }

    @Test("a crowd joining and leaving costs one database read for the room's last lines, then none; the replay stays current")
    func joinChurnReadsOnce() throws {
        var h = Harness(historyOf: try historyStore()) { $0.replayOnJoin = 3 }
        let alice = h.register("alice", caps: caps)
        for n in 0..<5 { h.send(alice, "PRIVMSG #lobby :earlier \(n)") }
        var readsMade = 0
        var replays: [[String]] = []
        for n in 0..<40 {
            let id = h.connect()
            var outbox = h.send(id, "NICK churn\(n)", "USER u 0 * :churn")
            readsMade += reads(outbox)
            replays.append(outbox.messages(to: id).filter { $0.command == "PRIVMSG" }.map { $0.params.last! })
            if n == 20 { h.send(alice, "PRIVMSG #lobby :said meanwhile") }
            outbox = h.send(id, "PART #lobby")
            readsMade += reads(outbox)
            h.send(id, "QUIT")
        }
        #expect(readsMade == 1, "one read, by the first joiner; the rest from memory")
        #expect(replays[0] == ["earlier 2", "earlier 3", "earlier 4"])
        #expect(replays[20] == ["earlier 2", "earlier 3", "earlier 4"])
        #expect(replays[21] == ["earlier 3", "earlier 4", "said meanwhile"])
        #expect(replays[39] == replays[21])
    }

    /// A server that restarted after alice said "before restart" in #lobby: the room's lines
    /// are not in memory; owner (who reads history itself) is in, and reads are held.
    func restartedWithALine() throws -> (HistoryStore, ConnectionID, Harness) {
        let store = try historyStore()
        var first = Harness(historyOf: store)
        let alice = first.register("alice", caps: caps)
        first.send(alice, "PRIVMSG #lobby :before restart")
        var h = Harness(historyOf: store)
        let owner = h.register("owner", caps: caps)
        h.holdingReads = true
        return (store, owner, h)
    }

    @Test("a line said while a joiner's replay is being read reaches it once, live, not again in the replay; the next joiner's replay has it")
    func replayUpToTheJoin() throws {
        let (_, owner, h0) = try restartedWithALine()
        var h = h0
        let old = h.connect()
        var seen = h.send(old, "NICK old", "USER u 0 * :old").messages(to: old)
        h.send(owner, "PRIVMSG #lobby :live while reading")
        seen += h.out.messages(to: old)
        seen += h.releaseReads().messages(to: old)
        #expect(seen.filter { $0.command == "PRIVMSG" }.map { $0.params.last! } == ["live while reading", "before restart"],
                "the live line once; the replay only what came before the JOIN")
        h.holdingReads = false
        let next = h.register("next")
        #expect(h.out.messages(to: next).filter { $0.command == "PRIVMSG" }.map { $0.params.last! } == ["before restart", "live while reading"])
    }

    @Test("a JOIN of two rooms whose lines are not in memory makes two reads; lines after the JOIN wait for both")
    func joinTwoRoomsWaits() throws {
        let store = try historyStore()
        var first = Harness(historyOf: store) { $0.room = nil }
        let alice = first.register("alice", caps: caps)
        first.send(alice, "JOIN #a,#b", "PRIVMSG #a :in a", "PRIVMSG #b :in b")
        // A restart: the same database, nothing in memory.
        var h = Harness(historyOf: store) { $0.room = nil }
        let owner = h.register("owner", caps: caps)
        h.send(owner, "JOIN #a,#b")
        let old = h.register("old")
        h.holdingReads = true
        let joined = h.send(old, "JOIN #a,#b", "PING :x")
        #expect(reads(joined) == 2)
        #expect(!joined.messages(to: old).contains { $0.command == "PONG" })
        h.releaseReads()
        let lines = h.out.messages(to: old)
        #expect(lines.filter { $0.command == "PRIVMSG" }.map { "\($0.params[0]) \($0.params.last!)" } == ["#a in a", "#b in b"])
        #expect(lines.last?.command == "PONG")
    }

    @Test("a line said after a replay's read ran, before its answer, is in the room's kept tail: the next joiner's replay has it")
    func tailGathersWhileReading() throws {
        let (store, owner, h0) = try restartedWithALine()
        var h = h0
        _ = h.register("joiner")
        let query = try #require(h.heldReads.first)
        // The reader ran now, before the next line was stored; its answer comes after it.
        let found = query.run(on: store)
        h.heldReads = []
        h.send(owner, "PRIVMSG #lobby :stored after the read")
        h.state.historyAnswered(query, found, now: h.now)
        h.holdingReads = false
        let next = h.register("next")
        #expect(h.out.messages(to: next).filter { $0.command == "PRIVMSG" }.map { $0.params.last! } == ["before restart", "stored after the read"])
    }
}

@Suite("server state: a history writer that cannot store (issue 23, item 2)")
struct StateHistoryFullDiskTests {
    let caps = ["draft/chathistory", "batch", "server-time", "message-tags", "echo-message"]

    @Test("past the backlog, messages are refused in words and reach nobody; joins happen but are not kept; when storing works again, messages go")
    func refusedWhileFull() throws {
        var h = Harness(historyOf: try historyStore()) { $0.historyBacklog = 10 }
        let health = HistoryHealth()
        health.committed.store(.max, ordering: .relaxed)
        h.state.historyHealth = health
        let alice = h.register("alice", caps: caps)
        let bob = h.register("bob")
        health.failing.store(true, ordering: .relaxed)
        health.waiting.store(9, ordering: .relaxed)
        h.send(alice, "PRIVMSG #lobby :below the bound: accepted, its echo waits")
        #expect(h.out.deliveries.contains { $0.recipients.contains(bob) })
        health.waiting.store(10, ordering: .relaxed)
        h.send(alice, "PRIVMSG #lobby :refused")
        let fail = h.out.messages(to: alice).first
        #expect(fail?.command == "FAIL" && fail?.params.prefix(3) == ["PRIVMSG", "TEMPORARILY_UNAVAILABLE", "#lobby"], "\(String(describing: fail))")
        #expect(!h.out.deliveries.contains { $0.recipients.contains(bob) }, "nobody saw it")
        #expect(h.out.logs.contains { $0.contains("messages refused") })
        // A direct message history does not keep (neither side has an account) still goes.
        h.send(alice, "PRIVMSG bob :not kept anyway")
        #expect(h.out.messages(to: bob).contains { $0.params.last == "not kept anyway" })
        // A JOIN happens, with no row for history.
        h.send(bob, "JOIN #other")
        #expect(h.out.deliveries.allSatisfy { $0.rows.isEmpty })
        #expect(h.out.messages(to: bob).contains { $0.command == "JOIN" })
        // Stored again: messages go, and the log says what was not kept.
        health.failing.store(false, ordering: .relaxed)
        health.waiting.store(0, ordering: .relaxed)
        _ = h.tick(advance: 1)
        #expect(h.out.logs.contains { $0.contains("storing again") && $0.contains("1 joins") })
        h.send(alice, "PRIVMSG #lobby :after")
        #expect(h.out.deliveries.contains { $0.recipients.contains(bob) })
    }
}
