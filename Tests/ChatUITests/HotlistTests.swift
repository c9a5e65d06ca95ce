import Testing
@testable import ChatUI
@testable import ChatClientKit
import IRCWire

@Suite("conversations by number and by activity (issue 46)")
struct HotlistTests {
    /// #lobby, #dev, #ops with 44 in #lobby (as the tour had it), then lines from elsewhere.
    func busy(size: Int = 44) -> ChatModel {
        var model = threeRooms(size: size, width: 80, height: 20)
        model.receive(":dev3!d@h PRIVMSG #dev :a build is red", now: 36400)
        model.receive(":ops2!o@h PRIVMSG #ops :alice: can you look?", now: 36401)
        model.receive(":zed!z@h PRIVMSG alice :hello from outside", now: 36402)
        return model
    }

    @Test("the sidebar numbers the server window (1, as irssi's status window), rooms and direct conversations; Alt-3 goes to #dev without 45 Downs")
    func altNumber() {
        var model = busy()
        #expect(model.numberedRows.map { model.rowName($0) } == ["(server)", "#lobby", "#dev", "#ops", "zed"])
        #expect(model.update(.key(.alt("3"))) == [.markRead(.room("#dev"))])
        #expect(model.viewedID == .room("#dev") && model.currentRoom == "#dev")
        _ = model.update(.key(.alt("5")))
        #expect(model.viewedID == .direct("zed"))
        _ = model.update(.key(.alt("1")))
        #expect(model.viewedID == .server)
        _ = model.update(.key(.alt("2")))
        #expect(model.viewedID == .room("#lobby"))
        #expect(notes(model.update(.key(.alt("9")))) == ["No conversation 9: there are 5"])
        #expect(model.viewedID == .room("#lobby"))
    }

    @Test("the hotlist says which have news, ! for mentions and direct messages; Alt-a takes them in that order, then goes back")
    func altA() {
        var model = busy()
        let status = draw(model).lines[18]
        #expect(status.contains("│ [3,4!,5!] │"), "status: \(status)")
        // #ops (a mention) and zed (a direct message) before #dev (messages); the lower number first.
        _ = model.update(.key(.alt("a")))
        #expect(model.viewedID == .room("#ops"))
        model.state.apply(.markedRead(.room("#ops")))
        _ = model.update(.key(.alt("a")))
        #expect(model.viewedID == .direct("zed"))
        model.state.apply(.markedRead(.direct("zed")))
        _ = model.update(.key(.alt("a")))
        #expect(model.viewedID == .room("#dev"))
        model.state.apply(.markedRead(.room("#dev")))
        #expect(model.hotlist == "")
        // Nothing new anywhere: back to where the first Alt-a was pressed.
        _ = model.update(.key(.alt("a")))
        #expect(model.viewedID == .room("#lobby"))
        #expect(model.update(.key(.alt("a"))) == [])
        #expect(model.viewedID == .room("#lobby"))
    }

    @Test("Alt-Left and Alt-Right step through the conversations by number, round the ends")
    func altArrows() {
        var model = busy()
        _ = model.update(.key(.altRight))
        #expect(model.viewedID == .room("#dev"))
        _ = model.update(.key(.altLeft))
        _ = model.update(.key(.altLeft))
        #expect(model.viewedID == .server)
        _ = model.update(.key(.altRight))
        #expect(model.viewedID == .room("#lobby"))
    }

    @Test("/window N, /window NAME, /buffer N, /window next; an unknown name says so; /window alone lists them")
    func windowCommand() {
        var model = busy()
        _ = model.type("/window 4")
        #expect(model.viewedID == .room("#ops"))
        _ = model.type("/buffer 3")
        #expect(model.viewedID == .room("#dev"))
        _ = model.type("/window goto ze")
        #expect(model.viewedID == .direct("zed"))
        _ = model.type("/window #lobby")
        #expect(model.viewedID == .room("#lobby"))
        _ = model.type("/window next")
        #expect(model.viewedID == .room("#dev"))
        #expect(notes(model.type("/window #nowhere")) == ["No conversation called #nowhere (/window lists them)"])
        #expect(notes(model.type("/window")) == ["1  (server)", "2  #lobby", "3  #dev  (1 unread)", "4  #ops  (1 unread, for you)", "5  zed  (1 unread, for you)"])
    }

    @Test("Alt-End (and /scroll end) back to the newest line after PgUp; Alt-Home (and /scroll top) to the oldest loaded")
    func scrollEnds() {
        var model = lobbyModel(width: 60, height: 12)
        for n in 1...100 { model.receive(":bob!b@h PRIVMSG #lobby :line \(n)", now: 36300 + Double(n)) }
        _ = model.update(.key(.pageUp))
        _ = model.update(.key(.pageUp))
        #expect((model.scroll[.room("#lobby")] ?? 0) > 0)
        _ = model.update(.key(.altEnd))
        #expect(model.scroll[.room("#lobby")] == 0)
        #expect(draw(model).lines[9].contains("line 100"))
        _ = model.update(.key(.altHome))
        #expect(draw(model).lines[1].contains("You joined #lobby"))
        #expect(model.update(.key(.altHome)) == [], "the top of what is loaded: no history asked")
        _ = model.type("/scroll end")
        #expect(model.scroll[.room("#lobby")] == 0)
        _ = model.type("/scroll top")
        #expect(draw(model).lines[1].contains("You joined #lobby"))
    }

    @Test("a numbered sidebar with a hotlist, the whole 80×20 screen with attributes")
    func golden() {
        let model = busy(size: 2)
        expectScreen(model, [
            " #lobby (3)                                                                     ",
            "                                                               │1 (server)      ",
            "                                                               │2 #lobby        ",
            "                                                               │ @alice (you)   ",
            "                                                               │  lobby1        ",
            "                                                               │  lobby2        ",
            "                                                               │3 #dev         1",
            "                                                               │ @alice (you)   ",
            "                                                               │  dev1          ",
            "                                                               │  dev2          ",
            "                                                               │4 #ops        1!",
            "                                                               │ @alice (you)   ",
            "                                                               │  ops1          ",
            "                                                               │  ops2          ",
            "                                                               │5 zed         1!",
            "                                                               │                ",
            "                                                               │                ",
            "10:05 -!- You joined #lobby                                    │                ",
            " alice │ connected │ [3,4!,5!] │ Enter sends to #lobby                          ",
            ">                                                                               ",
        ], styles: [
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "                                                               ddddddddddd      ",
            "                                                               dRRRRRRRRrrrrrrrr",
            "                                                               dAAAAAAAAAAAAA   ",
            "                                                               dBBBBBBBB        ",
            "                                                               dCCCCCCCC        ",
            "                                                               dbbbbbb         h",
            "                                                               dAAAAAAAAAAAAA   ",
            "                                                               dCCCCCC          ",
            "                                                               dBBBBBB          ",
            "                                                               dbbbbbb        hh",
            "                                                               dAAAAAAAAAAAAA   ",
            "                                                               dFFFFFF          ",
            "                                                               dGGGGGG          ",
            "                                                               d              hh",
            "                                                               d                ",
            "                                                               d                ",
            "ddddddddddddddddddddddddddd                                    d                ",
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "dd                                                                              ",
        ], legend: StyleLegend.nicks(["alice": "A", "lobby1": "B", "lobby2": "C", "dev1": "D", "dev2": "E", "ops1": "F", "ops2": "G", "zed": "Z"]))
    }
}

@Suite("Alt keys from the terminal (issue 46)")
struct AltKeyTests {
    func keys(_ text: String) -> [Key] {
        var decoder = KeyDecoder()
        var keys: [Key] = []
        for scalar in text.unicodeScalars { keys += decoder.feed(scalar) }
        return keys + decoder.flush()
    }

    @Test("ESC then a character is Alt with it; xterm's modified arrows, Home and End with Alt; Ctrl-Up stays the message cursor")
    func decoding() {
        #expect(keys("\u{1B}2") == [.alt("2")])
        #expect(keys("\u{1B}a") == [.alt("a")])
        #expect(keys("\u{1B}[1;3D\u{1B}[1;3C") == [.altLeft, .altRight])
        #expect(keys("\u{1B}[1;3H\u{1B}[1;3F\u{1B}[1;3~\u{1B}[4;3~") == [.altHome, .altEnd, .altHome, .altEnd])
        #expect(keys("\u{1B}[1;5A\u{1B}[1;3B") == [.messageUp, .messageDown])
        #expect(keys("\u{1B}\u{1B}x") == [.alt("x")])
        #expect(keys("\u{1B}") == [.escape])
        #expect(keys("\u{1B}\u{7F}") == [], "Alt-Backspace is not a character")
    }
}

@Suite("highlights (issue 46)")
struct HighlightTests {
    @Test("highlight words (whole words, any case) and a pattern mark a room line like a mention; your own lines never")
    func marking() {
        var state = ClientState(nick: "alice")
        _ = state.setHighlights(Highlights(words: ["deploy", "Release"], pattern: #"build \d+ failed"#)!)
        for line in [":srv 001 alice :Welcome", ":alice!a@h JOIN #dev", ":srv 353 alice = #dev :alice bob", ":srv 366 alice #dev :End",
                     ":bob!b@h PRIVMSG #dev :the DEPLOY is done", ":bob!b@h PRIVMSG #dev :redeployed nothing",
                     ":bob!b@h PRIVMSG #dev :release: tomorrow", ":bob!b@h PRIVMSG #dev :Build 42 FAILED again",
                     ":bob!b@h PRIVMSG #dev :nothing here", ":alice!a@h PRIVMSG #dev :deploy now"] {
            _ = state.receive(try! IRCMessage(parsing: line), now: 1)
        }
        let lines = state.book[.room("#dev")]!.lines.filter { $0.kind == .message }
        #expect(lines.map(\.isHighlight) == [true, false, true, true, false, false])
        #expect(state.book[.room("#dev")]!.mentioned)
        #expect(Highlights(words: [], pattern: "(") == nil)
    }

    @Test("/set highlights tells every network's client; /highlights lists what named you, newest first, and opens one")
    func view() {
        var model = lobbyModel(width: 60, height: 12)
        let commands = model.type("/set highlights deploy")
        #expect(commands.contains(.on(network: 0, .highlights(Highlights(words: ["deploy"], pattern: "")!))))
        #expect(notes(model.type("/highlights")) == ["Nothing has highlighted you yet (lines naming you; /set highlights WORD,WORD adds words)"])
        model.receive(":bob!b@h PRIVMSG #lobby :alice: lunch?", now: 36400)
        model.receive(":carol!c@h PRIVMSG #lobby :not for you", now: 36401)
        model.receive(":carol!c@h PRIVMSG #lobby :alice, the review", now: 36402)
        _ = model.type("/highlights")
        let screen = draw(model).lines
        #expect(screen[1].hasPrefix("2 highlights, newest first — Up/Down"))
        #expect(screen[2].contains("#lobby") && screen[2].contains("<carol> alice, the review"))
        #expect(screen[3].contains("<bob> alice: lunch?"))
        _ = model.update(.key(.down))
        let opened = model.update(.key(.enter))
        #expect(opened.contains { if case .showAround(let hit) = $0 { return hit.line.text == "alice: lunch?" } else { return false } })
        #expect(model.searchPicker == nil && model.viewedID == .room("#lobby"))
    }
}

@Suite("conversation numbers stay put (issue 46: a new conversation or a restart never renumbers)")
struct WindowOrderTests {
    @Test("a direct conversation opened later takes the next number: the rooms keep theirs, the server window stays first")
    func newConversationAppends() {
        var model = threeRooms(size: 3, width: 80, height: 20)
        #expect(model.numberedRows.map { model.rowName($0) } == ["(server)", "#lobby", "#dev", "#ops"])
        model.receive(":zed!z@h PRIVMSG alice :hello", now: 36400)
        _ = model.type("/join #new")
        model.receive(":alice!a@h JOIN #new", now: 36401)
        model.receive(":amy!a@h PRIVMSG alice :hi", now: 36402)
        #expect(model.numberedRows.map { model.rowName($0) } == ["(server)", "#lobby", "#dev", "#ops", "zed", "#new", "amy"])
        // The sidebar lists them in number order (WeeChat's buflist), each row with its number.
        let sidebar = draw(model).lines.map { String($0.split(separator: "│").last ?? "") }
        let numbered = sidebar.filter { $0.first?.isNumber == true }.map { $0.prefix(6).trimmingCharacters(" ") }
        #expect(numbered.suffix(5) == ["3 #dev", "4 #ops", "5 zed", "6 #new", "7 amy"], "\(sidebar)")
    }

    @Test("a restart brings the numbers back in the order saved, whichever room the server joins first")
    func restart() {
        var model = threeRooms(size: 3, width: 80, height: 20)
        model.receive(":zed!z@h PRIVMSG alice :hello", now: 36400)
        let saved = model.windowOrder.text
        #expect(saved.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).last.map(String.init) ?? "" } == ["#lobby", "#dev", "#ops", "@zed"], "\(saved)")
        // The next start: the rooms come back in another order (as the server answers the JOINs).
        var next = lobbyModel(width: 80, height: 20)
        next.networks[0].key = model.networks[0].key
        next.windowOrder = WindowOrder(text: saved)
        next.receive(":alice!a@h JOIN #ops", ":alice!a@h JOIN #dev", now: 36500)
        next.receive(":zed!z@h PRIVMSG alice :back", now: 36501)
        #expect(next.numberedRows.map { next.rowName($0) } == ["(server)", "#lobby", "#dev", "#ops", "zed"])
    }

    @Test("/close takes one out and the later ones move down; /window move N renumbers the one in view")
    func closeAndMove() {
        var model = threeRooms(size: 3, width: 80, height: 20)
        model.receive(":zed!z@h PRIVMSG alice :hello", now: 36400)
        _ = model.type("/window 3")
        #expect(model.type("/close") == [.irc(IRCMessage(command: "PART", params: ["#dev"])), .close(.room("#dev"))])
        // While the client closes it, it is not numbered again.
        model.receive(":bob!b@h PRIVMSG #lobby :hi", now: 36401)
        #expect(model.numberedRows.map { model.rowName($0) }.prefix(4) == ["(server)", "#lobby", "#ops", "zed"])
        _ = model.type("/window zed")
        #expect(notes(model.type("/window move 2")) == ["zed is now 2"])
        #expect(model.numberedRows.map { model.rowName($0) }.prefix(4) == ["(server)", "zed", "#lobby", "#ops"])
        #expect(notes(model.type("/window move right")) == ["zed is now 3"])
        #expect(notes(model.type("/window move sideways")) == ["/window move N|left|right|first|last"])
        _ = model.type("/window (server)")
        #expect(notes(model.type("/window move 1")) == ["The server window stays first; /window move moves a room or a direct conversation"])
    }

    @Test("the saved order reads back what it wrote, skips what is malformed, and keeps at most its bound")
    func bound() {
        let order = WindowOrder(text: "net\t#a\nnonsense\nnet\t#a\nnet\t@b\n")
        #expect(order.entries == ["net\t#a", "net\t@b"])
        var big = WindowOrder(text: (0..<WindowOrder.limit).map { "net\t#r\($0)\n" }.joined())
        #expect(big.entries.count == WindowOrder.limit)
        // Past the bound the oldest of those not here now goes; those here stay.
        big.settle(present: ["net\t#r0", "net\t#new"])
        #expect(big.entries.count == WindowOrder.limit && big.entries.first == "net\t#r0" && big.entries.last == "net\t#new" && !big.entries.contains("net\t#r1"))
        #expect(WindowOrder(text: big.text) == big)
    }
}

@Suite("closed conversations stay closed across a restart (issue 46, second tour)")
struct ClosedConversationTests {
    @Test("/close remembers the conversation as closed (in the file, after '-'); news brings it back; each network's own")
    func closedKept() {
        var order = WindowOrder()
        order.settle(present: ["n1\t#lobby", "n1\t@frank", "n2\t@frank"])
        order.remove("n1\t@frank")
        #expect(order.entries == ["n1\t#lobby", "n2\t@frank"])
        #expect(order.text == "n1\t#lobby\nn2\t@frank\n-n1\t@frank\n")
        let read = WindowOrder(text: order.text)
        #expect(read == order)
        #expect(read.closed(network: "n1") == ["@frank"] && read.closed(network: "n2").isEmpty)
        // frank writes again: open again, numbered after the others.
        var again = read
        again.settle(present: ["n1\t#lobby", "n2\t@frank", "n1\t@frank"])
        #expect(again.closed.isEmpty && again.entries.last == "n1\t@frank")
        // Bounded: the oldest closed ones go.
        var many = WindowOrder()
        for n in 0..<(WindowOrder.limit + 5) { many.remove("n\t@p\(n)") }
        #expect(many.closed.count == WindowOrder.limit && many.closed.first == "n\t@p5")
    }
}
