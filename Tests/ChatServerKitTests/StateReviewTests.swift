import Testing
@testable import ChatServerKit
import IRCWire

/// Regression tests for what a review against the specifications found.
@Suite("server state: spec details")
struct StateReviewTests {
    @Test("a label is honoured only with batch negotiated too, and only when it fits 64 bytes")
    func labelNeedsBatch() {
        var h = Harness()
        let alice = h.register("alice", caps: ["labeled-response"])
        h.send(alice, "@label=x TIME")
        #expect(h.lines(to: alice).allSatisfy { !$0.contains("label") && !$0.contains("BATCH") })
        let bob = h.register("bob", caps: ["labeled-response", "batch"])
        h.send(bob, "@label=\(String(repeating: "l", count: 65)) PING t")
        #expect(h.lines(to: bob) == [":test.server PONG test.server t"])
    }

    @Test("a labelled message to oneself: the echo carries the label, the delivered copy does not")
    func labelToSelf() {
        var h = Harness()
        let alice = h.register("alice", caps: ["labeled-response", "batch", "echo-message"])
        h.send(alice, "@label=me PRIVMSG alice :note to self")
        #expect(h.lines(to: alice) == [":alice!u@127.0.0.1 PRIVMSG alice :note to self",
                                       "@label=me :alice!u@127.0.0.1 PRIVMSG alice :note to self"])
        let bob = h.register("bob", caps: ["labeled-response", "batch"])
        h.send(bob, "@label=b PRIVMSG bob :hi me")
        #expect(h.lines(to: bob) == [":bob!u@127.0.0.1 PRIVMSG bob :hi me", "@label=b :test.server ACK"])
    }

    @Test("SETNAME failures are FAIL even without standard-replies (the setname spec)")
    func setnameFail() {
        var h = Harness()
        let alice = h.register("alice", caps: ["setname"])
        h.send(alice, "SETNAME :" + String(repeating: "n", count: 101))
        #expect(h.commands(to: alice) == ["FAIL"])
    }

    @Test("other FAILs fall back to a NOTICE for clients without standard-replies")
    func standardRepliesFallback() {
        var h = Harness()
        let alice = h.register("alice")
        h.send(alice, "MONITOR X")
        #expect(h.lines(to: alice) == [":test.server NOTICE alice :MONITOR: MONITOR takes +, -, C, L or S"])
    }

    @Test("WHOIS lists many rooms over several 319 lines and ends with the nick as asked")
    func whoisManyRooms() {
        var h = Harness { $0.room = nil }
        let alice = h.register("alice")
        let bob = h.register("bob")
        let rooms = (0..<40).map { "#room-with-a-longish-name-\($0)" }
        for start in stride(from: 0, to: 40, by: 10) { h.send(alice, "JOIN " + rooms[start..<start + 10].joined(separator: ",")) }
        h.send(bob, "WHOIS ALICE")
        let channelLines = h.out.messages(to: bob).filter { $0.command == "319" }
        #expect(channelLines.count > 1 && channelLines.allSatisfy { $0.serialized().count <= 512 })
        #expect(Set(channelLines.flatMap { $0.params[2].split(separator: " ").map { String($0.dropFirst()) } }) == Set(rooms))
        #expect(h.lines(to: bob).last == ":test.server 318 bob ALICE :End of /WHOIS list")
    }

    @Test("MAXLIST names each list's own limit")
    func maxList() {
        #expect(ChannelModes.maxListToken == "b:100,e:100,I:100")
    }

    @Test("chghost fallback: room mates without the capability see QUIT, JOIN and the status again")
    func chghostFallback() {
        var h = Harness { $0.operators = [OperatorBlock(name: "root", passwordHash: OperatorBlock.hash("pw", salt: "s"))] }
        let alice = h.register("alice")
        let bob = h.register("bob")
        h.send(bob, "OPER root pw")
        h.send(bob, "CHGHOST alice cloak.example")
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 QUIT :Changing host", ":alice!u@cloak.example JOIN #lobby",
                                     ":test.server MODE #lobby +o alice"])
        #expect(h.out.deliveries.allSatisfy { !$0.storable }, "stand-in events are not history")
        _ = alice
    }

    @Test("before registration a NOTICE is dropped without a word")
    func unregisteredNotice() {
        var h = Harness()
        let id = h.connect()
        h.send(id, "NOTICE x :y")
        #expect(h.out.items.isEmpty)
    }

    @Test("CAP LS without a version after LS 302 answers in the old format; -cap-notify is acknowledged and ignored")
    func capVersions() {
        var h = Harness()
        let id = h.connect()
        h.send(id, "CAP LS 302")
        h.send(id, "CAP LS")
        #expect(h.out.messages(to: id).count == 1 && h.out.messages(to: id)[0].params.count == 3)
        h.send(id, "CAP REQ :-cap-notify multi-prefix")
        #expect(h.out.messages(to: id).first?.params[1] == "ACK")
        h.send(id, "CAP LIST")
        #expect(h.out.messages(to: id).first?.params.last == "cap-notify multi-prefix")
    }

    @Test("MONITOR + of a name already watched reports it again")
    func monitorAgain() {
        var h = Harness()
        let alice = h.register("alice")
        _ = h.register("bob")
        h.send(alice, "MONITOR + bob")
        h.send(alice, "MONITOR + bob")
        #expect(h.lines(to: alice) == [":test.server 730 alice :bob!u@127.0.0.1"])
    }

    @Test("a list query on a secret room by an outsider ends the list without entries")
    func secretListQuery() {
        var h = Harness { $0.room = nil }
        let alice = h.register("alice")
        let bob = h.register("bob")
        h.send(alice, "JOIN #s")
        h.send(alice, "MODE #s +sb x")
        h.send(bob, "MODE #s b")
        #expect(h.lines(to: bob) == [":test.server 368 bob #s :End of channel ban list"])
    }

    @Test("a change of case only does not tell MONITOR watchers the user left")
    func caseOnlyRename() {
        var h = Harness()
        let alice = h.register("alice")
        let bob = h.register("bob")
        h.send(alice, "MONITOR + bob")
        h.send(bob, "NICK BOB")
        #expect(h.lines(to: alice) == [":bob!u@127.0.0.1 NICK BOB"])
    }

    @Test("QUIT without a reason is \"Quit: \"")
    func quitReason() {
        var h = Harness()
        let alice = h.register("alice")
        let bob = h.register("bob")
        h.send(bob, "QUIT")
        #expect(h.lines(to: alice) == [":bob!u@127.0.0.1 QUIT :Quit: "])
    }

    @Test("LIST T<n skips rooms whose topic was never set")
    func listTopicAge() {
        var h = Harness { $0.room = nil }
        let alice = h.register("alice")
        h.send(alice, "JOIN #a,#b")
        h.send(alice, "TOPIC #a :set")
        h.send(alice, "LIST T<5")
        #expect(h.out.messages(to: alice).filter { $0.command == "322" }.map { $0.params[1] } == ["#a"])
        h.send(alice, "LIST T>5")
        #expect(h.out.messages(to: alice).filter { $0.command == "322" }.isEmpty)
    }
}

@Test("an empty parameter before the last is written * so later ones keep their places")
func emptyMiddleParameter() {
    #expect(IRCMessage(command: "403", params: ["alice", "", "No such channel"]).line == "403 alice * :No such channel")
}

@Suite("server state: what real clients showed")
struct StateInteropFindingsTests {
    @Test("WHOWAS remembers a nickname given up by NICK")
    func whowasAfterRename() {
        var h = Harness()
        let alice = h.register("alice")
        let bob = h.register("bob")
        h.send(bob, "NICK bobby")
        h.send(alice, "WHOWAS bob")
        #expect(h.commands(to: alice) == ["314", "312", "369"])
    }

    @Test("333 names the topic's setter as nick!user@host")
    func topicSetter() {
        var h = Harness()
        let alice = h.register("alice")
        h.send(alice, "TOPIC #lobby :hello")
        h.send(alice, "TOPIC #lobby")
        #expect(h.lines(to: alice).last == ":test.server 333 alice #lobby alice!u@127.0.0.1 \(Int(h.now))")
    }

    @Test("messaging oneself while away does not answer 301")
    func awaySelf() {
        var h = Harness()
        let alice = h.register("alice", caps: ["echo-message"])
        h.send(alice, "AWAY :out")
        h.send(alice, "PRIVMSG alice :memo")
        #expect(!h.commands(to: alice).contains("301"))
    }

    @Test("UTF8ONLY: a line that is not UTF-8 is refused with FAIL <command> INVALID_UTF8 and relayed to nobody, standard-replies or not; a bad command word is FAIL *; a QUIT still quits")
    func invalidUTF8() {
        var h = Harness()
        let alice = h.register("alice")
        let bob = h.register("bob")
        h.state.received(Array("PRIVMSG bob :bad ".utf8) + [0xFF, 0xFE] + Array(" bytes".utf8), from: alice, now: h.now)
        h.out = h.state.takeOutbox()
        #expect(h.lines(to: bob).isEmpty)
        #expect(h.lines(to: alice) == [":test.server FAIL PRIVMSG INVALID_UTF8 :Message rejected: it is not UTF-8, which this server requires (UTF8ONLY); set your client's encoding to UTF-8"])
        h.state.received(Array("TOPIC #lobby :caf".utf8) + [0xE9], from: alice, now: h.now)
        h.out = h.state.takeOutbox()
        #expect(h.out.messages(to: alice).map { $0.params.prefix(2) } == [["TOPIC", "INVALID_UTF8"]] && h.lines(to: bob).isEmpty)
        h.state.received([0xFF] + Array("X #lobby".utf8), from: alice, now: h.now)
        h.out = h.state.takeOutbox()
        #expect(h.out.messages(to: alice).map { $0.params.prefix(2) } == [["*", "INVALID_UTF8"]])
        // Inside a multiline batch: the batch fails, nothing of it goes.
        let carol = h.register("carol", caps: ["draft/multiline", "batch"])
        h.send(carol, "BATCH +m draft/multiline bob", "@batch=m PRIVMSG bob :fine")
        h.state.received(Array("@batch=m PRIVMSG bob :caf".utf8) + [0xE9], from: carol, now: h.now)
        h.send(carol, "@batch=m PRIVMSG bob :after", "BATCH -m")
        #expect(h.lines(to: bob).isEmpty)
        let dave = h.register("dave")
        h.state.received(Array("QUIT :bye ".utf8) + [0xFF], from: dave, now: h.now)
        h.out = h.state.takeOutbox()
        #expect(h.lines(to: bob) == [":dave!u@127.0.0.1 QUIT :Quit: bye \u{FFFD}"])
        h.send(alice, "PRIVMSG bob :fine ünïcode")
        #expect(h.lines(to: alice).isEmpty)
    }
}

@Test("UTF-8 validation", arguments: [
    ([0x61], true), ([0xC3, 0xA9], true), ([0xF0, 0x9F, 0x98, 0x80], true),
    ([0xFF], false), ([0xC0, 0xAF], false), ([0xED, 0xA0, 0x80], false), ([0xE2, 0x82], false),
] as [([UInt8], Bool)])
func utf8Validation(_ c: ([UInt8], Bool)) {
    #expect(UTF8Validation.isValid(c.0) == c.1)
}

@Suite("server state: what a hostile client tries")
struct StateHostileTests {
    @Test("MODE #r bbbb… lists the bans once, and repeated unknown letters get one 472")
    func listQueryOnce() {
        var h = Harness { $0.room = nil }
        let alice = h.register("alice")
        h.send(alice, "JOIN #r", "MODE #r +bb a b")
        h.send(alice, "MODE #r " + String(repeating: "b", count: 400) + String(repeating: "Q", count: 50))
        #expect(h.commands(to: alice) == ["472", "367", "367", "368"])
    }

    @Test("WHOWAS answers at most 10 entries, and one user keeps at most 3 in the ring")
    func whowasBounded() {
        var h = Harness()
        let alice = h.register("alice")
        let flipper = h.register("flip0")
        for i in 1...50 { h.send(flipper, "NICK flip\(i % 2)") }
        #expect(h.state.people.whowas.filter { $0.nick.hasPrefix("flip") }.count == 3)
        for _ in 0..<12 {
            let id = h.register("gone")
            h.send(id, "QUIT")
        }
        h.send(alice, "WHOWAS gone")
        #expect(h.commands(to: alice).filter { $0 == "314" }.count == 10)
        h.send(alice, "WHOWAS gone 2")
        #expect(h.commands(to: alice).filter { $0 == "314" }.count == 2)
    }

    @Test("WHO * answers at most 500 users to a non-operator; NAMES alone covers only one's own rooms")
    func whoBounded() {
        var h = Harness { $0.room = nil }
        let asker = h.register("asker")
        for i in 0..<510 { _ = h.register("u\(i)") }
        h.send(asker, "WHO *")
        #expect(h.commands(to: asker).filter { $0 == "352" }.count == 500 && h.commands(to: asker).last == "315")
        let other = h.register("other")
        h.send(other, "JOIN #elsewhere")
        h.send(asker, "JOIN #mine")
        h.send(asker, "NAMES")
        #expect(h.out.messages(to: asker).filter { $0.command == "353" }.map { $0.params[2] } == ["#mine"])
    }

    @Test("an INVITE into a room that is not +i lets no one past a ban or a key")
    func inviteIsNoBypass() {
        var h = Harness { $0.room = nil }
        let op = h.register("op")
        let member = h.register("member")
        let evil = h.register("evil")
        h.send(op, "JOIN #r", "MODE #r +bk evil!*@* k")
        h.send(member, "JOIN #r k")
        h.send(member, "INVITE evil #r")
        h.send(evil, "JOIN #r")
        #expect(h.commands(to: evil) == ["474"])
        h.send(op, "MODE #r -b evil!*@*")
        h.send(evil, "JOIN #r")
        #expect(h.commands(to: evil) == ["475"], "a member's INVITE outside +i is only a notice")
    }

    @Test("invitations end when the invitee leaves the server or the room stops being +i")
    func invitationsLapse() {
        var h = Harness { $0.room = nil }
        let op = h.register("op")
        let guest = h.register("guest")
        h.send(op, "JOIN #r", "MODE #r +i", "INVITE guest #r")
        #expect(h.state.roomBook.invitations.count == 1 && h.state.roomBook.channels["#r"]?.invited.count == 1)
        h.send(op, "MODE #r -i")
        #expect(h.state.roomBook.invitations.isEmpty && h.state.roomBook.channels["#r"]?.invited.isEmpty == true)
        h.send(op, "MODE #r +i", "INVITE guest #r")
        h.send(guest, "QUIT")
        #expect(h.state.roomBook.invitations.isEmpty && h.state.roomBook.channels["#r"]?.invited.isEmpty == true)
    }

    @Test("MONITOR entries of a user who left are gone from the server's table")
    func monitorsForgotten() {
        var h = Harness()
        let watcher = h.register("watcher")
        h.send(watcher, "MONITOR + a1,a2,a3")
        h.send(watcher, "QUIT")
        #expect(h.state.people.monitors.isEmpty)
    }

    @Test("look-alikes that depend on case are caught: aIice, B0B, GIobal, #l0bby")
    func caseConfusables() {
        var h = Harness()
        let alice = h.register("alice")
        _ = h.register("bob")
        for nick in ["aIice", "B0B", "GIobal"] {
            let id = h.connect()
            h.send(id, "NICK \(nick)")
            #expect(h.commands(to: id) == ["432"], "\(nick)")
        }
        h.send(alice, "JOIN #l0bby")
        #expect(h.commands(to: alice) == ["479"])
    }

    @Test("WHOX shows the real address only to operators and the user")
    func whoxAddress() {
        var h = Harness()
        let alice = h.register("alice")
        _ = h.register("bob")
        h.send(alice, "WHO bob %ni")
        #expect(h.lines(to: alice).first == ":test.server 354 alice 255.255.255.255 :bob")
        h.send(alice, "WHO alice %ni")
        #expect(h.lines(to: alice).first == ":test.server 354 alice 127.0.0.1 :alice")
    }

    @Test("after three failed OPER attempts even the right password is refused on that connection")
    func operLockout() {
        var h = Harness { $0.operators = [OperatorBlock(name: "root", passwordHash: OperatorBlock.hash("pw", salt: "s"))] }
        let alice = h.register("alice")
        for guess in ["a", "b", "c"] { h.send(alice, "OPER root \(guess)") }
        h.send(alice, "OPER root pw")
        #expect(h.commands(to: alice) == ["464"])
    }

    @Test("an operator block and the host's own may share a name: either password works")
    func sharedOperatorName() {
        var h = Harness { $0.operators = [OperatorBlock(name: "host", passwordHash: OperatorBlock.hash("mine", salt: "a")),
                                          OperatorBlock(name: "host", passwordHash: OperatorBlock.hash("secret", salt: "b"))] }
        let alice = h.register("alice")
        h.send(alice, "OPER host secret")
        #expect(h.commands(to: alice).contains("381"))
    }

    @Test("the FAIL for invalid UTF-8 carries the command's label")
    func failInLabel() {
        var h = Harness()
        let alice = h.register("alice", caps: ["standard-replies", "labeled-response", "batch"])
        _ = h.register("bob")
        h.state.received(Array("@label=w PRIVMSG bob :x".utf8) + [0xFF], from: alice, now: h.now)
        h.out = h.state.takeOutbox()
        #expect(h.lines(to: alice) == ["@label=w :test.server FAIL PRIVMSG INVALID_UTF8 :Message rejected: it is not UTF-8, which this server requires (UTF8ONLY); set your client's encoding to UTF-8"])
    }

    @Test("network text in the log is made visible: a command word, a QUIT reason, a KICK comment")
    func logEscaped() {
        var h = Harness { $0.room = nil }
        let id = h.connect()
        h.send(id, "\u{1B}]2;pwned\u{7} x", "QUIT :\u{1B}[2J")
        #expect(h.out.logs.count == 2)
        #expect(h.out.logs.allSatisfy { !$0.unicodeScalars.contains { $0.value < 0x20 } })
        let alice = h.register("alice")
        h.send(alice, "JOIN #mine", "KICK #mine alice :\u{1B}[31mred")
        // The comment lost its ESC on input (free text is cleaned); the log shows what is left.
        #expect(h.out.logs.contains { $0.contains("[31mred") && !$0.contains("^[") })
        #expect(h.out.logs.allSatisfy { !$0.unicodeScalars.contains { $0.value < 0x20 } })
    }
}
