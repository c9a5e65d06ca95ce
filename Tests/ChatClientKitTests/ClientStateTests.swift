import Testing
@testable import ChatClientKit
import IRCWire

/// Feeds recorded server lines into a fresh state, as `alice`.
/// Every test also checks the shape's promise: a view built only from the published events
/// (as the screen builds its own) holds exactly what the client's own book holds.
func fold(_ lines: [String], nick: String = "alice", now: Double = 1000) -> (ClientState, [ClientEvent]) {
    var state = ClientState(nick: nick)
    var view = ConversationBook(nick: nick)
    var events: [ClientEvent] = []
    for line in lines {
        let produced = state.apply(try! IRCMessage(parsing: line), now: now)
        for event in produced { view.apply(event) }
        events += produced
    }
    #expect(view.conversations == state.book.conversations && view.order == state.book.order && view.nick == state.nick,
            "the view built from events drifted from the client's book")
    return (state, events)
}

let welcome = [
    ":srv 001 alice :Welcome to the network, alice!al@10.0.0.1",
    ":srv 005 alice CASEMAPPING=rfc1459 PREFIX=(ov)@+ CHANTYPES=# NICKLEN=30 :are supported",
    ":alice!al@10.0.0.1 JOIN #lobby",
    ":srv 353 alice = #lobby :@alice +bob",
    ":srv 353 alice = #lobby :carol",
    ":srv 366 alice #lobby :End of /NAMES list",
]

@Suite("client state")
struct ClientStateTests {
    @Test("registration, ISUPPORT and the member list from NAMES")
    func registration() throws {
        let (state, events) = fold(welcome)
        #expect(state.isRegistered && state.nick == "alice")
        #expect(state.ownSource == "alice!al@10.0.0.1")
        let room = try #require(state.conversation("#LOBBY"))
        #expect(room.isJoined && room.kind == .room)
        #expect(room.sortedMembers().map { $0.highestPrefix + $0.nick } == ["@alice", "+bob", "carol"])
        #expect(events.contains(.members(.room("#lobby"), [Member(nick: "alice", prefixes: "@"), Member(nick: "bob", prefixes: "+"), Member(nick: "carol")])))
        #expect(events.contains(.joined(.room("#lobby"), name: "#lobby", again: false)))
    }

    @Test("ChanServ's answer to /register shows where it was asked, not as a new direct conversation; nor is another nick's NOTICE")
    func serviceAnswerWhereAsked() throws {
        var state = ClientState(nick: "alice")
        for line in welcome { _ = state.apply(try IRCMessage(parsing: line), now: 1000) }
        state.replyConversation = .room("#lobby")
        let answer = state.apply(try IRCMessage(parsing: ":ChanServ!ChanServ@srv NOTICE alice :#lobby is registered to your account alice"), now: 1001)
        #expect(answer.contains { if case .line(.room("#lobby"), let line) = $0 { return line.text.hasPrefix("#lobby is registered") && !line.isHighlight } else { return false } })
        #expect(state.conversation("ChanServ") == nil)
        state.replyConversation = nil
        _ = state.apply(try IRCMessage(parsing: ":nickserv!NickServ@srv NOTICE alice :This nickname is registered"), now: 1002)
        #expect(state.book[.server]?.lines.last?.text == "This nickname is registered")
        // Another person's private notice opens no conversation: it is shown where one is looking
        // (irssi's active window), and in the conversation with them once there is one.
        state.lookingAt = .room("#lobby")
        _ = state.apply(try IRCMessage(parsing: ":bob!b@h NOTICE alice :psst"), now: 1003)
        #expect(state.conversation("bob") == nil)
        #expect(state.book[.room("#lobby")]?.lines.last?.text == "psst")
        #expect(state.book[.room("#lobby")]?.lines.last?.kind == .notice)
        _ = state.apply(try IRCMessage(parsing: ":bob!b@h PRIVMSG alice :hi"), now: 1004)
        _ = state.apply(try IRCMessage(parsing: ":bob!b@h NOTICE alice :psst again"), now: 1005)
        #expect(state.conversation("bob")?.lines.last?.text == "psst again")
    }

    @Test("JOIN, PART, QUIT and KICK keep the members current, with notices")
    func membership() throws {
        let (state, events) = fold(welcome + [
            ":dave!d@h JOIN #lobby",
            ":bob!b@h PART #lobby :later",
            ":carol!c@h QUIT :Ping timeout: 120 seconds",
            ":alice!al@h KICK #lobby dave :behave",
        ])
        let room = try #require(state.conversation("#lobby"))
        #expect(room.members.values.map(\.nick) == ["alice"])
        let texts = room.lines.map(\.text)
        #expect(texts.contains("dave joined #lobby"))
        #expect(texts.contains("bob left #lobby (later)"))
        #expect(texts.contains("carol quit (Ping timeout: 120 seconds)"))
        #expect(texts.contains("dave was kicked from #lobby by alice (behave)"))
        #expect(events.contains(.memberJoined(.room("#lobby"), Member(nick: "dave"))))
        #expect(events.contains(.memberLeft(.room("#lobby"), nick: "bob")))
        #expect(events.contains(.memberLeft(.room("#lobby"), nick: "carol")))
        #expect(events.contains(.memberLeft(.room("#lobby"), nick: "dave")))
    }

    @Test("a QUIT naming two servers is a netsplit, said as one; other reasons are not", arguments: [
        ("a.chat hub.test", "bob left in a netsplit (a.chat ⇄ hub.test)"),
        ("irc.example.org leaf.example.org", "bob left in a netsplit (irc.example.org ⇄ leaf.example.org)"),
        ("a.chat a.chat", "bob quit (a.chat a.chat)"),
        ("see you.later bye", "bob quit (see you.later bye)"),
        ("going home.", "bob quit (going home.)"),
        ("http://x.y z.w", "bob quit (http://x.y z.w)"),
        ("Ping timeout", "bob quit (Ping timeout)"),
    ])
    func netsplitQuit(_ reason: String, _ said: String) throws {
        let (state, events) = fold(welcome + [":bob!b@h QUIT :\(reason)"])
        #expect(try #require(state.conversation("#lobby")).lines.last?.text == said)
        #expect(events.contains(.memberLeft(.room("#lobby"), nick: "bob")))
    }

    @Test("direct messages open a conversation named after the sender; room messages go to the room")
    func messages() throws {
        let (state, _) = fold(welcome + [
            "@time=2026-11-29T10:00:00.000Z :bob!b@h PRIVMSG alice :hi alice",
            ":bob!b@h PRIVMSG #lobby :hello all",
            ":carol!c@h PRIVMSG #lobby :\u{1}ACTION waves\u{1}",
            ":carol!c@h PRIVMSG #lobby :ALICE: ping",
            ":srv NOTICE alice :*** server notice",
        ])
        let direct = try #require(state.conversation("Bob"))
        #expect(direct.kind == .direct && direct.name == "bob")
        #expect(direct.lines.last == ChatLine(time: ServerTime.parse("2026-11-29T10:00:00.000Z")!, kind: .message,
                                              sender: "bob", text: "hi alice", isHighlight: true))
        #expect(direct.unread == 1 && direct.mentioned)
        let room = try #require(state.conversation("#lobby"))
        #expect(room.lines.suffix(3).map(\.kind) == [.message, .action, .message])
        #expect(room.lines.last?.isHighlight == true && room.lines.suffix(3).first?.isHighlight == false)
        #expect(room.lines.suffix(2).first?.text == "waves")
        #expect(state[.server]?.lines.last?.text == "*** server notice")
    }

    @Test("echoed own messages land in the conversation with the target, marked as ours")
    func echo() throws {
        let (state, _) = fold(welcome + [":alice!al@h PRIVMSG bob :my message"])
        let direct = try #require(state.conversation("bob"))
        #expect(direct.lines.last?.isOwn == true && direct.unread == 0)
    }

    @Test("NICK renames members everywhere and moves the direct conversation")
    func nickChanges() throws {
        let (state, events) = fold(welcome + [
            ":bob!b@h PRIVMSG alice :hi",
            ":bob!b@h NICK robert",
            ":alice!al@h NICK alicia",
        ])
        #expect(state.nick == "alicia")
        #expect(events.contains(.nickChanged(old: "alice", new: "alicia")))
        #expect(state.conversation("bob") == nil)
        #expect(state.conversation("robert")?.lines.last?.text == "bob is now known as robert")
        let members = state.conversation("#lobby")!.sortedMembers().map { $0.highestPrefix + $0.nick }
        #expect(members == ["@alicia", "carol", "+robert"].sorted { a, b in
            // rank first, then name
            let rank: (String) -> Int = { $0.hasPrefix("@") ? 0 : $0.hasPrefix("+") ? 1 : 2 }
            return rank(a) != rank(b) ? rank(a) < rank(b) : a < b
        })
    }

    @Test("MODE changes prefixes; AWAY and WHO mark members away")
    func modesAndAway() throws {
        let (state, _) = fold(welcome + [
            ":alice!al@h MODE #lobby +o-v+v carol bob bob",
            ":alice!al@h MODE #lobby +l 10",
            ":srv 352 alice #lobby c h srv carol G@ :0 Carol",
            ":bob!b@h AWAY :lunch",
        ])
        let room = try #require(state.conversation("#lobby"))
        #expect(room.members["carol"]?.prefixes == "@")
        #expect(room.members["bob"]?.prefixes == "+")
        #expect(room.members["carol"]?.isAway == true && room.members["bob"]?.isAway == true)
        #expect(room.members["alice"]?.isAway == false)
    }

    @Test("room modes are read with the server's CHANMODES: keys, limits and flags kept, list changes skip their mask")
    func roomModesFromTable() throws {
        let (state, _) = fold(welcome + [
            ":srv 005 alice CHANMODES=beI,k,l,imnst :are supported",
            ":srv 324 alice #lobby +klnt sesame 25",
            ":alice!al@h MODE #lobby +b-l+mo *!*@evil carol",
            ":alice!al@h MODE #lobby -k+v * bob",
        ])
        let room = try #require(state.conversation("#lobby"))
        #expect(room.modes == ["n": "", "t": "", "m": ""])
        #expect(room.members["carol"]?.prefixes == "@", "the ban mask was consumed as +b's parameter, not taken for +o's")
        #expect(room.members["bob"]?.prefixes == "+")
    }

    @Test("a server's own CHANMODES decide which letters take parameters (InspIRCd's +j is type C there)")
    func foreignChanmodes() throws {
        let (state, _) = fold(welcome + [
            ":srv 005 alice CHANMODES=IXbegw,k,FHJLfjl,ACKMNOPQRSTUcimnprstz :are supported",
            ":alice!al@h MODE #lobby +jo 5:10 carol",
        ])
        #expect(state.conversation("#lobby")?.members["carol"]?.prefixes == "@")
        #expect(state.conversation("#lobby")?.modes["j"] == "5:10")
    }

    @Test("nicknames fold as the server's CASEMAPPING says")
    func casemappingFromServer() {
        let (rfc, _) = fold(welcome + [":srv 353 alice = #lobby :dan[1]", ":srv 366 alice #lobby :End"])
        #expect(rfc.casemapping == .rfc1459 && rfc.key(for: "DAN{1}") == rfc.key(for: "dan[1]"))
        let (ascii, _) = fold([":srv 001 alice :Welcome", ":srv 005 alice CASEMAPPING=ascii :are supported"])
        #expect(ascii.casemapping == .ascii && ascii.key(for: "DAN{1}") != ascii.key(for: "dan[1]"))
        #expect(ascii.key(for: "ZOË") == ascii.key(for: "zoë"), "non-ASCII letters fold under every mapping, as our server folds them")
    }

    @Test("multi-prefix names keep every prefix, highest first")
    func multiPrefix() {
        let (state, _) = fold(Array(welcome.prefix(3)) + [":srv 353 alice = #lobby :@+alice +bob", ":srv 366 alice #lobby :End"])
        #expect(state.conversation("#lobby")?.members["alice"]?.prefixes == "@+")
    }

    @Test("TOPIC and 332 set the topic")
    func topic() {
        let (state, events) = fold(welcome + [":srv 332 alice #lobby :Old topic", ":bob!b@h TOPIC #lobby :New topic"])
        #expect(state.conversation("#lobby")?.topic == "New topic")
        #expect(events.contains(.topic(.room("#lobby"), "New topic")))
    }

    @Test("a topic from before a rejoin goes when the server sends none (a restarted server); 331 clears it too")
    func topicGoneOnRejoin() {
        var (state, _) = fold(welcome + [":srv 332 alice #lobby :Old topic"])
        #expect(state.conversation("#lobby")?.topic == "Old topic")
        // The server restarted without the room: our JOIN, its names, and no 332.
        for line in [":alice!a@h JOIN #lobby", ":srv 353 alice = #lobby :@alice", ":srv 366 alice #lobby :End"] {
            _ = state.apply(try! IRCMessage(parsing: line), now: 1001)
        }
        #expect(state.conversation("#lobby")?.topic == "")
        _ = state.apply(try! IRCMessage(parsing: ":srv 332 alice #lobby :Set again"), now: 1002)
        #expect(state.conversation("#lobby")?.topic == "Set again")
        _ = state.apply(try! IRCMessage(parsing: ":srv 331 alice #lobby :No topic is set"), now: 1003)
        #expect(state.conversation("#lobby")?.topic == "")
        #expect(state[.room("#lobby")]?.lines.last?.text.contains("No topic is set") == true)
    }

    @Test("numeric errors read as sentences and go to the conversation they are about")
    func errors() throws {
        let (state, _) = fold(welcome + [":srv 401 alice bob :No such nick/channel", ":srv 404 alice #lobby :Cannot send to channel"])
        #expect(state[.server]?.lines.last == ChatLine(time: 1000, kind: .error, text: "bob: No such nick/channel"))
        #expect(state.conversation("#lobby")?.lines.last?.text == "#lobby: Cannot send to channel")
    }

    @Test("replies to a query go to the conversation it was typed in")
    func replyConversation() {
        var (state, _) = fold(welcome)
        state.replyConversation = .room("#lobby")
        _ = state.apply(try! IRCMessage(parsing: ":srv 311 alice bob b host * :Bob B"), now: 1000)
        _ = state.apply(try! IRCMessage(parsing: ":srv 318 alice bob :End of /WHOIS list"), now: 1000)
        _ = state.apply(try! IRCMessage(parsing: ":srv 372 alice :- motd line"), now: 1000)
        #expect(state.conversation("#lobby")!.lines.suffix(2).map(\.text) == ["bob is b@host (Bob B)", "bob: End of /WHOIS list"])
        #expect(state[.server]?.lines.last?.text == "- motd line", "unrelated numerics stay in the server window")
    }

    @Test("a refused /nick bob shows where it was typed, not in the conversation with bob; so do /away and /whois about someone with a conversation")
    func feedbackWhereTyped() {
        var (state, _) = fold(welcome + [":bob!b@h PRIVMSG alice :hi"])
        state.replyConversation = .room("#lobby")
        for line in [":srv 433 alice bob :Nickname is already in use", ":srv 306 alice :You have been marked as being away",
                     ":srv 311 alice bob b host * :Bob B"] {
            _ = state.apply(try! IRCMessage(parsing: line), now: 1000)
        }
        #expect(state.conversation("#lobby")!.lines.suffix(3).map(\.text) == ["bob: Nickname is already in use", "You have been marked as being away", "bob is b@host (Bob B)"])
        #expect(state.conversation("bob")!.lines.map(\.text) == ["hi"])
    }

    @Test("a lost connection keeps rooms and their members (greyed) for rejoining, and marks where it dropped and came back")
    func connectionLost() {
        var (state, _) = fold(welcome + [":bob!b@h PRIVMSG alice :hi"])
        let events = state.connectionLost(reason: "connection reset", now: 2000).events
        #expect(state.conversation("#lobby")?.isJoined == false && state.conversation("#lobby")?.awaitingRejoin == true)
        #expect(state.conversation("#lobby")?.members.count == 3, "the list stays, greyed, until NAMES replaces it")
        #expect(state.rooms.map(\.name) == ["#lobby"])
        #expect(events.first == .connectionLost)
        let marked: [ConversationID] = events.compactMap { if case .line(let id, _) = $0 { return id } else { return nil } }
        #expect(marked == [.room("#lobby"), .direct("bob")],
                "one marker in #lobby, one in the conversation with bob")
        #expect(state.conversation("bob")?.lines.last?.text == "── connection lost: connection reset — what you type is held until it is back ──")
        // A failed retry adds nothing; coming back marks the same conversations.
        #expect(state.connectionLost(reason: "refused", now: 2001).events == [.connectionLost])
        // The welcome marks them (the reducer's welcome step), once.
        let back = state.apply(try! IRCMessage(parsing: ":srv 001 alice :Welcome"), now: 2002)
        #expect(back.filter { if case .line(_, let line) = $0 { return line.text.hasPrefix("── connected again") } else { return false } }.count == 2)
        #expect(state.connectionBack(now: 2002).isEmpty, "said once")
        #expect(state.conversation("#lobby")?.lines.last?.text == "── connected again: what was said meanwhile is unknown (this server keeps no history) ──",
                "a server without chathistory: nothing can fill the gap")
        _ = state.apply(try! IRCMessage(parsing: ":alice!a@h JOIN #lobby"), now: 2003)
        #expect(state.conversation("#lobby")?.members.count == 3 && state.conversation("#lobby")?.awaitingRejoin == false)
        _ = state.apply(try! IRCMessage(parsing: ":srv 353 alice = #lobby :@alice carol"), now: 2003)
        _ = state.apply(try! IRCMessage(parsing: ":srv 366 alice #lobby :End"), now: 2003)
        #expect(state.conversation("#lobby")?.members.count == 2, "NAMES replaces the old list")
    }

    @Test("a mention is the nickname as a word under the server's casemapping; most lines are ruled out over bytes, with the same answers")
    func mentionsAsWords() {
        let state = ClientState(nick: "Al[ice]")
        let yes = ["al{ice}: hi", "hey AL[ICE]!", "中文 al[ice] 🎉", "(al{ICE})", "x al[ice]"]
        let no = ["alice", "al[ice]x", "xal[ice]", "hello all", "al[ic", "中文 🎉", ""]
        for text in yes { #expect(state.mentions(text), "\(text)") }
        for text in no { #expect(!state.mentions(text), "\(text)") }
        #expect(!Casemapping.rfc1459.mayHold("al{ice}", in: "hello all 中文") && Casemapping.rfc1459.mayHold("al{ice}", in: "AL[ICE]"))
        // The Kelvin sign folds to an ASCII k: such a line is walked, and mentions "kate".
        let kate = ClientState(nick: "kate")
        #expect(kate.mentions("\u{212A}ate: hi") && Casemapping.rfc1459.mayHold("kate", in: "x \u{212A}"))
        #expect(ClientState(nick: "zoë").mentions("ZOË: hi") && !ClientState(nick: "zoë").mentions("zoe: hi"))
    }

    @Test("scrollback is bounded")
    func scrollback() {
        var state = ClientState(nick: "alice", scrollbackLimit: 100)
        for i in 0..<1000 { state.line(ChatLine(time: 0, kind: .message, sender: "bob", text: "\(i)"), to: .direct("bob")) }
        let lines = state.conversation("bob")!.lines
        #expect(lines.count <= 100 + 100 / 8 && lines.count >= 100)
        #expect(lines.last?.text == "999")
        // Its array is not doubled past where it is cut back (a doubled one was up to 60 % empty).
        #expect(lines.capacity < 100 + 100 / 8 + 16, "capacity \(lines.capacity)")
    }
}

@Suite("message splitting")
struct SplitterTests {
    @Test("pieces fit the byte budget and cut between characters", arguments: [
        String(repeating: "a", count: 1000), String(repeating: "中", count: 400), String(repeating: "👨‍👩‍👧 ", count: 100),
        String(repeating: "word ", count: 300), "e\u{301}" + String(repeating: "e\u{301}", count: 300),
    ])
    func split(_ text: String) {
        let pieces = MessageSplitter.split(text, maxBytes: 400)
        #expect(pieces.allSatisfy { $0.utf8.count <= 400 })
        let joined = pieces.joined()
        // Splitting at a space drops that one space; nothing else is lost.
        #expect(joined.filter { $0 != " " } == text.filter { $0 != " " })
        #expect(pieces.count > 1)
    }

    @Test("short text is one piece")
    func short() { #expect(MessageSplitter.split("hello", maxBytes: 400) == ["hello"]) }

    @Test("the budget leaves room for the prefix the server adds")
    func budget() {
        let max = MessageSplitter.maxTextBytes(target: "#lobby", source: "alice!al@127.0.0.1")
        let line = IRCMessage(source: "alice!al@127.0.0.1", command: "PRIVMSG", params: ["#lobby", String(repeating: "x", count: max)])
        #expect(line.serialized().count == 512)
    }
}

@Suite("reconnect policy")
struct ReconnectPolicyTests {
    @Test("doubles from 1 s to 60 s, jitter within ±20 %")
    func backoff() {
        let policy = ReconnectPolicy()
        #expect(policy.delay(attempt: 1, random: 0.5) == 1)
        #expect(policy.delay(attempt: 2, random: 0.5) == 2)
        #expect(policy.delay(attempt: 6, random: 0.5) == 32)
        #expect(policy.delay(attempt: 7, random: 0.5) == 60)
        #expect(policy.delay(attempt: 50, random: 0.5) == 60)
        #expect(policy.delay(attempt: 3, random: 0) == 3.2)
        #expect(abs(policy.delay(attempt: 3, random: 0.9999) - 4.8) < 0.001)
    }
}

@Suite("plain text")
struct PlainTextTests {
    @Test("controls are shown, formatting is removed", arguments: [
        ("\u{1B}[2J\u{1B}]0;pwned\u{7}", "^[[2J^[]0;pwned^G"),
        ("\u{2}bold\u{2} \u{3}4,12red\u{3} \u{1F}u\u{F}", "bold red u"),
        ("\u{3}04x\u{3}9,1y \u{3},z", "xy ,z"),
        ("tab\there", "tab^Ihere"),
        ("c1 \u{9B}31m", "c1 <U+009B>31m"),
        ("中文 emoji 😀 e\u{301}", "中文 emoji 😀 e\u{301}"),
    ])
    func visible(_ input: String, _ expected: String) {
        #expect(PlainText.visible(input) == expected)
    }
}

@Suite("the rooms kept for the next start (issue 46)")
struct JoinedRoomsTests {
    @Test("the file: one room a line, hostile network names kept inside the directory, anything not a room skipped, 200 at most")
    func file() {
        #expect(JoinedRooms.path(directory: "/d", network: "irc.libera.chat:6697") == "/d/irc.libera.chat:6697")
        #expect(JoinedRooms.path(directory: "/d", network: "../../etc/passwd") == "/d/%2E.%2F..%2Fetc%2Fpasswd")
        #expect(JoinedRooms.path(directory: "/d", network: "a b\n") == "/d/a%20b%0A")
        #expect(JoinedRooms.rooms("#a\nnot a room\n#b\n#a\n&local\n") == ["#a", "#b", "&local"])
        let many = (1...300).map { "#r\($0)" }
        #expect(JoinedRooms.rooms(JoinedRooms.text(many)).count == JoinedRooms.limit)
        #expect(JoinedRooms.merged(["#Rust", "#go"], ["#rust", "#swift"]) == ["#Rust", "#go", "#swift"])
    }

    @Test("JOIN and PART change the rooms kept; a room that refuses us for good (474, 403, 479) leaves them, a full one does not")
    func wanted() throws {
        var config = ClientConfig(host: "h", port: 6667, nick: "alice")
        config.rooms = ["#kept", "#banned", "#full"]
        var state = ClientState(config: config)
        for line in [":srv 001 alice :Welcome", ":srv 005 alice CHANTYPES=# :are supported"] { _ = state.apply(try IRCMessage(parsing: line), now: 1000) }
        _ = state.command(IRCMessage("JOIN", "#new"), connected: true)
        _ = state.command(IRCMessage("PART", "#kept"), connected: true)
        _ = state.apply(try IRCMessage(parsing: ":srv 474 alice #banned :Cannot join channel (+b)"), now: 1001)
        _ = state.apply(try IRCMessage(parsing: ":srv 471 alice #full :Cannot join channel (+l)"), now: 1001)
        #expect(state.wantedRooms == ["#full", "#new"])
    }

    @Test("a ban list entry reads with who set it and when, not a Unix time")
    func banList() throws {
        var state = ClientState(nick: "alice")
        for line in [":srv 001 alice :Welcome", ":alice!a@h JOIN #lobby"] { _ = state.apply(try IRCMessage(parsing: line), now: 1000) }
        state.replyConversation = .room("#lobby")
        _ = state.apply(try IRCMessage(parsing: ":srv 367 alice #lobby *!*@bad.example bob 1796494860"), now: 1001)
        #expect(state.book[.room("#lobby")]?.lines.last?.text == "#lobby *!*@bad.example set by bob on 2026-12-05 18:21 UTC")
    }

    @Test("/ctcp to yourself is answered, and the answer shown; your request to someone else is not answered by you")
    func selfCTCP() throws {
        var state = ClientState(nick: "alice")
        for line in [":srv 001 alice :Welcome", ":srv 005 alice CHANTYPES=# :are supported"] { _ = state.apply(try IRCMessage(parsing: line), now: 1000) }
        let asked = state.receive(try IRCMessage(parsing: "@msgid=q1 :alice!a@h PRIVMSG alice :\u{1}VERSION\u{1}"), now: 1001)
        #expect(asked.actions.contains { if case .send(let m) = $0 { return m.command == "NOTICE" && m.params[0] == "alice" && m.params[1].hasPrefix("\u{1}VERSION chat-tui") } else { return false } })
        // Its second copy (echo-message: the echo and the delivery) is not answered again.
        let again = state.receive(try IRCMessage(parsing: "@msgid=q1 :alice!a@h PRIVMSG alice :\u{1}VERSION\u{1}"), now: 1001)
        #expect(!again.actions.contains { if case .send = $0 { return true } else { return false } })
        let echoed = state.receive(try IRCMessage(parsing: ":alice!a@h PRIVMSG bob :\u{1}VERSION\u{1}"), now: 1002)
        #expect(!echoed.actions.contains { if case .send = $0 { return true } else { return false } })
        for _ in 0..<2 { _ = state.apply(try IRCMessage(parsing: "@msgid=r1 :alice!a@h NOTICE alice :\u{1}VERSION chat-tui 0.1\u{1}"), now: 1003) }
        #expect(state.book.orderedConversations.flatMap(\.lines).filter { $0.text == "CTCP VERSION reply from alice: chat-tui 0.1" }.count == 1)
        // A PING's round trip in milliseconds under a second.
        _ = state.apply(try IRCMessage(parsing: ":bob!b@h NOTICE alice :\u{1}PING 1800000000000\u{1}"), now: 1_800_000_000.004)
        #expect(state.book.orderedConversations.flatMap(\.lines).contains { $0.text == "CTCP PING reply from bob: 4 ms" })
    }
}

@Suite("missed while away (issue 46, second tour)")
struct MissedWhileAwayTests {
    @Test("a room's history on joining: what was said after the newest line we had shown is news (unread, a mention !), what came before is old news")
    func missedIsNews() throws {
        var state = ClientState(nick: "alice")
        state.seenUntil[.room("#lobby")] = ServerTime.parse("2026-12-05T10:00:00.000Z")
        for line in [":srv 001 alice :Welcome", ":srv 005 alice CHANTYPES=# :are supported", ":alice!a@h JOIN #lobby",
                     ":srv BATCH +h chathistory #lobby",
                     "@batch=h;time=2026-12-05T09:59:00.000Z;msgid=a :bob!b@h PRIVMSG #lobby :alice: before you left",
                     "@batch=h;time=2026-12-05T10:01:00.000Z;msgid=b :bob!b@h PRIVMSG #lobby :alice: ping while you were gone",
                     "@batch=h;time=2026-12-05T10:02:00.000Z;msgid=c :carol!c@h PRIVMSG #lobby :other news",
                     ":srv BATCH -h"] {
            _ = state.apply(try IRCMessage(parsing: line), now: 1000)
        }
        let room = try #require(state.book[.room("#lobby")])
        #expect(room.unread == 2 && room.mentioned)
        let before = try #require(room.lines.first { $0.msgid == "a" }), missed = try #require(room.lines.first { $0.msgid == "b" })
        #expect(before.isOldNews && !before.isHighlight)
        #expect(!missed.isOldNews && missed.isHighlight)
        // Without anything seen before (a first join), the history is old news, as before.
        var fresh = ClientState(nick: "alice")
        for line in [":srv 001 alice :Welcome", ":alice!a@h JOIN #lobby", ":srv BATCH +h chathistory #lobby",
                     "@batch=h;time=2026-12-05T10:01:00.000Z;msgid=b :bob!b@h PRIVMSG #lobby :alice: hello", ":srv BATCH -h"] {
            _ = fresh.apply(try IRCMessage(parsing: line), now: 1000)
        }
        #expect(fresh.book[.room("#lobby")]?.unread == 0)
    }
}
