import Testing
@testable import ChatServerKit
import IRCWire

@Suite("server state: joining and speaking")
struct StateAdmissionTests {
    static func room(_ modes: String...) -> (Harness, alice: ConnectionID, bob: ConnectionID) {
        var h = Harness { $0.room = nil }
        let alice = h.register("alice")
        let bob = h.register("bob")
        h.send(alice, "JOIN #dev")
        for mode in modes { h.send(alice, "MODE #dev \(mode)") }
        return (h, alice, bob)
    }

    @Test("+k: the right key joins, a wrong or missing one gets 475; keys pair with rooms in order")
    func key() {
        var (h, alice, bob) = Self.room("+k sesame")
        h.send(bob, "JOIN #dev")
        #expect(h.lines(to: bob) == [":test.server 475 bob #dev :Cannot join channel (+k)"])
        h.send(bob, "JOIN #dev wrong")
        #expect(h.commands(to: bob) == ["475"])
        h.send(bob, "JOIN #other,#dev x,sesame")
        #expect(h.commands(to: bob).filter { $0 == "JOIN" }.count == 2)
        #expect(h.lines(to: alice) == [":bob!u@127.0.0.1 JOIN #dev"])
    }

    @Test("+l: 471 once the room is full")
    func limit() {
        var (h, _, bob) = Self.room("+l 1")
        h.send(bob, "JOIN #dev")
        #expect(h.lines(to: bob) == [":test.server 471 bob #dev :Cannot join channel (+l)"])
    }

    @Test("+i: 473 without an invitation; INVITE lets the invitee in once; +I masks pass")
    func inviteOnly() {
        var (h, alice, bob) = Self.room("+i")
        h.send(bob, "JOIN #dev")
        #expect(h.lines(to: bob) == [":test.server 473 bob #dev :Cannot join channel (+i)"])
        h.send(alice, "INVITE bob #dev")
        #expect(h.lines(to: alice) == [":test.server 341 alice bob #dev"])
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 INVITE bob #dev"])
        h.send(bob, "INVITE")
        #expect(h.lines(to: bob) == [":test.server 336 bob #dev", ":test.server 337 bob :End of /INVITE list"])
        h.send(bob, "JOIN #dev")
        #expect(h.commands(to: bob).first == "JOIN")
        h.send(bob, "PART #dev")
        h.send(bob, "JOIN #dev")
        #expect(h.commands(to: bob) == ["473"], "an invitation is used up by the join")
        h.send(alice, "MODE #dev +I bob!*@*")
        h.send(bob, "JOIN #dev")
        #expect(h.commands(to: bob).first == "JOIN")
    }

    @Test("INVITE errors in the documented order: 461, 403, 442, 482, 401, 443")
    func inviteErrors() {
        var (h, alice, bob) = Self.room("+i")
        let carol = h.register("carol")
        h.send(carol, "INVITE bob")
        #expect(h.commands(to: carol) == ["461"])
        h.send(carol, "INVITE bob #nowhere")
        #expect(h.commands(to: carol) == ["403"])
        h.send(carol, "INVITE bob #dev")
        #expect(h.commands(to: carol) == ["442"])
        h.send(alice, "INVITE carol #dev")
        h.send(carol, "JOIN #dev")
        h.send(carol, "INVITE bob #dev")
        #expect(h.lines(to: carol) == [":test.server 482 carol #dev :You're not channel operator"])
        h.send(alice, "INVITE ghost #dev")
        #expect(h.lines(to: alice) == [":test.server 401 alice ghost :No such nick/channel"])
        h.send(alice, "INVITE carol #dev")
        #expect(h.lines(to: alice) == [":test.server 443 alice carol #dev :is already on channel"])
        _ = bob
    }

    @Test("without +i any member may invite; invite-notify tells the room's operators who asked for it")
    func inviteNotify() {
        var h = Harness { $0.room = nil }
        let alice = h.register("alice", caps: ["invite-notify"])
        let bob = h.register("bob")
        let carol = h.register("carol")
        h.send(alice, "JOIN #dev")
        h.send(bob, "JOIN #dev")
        h.send(bob, "INVITE carol #dev")
        #expect(h.lines(to: bob) == [":test.server 341 bob carol #dev"])
        #expect(h.lines(to: carol) == [":bob!u@127.0.0.1 INVITE carol #dev"])
        #expect(h.lines(to: alice) == [":bob!u@127.0.0.1 INVITE carol #dev"])
    }

    @Test("+b: a banned user cannot join (474) or, already in, speak (404); +e excepts; voice speaks")
    func bans() {
        var (h, alice, bob) = Self.room()
        h.send(bob, "JOIN #dev")
        h.send(alice, "MODE #dev +b bob!*@*")
        h.send(bob, "PRIVMSG #dev :hello")
        #expect(h.lines(to: bob) == [":test.server 404 bob #dev :Cannot send to channel (you are banned)"])
        #expect(h.lines(to: alice).isEmpty)
        h.send(alice, "MODE #dev +v bob")
        h.send(bob, "PRIVMSG #dev :voiced")
        #expect(h.lines(to: alice) == [":bob!u@127.0.0.1 PRIVMSG #dev :voiced"])
        h.send(bob, "PART #dev")
        h.send(bob, "JOIN #dev")
        #expect(h.lines(to: bob) == [":test.server 474 bob #dev :Cannot join channel (+b)"])
        h.send(alice, "MODE #dev +e *!u@127.0.0.1")
        h.send(bob, "JOIN #dev")
        #expect(h.commands(to: bob).first == "JOIN")
    }

    @Test("+m: only voiced members and operators speak; +n keeps outsiders out")
    func moderated() {
        var (h, alice, bob) = Self.room("+m")
        let carol = h.register("carol")
        h.send(bob, "JOIN #dev")
        h.send(bob, "PRIVMSG #dev :hi")
        #expect(h.lines(to: bob) == [":test.server 404 bob #dev :Cannot send to channel (+m)"])
        h.send(alice, "PRIVMSG #dev :ops speak")
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 PRIVMSG #dev :ops speak"])
        h.send(carol, "PRIVMSG #dev :outside")
        #expect(h.commands(to: carol) == ["404"])
        h.send(alice, "MODE #dev -n")
        h.send(alice, "MODE #dev -m")
        h.send(carol, "PRIVMSG #dev :outside")
        #expect(h.lines(to: bob) == [":carol!u@127.0.0.1 PRIVMSG #dev :outside"])
    }

    @Test("+s: hidden from LIST, NAMES and WHOIS for outsiders; 353 marks it with @")
    func secret() {
        var (h, alice, bob) = Self.room("+s")
        h.send(alice, "NAMES #dev")
        #expect(h.lines(to: alice).first == ":test.server 353 alice @ #dev :@alice")
        h.send(bob, "LIST")
        #expect(h.commands(to: bob) == ["321", "323"])
        h.send(bob, "NAMES #dev")
        #expect(h.lines(to: bob) == [":test.server 366 bob #dev :End of /NAMES list"])
        h.send(bob, "WHOIS alice")
        #expect(!h.commands(to: bob).contains("319"))
        h.send(alice, "LIST")
        #expect(h.commands(to: alice) == ["321", "322", "323"])
        h.send(bob, "PRIVMSG #dev :x")
        #expect(h.commands(to: bob) == ["403"], "a secret room does not exist for outsiders")
    }

    @Test("LIST honours ELIST: member counts, masks and negated masks")
    func listConditions() {
        var h = Harness { $0.room = nil }
        let alice = h.register("alice")
        let bob = h.register("bob")
        h.send(alice, "JOIN #big,#small,#other")
        h.send(bob, "JOIN #big")
        h.send(alice, "LIST >1")
        #expect(h.out.messages(to: alice).filter { $0.command == "322" }.map { $0.params[1] } == ["#big"])
        h.send(alice, "LIST <2")
        #expect(h.out.messages(to: alice).filter { $0.command == "322" }.map { $0.params[1] } == ["#other", "#small"])
        h.send(alice, "LIST #s*")
        #expect(h.out.messages(to: alice).filter { $0.command == "322" }.map { $0.params[1] } == ["#small"])
        h.send(alice, "LIST !#s*")
        #expect(h.out.messages(to: alice).filter { $0.command == "322" }.map { $0.params[1] } == ["#big", "#other"])
        h.send(alice, "LIST #small,#big")
        #expect(h.out.messages(to: alice).filter { $0.command == "322" }.map { $0.params[1] } == ["#big", "#small"])
    }

    @Test("--room none: registration joins nothing; --room #x joins #x")
    func noAutomaticRoom() {
        var h = Harness { $0.room = nil }
        let alice = h.register("alice")
        #expect(!h.commands(to: alice).contains("JOIN"))
        #expect(h.state.roomBook.channels.isEmpty)
    }

    @Test("CHANLIMIT: the 101st room gets 405")
    func channelLimit() {
        var h = Harness { $0.room = nil }
        let alice = h.register("alice")
        for start in stride(from: 0, to: 100, by: 10) {
            h.send(alice, "JOIN " + (start..<start + 10).map { "#r\($0)" }.joined(separator: ","))
        }
        h.send(alice, "JOIN #one-more")
        #expect(h.lines(to: alice) == [":test.server 405 alice #one-more :You have joined too many channels"])
    }
}
