import Testing
@testable import ChatServerKit
import IRCWire
import IRCTestSupport

@Suite("server state: STATUSMSG, no-CTCP rooms, extbans, the network icon, extended-isupport and pre-away")
struct StateModernTests {
    @Test("STATUSMSG: @#room reaches its operators, +#room its operators and voiced members, nobody else; advertised")
    func statusMessages() {
        var h = Harness()
        let op = h.register("op")
        #expect(h.out.messages(to: op).filter { $0.command == "005" }.flatMap(\.params).contains("STATUSMSG=@+"))
        let voiced = h.register("voiced"), plain = h.register("plain", caps: ["echo-message"])
        h.send(op, "MODE #lobby +v voiced")
        h.send(plain, "PRIVMSG @#lobby :ops only")
        #expect(h.lines(to: op) == [":plain!u@127.0.0.1 PRIVMSG @#lobby :ops only"])
        #expect(h.lines(to: voiced).isEmpty)
        #expect(h.lines(to: plain) == [":plain!u@127.0.0.1 PRIVMSG @#lobby :ops only"], "the sender's echo")
        h.send(plain, "NOTICE +#lobby :voiced too")
        #expect(h.lines(to: op).count == 1 && h.lines(to: voiced) == [":plain!u@127.0.0.1 NOTICE +#lobby :voiced too"])
        h.send(plain, "PRIVMSG @#nowhere :x")
        #expect(h.commands(to: plain) == ["403"])
    }

    @Test("+C: CTCP to the room refused with 404 (ACTION still goes), in a STATUSMSG too; CHANMODES lists it")
    func noCTCP() {
        var h = Harness()
        let op = h.register("op")
        #expect(h.out.messages(to: op).filter { $0.command == "005" }.flatMap(\.params).contains("CHANMODES=beI,k,l,Cimnst"))
        let bob = h.register("bob")
        h.send(op, "MODE #lobby +C")
        h.send(bob, "PRIVMSG #lobby :\u{1}VERSION\u{1}")
        #expect(h.lines(to: bob) == [":test.server 404 bob #lobby :Cannot send CTCP to channel (+C)"] && h.lines(to: op).isEmpty)
        h.send(bob, "PRIVMSG @#lobby :\u{1}PING 1\u{1}")
        #expect(h.commands(to: bob) == ["404"])
        h.send(bob, "PRIVMSG #lobby :\u{1}ACTION waves\u{1}")
        #expect(h.lines(to: op) == [":bob!u@127.0.0.1 PRIVMSG #lobby :\u{1}ACTION waves\u{1}"])
        h.send(bob, "PRIVMSG op :\u{1}VERSION\u{1}")
        #expect(h.commands(to: op) == ["PRIVMSG"], "a person is not a room")
    }

    @Test("extbans: $a:ACCOUNT keeps an account out, $m:MASK (or m:MASK) keeps a member quiet, +e excepts, bad ones get 696; EXTBAN advertised")
    func extbans() throws {
        var h = Harness(accountsOf: try accountStore(["mallory"]))
        let op = h.register("op")
        #expect(h.out.messages(to: op).filter { $0.command == "005" }.flatMap(\.params).contains("EXTBAN=$,am"))
        h.send(op, "JOIN #den")
        h.send(op, "MODE #den +b $a:Mall*")
        #expect(h.lines(to: op) == [":op!u@127.0.0.1 MODE #den +b $a:Mall*"])
        let mallory = h.saslClient("mallory")
        h.send(mallory, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("mallory", "correct horse"), "CAP END")
        h.send(mallory, "JOIN #den")
        #expect(h.commands(to: mallory) == ["474"])
        let guest = h.register("guest")
        h.send(guest, "JOIN #den")
        #expect(h.commands(to: guest).first == "JOIN", "no account: the account ban does not apply")
        h.send(op, "MODE #den +b m:guest")
        #expect(h.lines(to: op) == [":op!u@127.0.0.1 MODE #den +b $m:guest!*@*"])
        h.send(guest, "PRIVMSG #den :hello?")
        #expect(h.lines(to: guest) == [":test.server 404 guest #den :Cannot send to channel (you are muted)"])
        h.send(op, "MODE #den +e guest")
        h.send(guest, "PRIVMSG #den :now")
        #expect(h.lines(to: op) == [":guest!u@127.0.0.1 PRIVMSG #den :now"])
        h.send(op, "MODE #den +b $x:what")
        #expect(h.commands(to: op) == ["696"])
        h.send(op, "MODE #den +b $a:")
        #expect(h.commands(to: op) == ["696"])
    }

    @Test("draft/ICON when the host sets an icon; none otherwise")
    func networkIcon() {
        var h = Harness { $0.networkIcon = "https://example.org/icon.png" }
        let alice = h.register("alice")
        #expect(h.out.messages(to: alice).filter { $0.command == "005" }.flatMap(\.params).contains("draft/ICON=https://example.org/icon.png"))
        var plainServer = Harness()
        let bob = plainServer.register("bob")
        #expect(!plainServer.out.messages(to: bob).filter { $0.command == "005" }.flatMap(\.params).contains { $0.hasPrefix("draft/ICON") })
    }

    @Test("extended-isupport: 005 before registration, in a draft/isupport batch with batch, and batched at registration too")
    func extendedISupport() {
        var h = Harness()
        let id = h.connect()
        h.send(id, "CAP LS 302", "CAP REQ :batch draft/extended-isupport")
        let lines = h.out.messages(to: id).filter { $0.command != "CAP" }
        #expect(lines.first?.command == "BATCH" && lines.first?.params.last == "draft/isupport")
        let reference = String(lines[0].params[0].dropFirst())
        #expect(lines.dropFirst().dropLast().allSatisfy { $0.command == "005" && $0.tag("batch") == reference && $0.params[0] == "*" })
        #expect(lines.last?.params == ["-" + reference])
        h.send(id, "NICK ann", "USER u 0 * :Ann", "CAP END")
        let isupport = h.out.messages(to: id).filter { $0.command == "005" }
        #expect(!isupport.isEmpty && isupport.allSatisfy { $0.tag("batch") != nil }, "no 005 outside a batch while both are on")
        // Without batch: plain 005 lines before registration.
        let other = h.connect()
        h.send(other, "CAP LS 302", "CAP REQ :draft/extended-isupport")
        #expect(h.out.messages(to: other).filter { $0.command == "005" }.count >= 2)
    }

    @Test("pre-away: AWAY before registration with the capability (AWAY * shown as Away), 451 without; others see it once registered")
    func preAway() {
        var h = Harness()
        let bob = h.register("bob")
        let id = h.connect()
        h.send(id, "CAP LS 302", "CAP REQ :draft/pre-away", "AWAY *")
        #expect(Set(h.commands(to: id)) == ["CAP"], "accepted quietly")
        h.send(id, "NICK ann", "USER u 0 * :Ann", "CAP END")
        h.send(bob, "PRIVMSG ann :there?")
        #expect(h.lines(to: bob) == [":test.server 301 bob ann :Away"])
        let early = h.connect()
        h.send(early, "AWAY :lunch")
        #expect(h.commands(to: early) == ["451"])
    }
}
