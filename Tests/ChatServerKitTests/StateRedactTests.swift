import Testing
@testable import ChatServerKit
import ChatStore
import IRCWire
import IRCTestSupport

@Suite("server state: draft/message-redaction")
struct StateRedactTests {
    let caps = ["draft/chathistory", "batch", "server-time", "message-tags", "echo-message", "draft/message-redaction"]

    @Test("the sender deletes its own message: REDACT reaches members with the capability (not others), and history serves it no more")
    func ownMessage() throws {
        var h = Harness(historyOf: try historyStore())
        let alice = h.register("alice", caps: caps)
        let bob = h.register("bob", caps: caps)
        let carol = h.register("carol")
        h.send(alice, "PRIVMSG #lobby :oops", "PRIVMSG #lobby :kept")
        h.send(alice, "CHATHISTORY LATEST #lobby * 10")
        let oops = try #require(h.historyLines(to: alice).first { $0.params.last == "oops" }?.tag("msgid"))
        h.send(alice, "REDACT #lobby \(oops) :typo")
        #expect(h.out.messages(to: bob).map { [$0.command] + $0.params } == [["REDACT", "#lobby", oops, "typo"]])
        #expect(h.out.messages(to: bob)[0].source?.hasPrefix("alice!") == true && h.out.messages(to: bob)[0].tag("msgid") != nil)
        #expect(h.out.messages(to: alice).map(\.command) == ["REDACT"], "the sender's echo")
        #expect(h.lines(to: carol).isEmpty, "nothing to a client without the capability")
        h.send(bob, "CHATHISTORY LATEST #lobby * 10")
        // The line is gone; the deletion is kept in its place, so a client that was away learns of it.
        #expect(h.historyLines(to: bob).map { [$0.command] + $0.params } == [["PRIVMSG", "#lobby", "kept"], ["REDACT", "#lobby", oops, "typo"]])
        h.send(carol, "CHATHISTORY LATEST #lobby * 10")
        #expect(!h.lines(to: carol).contains { $0.contains("REDACT") }, "not to a client without the capability")
        // Once committed and out of the recent list, a deletion reads the row from the database.
        _ = h.tick(advance: 5)
        h.send(bob, "CHATHISTORY LATEST #lobby * 10")
        let kept = try #require(h.historyLines(to: bob).first { $0.command == "PRIVMSG" }?.tag("msgid"))
        h.send(bob, "REDACT #lobby \(kept)")
        #expect(h.lines(to: bob) == [":test.server FAIL REDACT REDACT_FORBIDDEN #lobby \(kept) :You may delete only your own messages (room operators may delete any said in the room they run)"])
        h.send(alice, "REDACT #lobby \(kept)")
        #expect(h.out.messages(to: bob).map(\.command) == ["REDACT"])
        h.send(bob, "CHATHISTORY LATEST #lobby * 10")
        #expect(h.historyLines(to: bob).allSatisfy { $0.command == "REDACT" }, "no message left, the two deletions kept")
    }

    @Test("a room operator deletes anyone's message in the room; an unknown msgid, a room one is not in, a reaction")
    func operatorAndErrors() throws {
        var h = Harness(historyOf: try historyStore()) { $0.room = nil }
        let op = h.register("op", caps: caps)
        h.send(op, "JOIN #den")
        let spammer = h.register("spammer", caps: caps)
        h.send(spammer, "JOIN #den", "PRIVMSG #den :buy now")
        let spam = try #require(h.out.messages(to: spammer).first { $0.command == "PRIVMSG" }?.tag("msgid"))
        h.send(spammer, "@+draft/react=👍 TAGMSG #den")
        let reaction = try #require(h.out.messages(to: spammer).first?.tag("msgid"))
        h.send(op, "REDACT #den \(spam) :spam")
        #expect(h.out.messages(to: spammer).map { [$0.command] + $0.params } == [["REDACT", "#den", spam, "spam"]])
        h.send(spammer, "REDACT #den \(reaction)")
        #expect(h.out.messages(to: op).map(\.command) == ["REDACT"], "a reaction is a message too: its sender takes it back")
        h.send(op, "REDACT #den \(spam)")
        #expect(h.lines(to: op) == [":test.server FAIL REDACT UNKNOWN_MSGID #den \(spam) :This message does not exist or is too old"])
        h.send(op, "REDACT #den nonsense")
        #expect(h.lines(to: op) == [":test.server FAIL REDACT UNKNOWN_MSGID #den nonsense :This message does not exist or is too old"])
        let outsider = h.register("outsider", caps: caps)
        h.send(outsider, "REDACT #den \(spam)")
        #expect(h.lines(to: outsider) == [":test.server FAIL REDACT INVALID_TARGET #den :You are not in that room"])
        h.send(outsider, "REDACT")
        #expect(h.commands(to: outsider) == ["461"])
    }

    @Test("whoever re-makes an emptied open room runs it, reads its old history, but deletes none of the earlier members' lines; those said since, yes (issue 43, item 10)")
    func remakerDeletesNoOldLines() throws {
        var h = Harness(historyOf: try historyStore()) { $0.room = nil }
        let alice = h.register("alice", caps: caps)
        h.send(alice, "JOIN #open", "PRIVMSG #open :said before", "PART #open")
        h.now += 10
        let mallory = h.register("mallory", caps: caps)
        let bob = h.register("bob", caps: caps)
        h.send(mallory, "JOIN #open")
        h.send(bob, "JOIN #open", "PRIVMSG #open :said since")
        h.send(mallory, "CHATHISTORY LATEST #open * 10")
        let lines = h.historyLines(to: mallory).filter { $0.command == "PRIVMSG" }
        #expect(lines.map { $0.params.last! } == ["said before", "said since"], "an open room's history is readable")
        let before = try #require(lines.first?.tag("msgid")), since = try #require(lines.last?.tag("msgid"))
        h.send(mallory, "REDACT #open \(before)")
        #expect(h.out.messages(to: mallory).first?.params.prefix(2) == ["REDACT", "REDACT_FORBIDDEN"])
        h.send(mallory, "REDACT #open \(since)")
        #expect(h.out.messages(to: bob).map(\.command) == ["REDACT"], "a line said in the room she runs")
    }

    @Test("on a server set to link, with no link up (after a restart that forgot the split), a deletion is refused in words: the other side would serve it and the heal merge it back (issue 43, item 4)")
    func refusedWhenSetToLink() throws {
        var h = Harness(historyOf: try historyStore()) { $0.links.blocks = [LinkBlock(name: "b.chat", host: "127.0.0.1", port: 1, password: "pw", tls: false)] }
        let alice = h.register("alice", caps: caps)
        h.send(alice, "PRIVMSG #lobby :said here")
        h.send(alice, "CHATHISTORY LATEST #lobby * 10")
        let said = try #require(h.historyLines(to: alice).first { $0.params.last == "said here" }?.tag("msgid"))
        h.send(alice, "REDACT #lobby \(said)")
        #expect(h.lines(to: alice) == [":test.server FAIL REDACT REDACT_FORBIDDEN #lobby \(said) :Messages cannot be deleted on a linked server (the linked network has no REDACT)"])
    }

    @Test("a direct message between accounts: its sender deletes it for both; the other side may not")
    func direct() throws {
        let accounts = try accountStore(["alice", "bob"])
        var h = Harness(historyOf: try historyStore(), accounts: accounts)
        let alice = h.loggedIn("alice", caps: caps)
        let bob = h.loggedIn("bob", caps: caps)
        h.send(alice, "PRIVMSG bob :secret")
        let id = try #require(h.out.messages(to: alice).first?.tag("msgid"))
        h.send(bob, "REDACT alice \(id)")
        #expect(h.out.messages(to: bob).first?.params.prefix(2) == ["REDACT", "REDACT_FORBIDDEN"])
        h.send(alice, "REDACT bob \(id)")
        #expect(h.out.messages(to: bob).map { [$0.command] + $0.params } == [["REDACT", "bob", id]])
        h.send(bob, "CHATHISTORY LATEST alice * 10")
        #expect(h.historyLines(to: bob).isEmpty)
    }

    @Test("without history: a room operator may delete (relayed), anyone else is told the server cannot tell whose message it is")
    func withoutHistory() throws {
        var h = Harness()
        let caps = ["batch", "message-tags", "echo-message", "draft/message-redaction"]
        let op = h.register("op", caps: caps)
        let bob = h.register("bob", caps: caps)
        h.send(bob, "PRIVMSG #lobby :spam")
        let id = try #require(h.out.messages(to: bob).first?.tag("msgid"))
        h.send(op, "REDACT #lobby \(id)")
        #expect(h.out.messages(to: bob).map { [$0.command] + $0.params } == [["REDACT", "#lobby", id]])
        h.send(bob, "REDACT #lobby \(id)")
        #expect(h.out.messages(to: bob).first?.params.prefix(2) == ["REDACT", "REDACT_FORBIDDEN"])
    }
}
