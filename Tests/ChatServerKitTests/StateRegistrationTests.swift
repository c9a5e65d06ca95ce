import Testing
@testable import ChatServerKit
import IRCWire

@Suite("server state: registration")
struct StateRegistrationTests {
    @Test("welcome 001-005, LUSERS, 422 without MOTD, then the room")
    func welcome() {
        var h = Harness()
        let id = h.connect()
        h.send(id, "NICK alice", "USER alice 0 * :Alice A")
        #expect(h.commands(to: id) == ["001", "002", "003", "004", "005", "005", "005", "251", "255", "265", "266", "422", "JOIN", "353", "366"])
        let isupport = h.out.messages(to: id).filter { $0.command == "005" }.flatMap(\.params)
        for token in ["CASEMAPPING=rfc1459", "CHANTYPES=#", "PREFIX=(ov)@+", "NICKLEN=30", "CHANNELLEN=50", "NETWORK=chat-tui", "UTF8ONLY"] {
            #expect(isupport.contains(token), "005 lacks \(token)")
        }
        #expect(h.lines(to: id).contains(":alice!alice@127.0.0.1 JOIN #lobby"))
        #expect(h.lines(to: id).contains(":test.server 353 alice = #lobby :@alice"))
        #expect(h.out.logs.contains { $0.contains("registered as alice") })
    }

    @Test("USER before NICK registers too")
    func userFirst() {
        var h = Harness()
        let id = h.connect()
        h.send(id, "USER bob 0 * :Bob")
        #expect(h.out.items.isEmpty)
        h.send(id, "NICK bob")
        #expect(h.commands(to: id).first == "001")
    }

    @Test("a MOTD file's lines are sent as 375/372/376")
    func motd() {
        var h = Harness { $0.motd = ["Welcome to the room", "Be kind"] }
        let id = h.register("alice")
        _ = id
        let lines = h.lines(to: id)
        #expect(lines.contains(":test.server 375 alice :- test.server Message of the day - "))
        #expect(lines.contains(":test.server 372 alice :- Be kind"))
        #expect(lines.contains(":test.server 376 alice :End of /MOTD command."))
    }

    @Test("CAP LS holds registration until CAP END; REQ is all or nothing")
    func capNegotiation() {
        var h = Harness()
        let id = h.connect()
        h.send(id, "CAP LS 302")
        // Over two lines (`CAP * LS * :…` then the last), every capability offered once, with its value.
        let ls = h.out.messages(to: id)
        #expect(ls.map { Array($0.params.prefix(2)) } == [["*", "LS"], ["*", "LS"]] && ls[0].params[2] == "*")
        let offered = ls.flatMap { $0.params.last!.split(separator: " ").map(String.init) }
        #expect(offered == Capability.allCases.filter { h.state.offers($0) }.map { cap in cap.value(h.state.config).map { cap.rawValue + "=" + $0 } ?? cap.rawValue })
        #expect(ls.allSatisfy { $0.serialized().count <= 512 })
        h.send(id, "NICK alice", "USER a 0 * :A")
        #expect(h.out.items.isEmpty, "registration must wait for CAP END")
        h.send(id, "CAP REQ :echo-message sasl")
        #expect(h.lines(to: id) == [":test.server CAP alice NAK :echo-message sasl"])
        h.send(id, "CAP REQ :echo-message server-time")
        #expect(h.lines(to: id) == [":test.server CAP alice ACK :echo-message server-time"])
        h.send(id, "CAP LIST")
        #expect(h.lines(to: id) == [":test.server CAP alice LIST :cap-notify echo-message server-time"], "302 implies cap-notify")
        h.send(id, "CAP BOGUS")
        #expect(h.commands(to: id) == ["410"])
        h.send(id, "CAP END")
        #expect(h.commands(to: id).first == "001")
    }

    @Test("PASS: right password registers, wrong or missing gets 464 and a close", arguments: [
        ("secret", true), ("wrong", false), (nil, false),
    ] as [(String?, Bool)])
    func password(given: String?, accepted: Bool) {
        var h = Harness { $0.password = "secret" }
        let id = h.connect()
        if let given {
            h.send(id, "PASS \(given)")
            if !accepted {
                // A wrong PASS is answered at once.
                #expect(h.commands(to: id) == ["464", "ERROR"])
                #expect(h.out.closed == [id])
                return
            }
        }
        h.send(id, "NICK alice", "USER a 0 * :A")
        if accepted {
            #expect(h.commands(to: id).first == "001")
        } else {
            #expect(h.commands(to: id) == ["464", "ERROR"])
            #expect(h.out.closed == [id])
        }
    }

    @Test("with a server password, a NICK without it claims nothing: the real alice is not told 433")
    func noSquatting() {
        var h = Harness { $0.password = "secret" }
        let squatter = h.connect()
        h.send(squatter, "CAP LS 302", "NICK alice", "USER s 0 * :S")
        #expect(h.commands(to: squatter).filter { $0 != "CAP" }.isEmpty, "CAP LS holds registration; nothing claimed, nothing said")
        let alice = h.connect()
        h.send(alice, "PASS secret", "NICK alice", "USER a 0 * :A")
        #expect(h.commands(to: alice).first == "001")
        h.send(squatter, "CAP END")
        #expect(h.commands(to: squatter) == ["464", "ERROR"])
    }

    @Test("NICK before PASS is fine: the name is claimed when the password is right")
    func nickBeforePass() {
        var h = Harness { $0.password = "secret" }
        let id = h.connect()
        h.send(id, "NICK alice", "PASS secret", "USER a 0 * :A")
        #expect(h.commands(to: id).first == "001")
    }

    @Test("the password is compared as bytes: a decomposed é is not the composed one")
    func bytesNotEquivalence() {
        var h = Harness { $0.password = "caf\u{E9}" }
        let id = h.connect()
        h.send(id, "PASS cafe\u{301}")
        #expect(h.commands(to: id) == ["464", "ERROR"])
    }

    @Test("three wrong passwords from one address within a minute: the next PASS is refused unchecked, logged once")
    func throttled() {
        var h = Harness { $0.password = "secret" }
        var logged: [String] = []
        for i in 0..<3 {
            // One IPv6 /64: each guess from another address in it.
            let id = h.connect(from: "2001:db8:1:2::\(i + 1)")
            logged += h.send(id, "PASS guess").logs
            #expect(h.commands(to: id) == ["464", "ERROR"])
        }
        let id = h.connect(from: "2001:db8:1:2:ffff::9")
        logged += h.send(id, "PASS secret").logs
        #expect(h.lines(to: id).first?.hasSuffix(":Too many wrong passwords from your address; try again in a minute") == true)
        logged = logged.filter { $0.contains("wrong password") }
        #expect(logged.count == 2, "the first failure and the start of the throttle: \(logged)")
        let elsewhere = h.connect(from: "2001:db8:1:3::1")
        h.send(elsewhere, "PASS secret", "NICK bob", "USER b 0 * :B")
        #expect(h.commands(to: elsewhere).first == "001", "the next /64 is not locked out")
        let local = h.connect()
        h.send(local, "PASS secret", "NICK carol", "USER c 0 * :C")
        #expect(h.commands(to: local).first == "001", "loopback is never locked out")
        h.now += 61
        let later = h.connect(from: "2001:db8:1:2::7")
        h.send(later, "PASS secret", "NICK alice", "USER a 0 * :A")
        #expect(h.commands(to: later).first == "001", "a minute later the right password works")
    }

    @Test("commands before registration get 451; unknown ones 421")
    func beforeRegistration() {
        var h = Harness()
        let id = h.connect()
        h.send(id, "PRIVMSG #lobby :hi")
        #expect(h.lines(to: id) == [":test.server 451 * :You have not registered"])
        h.send(id, "FROB x")
        #expect(h.lines(to: id) == [":test.server 421 * FROB :Unknown command"])
        h.send(id, "PING abc")
        #expect(h.lines(to: id) == [":test.server PONG test.server abc"])
    }

    @Test("missing parameters get 461")
    func needMoreParams() {
        var h = Harness()
        let id = h.connect()
        h.send(id, "USER a")
        #expect(h.lines(to: id) == [":test.server 461 * USER :Not enough parameters"])
    }

    @Test("nicknames: 431 none, 432 invalid with a reason, 433 taken case-insensitively and across scripts")
    func nickErrors() {
        var h = Harness()
        let zoe = h.register("Zoë")
        _ = zoe
        let id = h.connect()
        h.send(id, "NICK")
        #expect(h.commands(to: id) == ["431"])
        h.send(id, "NICK 9lives")
        #expect(h.commands(to: id) == ["432"])
        #expect(h.out.messages(to: id)[0].params[2].contains("digit"))
        h.send(id, "NICK ZOË")
        #expect(h.lines(to: id) == [":test.server 433 * ZOË :Nickname is already in use"])
        h.send(id, "NICK Zoe\u{308}")
        #expect(h.commands(to: id) == ["433"])
        h.send(id, "NICK 小明", "USER u 0 * :x")
        #expect(h.commands(to: id).first == "001")
    }

    @Test("a nickname is reserved while its owner registers")
    func reservedDuringRegistration() {
        var h = Harness()
        let first = h.connect()
        h.send(first, "NICK alice")
        let second = h.connect()
        h.send(second, "NICK ALICE")
        #expect(h.commands(to: second) == ["433"])
    }

    @Test("registration times out with ERROR")
    func registrationTimeout() {
        var h = Harness { $0.registrationTimeout = 10 }
        let id = h.connect()
        #expect(h.tick(advance: 5).items.isEmpty)
        let out = h.tick(advance: 6)
        #expect(out.messages(to: id).map(\.line) == ["ERROR :Closing Link: 127.0.0.1 (Registration timed out)"])
        #expect(out.closed == [id])
    }

    @Test("heartbeat: PING after silence, QUIT :Ping timeout to the room when no answer")
    func heartbeat() {
        var h = Harness { $0.pingInterval = 30; $0.pingTimeout = 20 }
        let alice = h.register("alice")
        let bob = h.register("bob")
        var out = h.tick(advance: 31)
        #expect(out.messages(to: alice).map(\.line) == ["PING test.server"])
        #expect(out.messages(to: bob).map(\.line) == ["PING test.server"])
        h.send(bob, "PONG test.server")
        out = h.tick(advance: 21)
        #expect(out.closed == [alice])
        #expect(out.messages(to: bob).map(\.line) == [":alice!u@127.0.0.1 QUIT :Ping timeout: 52 seconds"])
        #expect(out.messages(to: alice).last?.command == "ERROR")
    }
}

@Test("without the password, a taken nickname is not revealed (no 433 before PASS)")
func noNickOracle() {
    var h = Harness { $0.password = "secret" }
    let alice = h.connect()
    h.send(alice, "PASS secret", "NICK alice", "USER a 0 * :A")
    let prober = h.connect(from: "192.0.2.9")
    h.send(prober, "NICK alice")
    #expect(h.commands(to: prober).isEmpty)
}

@Test("the /64 an IPv6 address is throttled by", arguments: [
    ("2001:db8:1:2::1", "2001:db8:1:2::/64"), ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
    ("2001:db8::1", "2001:db8:0:0::/64"), ("192.0.2.1", "192.0.2.1"),
])
func throttleKeys(_ address: String, _ key: String) {
    #expect(ServerState.throttleKey(address) == key)
}
