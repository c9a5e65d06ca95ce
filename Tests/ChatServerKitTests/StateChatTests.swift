import Testing
@testable import ChatServerKit
import IRCWire

@Suite("server state: rooms and messages")
struct StateChatTests {
    @Test("everyone joins the room and sees later arrivals; the first is operator")
    func roomIsOnlineList() {
        var h = Harness()
        let alice = h.register("alice")
        let bob = h.register("bob")
        #expect(h.lines(to: alice) == [":bob!u@127.0.0.1 JOIN #lobby"])
        #expect(h.names(to: bob) == ["@alice", "bob"])
        #expect(h.state.members(of: "#lobby") == ["alice", "bob"])
    }

    @Test("a custom --room is the room everyone joins")
    func customRoom() {
        var h = Harness { $0.room = "#team" }
        let id = h.register("alice")
        #expect(h.lines(to: id).contains(":alice!u@127.0.0.1 JOIN #team"))
    }

    @Test("NICK change goes to the user and to everyone sharing a room, once each")
    func nickChange() {
        var h = Harness()
        let alice = h.register("alice")
        let bob = h.register("bob")
        let carol = h.register("carol")
        h.send(carol, "PART #lobby")
        h.send(alice, "JOIN #extra")
        h.send(bob, "JOIN #extra")
        h.send(alice, "NICK Alicia")
        #expect(h.lines(to: alice) == [":alice!u@127.0.0.1 NICK Alicia"])
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 NICK Alicia"])
        #expect(h.lines(to: carol).isEmpty)
        h.send(bob, "NICK ALICE")
        #expect(h.lines(to: bob) == [":bob!u@127.0.0.1 NICK ALICE"], "the old nickname is free again")
        h.send(alice, "NICK alicia")
        #expect(h.lines(to: alice) == [":Alicia!u@127.0.0.1 NICK alicia"], "a change of case is allowed")
    }

    @Test("direct messages and room messages reach the right people")
    func messages() {
        var h = Harness()
        let alice = h.register("alice")
        let bob = h.register("bob")
        let carol = h.register("carol")
        h.send(alice, "PRIVMSG BOB :hello bob")
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 PRIVMSG bob :hello bob"])
        #expect(h.lines(to: carol).isEmpty && h.lines(to: alice).isEmpty)
        h.send(alice, "PRIVMSG #lobby :hello all")
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 PRIVMSG #lobby :hello all"])
        #expect(h.lines(to: carol) == [":alice!u@127.0.0.1 PRIVMSG #lobby :hello all"])
        #expect(h.lines(to: alice).isEmpty, "no echo without echo-message")
        h.send(alice, "NOTICE bob,carol :note")
        #expect(h.commands(to: bob) == ["NOTICE"] && h.commands(to: carol) == ["NOTICE"])
    }

    @Test("message errors: 401, 403, 404, 407, 411, 412")
    func messageErrors() {
        var h = Harness()
        let alice = h.register("alice")
        h.send(alice, "PRIVMSG nobody :x")
        #expect(h.lines(to: alice) == [":test.server 401 alice nobody :No such nick/channel"])
        h.send(alice, "PRIVMSG #nowhere :x")
        #expect(h.commands(to: alice) == ["403"])
        let bob = h.register("bob")
        h.send(bob, "JOIN #private")
        h.send(alice, "PRIVMSG #private :x")
        #expect(h.commands(to: alice) == ["404"])
        h.send(alice, "PRIVMSG a,b,c,d,e :x")
        #expect(h.commands(to: alice) == ["407"])
        h.send(alice, "PRIVMSG")
        #expect(h.commands(to: alice) == ["411"])
        h.send(alice, "PRIVMSG bob")
        #expect(h.commands(to: alice) == ["412"])
        h.send(alice, "PRIVMSG bob :")
        #expect(h.commands(to: alice) == ["412"])
    }

    @Test("echo-message, server-time and client tags follow each recipient's capabilities")
    func capabilitiesOnRelay() throws {
        var h = Harness()
        let alice = h.register("alice", caps: ["echo-message", "server-time", "message-tags"])
        let bob = h.register("bob", caps: ["server-time"])
        let carol = h.register("carol")
        h.send(alice, "@+draft/reply=abc;label=x PRIVMSG #lobby :tagged")
        let echoed = try #require(h.out.messages(to: alice).first)
        #expect(echoed.tag("time") != nil && echoed.tag("+draft/reply") == "abc" && echoed.tag("label") == nil)
        let toBob = try #require(h.out.messages(to: bob).first)
        #expect(toBob.tag("time") == ServerTime.format(h.now) && toBob.tag("+draft/reply") == nil)
        #expect(h.lines(to: carol) == [":alice!u@127.0.0.1 PRIVMSG #lobby :tagged"])
        h.send(alice, "@+typing=active TAGMSG #lobby")
        #expect(h.out.messages(to: alice).count == 1)
        #expect(h.out.messages(to: bob).isEmpty && h.out.messages(to: carol).isEmpty, "TAGMSG only to message-tags clients")
    }

    @Test("AWAY: 306/305, 301 to senders, away-notify to room mates that asked")
    func away() {
        var h = Harness()
        let alice = h.register("alice")
        let bob = h.register("bob", caps: ["away-notify"])
        let carol = h.register("carol")
        h.send(alice, "AWAY :lunch")
        #expect(h.commands(to: alice) == ["306"])
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 AWAY :lunch"])
        #expect(h.lines(to: carol).isEmpty)
        h.send(carol, "PRIVMSG alice :there?")
        #expect(h.lines(to: carol) == [":test.server 301 carol alice :lunch"])
        h.send(alice, "AWAY")
        #expect(h.commands(to: alice) == ["305"])
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 AWAY"])
    }

    @Test("KICK of several people kicks each, one KICK line per person (RFC 2812), up to TARGMAX KICK:4")
    func kickSeveral() {
        var h = Harness()
        let op = h.register("op")
        let alice = h.register("alice")
        _ = h.register("bob")
        h.send(op, "KICK #lobby alice,bob :bye")
        #expect(h.lines(to: op) == [":op!u@127.0.0.1 KICK #lobby alice :bye", ":op!u@127.0.0.1 KICK #lobby bob :bye"])
        // alice hears her own and, gone, not bob's.
        #expect(h.lines(to: alice) == [":op!u@127.0.0.1 KICK #lobby alice :bye"])
        #expect(h.state.members(of: "#lobby") == ["op"])
        h.send(op, "KICK #lobby a,b,c,d,e")
        #expect(h.lines(to: op).first?.hasPrefix(":test.server 407 op a,b,c,d,e ") == true)
    }

    @Test("rooms: JOIN, topic, modes, LIST, NAMES, KICK, PART")
    func rooms() {
        var h = Harness()
        let alice = h.register("alice")
        let bob = h.register("bob", caps: ["multi-prefix"])
        h.send(alice, "JOIN #dev")
        #expect(h.lines(to: alice).contains(":test.server 353 alice = #dev :@alice"))
        h.send(bob, "JOIN #dev,bad")
        #expect(h.lines(to: alice) == [":bob!u@127.0.0.1 JOIN #dev"])
        #expect(h.commands(to: bob).last == "479")
        h.send(bob, "TOPIC #dev :mine")
        #expect(h.commands(to: bob) == ["482"])
        h.send(alice, "TOPIC #dev :Release planning")
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 TOPIC #dev :Release planning"])
        h.send(bob, "TOPIC #dev")
        #expect(h.commands(to: bob) == ["332", "333"])
        h.send(alice, "MODE #dev +ov-t bob bob")
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 MODE #dev +ov-t bob bob"])
        h.send(bob, "NAMES #dev")
        #expect(h.names(to: bob) == ["@alice", "@+bob"])
        h.send(alice, "MODE #dev")
        #expect(h.lines(to: alice).first == ":test.server 324 alice #dev +n")
        h.send(alice, "MODE #dev b")
        #expect(h.commands(to: alice) == ["368"])
        h.send(alice, "MODE #dev +x")
        #expect(h.commands(to: alice) == ["472"])
        h.send(alice, "LIST")
        #expect(h.lines(to: alice) == [
            ":test.server 321 alice Channel :Users  Name",
            ":test.server 322 alice #dev 2 :[+n] Release planning",
            ":test.server 322 alice #lobby 2 :[+nt] ",
            ":test.server 323 alice :End of /LIST",
        ])
        h.send(alice, "KICK #dev nobody")
        #expect(h.commands(to: alice) == ["401"], "no such user: 401, as ergo answers")
        _ = h.register("dave")
        h.send(alice, "KICK #dev dave")
        #expect(h.commands(to: alice) == ["441"])
        h.send(alice, "KICK #dev bob :bye now")
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 KICK #dev bob :bye now"])
        h.send(bob, "KICK #dev alice")
        #expect(h.commands(to: bob) == ["442"])
        h.send(alice, "PART #dev :done")
        #expect(h.lines(to: alice) == [":alice!u@127.0.0.1 PART #dev :done"])
        h.send(alice, "PART #dev")
        #expect(h.commands(to: alice) == ["403"], "an empty room disappears")
        h.send(bob, "MODE #lobby +o bob")
        #expect(h.commands(to: bob) == ["482"])
    }

    @Test("queries: WHO, WHOIS, ISON, USERHOST, user MODE")
    func queries() {
        var h = Harness()
        let alice = h.register("alice")
        _ = h.register("bob")
        h.send(alice, "WHO #lobby")
        #expect(h.lines(to: alice) == [
            ":test.server 352 alice #lobby u 127.0.0.1 test.server alice H@ :0 Real alice",
            ":test.server 352 alice #lobby u 127.0.0.1 test.server bob H :0 Real bob",
            ":test.server 315 alice #lobby :End of /WHO list",
        ])
        h.send(alice, "WHO b*")
        #expect(h.commands(to: alice) == ["352", "315"])
        h.send(alice, "WHOIS BOB")
        #expect(h.commands(to: alice) == ["311", "319", "312", "317", "318"])
        h.send(alice, "WHOIS ghost")
        #expect(h.commands(to: alice) == ["401", "318"])
        h.send(alice, "ISON bob ghost ALICE")
        #expect(h.lines(to: alice) == [":test.server 303 alice :bob alice"])
        h.send(alice, "USERHOST bob")
        #expect(h.lines(to: alice) == [":test.server 302 alice :bob=+u@127.0.0.1"])
        h.send(alice, "MODE alice +i")
        #expect(h.lines(to: alice) == [":alice!u@127.0.0.1 MODE alice +i"])
        h.send(alice, "MODE alice")
        #expect(h.lines(to: alice) == [":test.server 221 alice +i"])
        h.send(alice, "MODE bob +i")
        #expect(h.commands(to: alice) == ["502"])
    }

    @Test("QUIT with a reason reaches everyone who shares a room, once")
    func quit() {
        var h = Harness()
        let alice = h.register("alice")
        let bob = h.register("bob")
        h.send(alice, "JOIN #two")
        h.send(bob, "JOIN #two")
        h.send(alice, "QUIT :gone fishing")
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 QUIT :Quit: gone fishing"])
        #expect(h.lines(to: alice) == ["ERROR :Closing Link: 127.0.0.1 (Quit: gone fishing)"])
        #expect(h.out.closed == [alice])
        #expect(h.state.members(of: "#lobby") == ["bob"])
    }

    @Test("NAMES replies split to stay under 512 bytes")
    func longNames() {
        var h = Harness()
        var last = ConnectionID(0)
        for i in 0..<120 { last = h.register("user_with_long_name_\(i)") }
        let names = h.out.messages(to: last).filter { $0.command == "353" }
        #expect(names.count > 1)
        #expect(names.allSatisfy { $0.serialized().count <= 512 })
        #expect(names.flatMap { $0.params[3].split(separator: " ") }.count == 120)
    }

    /// A member's 353s are cut from the room's kept list as bytes (`sendRaw`), not built as
    /// messages: each must be what serialising its parse writes, with the batch tag when labelled.
    @Test("a member's NAMES, written as bytes, is what the message path writes, labelled or not")
    func namesAsBytes() throws {
        var h = Harness()
        for i in 0..<60 { _ = h.register("user_with_long_name_\(i)") }
        let plain = h.register("plain")
        let labelled = h.register("labelled", caps: ["labeled-response", "batch", "server-time", "message-tags"])
        let full = h.register("full", caps: ["multi-prefix", "userhost-in-names"])
        func sent(_ id: ConnectionID) -> [String] {
            DirectLaneTests.rawLines(h.out, to: id).joined().split(separator: "\r\n").map(String.init)
        }
        for (id, request) in [(plain, "NAMES #lobby"), (labelled, "@label=n1 NAMES #lobby"), (labelled, "NAMES #lobby"),
                              (full, "NAMES #lobby")] {
            h.send(id, request)
            let lines = sent(id)
            var names: [Substring] = []
            for line in lines {
                let message = try IRCMessage(bytes: Array(line.utf8))
                #expect(message.serialized() == Array((line + "\r\n").utf8), "\(line)")
                #expect(line.utf8.count + 2 <= 512 + (message.tags.isEmpty ? 0 : 4096))
                if message.command == "353" { names += message.params[3].split(separator: " ") }
            }
            #expect(names.count == 63 && Set(names).count == 63, "\(request)")
            if id == full { #expect(names.allSatisfy { $0.contains("!u@127.0.0.1") }) }
            let replies = lines.filter { !$0.contains(" BATCH ") }
            #expect(replies.count > 2 && replies.last?.contains(" 366 ") == true)
            if request.hasPrefix("@label") {
                let open = try #require(lines.first)
                #expect(open.hasPrefix("@label=n1 :test.server BATCH +"))
                let reference = String(open.split(separator: "+").last!.split(separator: " ").first!)
                #expect(replies.allSatisfy { $0.hasPrefix("@batch=\(reference) :test.server 353 labelled = #lobby :") || $0.hasPrefix("@batch=\(reference) :test.server 366 ") })
                #expect(lines.last == ":test.server BATCH -\(reference)")
            } else {
                let nick = id == plain ? "plain" : id == full ? "full" : "labelled"
                #expect(replies.dropLast().allSatisfy { $0.hasPrefix(":test.server 353 \(nick) = #lobby :") })
            }
        }
        // A secret room's 353s say `@`; an operator's name carries its prefix (both with multi-prefix).
        h.send(full, "JOIN #hidden")
        h.send(plain, "JOIN #hidden")
        h.send(full, "MODE #hidden +sv plain")
        h.send(plain, "NAMES #hidden")
        #expect(sent(plain).first.map { Set($0.split(separator: ":").last!.split(separator: " ")) } == ["@full", "+plain"])
        #expect(sent(plain).first?.hasPrefix(":test.server 353 plain @ #hidden :") == true)
        h.send(full, "NAMES #hidden")
        #expect(sent(full).first.map { Set($0.split(separator: ":").last!.split(separator: " ")) } == ["@full!u@127.0.0.1", "+plain!u@127.0.0.1"])
    }

    @Test("bad lines: 417, NUL, empty, invalid UTF-8 delivered with replacement characters")
    func badLines() {
        var h = Harness()
        let alice = h.register("alice")
        let bob = h.register("bob")
        h.send(alice, "PRIVMSG bob :" + String(repeating: "x", count: 600))
        #expect(h.commands(to: alice) == ["417"])
        #expect(h.lines(to: bob).isEmpty)
        h.state.received(Array("PRIVMSG bob :a".utf8) + [0] + [98], from: alice, now: h.now)
        h.out = h.state.takeOutbox()
        #expect(h.commands(to: alice) == ["NOTICE"])
        h.send(alice, "")
        #expect(h.out.items.isEmpty)
        h.state.received(Array("PRIVMSG bob :caf".utf8) + [0xC3], from: alice, now: h.now)
        h.out = h.state.takeOutbox()
        #expect(h.lines(to: bob).isEmpty && h.commands(to: alice) == ["FAIL"])
        h.state.receivedOverlongLine(from: alice, discardedBytes: 9000)
        h.out = h.state.takeOutbox()
        #expect(h.commands(to: alice) == ["417"])
        #expect(h.out.logs.contains { $0.contains("9000 bytes") })
    }
}
