import Testing
@testable import ChatServerKit
import IRCWire

@Suite("server state: queries and operators")
struct StateQueryTests {
    @Test("WHOWAS: 314/312/369 newest first, the count parameter, 406 for unknown nicks")
    func whowas() {
        var h = Harness()
        let alice = h.register("alice")
        for realname in ["First", "Second"] {
            let id = h.connect()
            h.send(id, "NICK bob", "USER b 0 * :\(realname)")
            h.send(id, "QUIT")
        }
        h.send(alice, "WHOWAS bob")
        #expect(h.lines(to: alice) == [
            ":test.server 314 alice bob b 127.0.0.1 * :Second",
            ":test.server 312 alice bob test.server :\(ServerTime.format(h.now))",
            ":test.server 314 alice bob b 127.0.0.1 * :First",
            ":test.server 312 alice bob test.server :\(ServerTime.format(h.now))",
            ":test.server 369 alice bob :End of WHOWAS",
        ])
        h.send(alice, "WHOWAS BOB 1")
        #expect(h.commands(to: alice) == ["314", "312", "369"])
        h.send(alice, "WHOWAS nobody")
        #expect(h.lines(to: alice) == [":test.server 406 alice nobody :There was no such nickname", ":test.server 369 alice nobody :End of WHOWAS"])
    }

    @Test("the WHOWAS ring is bounded")
    func whowasBounded() {
        var h = Harness { $0.whowasLimit = 3 }
        for i in 0..<10 {
            let id = h.register("gone\(i)")
            h.send(id, "QUIT")
        }
        #expect(h.state.people.whowas.map(\.nick) == ["gone7", "gone8", "gone9"])
    }

    @Test("TIME, VERSION, ADMIN, INFO, LUSERS")
    func serverQueries() {
        var h = Harness()
        let alice = h.register("alice")
        h.send(alice, "TIME")
        #expect(h.lines(to: alice) == [":test.server 391 alice test.server \(Int(h.now)) 0 :\(ServerTime.format(h.now))"])
        h.send(alice, "TIME other.server")
        #expect(h.commands(to: alice) == ["402"])
        h.send(alice, "VERSION")
        #expect(h.lines(to: alice).first == ":test.server 351 alice chat-tui-0.2 test.server :chat-tui IRC server")
        #expect(h.commands(to: alice).dropFirst().allSatisfy { $0 == "005" })
        h.send(alice, "ADMIN")
        #expect(h.commands(to: alice) == ["256", "257", "258", "259"])
        h.send(alice, "INFO")
        #expect(h.commands(to: alice).last == "374" && h.commands(to: alice).dropLast().allSatisfy { $0 == "371" })
        _ = h.register("bob")
        let pending = h.connect()
        h.send(alice, "MODE alice +i")
        h.send(alice, "LUSERS")
        #expect(h.lines(to: alice) == [
            ":test.server 251 alice :There are 1 users and 1 invisible on 1 servers",
            ":test.server 253 alice 1 :unknown connection(s)",
            ":test.server 254 alice 1 :channels formed",
            ":test.server 255 alice :I have 2 clients and 0 servers",
            ":test.server 265 alice 2 2 :Current local users 2, max 2",
            ":test.server 266 alice 2 2 :Current global users 2, max 2",
        ])
        _ = pending
    }

    @Test("HELP: 704, 705…, 706; 524 for an unknown subject")
    func help() {
        var h = Harness()
        let alice = h.register("alice")
        h.send(alice, "HELP invite")
        #expect(h.commands(to: alice) == ["704", "705", "705", "706"])
        #expect(h.lines(to: alice).first == ":test.server 704 alice INVITE :INVITE <nick> <#room> | INVITE")
        h.send(alice, "HELP frobnicate")
        #expect(h.lines(to: alice) == [":test.server 524 alice FROBNICATE :No help available on this topic"])
        h.send(alice, "HELP")
        #expect(h.commands(to: alice).first == "704")
        // Every command in the table has help.
        for command in ServerState.commands.keys { #expect(ServerHelp.text(command) != nil, "no HELP for \(command)") }
    }

    @Test("WHOX: the requested fields in the spec's order, the token, the real name last")
    func whox() {
        var h = Harness()
        let alice = h.register("alice")
        _ = h.register("bob")
        h.send(alice, "WHO bob %rnfuhtc,42")
        #expect(h.lines(to: alice) == [
            ":test.server 354 alice 42 #lobby u 127.0.0.1 bob H :Real bob",
            ":test.server 315 alice bob :End of /WHO list",
        ])
        h.send(alice, "WHO #lobby %na")
        #expect(h.lines(to: alice).prefix(2) == [":test.server 354 alice alice :0", ":test.server 354 alice bob :0"])
        h.send(alice, "WHO bob %tn,x1")
        #expect(h.lines(to: alice).first == ":test.server 354 alice 0 :bob", "a token that is not 1-3 digits is answered as 0")
    }

    @Test("WHO and NAMES hide +i users from people who share no room with them")
    func invisible() {
        var h = Harness { $0.room = nil }
        let alice = h.register("alice")
        let bob = h.register("bob")
        h.send(alice, "MODE alice +i")
        h.send(alice, "JOIN #dev")
        h.send(bob, "WHO *")
        #expect(h.out.messages(to: bob).filter { $0.command == "352" }.map { $0.params[5] } == ["bob"])
        h.send(bob, "NAMES #dev")
        #expect(h.commands(to: bob) == ["366"])
        // An exact nickname is answered all the same (issue 26); a mask that matches it is not.
        h.send(bob, "WHO alice")
        #expect(h.out.messages(to: bob).filter { $0.command == "352" }.map { $0.params[5] } == ["alice"])
        h.send(bob, "WHO ali*")
        #expect(h.commands(to: bob) == ["315"])
        h.send(bob, "JOIN #dev")
        h.send(bob, "WHO *")
        #expect(h.out.messages(to: bob).filter { $0.command == "352" }.map { $0.params[5] } == ["alice", "bob"])
    }

    @Test("MONITOR: 730 and 731 as people come and go, L, S, C, and 734 past the limit")
    func monitor() {
        var h = Harness { $0.monitorLimit = 3 }
        let alice = h.register("alice")
        h.send(alice, "MONITOR + bob,carol")
        #expect(h.lines(to: alice) == [":test.server 731 alice :bob,carol"])
        let bob = h.register("bob")
        #expect(h.lines(to: alice).contains(":test.server 730 alice :bob!u@127.0.0.1"))
        h.send(bob, "NICK robert")
        #expect(h.lines(to: alice).contains(":test.server 731 alice :bob"))
        h.send(bob, "NICK bob")
        #expect(h.lines(to: alice).contains(":test.server 730 alice :bob!u@127.0.0.1"))
        h.send(bob, "QUIT")
        #expect(h.lines(to: alice).contains(":test.server 731 alice :bob"))
        h.send(alice, "MONITOR L")
        #expect(h.lines(to: alice) == [":test.server 732 alice :bob,carol", ":test.server 733 alice :End of MONITOR list"])
        h.send(alice, "MONITOR + dave,erin")
        #expect(h.lines(to: alice) == [":test.server 734 alice 3 erin :Monitor list is full", ":test.server 731 alice :dave"])
        h.send(alice, "MONITOR - carol")
        h.send(alice, "MONITOR S")
        #expect(h.lines(to: alice) == [":test.server 731 alice :bob,dave"])
        h.send(alice, "MONITOR C")
        h.send(alice, "MONITOR L")
        #expect(h.lines(to: alice) == [":test.server 733 alice :End of MONITOR list"])
    }

    @Test("extended-monitor: AWAY of a watched user outside shared rooms reaches watchers with away-notify")
    func extendedMonitor() {
        var h = Harness { $0.room = nil }
        let alice = h.register("alice", caps: ["extended-monitor", "away-notify"])
        let bob = h.register("bob")
        h.send(alice, "MONITOR + bob")
        h.send(bob, "AWAY :out")
        #expect(h.lines(to: alice) == [":bob!u@127.0.0.1 AWAY :out"])
    }

    @Test("OPER: 464 for an unknown name or a wrong password, 381 and +o; WALLOPS to +w; KILL")
    func operators() {
        var h = Harness { $0.operators = [OperatorBlock(name: "root", passwordHash: OperatorBlock.hash("hunter2", salt: "x1"))] }
        let alice = h.register("alice")
        let bob = h.register("bob")
        h.send(alice, "OPER nobody hunter2")
        #expect(h.commands(to: alice) == ["464"], "an unknown name looks like a wrong password, as in ergo")
        h.send(alice, "OPER root wrong")
        #expect(h.commands(to: alice) == ["464"])
        h.send(alice, "WALLOPS :hello")
        #expect(h.commands(to: alice) == ["481"])
        h.send(alice, "OPER root hunter2")
        #expect(h.lines(to: alice) == [":alice!u@127.0.0.1 MODE alice +o", ":test.server 381 alice :You are now an IRC operator"])
        h.send(bob, "MODE bob +w")
        h.send(alice, "WALLOPS :maintenance at noon")
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 WALLOPS :maintenance at noon"])
        h.send(bob, "WHOIS alice")
        #expect(h.lines(to: bob).contains(":test.server 313 bob alice :is an IRC operator"))
        h.send(alice, "KILL bob :spamming")
        #expect(h.lines(to: bob).suffix(3) == [":alice!u@127.0.0.1 KILL bob :spamming",
                                                ":bob!u@127.0.0.1 QUIT :Killed (alice (spamming))",
                                                "ERROR :Closing Link: 127.0.0.1 (Killed (alice (spamming)))"])
        #expect(h.lines(to: alice) == [":bob!u@127.0.0.1 QUIT :Killed (alice (spamming))"])
        #expect(h.out.closed == [bob])
        h.send(alice, "KILL test.server :x")
        #expect(h.commands(to: alice) == ["483"])
    }

    @Test("OPER on a server without operators gets 491")
    func noOperators() {
        var h = Harness()
        let alice = h.register("alice")
        h.send(alice, "OPER root x")
        #expect(h.lines(to: alice) == [":test.server 491 alice :No O-lines for your host"])
    }

    @Test("OPER makes the operator a room operator of the room everyone joins (the host's own user)")
    func operatorRunsTheRoom() {
        var h = Harness { $0.operators = [OperatorBlock(name: "host", passwordHash: OperatorBlock.hash("s3cret", salt: "y"))] }
        let first = h.register("early")
        let host = h.register("host")
        h.send(host, "OPER host s3cret")
        #expect(h.lines(to: first) == [":test.server MODE #lobby +o host"])
        #expect(h.lines(to: host).contains(":test.server MODE #lobby +o host"))
    }

    @Test("password hashes check the password, not anything else")
    func passwordHash() {
        let block = OperatorBlock(name: "a", passwordHash: OperatorBlock.hash("right", salt: "salt"))
        #expect(block.accepts("right") && !block.accepts("Right") && !block.accepts(""))
        #expect(!OperatorBlock(name: "a", passwordHash: "plain").accepts("plain"))
    }
}
