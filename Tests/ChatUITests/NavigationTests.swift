import Testing
@testable import ChatUI
@testable import ChatClientKit
import IRCWire

/// alice in three rooms of `size` people each (names like dev7), plus a direct conversation with unread lines.
func threeRooms(size: Int, width: Int = 60, height: Int = 16) -> ChatModel {
    var lines = [":srv 001 alice :Welcome alice!a@h", ":srv 005 alice PREFIX=(ov)@+ CHANTYPES=# :are supported"]
    for room in ["lobby", "dev", "ops"] {
        lines.append(":alice!a@h JOIN #\(room)")
        let names = (1...size).map { "\(room)\($0)" }
        lines.append(":srv 353 alice = #\(room) :@alice " + names.joined(separator: " "))
        lines.append(":srv 366 alice #\(room) :End")
    }
    var state = ClientState(nick: "alice")
    for line in lines { _ = state.apply(try! IRCMessage(parsing: line), now: 36300) }
    var model = ChatModel(state: state.book, width: width, height: height)
    model.everRegistered = true
    model.status = .registered(nick: "alice")
    model.selection = .conversation(.room("#lobby"))
    model.currentRoom = "#lobby"
    return model
}

@Suite("picking recipients")
struct NavigationTests {
    @Test("with three rooms of forty, every member of the second room is reachable with Down, none by opening anything")
    func reachEveryone() {
        var model = threeRooms(size: 40)
        var seen: [String] = []
        var opened: [UICommand] = []
        // Down to the last row (the list ends: Down moves no further).
        var before: SidebarItem
        repeat {
            before = model.selection
            opened += model.update(.key(.down))
            if case .user(let nick, .room("#dev")) = model.selection { seen.append(nick) }
        } while model.selection != before
        #expect(Set(seen) == Set((1...40).map { "dev\($0)" }))
        #expect(opened.isEmpty, "walking the list opens no conversation and marks nothing read")
        #expect(!model.state.orderedConversations.contains { $0.kind == .direct })
    }

    @Test("the whole screen with a member of the second room picked")
    func goldenSecondRoom() {
        var model = threeRooms(size: 2, width: 60, height: 14)
        for _ in 0..<4 { _ = model.update(.key(.down)) }
        #expect(model.selection == .user("dev1", room: .room("#dev")))
        // The sidebar keeps the picked row in view (#lobby has scrolled off the top).
        expectScreen(model, [
            " dev1 (new direct conversation; showing #dev)               ",
            "                                               │ @alice…    ",
            "                                               │  lobby1    ",
            "                                               │  lobby2    ",
            "                                               │3 #dev      ",
            "                                               │ @alice…    ",
            "                                               │  dev1      ",
            "                                               │  dev2      ",
            "                                               │4 #ops      ",
            "                                               │ @alice…    ",
            "                                               │  ops1      ",
            "10:05 -!- You joined #dev                      │  ops2      ",
            " alice │ connected │ Enter sends to dev1 (new)              ",
            ">                                                           ",
        ])
        #expect(draw(model)[48, 6].style.reverse, "the picked row is highlighted")
    }

    @Test("a draft stays with its conversation: Up and Down walk earlier lines while the input has text")
    func draftStays() {
        var model = threeRooms(size: 3)
        model.editor.set("sent earlier")
        _ = model.update(.key(.enter))
        for character in "half typed" { _ = model.update(.key(.character(character))) }
        _ = model.update(.key(.up))
        #expect(model.selection == .conversation(.room("#lobby")) && model.target == "#lobby")
        #expect(model.editor.text == "sent earlier", "Up recalls the previous line, as in irssi")
        _ = model.update(.key(.down))
        #expect(model.editor.text == "half typed", "Down returns to the draft")
        #expect(model.update(.key(.enter)).last == .send(text: "half typed", to: "#lobby"))
    }

    @Test("a conversation is marked read when the selection rests on it for a second, not when walked past")
    func dwellMarksRead() {
        var model = threeRooms(size: 1)
        model.receive(":dev1!d@h PRIVMSG #dev :unread", now: 36300)
        model.now = 100
        for _ in 0..<2 { _ = model.update(.key(.down)) }
        #expect(model.selection == .conversation(.room("#dev")))
        #expect(model.update(.tick(now: 100.5)).isEmpty)
        #expect(model.update(.tick(now: 101.1)) == [.markRead(.room("#dev"))])
    }
}

@Test("the view stays with the person you talk to when they change nickname")
func viewFollowsRename() {
    var model = threeRooms(size: 2)
    model.receive(":dev1!d@h PRIVMSG alice :hello", now: 36300)
    model.selection = .conversation(.direct("dev1"))
    model.receive(":dev1!d@h NICK zed", now: 36301)
    model.reconcileSelection()
    #expect(model.selection == .user("zed", room: .room("#dev")) || model.selection == .conversation(.direct("zed")))
    #expect(model.target == "zed" && model.viewedConversation?.name == "zed")
    model.selection = .user("lobby1", room: .room("#lobby"))
    model.receive(":lobby1!l@h NICK aaa", now: 36302)
    model.reconcileSelection()
    #expect(model.selection == .user("aaa", room: .room("#lobby")))
}

@Suite("the host's own screen")
struct HostScreenTests {
    static func host() -> ChatModel {
        var model = lobbyModel()
        model.hostHint = ["Hosting your room on port 6667. Others join with:", "  chat-tui --host 192.168.1.5    (or irssi -c 192.168.1.5 -p 6667)"]
        return model
    }

    @Test("Ctrl-C asks before closing a room others are in; n keeps it open, y closes it")
    func confirmQuit() {
        var model = Self.host()
        #expect(model.update(.key(.control("c"))).isEmpty)
        #expect(draw(model).lines[11] == "Close the room for 3 people? y/n (Ctrl-C again: yes)" + String(repeating: " ", count: 8))
        #expect(model.update(.key(.character("n"))) == [.note("The room stays open", conversation: .room("#lobby"), isError: false)])
        _ = model.update(.key(.control("c")))
        #expect(model.update(.key(.character("y"))) == [.quit(reason: "The host closed the room")])
    }

    @Test("the host's /quit asks too while others are in the room (its reason said on y); alone, or a guest, it quits at once")
    func slashQuitAsks() {
        var model = Self.host()
        model.editor.set("/quit")
        #expect(model.update(.key(.enter)).isEmpty)
        #expect(draw(model).lines[11] == "Close the room for 3 people? y/n (Ctrl-C again: yes)" + String(repeating: " ", count: 8))
        #expect(model.update(.key(.character("n"))) == [.note("The room stays open", conversation: .room("#lobby"), isError: false)])
        #expect(draw(model).lines[11].hasPrefix(">"))
        model.editor.set("/quit back tomorrow")
        #expect(model.update(.key(.enter)).isEmpty)
        #expect(model.update(.key(.character("y"))) == [.quit(reason: "back tomorrow")])
        model.editor.set("/bye")
        _ = model.update(.key(.enter))
        #expect(model.update(.key(.character("y"))) == [.quit(reason: "The host closed the room")])
        var guest = lobbyModel()
        guest.editor.set("/quit")
        #expect(guest.update(.key(.enter)) == [.quit(reason: "Leaving")])
        var alone = Self.host()
        for line in [":bob!b@h QUIT :x", ":carol!c@h QUIT :x", ":小明!x@h QUIT :x"] {
            alone.receive(line, now: 1)
        }
        alone.editor.set("/quit")
        #expect(alone.update(.key(.enter)) == [.quit(reason: "Leaving")])
    }

    @Test("Ctrl-C asks a guest too (a reflex from irssi's colour key must not end the session): a second Ctrl-C or y quits, n stays")
    func quitAsks() {
        var guest = lobbyModel()
        #expect(guest.update(.key(.control("c"))).isEmpty)
        #expect(draw(guest).lines[11].hasPrefix("Quit chat-tui? y/n (Ctrl-C again: yes)"))
        #expect(guest.update(.key(.character("n"))).isEmpty)
        #expect(draw(guest).lines[11].hasPrefix(">"))
        _ = guest.update(.key(.control("c")))
        #expect(guest.update(.key(.control("c"))) == [.quit(reason: "Leaving")])
        var alone = Self.host()
        for line in [":bob!b@h QUIT :x", ":carol!c@h QUIT :x", ":小明!x@h QUIT :x"] {
            alone.receive(line, now: 1)
        }
        _ = alone.update(.key(.control("c")))
        #expect(alone.update(.key(.character("y"))) == [.quit(reason: "Leaving")])
    }

    @Test("/help lists the keys and, on the host's screen, how others join")
    func helpLines() {
        var model = Self.host()
        model.editor.set("/help")
        let notes = model.update(.key(.enter)).compactMap { if case .note(let text, _, _) = $0 { return text } else { return nil } }
        #expect(notes.contains { $0.hasPrefix("Keys: Up/Down") })
        #expect(notes.suffix(2) == model.hostHint)
    }
}

@Test("an outage on screen: the room and its people greyed but listed, the drop marked, a held line with its text")
func goldenOutage() {
    var model = lobbyModel()
    model.receive(":bob!b@h PRIVMSG #lobby :see you", now: 36300)
    model.lose(reason: "connection reset by peer", now: 36365)
    var held = ChatLine(time: 36400, kind: .message, sender: "alice", text: "are you back?", isOwn: true)
    held.isPending = true
    model.receive(.line(.room("#lobby"), held))
    model.status = .reconnecting(inSeconds: 4, reason: "connection reset by peer")
    model.now = 36400
    model.reconnectAt = 36404
    expectScreen(model, [
        " #lobby (4)                                                 ",
        "                                               │1 (server)  ",
        "                                               │2 #lobby   1",
        "10:05 -!- You joined #lobby                    │ @alice…    ",
        "10:05 <bob> see you                            │ +bob       ",
        "10:06 -!- ── connection lost: connection reset │  carol     ",
        "          by peer — what you type is held until│  小明      ",
        "          it is back ──                        │            ",
        "10:06 <alice> are you back?  (held: sent when  │            ",
        "              the connection is back)          │            ",
        " alice │ reconnecting in 4 s (connection reset by peer) │…  ",
        ">                                                           ",
    ])
    // Greyed, not gone: the room and its people keep their rows, dimmed.
    let screen = draw(model)
    #expect(screen[48, 3].style == Palette.dim && screen[49, 4].style == Palette.dim, "+bob and carol greyed")
}

@Suite("smaller screen fixes")
struct SmallFixesTests {
    @Test("/join of a room you are in takes you there; a room you left says so and refuses messages")
    func joinAndPart() {
        var model = threeRooms(size: 1)
        model.editor.set("/join #ops")
        #expect(model.update(.key(.enter)).isEmpty)
        #expect(model.selection == .conversation(.room("#ops")))
        model.receive(":alice!a@h PART #ops", now: 36400)
        #expect(draw(model).lines[14].contains("not in #ops: /join #ops"))
        model.editor.set("hello?")
        #expect(model.update(.key(.enter)) == [.note("You are not in #ops: /join #ops to talk there", conversation: .room("#ops"), isError: true)])
    }

    @Test("a file offer counts as unread and rings; your own away shows in the status line; long names end in an ellipsis")
    func offerAwayEllipsis() {
        var model = threeRooms(size: 1)
        let offer = ChatLine(time: 1, kind: .transfer(1), text: "dev1 offers a.txt, 3 B: /accept 1 or /reject 1", isHighlight: true)
        #expect(model.receive(.line(.direct("dev1"), offer)) == [.bell])
        #expect(model.state[.direct("dev1")]?.unread == 1)
        model.receive(":srv 306 alice :You have been marked as being away", now: 2)
        #expect(draw(model).lines[14].hasPrefix(" alice (away) │"))
        model.receive(":alice!a@h JOIN #a-room-with-a-very-long-name", now: 3)
        #expect(draw(model).lines.contains { $0.range(of: #"│\d #a-room-w…$"#, options: .regularExpression) != nil })
    }
}

@Suite("what a new user tripped over")
struct TriedInTmuxTests {
    @Test("a rejoin after an outage does not move the view, nor a room joined unasked; a room one asked for does")
    func rejoinKeepsView() {
        var model = threeRooms(size: 2)
        model.selection = .user("dev1", room: .room("#dev"))
        model.lose(reason: "gone", now: 1)
        model.everRegistered = false
        model.receive(":srv 001 alice :Welcome", ":alice!a@h JOIN #lobby", ":alice!a@h JOIN #dev", ":alice!a@h JOIN #ops", now: 2)
        #expect(model.selection == .user("dev1", room: .room("#dev")))
        // A room joined without asking (at start, by another device of the account) does not either.
        model.receive(":alice!a@h JOIN #elsewhere", now: 3)
        #expect(model.selection == .user("dev1", room: .room("#dev")))
        _ = model.type("/join #New")
        model.receive(":alice!a@h JOIN #new", now: 3)
        #expect(model.selection == .conversation(.room("#new")))
    }

    @Test("rooms named with --join take the view as they are joined, ending on the last; the server's own #lobby first does not keep it")
    func commandLineJoins() {
        var model = ChatModel(state: ConversationBook(nick: "alice"), width: 80, height: 12)
        model.askToJoin(["#R0", "#r1"])
        model.receive(":srv 001 alice :Welcome", ":alice!a@h JOIN #lobby", ":alice!a@h JOIN #r0", now: 1)
        #expect(model.viewedID == .room("#r0"))
        model.receive(":alice!a@h JOIN #r1", now: 2)
        #expect(model.viewedID == .room("#r1"))
        // Asked once: a later rejoin of #r0 (kicked and back by another device) does not move it.
        model.receive(":alice!a@h PART #r0", ":alice!a@h JOIN #r0", now: 3)
        #expect(model.viewedID == .room("#r1"))
    }

    @Test("a refused line stays in the input; a room you left can be closed; a line not sent is shown with its text")
    func refusalsKeepText() {
        var model = threeRooms(size: 1)
        model.selection = .conversation(.server)
        model.editor.set("hello server?")
        _ = model.update(.key(.enter))
        #expect(model.editor.text == "hello server?")
        model.editor.set("")
        model.receive(":alice!a@h PART #ops", now: 3)
        model.selection = .conversation(.room("#ops"))
        model.editor.set("/close")
        #expect(model.update(.key(.enter)).last == .close(.room("#ops")))
        #expect(model.update(.client(.notSent(target: "dev1", text: "held line", reason: "dev1 is not on the server now"))) ==
                [.note("Not sent to dev1: \"held line\" (dev1 is not on the server now)", conversation: .server, isError: true)])
    }
}

@Test("/list opens a picker of the server's rooms; Down and Enter join one; Esc closes it")
func roomPicker() {
    var model = lobbyModel()
    model.editor.set("/list")
    #expect(model.update(.key(.enter)) == [.irc(IRCMessage(command: "LIST", params: []))])
    model.receive(":srv 321 alice Channel :Users  Name", ":srv 322 alice #lobby 4 :[+nt] welcome", ":srv 322 alice #dev 12 :[+nt] builds",
                  ":srv 322 alice #ops 2 :[+nt] ", ":srv 323 alice :End of /LIST", now: 36300)
    #expect(model.roomPicker == 0)
    expectScreen(model, [
        " #lobby (4)                                                 ",
        "3 rooms — Up/Down, Enter joins, Esc closes     │1 (server)  ",
        "#lobby                 4  [+nt] welcome        │2 #lobby    ",
        "#dev                  12  [+nt] builds         │ @alice…    ",
        "#ops                   2  [+nt]                │ +bob       ",
        "                                               │  carol     ",
        "                                               │  小明      ",
        "                                               │            ",
        "                                               │            ",
        "                                               │            ",
        " alice │ connected │ Enter sends to #lobby                  ",
        ">                                                           ",
    ])
    _ = model.update(.key(.down))
    #expect(model.update(.key(.enter)) == [.irc(IRCMessage("JOIN", "#dev"))])
    #expect(model.roomPicker == nil)
    model.editor.set("/list")
    _ = model.update(.key(.enter))
    model.receive(":srv 321 alice Channel :Users  Name", ":srv 322 alice #lobby 4 :[+nt] welcome", ":srv 323 alice :End of /LIST", now: 36301)
    #expect(model.roomPicker == 0)
    _ = model.update(.key(.escape))
    #expect(model.roomPicker == nil && model.selection == .conversation(.room("#lobby")))
}

@Test("/query NICK goes to the new conversation once the client has opened it")
func queryShows() {
    var model = threeRooms(size: 1)
    model.editor.set("/query Dave")
    #expect(model.update(.key(.enter)) == [.open("Dave")])
    model.receive(.opened(.direct("dave"), name: "Dave"))
    #expect(model.selection == .conversation(.direct("dave")) && model.target == "Dave")
}

@Test("an unknown certificate asks y/n on the input row; y trusts it")
func trustPrompt() {
    var model = lobbyModel(width: 60, height: 6)
    let fingerprint = "AB:CD:EF"
    let said = model.receive(.unknownCertificate(server: "irc.example:6697", fingerprint: fingerprint, problem: "self-signed certificate"))
    #expect(said.count == 1)
    // Too long for 60 columns: the fingerprint is cut, the question and y/n stay.
    #expect(draw(model).lines[5] == "Trust irc.example:6697's certificate? y/n  (SHA-256…        ")
    #expect(model.update(.key(.character("x"))) == [])
    #expect(model.update(.key(.character("y"))) == [.trustCertificate(fingerprint)])
    #expect(model.pendingTrust == nil && draw(model).lines[5].hasPrefix("> "))
}

@Test("/search opens a picker of the log's hits, newest first; Down and Enter open one in its conversation; Esc closes it")
func searchPicker() {
    var model = lobbyModel()
    model.editor.set("/search 蛋糕")
    #expect(model.update(.key(.enter)) == [.search(["蛋糕"])])
    let hits = [
        SearchHit(conversation: .direct("bob"), name: "bob", line: ChatLine(time: 36300, kind: .message, sender: "bob", text: "蛋糕 for you 🎂")),
        SearchHit(conversation: .room("#lobby"), name: "#lobby", line: ChatLine(time: 36000, kind: .message, sender: "小明", text: "我做了蛋糕")),
    ]
    _ = model.receive(.searchResults(query: "蛋糕", hits))
    expectScreen(model, [
        " #lobby (4)                                                 ",
        "2 lines with 蛋糕 — Up/Down, Enter opens, Esc… │1 (server)  ",
        "bob 01-01 10:05 <bob> 蛋糕 for you 🎂          │2 #lobby    ",
        "#lobby 01-01 10:00 <小明> 我做了蛋糕           │ @alice…    ",
        "                                               │ +bob       ",
        "                                               │  carol     ",
        "                                               │  小明      ",
        "                                               │            ",
        "                                               │            ",
        "                                               │            ",
        " alice │ connected │ Enter sends to #lobby                  ",
        ">                                                           ",
    ])
    _ = model.update(.key(.down))
    #expect(model.update(.key(.enter)) == [.showAround(hits[1])])
    #expect(model.searchPicker == nil)
    #expect(model.viewedID == .room("#lobby"))
    _ = model.receive(.searchResults(query: "x", hits))
    _ = model.update(.key(.escape))
    #expect(model.searchPicker == nil)
}

@Test("PageUp at the oldest line of a room asks for the lines before it, once per oldest line")
func pageUpFetchesOlder() {
    var model = lobbyModel()
    var first = ChatLine(time: 36000, kind: .message, sender: "bob", text: "the oldest we have")
    first.msgid = "m-oldest"
    first.isHistory = true
    _ = model.receive(.line(.room("#lobby"), first))
    #expect(model.update(.key(.pageUp)) == [.fetchOlder(room: "#lobby", before: "m-oldest")])
    #expect(model.update(.key(.pageUp)) == [], "asked already")
}

@Test("scrolled up, the lines fetched before the oldest stay while read; back at the bottom the scrollback is cut again")
func readingBackKeepsFetched() {
    var model = lobbyModel(scrollback: 100)
    let lobby = ConversationID.room("#lobby")
    for n in 1000..<1100 {
        var line = ChatLine(time: Double(n), kind: .message, sender: "bob", text: "live \(n)")
        line.msgid = "m\(n)"
        _ = model.receive(.line(lobby, line))
    }
    let live = model.state[lobby]!.lines.count // the 100 and the join
    #expect(model.state[lobby]!.readingBack == false)
    #expect(model.update(.key(.pageUp)) == [], "one page up is not the top yet")
    var asked: [UICommand] = []
    for _ in 0..<100 where asked.isEmpty { asked = model.update(.key(.pageUp)) }
    #expect(asked == [.fetchOlder(room: "#lobby", before: "m1000")])
    #expect(model.state[lobby]!.readingBack, "scrolled to the top, it asked for the older lines")
    for n in 910..<1000 {
        var line = ChatLine(time: Double(n), kind: .message, sender: "bob", text: "old \(n)")
        line.msgid = "m\(n)"
        line.isHistory = true
        _ = model.receive(.line(lobby, line))
    }
    #expect(model.state[lobby]!.lines.count == live + 90, "none of the fetched lines cut while they are read")
    asked = []
    for _ in 0..<100 where asked.isEmpty { asked = model.update(.key(.pageUp)) }
    #expect(asked == [.fetchOlder(room: "#lobby", before: "m910")], "and the next page asks before them")
    for _ in 0..<100 { _ = model.update(.key(.pageDown)) }
    #expect(model.scroll[lobby] == 0)
    #expect(model.state[lobby]!.readingBack == false)
    var line = ChatLine(time: 1100, kind: .message, sender: "bob", text: "live 1100")
    line.msgid = "m1100"
    _ = model.receive(.line(lobby, line))
    #expect(model.state[lobby]!.lines.count == 100, "at the bottom the next line cuts back to the limit")
    #expect(model.state[lobby]!.lines.first?.text == "live 1001")
}

@Test("scrolled up, the view stays on the lines being read while new ones arrive below; a command jumps back to the bottom")
func scrolledViewStaysStill() {
    var model = lobbyModel(width: 60, height: 10)
    for n in 1...30 { model.receive(":bob!b@h PRIVMSG #lobby :line \(n)", now: 36000 + Double(n)) }
    _ = model.update(.key(.pageUp))
    let before = draw(model).lines
    // Live lines below, a long one wrapping to two rows, someone joining.
    model.receive(":carol!c@h PRIVMSG #lobby :new one", now: 36100)
    model.receive(":carol!c@h PRIVMSG #lobby :a new line long enough that it wraps onto a second row", now: 36101)
    model.receive(":dave!d@h JOIN #lobby", now: 36102)
    let after = draw(model).lines
    // The pane's rows are the same lines; only the count of rows below grew, by the four new rows.
    let pane = { (rows: [String]) in rows.map { String($0.prefix(47)) } }
    #expect(Array(pane(after)[1...6]) == Array(pane(before)[1...6]))
    #expect(before[7].hasPrefix("                      6 more rows below (PgDn) │"))
    expectScreen(model, [
        " #lobby (5)                                                 ",
        "10:00 <bob> line 19                            │1 (server)  ",
        "10:00 <bob> line 20                            │2 #lobby  32",
        "10:00 <bob> line 21                            │ @alice…    ",
        "10:00 <bob> line 22                            │ +bob       ",
        "10:00 <bob> line 23                            │  carol     ",
        "10:00 <bob> line 24                            │  dave      ",
        "                     10 more rows below (PgDn) │  小明      ",
        " alice │ connected │ Enter sends to #lobby                  ",
        ">                                                           ",
    ])
    // A command's answer appears at the bottom, so the view goes there.
    for key in "/help".map({ Key.character($0) }) + [.enter] { _ = model.update(.key(key)) }
    #expect(model.scroll[.room("#lobby")] == 0)
}

@Test("the read marker: a line between what the account had read and what came after it")
func readMarkerLine() {
    var model = lobbyModel()
    model.receive(":bob!b@h PRIVMSG #lobby :read this already", now: 36000)
    model.receive(":carol!c@h PRIVMSG #lobby :this is new", now: 36100)
    model.receive(":bob!b@h PRIVMSG #lobby :and this", now: 36200)
    _ = model.receive(.readMarker(.room("#lobby"), 36050))
    expectScreen(model, [
        " #lobby (4)                                                 ",
        "                                               │1 (server)  ",
        "                                               │2 #lobby   3",
        "                                               │ @alice…    ",
        "                                               │ +bob       ",
        "10:05 -!- You joined #lobby                    │  carol     ",
        "10:00 <bob> read this already                  │  小明      ",
        "── new since you last read ──                  │            ",
        "10:01 <carol> this is new                      │            ",
        "10:03 <bob> and this                           │            ",
        " alice │ connected │ Enter sends to #lobby                  ",
        ">                                                           ",
    ])
    // Read up to the end: no line.
    _ = model.receive(.readMarker(.room("#lobby"), 36200))
    #expect(!draw(model).lines.contains { $0.contains("new since you last read") })
}

@Test("a line put in place twice from the log (no msgid) is shown once")
func logLineOnce() {
    var conversation = Conversation(id: .room("#lobby"), name: "#lobby")
    var join = ChatLine(time: 100, kind: .join, sender: "alice", text: "You joined #lobby")
    join.isHistory = true
    let first = conversation.insert(join)
    let second = conversation.insert(join)
    #expect(first && !second, "the same line at the same time is put in once")
    #expect(conversation.lines.count == 1)
}

@Test("Enter on a search hit far back scrolls its conversation so the line is in view")
func searchHitRevealed() {
    var model = lobbyModel()
    for n in 0..<30 { model.receive(":bob!b@h PRIVMSG #lobby :line \(n)", now: 37000 + Double(n) * 60) }
    let hit = SearchHit(conversation: .room("#lobby"), name: "#lobby", line: ChatLine(time: 37000 + 5 * 60, kind: .message, sender: "bob", text: "line 5"))
    _ = model.receive(.searchResults(query: "line 5", [hit]))
    #expect(model.update(.key(.enter)) == [.showAround(hit)])
    expectScreen(model, [
        " #lobby (4)                                                 ",
        "10:18 <bob> line 2                             │1 (server)  ",
        "10:19 <bob> line 3                             │2 #lobby  30",
        "10:20 <bob> line 4                             │ @alice…    ",
        "10:21 <bob> line 5                             │ +bob       ",
        "10:22 <bob> line 6                             │  carol     ",
        "10:23 <bob> line 7                             │  小明      ",
        "10:24 <bob> line 8                             │            ",
        "10:25 <bob> line 9                             │            ",
        "                     20 more rows below (PgDn) │            ",
        " alice │ connected │ Enter sends to #lobby                  ",
        ">                                                           ",
    ])
}

@Test("a search hit deep in a long line is shown from just before the match")
func searchHitWindow() {
    var model = lobbyModel()
    let long = "the quick brown fox jumps over the lazy dog and keeps running 中文字符 to the end"
    let hit = SearchHit(conversation: .room("#lobby"), name: "#lobby", line: ChatLine(time: 36000, kind: .message, sender: "bob", text: long))
    _ = model.receive(.searchResults(query: "中文", [hit]))
    expectScreen(model, [
        " #lobby (4)                                                 ",
        "1 line with 中文 — Up/Down, Enter opens, Esc…  │1 (server)  ",
        "#lobby 01-01 10:00 <bob> …s running 中文字符…  │2 #lobby    ",
        "                                               │ @alice…    ",
        "                                               │ +bob       ",
        "                                               │  carol     ",
        "                                               │  小明      ",
        "                                               │            ",
        "                                               │            ",
        "                                               │            ",
        " alice │ connected │ Enter sends to #lobby                  ",
        ">                                                           ",
    ])
}
