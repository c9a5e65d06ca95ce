import Testing
@testable import ChatServerKit
import IRCWire

@Suite("server state: IRCv3")
struct StateIRCv3Tests {
    @Test("labeled-response: one reply carries the label, several come in a labeled-response batch, none gets ACK")
    func labeledResponse() throws {
        var h = Harness()
        let alice = h.register("alice", caps: ["labeled-response", "batch"])
        h.send(alice, "@label=one PING x")
        #expect(h.lines(to: alice) == ["@label=one :test.server PONG test.server x"])
        h.send(alice, "@label=two WHOIS alice")
        let lines = h.lines(to: alice)
        #expect(lines.first == "@label=two :test.server BATCH +b1 labeled-response")
        #expect(lines.last == ":test.server BATCH -b1")
        #expect(lines.dropFirst().dropLast().allSatisfy { $0.hasPrefix("@batch=b1 :test.server 3") })
        h.send(alice, "@label=three PONG x")
        #expect(h.lines(to: alice) == ["@label=three :test.server ACK"])
    }

    @Test("421 keeps the request's label, for an unknown word and for one that is not a command word at all")
    func unknownCommandLabel() {
        var h = Harness()
        let alice = h.register("alice", caps: ["labeled-response", "batch"])
        h.send(alice, "@label=u1 FLIBBLE x")
        #expect(h.lines(to: alice) == ["@label=u1 :test.server 421 alice FLIBBLE :Unknown command"])
        h.send(alice, "@label=u2 F00 x")
        #expect(h.lines(to: alice) == ["@label=u2 :test.server 421 alice F00 :Unknown command"])
        // Without the capability: no label.
        let bob = h.register("bob")
        h.send(bob, "@label=u3 F00 x")
        #expect(h.lines(to: bob) == [":test.server 421 bob F00 :Unknown command"])
    }

    @Test("a label without the capability is ignored")
    func labelWithoutCap() {
        var h = Harness()
        let alice = h.register("alice")
        h.send(alice, "@label=x PING y")
        #expect(h.lines(to: alice) == [":test.server PONG test.server y"])
    }

    @Test("echo-message with a label: the echo is the labelled reply, with msgid and time")
    func labeledEcho() throws {
        var h = Harness()
        let alice = h.register("alice", caps: ["labeled-response", "batch", "echo-message", "message-tags", "server-time"])
        let bob = h.register("bob", caps: ["message-tags"])
        h.send(alice, "@label=m1;+draft/reply=abc PRIVMSG bob :hi")
        let echo = try #require(h.out.messages(to: alice).first)
        #expect(echo.tag("label") == "m1" && echo.tag("msgid") != nil && echo.tag("time") != nil && echo.tag("+draft/reply") == "abc")
        let delivered = try #require(h.out.messages(to: bob).first)
        #expect(delivered.tag("msgid") == echo.tag("msgid") && delivered.tag("label") == nil && delivered.tag("time") == nil)
    }

    @Test("every PRIVMSG, NOTICE and TAGMSG gets a msgid, unique and increasing; clients without message-tags see none")
    func messageIDs() {
        var h = Harness()
        let alice = h.register("alice")
        let bob = h.register("bob", caps: ["message-tags"])
        var ids: [String] = []
        for i in 0..<50 {
            h.send(alice, i % 2 == 0 ? "PRIVMSG #lobby :m\(i)" : "NOTICE bob :n\(i)")
            ids.append(h.out.messages(to: bob).first?.tag("msgid") ?? "")
            h.now += 0.0001
        }
        #expect(Set(ids).count == 50 && !ids.contains(""))
        #expect(ids == ids.sorted(), "msgids sort in time order")
        h.send(bob, "@+typing=active TAGMSG alice")
        #expect(h.lines(to: alice).isEmpty)
        h.send(bob, "PRIVMSG alice :plain")
        #expect(h.lines(to: alice) == [":bob!u@127.0.0.1 PRIVMSG alice :plain"])
    }

    @Test("deliveries of room events are marked storable; replies are not")
    func storable() {
        var h = Harness()
        let alice = h.register("alice")
        _ = h.register("bob")
        h.send(alice, "PRIVMSG #lobby :keep me")
        #expect(h.out.deliveries.map(\.storable) == [true])
        #expect(h.out.deliveries.first?.taggedMessage.tag("msgid") != nil && h.out.deliveries.first?.stamp.time == h.now)
        h.send(alice, "AWAY :gone")
        #expect(h.out.deliveries.allSatisfy { !$0.storable })
        h.send(alice, "TOPIC #lobby :t")
        #expect(h.out.deliveries.map { $0.message.command } == ["TOPIC"] && h.out.deliveries[0].storable)
    }

    @Test("extended-join: account and real name for those who asked")
    func extendedJoin() {
        var h = Harness()
        let alice = h.register("alice", caps: ["extended-join"])
        let carol = h.register("carol")
        _ = h.register("bob")
        #expect(h.lines(to: alice) == [":bob!u@127.0.0.1 JOIN #lobby * :Real bob"])
        #expect(h.lines(to: carol) == [":bob!u@127.0.0.1 JOIN #lobby"])
    }

    @Test("away-notify: a member who joins while away is announced as away")
    func awayOnJoin() {
        var h = Harness { $0.room = nil }
        let alice = h.register("alice", caps: ["away-notify"])
        let bob = h.register("bob")
        h.send(alice, "JOIN #dev")
        h.send(bob, "AWAY :lunch")
        h.send(bob, "JOIN #dev")
        #expect(h.lines(to: alice) == [":bob!u@127.0.0.1 JOIN #dev", ":bob!u@127.0.0.1 AWAY :lunch"])
    }

    @Test("userhost-in-names and multi-prefix in 353")
    func namesCaps() {
        var h = Harness()
        _ = h.register("alice")
        let bob = h.register("bob", caps: ["userhost-in-names", "multi-prefix"])
        #expect(h.names(to: bob) == ["@alice!u@127.0.0.1", "bob!u@127.0.0.1"])
    }

    @Test("no-implicit-names: JOIN without 353/366")
    func noImplicitNames() {
        var h = Harness()
        let alice = h.register("alice", caps: ["no-implicit-names"])
        #expect(!h.commands(to: alice).contains("353") && h.commands(to: alice).contains("JOIN"))
    }

    @Test("setname: the new real name reaches room mates with the capability; FAIL for an empty one")
    func setname() {
        var h = Harness()
        let alice = h.register("alice", caps: ["setname", "standard-replies"])
        let bob = h.register("bob", caps: ["setname"])
        let carol = h.register("carol")
        h.send(alice, "SETNAME :Alice Liddell")
        #expect(h.lines(to: alice) == [":alice!u@127.0.0.1 SETNAME :Alice Liddell"])
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 SETNAME :Alice Liddell"])
        #expect(h.lines(to: carol).isEmpty)
        h.send(alice, "SETNAME :")
        #expect(h.lines(to: alice) == [":test.server FAIL SETNAME INVALID_REALNAME :Real name must be 1 to 100 bytes"])
        h.send(carol, "WHOIS alice")
        #expect(h.lines(to: carol).first == ":test.server 311 carol alice u 127.0.0.1 * :Alice Liddell")
    }

    @Test("account-tag and account-notify carry the account once one is logged in")
    func accounts() {
        var h = Harness()
        let alice = h.register("alice")
        let bob = h.register("bob", caps: ["account-tag", "account-notify"])
        let user = h.state.people.users.values.first { $0.nick == "alice" }!
        user.account = "alice"
        h.state.accountChanged(user, now: h.now)
        h.out = h.state.takeOutbox()
        #expect(h.lines(to: bob) == ["@account=alice :alice!u@127.0.0.1 ACCOUNT alice"])
        h.send(alice, "PRIVMSG #lobby :signed")
        #expect(h.lines(to: bob) == ["@account=alice :alice!u@127.0.0.1 PRIVMSG #lobby :signed"])
        h.send(bob, "WHOIS alice")
        #expect(h.lines(to: bob).contains(":test.server 330 bob alice alice :is logged in as"))
    }

    @Test("bot mode: +B shows in WHOIS (335), WHO flags and a bot tag")
    func bot() {
        var h = Harness()
        let alice = h.register("alice")
        let bob = h.register("bob", caps: ["message-tags"])
        h.send(alice, "MODE alice +B")
        h.send(alice, "PRIVMSG #lobby :beep")
        #expect(h.out.messages(to: bob).first?.tags.contains(IRCTag("bot")) == true)
        h.send(bob, "WHOIS alice")
        #expect(h.lines(to: bob).contains(":test.server 335 bob alice :is a bot"))
        h.send(bob, "WHO alice")
        #expect(h.out.messages(to: bob).first?.params[6] == "H@B", "here, the status in the shared room, then the bot mode")
    }

    @Test("chghost: operators change a host; room mates with the capability see CHGHOST")
    func chghost() {
        var h = Harness { $0.operators = [OperatorBlock(name: "root", passwordHash: OperatorBlock.hash("pw", salt: "s"))] }
        let alice = h.register("alice", caps: ["chghost"])
        let bob = h.register("bob")
        h.send(bob, "CHGHOST alice cloak.example")
        #expect(h.commands(to: bob) == ["481"])
        h.send(bob, "OPER root pw")
        h.send(bob, "CHGHOST alice cloak.example")
        #expect(h.lines(to: alice) == [":alice!u@127.0.0.1 CHGHOST u cloak.example"])
        h.send(alice, "PRIVMSG #lobby :new host")
        #expect(h.lines(to: bob) == [":alice!u@cloak.example PRIVMSG #lobby :new host"])
    }

    @Test("CAP LS 302 lists every capability; REQ all-or-nothing; userhost-in-names with others is granted whole")
    func capabilities() {
        var h = Harness()
        let id = h.connect()
        h.send(id, "CAP LS 302")
        let listed = Set(h.out.messages(to: id).flatMap { $0.params.last!.split(separator: " ").map(String.init) })
        for cap in ["batch", "labeled-response", "message-tags", "server-time", "echo-message", "userhost-in-names",
                    "extended-join", "account-notify", "account-tag", "invite-notify", "cap-notify", "multi-prefix",
                    "away-notify", "setname", "chghost", "no-implicit-names", "standard-replies", "extended-monitor"] {
            #expect(listed.contains(cap), "\(cap) is not offered")
        }
        h.send(id, "CAP REQ :multi-prefix userhost-in-names away-notify extended-join")
        #expect(h.lines(to: id) == [":test.server CAP * ACK :multi-prefix userhost-in-names away-notify extended-join"])
        h.send(id, "CAP REQ :-multi-prefix bogus")
        #expect(h.commands(to: id) == ["CAP"] && h.out.messages(to: id)[0].params[1] == "NAK")
        h.send(id, "CAP LIST")
        #expect(h.out.messages(to: id)[0].params.last!.contains("multi-prefix"), "a refused request changes nothing")
    }
}
