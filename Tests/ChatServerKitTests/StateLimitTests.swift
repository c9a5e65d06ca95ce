import Testing
@testable import ChatServerKit
import IRCWire

@Suite("server state: advertised limits and bad input")
struct StateLimitTests {
    @Test("a line over 512 bytes gets 417 and nothing of it is done")
    func overlong() {
        var h = Harness()
        let alice = h.register("alice")
        let bob = h.register("bob")
        h.send(alice, "PRIVMSG bob :" + String(repeating: "x", count: 600))
        #expect(h.lines(to: alice) == [":test.server 417 alice :Input line was too long"])
        #expect(h.lines(to: bob).isEmpty)
    }

    @Test("client tags over 4094 bytes get 417; within the limit they are relayed")
    func tagLimit() {
        var h = Harness()
        let alice = h.register("alice", caps: ["message-tags"])
        let bob = h.register("bob", caps: ["message-tags"])
        h.send(alice, "@+big=" + String(repeating: "v", count: 4100) + " PRIVMSG bob :hi")
        #expect(h.lines(to: alice) == [":test.server 417 alice :Input line was too long"])
        #expect(h.lines(to: bob).isEmpty)
        h.send(alice, "@+ok=" + String(repeating: "v", count: 4000) + " PRIVMSG bob :hi")
        #expect(h.out.messages(to: bob).first?.tag("+ok")?.count == 4000)
    }

    @Test("tag keys with a CR, an ESC or other bytes outside the grammar are dropped, the message kept")
    func tagKeys() {
        var h = Harness()
        let alice = h.register("alice", caps: ["message-tags"])
        let bob = h.register("bob", caps: ["message-tags"])
        h.send(alice, "@+bad\rkey=1;+e\u{1B}[31m=2;+good=3;+vendor.example/x=4 PRIVMSG bob :hi")
        let tags = h.out.messages(to: bob).first?.tags.map(\.key).filter { $0 != "msgid" } ?? []
        #expect(tags == ["+good", "+vendor.example/x"])
    }

    @Test("USER with an empty real name or username gets 461")
    func emptyRealname() {
        var h = Harness()
        let id = h.connect()
        h.send(id, "NICK alice", "USER x 0 * :")
        #expect(h.lines(to: id) == [":test.server 461 alice USER :Not enough parameters"])
        h.send(id, "USER x 0 * :Alice")
        #expect(h.commands(to: id).first == "001")
    }

    @Test("TARGMAX: 5 PRIVMSG or KICK targets get 407; JOIN takes many")
    func targetLimits() {
        var h = Harness()
        let alice = h.register("alice")
        _ = h.register("bob")
        h.send(alice, "PRIVMSG a,b,c,d,e :x")
        #expect(h.commands(to: alice) == ["407"])
        h.send(alice, "KICK #lobby a,b,c,d,e")
        #expect(h.commands(to: alice) == ["407"])
        h.send(alice, "JOIN " + (0..<11).map { "#r\($0)" }.joined(separator: ","))
        #expect(h.commands(to: alice).filter { $0 == "JOIN" }.count == 11, "JOIN is bounded by CHANLIMIT, not TARGMAX")
    }

    @Test("a target named twice gets one copy")
    func duplicateTargets() {
        var h = Harness()
        let alice = h.register("alice")
        let bob = h.register("bob")
        h.send(alice, "PRIVMSG bob,BOB,bob,bob :once")
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 PRIVMSG bob :once"])
        h.send(alice, "PRIVMSG #lobby,#LOBBY :once")
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 PRIVMSG #lobby :once"])
    }

    @Test("NOTICE never gets an automatic reply, not even an error")
    func noticeIsQuiet() {
        var h = Harness { $0.room = nil }
        let alice = h.register("alice")
        let bob = h.register("bob")
        h.send(bob, "JOIN #closed")
        h.send(bob, "AWAY :gone")
        for line in ["NOTICE ghost :x", "NOTICE #nowhere :x", "NOTICE #closed :x", "NOTICE a,b,c,d,e :x", "NOTICE bob", "NOTICE bob :away?"] {
            h.send(alice, line)
            #expect(h.lines(to: alice).isEmpty, "\(line) must not be answered")
        }
    }

    @Test("NICK change cost: the announcement goes only to those who share a room")
    func nickAnnouncement() {
        var h = Harness { $0.room = nil }
        let alice = h.register("alice")
        let bob = h.register("bob")
        let carol = h.register("carol")
        h.send(alice, "JOIN #a")
        h.send(bob, "JOIN #a")
        h.send(alice, "NICK alicia")
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 NICK alicia"])
        #expect(h.lines(to: carol).isEmpty)
    }
}

/// A nickname tried while `alice`, `bob` and `Zoë` are online, and whether it gets in.
struct NickCase: CustomTestStringConvertible, Sendable {
    let nick: String
    let numeric: String?
    let note: String
    var testDescription: String { note }
}

let impersonationCases: [NickCase] = [
    NickCase(nick: "bоb", numeric: "432", note: "bob with a Cyrillic о"),
    NickCase(nick: "аlice", numeric: "432", note: "alice with a Cyrillic а first"),
    NickCase(nick: "alicе", numeric: "432", note: "alice with a Cyrillic е last"),
    NickCase(nick: "aliсe", numeric: "432", note: "alice with a Cyrillic с"),
    NickCase(nick: "ａｌｉｃｅ", numeric: "432", note: "fullwidth alice"),
    NickCase(nick: "𝐚𝐥𝐢𝐜𝐞", numeric: "432", note: "mathematical bold alice"),
    NickCase(nick: "alice\u{034F}", numeric: "432", note: "alice + combining grapheme joiner"),
    NickCase(nick: "\u{3164}", numeric: "432", note: "only a Hangul filler U+3164"),
    NickCase(nick: "\u{115F}", numeric: "432", note: "only a Hangul filler U+115F"),
    NickCase(nick: "\u{FFA0}", numeric: "432", note: "only a halfwidth Hangul filler"),
    NickCase(nick: "\u{0301}\u{0301}", numeric: "432", note: "only combining marks"),
    NickCase(nick: "bo\u{200B}b", numeric: "432", note: "zero-width space inside"),
    NickCase(nick: "bob\u{202E}", numeric: "432", note: "bidi override"),
    NickCase(nick: "ALICE", numeric: "433", note: "alice in capitals is the same name"),
    NickCase(nick: "ZOË", numeric: "433", note: "Zoë in capitals"),
    NickCase(nick: "Zoe\u{0308}", numeric: "433", note: "Zoë decomposed"),
    NickCase(nick: "pаypal", numeric: "432", note: "mixed Latin and Cyrillic"),
    NickCase(nick: "NickServ", numeric: "432", note: "a reserved name"),
    NickCase(nick: "NіckServ", numeric: "432", note: "a look-alike of a reserved name"),
    NickCase(nick: "robert", numeric: nil, note: "a different name gets in"),
    NickCase(nick: "小明", numeric: nil, note: "Chinese"),
    NickCase(nick: "Ελένη", numeric: nil, note: "Greek"),
    NickCase(nick: "alicia", numeric: nil, note: "a longer name"),
]

@Test("nicknames that impersonate someone online are refused", arguments: impersonationCases)
func impersonation(_ c: NickCase) {
    var h = Harness()
    _ = h.register("alice")
    _ = h.register("bob")
    _ = h.register("Zoë")
    let id = h.connect()
    h.send(id, "NICK \(c.nick)")
    if let numeric = c.numeric {
        #expect(h.commands(to: id) == [numeric], "\(c.note)")
    } else {
        h.send(id, "USER x 0 * :X")
        #expect(h.commands(to: id).first == "001", "\(c.note)")
    }
}

@Test("the 432 reason names the look-alike")
func impersonationReason() {
    var h = Harness()
    _ = h.register("bob")
    let id = h.connect()
    h.send(id, "NICK ｂｏｂ")
    #expect(h.lines(to: id) == [":test.server 432 * ｂｏｂ :Nickname looks too much like bob, who is online"])
    h.send(id, "NICK bоb")
    #expect(h.lines(to: id) == [":test.server 432 * bоb :Nickname looks too much like bob, who is online"],
            "the look-alike is named before the script mix")
    h.send(id, "NICK pаypal")
    #expect(h.lines(to: id).first?.hasSuffix("Nickname mixes Latin and Cyrillic letters (а, U+0430, is Cyrillic)") == true)
}

@Test("a look-alike name is free once its owner leaves; a renamed owner frees the old skeleton")
func impersonationReleased() {
    var h = Harness()
    let bob = h.register("bob")
    h.send(bob, "NICK robert")
    let id = h.connect()
    h.send(id, "NICK ｂｏｂ")
    #expect(h.commands(to: id).isEmpty, "bob is no longer online, so nothing to impersonate")
}

@Test("[ and { are one letter under rfc1459, for nicknames and rooms")
func rfc1459Brackets() {
    var h = Harness()
    let alice = h.register("dan[1]")
    let other = h.connect()
    h.send(other, "NICK DAN{1}")
    #expect(h.commands(to: other) == ["433"])
    h.send(alice, "JOIN #a[b]")
    let bob = h.register("bob")
    h.send(bob, "JOIN #A{B}")
    #expect(h.lines(to: alice) == [":bob!u@127.0.0.1 JOIN #a[b]"])
}

@Test("room names: look-alikes of an existing room and invisible or control characters are refused", arguments: [
    "#lobby\u{200B}", "#lobbу", "#lo\u{202E}bby", "#a\u{009B}b", "#ｌｏｂｂｙ",
])
func roomImpersonation(_ name: String) {
    var h = Harness()
    let alice = h.register("alice")
    h.send(alice, "JOIN \(name)")
    #expect(h.commands(to: alice) == ["479"])
}

@Suite("connection limits")
struct ConnectionLimitTests {
    @Test("16 connections from one address at once; the 17th is told why and closed; one leaving makes room")
    func perAddress() {
        var h = Harness()
        var open: [ConnectionID] = []
        for _ in 0..<16 {
            let id = h.connect(from: "198.51.100.7")
            #expect(h.state.sessionCount(for: id))
            open.append(id)
        }
        let refused = h.connect(from: "198.51.100.7")
        #expect(!h.state.sessionCount(for: refused))
        h.send(open[0], "QUIT")
        let again = h.connect(from: "198.51.100.7")
        #expect(h.state.sessionCount(for: again), "a slot freed by a departure")
    }

    @Test("32 new connections per address per 10 minutes; a /64 is one address; loopback is exempt")
    func newPerWindow() {
        var h = Harness()
        for i in 0..<32 {
            let id = h.connect(from: "2001:db8:5:6::\(i + 1)")
            h.send(id, "QUIT")
        }
        let refused = h.connect(from: "2001:db8:5:6::99")
        #expect(!h.state.sessionCount(for: refused))
        for _ in 0..<100 {
            let local = h.connect()
            #expect(h.state.sessionCount(for: local))
        }
        h.now += 601
        h.state.tick(now: h.now)
        let later = h.connect(from: "2001:db8:5:6::99")
        #expect(h.state.sessionCount(for: later), "ten minutes later")
    }

    @Test("the refusal is an ERROR saying why, logged once per address")
    func told() {
        var h = Harness { $0.connectionLimits = ConnectionLimits(perAddress: 1, newPerWindow: 10) }
        _ = h.connect(from: "203.0.113.5")
        var logs: [String] = []
        for _ in 0..<3 {
            let id = ConnectionID(UInt64(h.state.people.sessions.count + 100))
            h.state.connected(id, host: "203.0.113.5", peer: "203.0.113.5:1", now: h.now)
            let out = h.state.takeOutbox()
            logs += out.logs.filter { $0.contains("refused") }
            #expect(out.messages(to: id).map(\.line) == ["ERROR :Closing Link: 203.0.113.5 (Too many connections from your address (1))"])
        }
        #expect(logs.count == 1)
    }
}

extension ServerState {
    /// Whether the connection is still open (admitted).
    func sessionCount(for id: ConnectionID) -> Bool { people.sessions[id] != nil }
}

@Suite("server state: connections that never register (issue 23, item 3)")
struct UnregisteredFloodTests {
    @Test("at the cap, a newcomer from an unseen network gets in: the oldest of the most crowded network is closed; each network has a share; the timeout shortens under pressure")
    func newcomerAlwaysGetsIn() {
        var h = Harness {
            $0.connectionLimits = ConnectionLimits(perAddress: 16, newPerWindow: 32, unregistered: 40)
            $0.connectionLimits!.unregisteredPerBlock = 16
            $0.registrationTimeout = 60
            $0.connectionLimits!.registrationTimeoutUnderPressure = 10
        }
        // Three networks of silent connections fill the cap: 16 + 16 + 8.
        var silent: [ConnectionID] = []
        for block in 0..<3 {
            for n in 0..<(block < 2 ? 16 : 8) { silent.append(h.connect(from: "198.51.\(block).\(n % 8 + 1)")) }
        }
        #expect(h.state.gate.unregisteredConnections == 40)
        // The share: a seventeenth from the first network is refused.
        let extra = h.connect(from: "198.51.0.9")
        #expect(h.state.people.sessions[extra] == nil)
        // A newcomer from elsewhere: the oldest of a crowded network goes, the newcomer registers.
        h.state.connected(ConnectionID(999), host: "203.0.113.7", peer: "203.0.113.7:5000", now: h.now)
        let admitted = h.state.takeOutbox()
        #expect(admitted.closed == [silent[0]], "the oldest of the first crowded network")
        #expect(h.state.people.sessions[ConnectionID(999)] != nil)
        h.send(ConnectionID(999), "NICK newcomer", "USER u 0 * :n")
        #expect(h.commands(to: ConnectionID(999)).contains("001"))
        // Under pressure (over half the cap) a silent connection is closed after 10 s, not 60.
        let closed = h.tick(advance: 11).closed
        #expect(closed.count == 39, "every silent one left")
        #expect(h.state.gate.unregisteredConnections == 0 && h.state.gate.unregisteredByBlock.isEmpty)
    }

    @Test("below half the cap, the registration timeout is the configured one")
    func fullTimeoutWhenCalm() {
        var h = Harness {
            $0.connectionLimits = ConnectionLimits(unregistered: 40)
            $0.registrationTimeout = 60
        }
        let quiet = h.connect(from: "198.51.100.1")
        #expect(h.tick(advance: 30).closed.isEmpty)
        #expect(h.tick(advance: 31).closed == [quiet])
    }
}
