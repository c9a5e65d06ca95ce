import Testing
@testable import ChatUI
import ChatClientKit
import IRCWire

@Suite("rendering the chat screen")
struct RenderTests {
    @Test("layout at 60×12: title, messages, sidebar with prefixes and you, status, input")
    func layout() {
        let model = lobbyModel(extra: [":bob!b@h PRIVMSG #lobby :hello there"])
        // Every row, whole.
        expectScreen(model, [
            " #lobby (4)                                                 ",
            "                                               │1 (server)  ",
            "                                               │2 #lobby    ",
            "                                               │ @alice…    ",
            "                                               │ +bob       ",
            "                                               │  carol     ",
            "                                               │  小明      ",
            "                                               │            ",
            "10:05 -!- You joined #lobby                    │            ",
            "10:05 <bob> hello there                        │            ",
            " alice │ connected │ Enter sends to #lobby                  ",
            ">                                                           ",
        ])
        #expect(draw(model).cursor! == (2, 11))
    }

    @Test("every row is exactly the screen's width and the border stays in one column", arguments: [
        (40, 10), (60, 12), (100, 30), (61, 15), (45, 11),
    ])
    func alignment(width: Int, height: Int) {
        let model = lobbyModel(width: width, height: height, extra: [
            ":bob!b@h PRIVMSG #lobby :中文和日本語のテキスト、한국어도 있어요 with words between them",
            ":小明!x@h PRIVMSG #lobby :emoji 👨‍👩‍👧 👍🏽 ❤️ 🇯🇵 and combining Zoe\u{308} cafe\u{301}",
            ":carol!c@h PRIVMSG #lobby :\u{1B}[2Jnot an escape \u{7}",
        ])
        let screen = draw(model)
        let layout = Layout(width: width, height: height)
        for (y, line) in screen.lines.enumerated() {
            #expect(columns(line) == width, "row \(y) is \(columns(line)) columns: \(line)")
            if y >= layout.paneTop && y < layout.paneTop + layout.paneHeight {
                #expect(screen[layout.paneWidth, y].text == "│", "border moved on row \(y)")
            }
        }
        #expect(!screen.lines.joined().contains("\u{1B}"))
        #expect(screen.lines.joined().contains("^[[2Jnot"))
    }

    @Test("long lines wrap with a hanging indent under the text")
    func hangingIndent() {
        let model = lobbyModel(width: 40, height: 10, extra: [":bob!b@h PRIVMSG #lobby :one two three four five six seven eight nine"])
        // Continuation rows start under the text, not under the time.
        expectScreen(model, [
            " #lobby (4)                             ",
            "                           │1 (server)  ",
            "                           │2 #lobby    ",
            "10:05 -!- You joined #lobby│ @alice…    ",
            "10:05 <bob> one two three  │ +bob       ",
            "            four five six  │  carol     ",
            "            seven eight    │  小明      ",
            "            nine           │            ",
            " alice │ connected │ Enter sends to…    ",
            ">                                       ",
        ])
    }

    @Test("tiny and zero sizes never crash", arguments: [(0, 0), (1, 1), (10, 2), (39, 3), (5, 9), (200, 1)])
    func tiny(width: Int, height: Int) {
        let screen = draw(lobbyModel(width: width, height: height, extra: [":bob!b@h PRIVMSG #lobby :中文 text"]))
        #expect(screen.lines.allSatisfy { columns($0) == width })
    }

    @Test("narrow screens drop the sidebar and give messages the width")
    func narrow() {
        expectScreen(lobbyModel(width: 39, height: 10, extra: [":bob!b@h PRIVMSG #lobby :the whole width is for messages now"]), [
            " #lobby (4)                            ",
            "                                       ",
            "                                       ",
            "                                       ",
            "                                       ",
            "10:05 -!- You joined #lobby            ",
            "10:05 <bob> the whole width is for     ",
            "            messages now               ",
            " alice │ connected │ Enter sends to…   ",
            ">                                      ",
        ])
    }

    @Test("unread counts and mention marks in the sidebar")
    func unread() {
        let model = lobbyModel(extra: [
            ":bob!b@h PRIVMSG alice :psst",
            ":bob!b@h PRIVMSG alice :are you there?",
            ":dave!d@h PRIVMSG alice :hi from outside",
        ])
        // bob's 2! (a direct message counts as a mention) on his row and on the direct conversation's,
        // numbered under the heading with dave's; the hotlist names both.
        expectScreen(model, [
            " #lobby (4)                                                 ",
            "                                               │1 (server)  ",
            "                                               │2 #lobby    ",
            "                                               │ @alice…    ",
            "                                               │ +bob     2!",
            "                                               │  carol     ",
            "                                               │  小明      ",
            "                                               │3 bob     2!",
            "                                               │4 dave    1!",
            "10:05 -!- You joined #lobby                    │            ",
            " alice │ connected │ [3!,4!] │ Enter sends to #lobby        ",
            ">                                                           ",
        ])
    }

    @Test("away members are dimmed")
    func away() {
        let screen = draw(lobbyModel(extra: [":carol!c@h AWAY :lunch", ":srv 352 alice #lobby c h srv carol G :0 C"]))
        let y = screen.lines.firstIndex { $0.hasSuffix("│  carol     ") }!
        let x = Layout(width: 60, height: 12).paneWidth + 3
        #expect(screen[x, y].style.dim)
    }

    @Test("status line shows the connection state")
    func status() {
        var model = lobbyModel(width: 100)
        model.status = .reconnecting(inSeconds: 4, reason: "connection reset by the server")
        model.now = 100
        model.reconnectAt = 104
        expectScreen(model, [
            " #lobby (4)                                                                                         ",
            "                                                                               │1 (server)          ",
            "                                                                               │2 #lobby            ",
            "                                                                               │ @alice (you)       ",
            "                                                                               │ +bob               ",
            "                                                                               │  carol             ",
            "                                                                               │  小明              ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "10:05 -!- You joined #lobby                                                    │                    ",
            " alice │ reconnecting in 4 s (connection reset by the server) │ Enter sends to #lobby               ",
            ">                                                                                                   ",
        ])
        // The host closing the room: counted down, how to stop said, the parentheses whole
        // (the reason once said "trying again every 8 s" beside "in 3 s").
        model.status = .reconnecting(inSeconds: 8, reason: "the host closed the room; /disconnect stops trying")
        model.reconnectAt = 103
        expectScreen(model, [
            " #lobby (4)                                                                                         ",
            "                                                                               │1 (server)          ",
            "                                                                               │2 #lobby            ",
            "                                                                               │ @alice (you)       ",
            "                                                                               │ +bob               ",
            "                                                                               │  carol             ",
            "                                                                               │  小明              ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "10:05 -!- You joined #lobby                                                    │                    ",
            " alice │ reconnecting in 3 s (the host closed the room; /disconnect stops trying) │ Enter sends to… ",
            ">                                                                                                   ",
        ])
        model.status = .registered(nick: "alice")
        model.lag = 1.25
        expectScreen(model, [
            " #lobby (4)                                                                                         ",
            "                                                                               │1 (server)          ",
            "                                                                               │2 #lobby            ",
            "                                                                               │ @alice (you)       ",
            "                                                                               │ +bob               ",
            "                                                                               │  carol             ",
            "                                                                               │  小明              ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "10:05 -!- You joined #lobby                                                    │                    ",
            " alice │ connected, lag 1.3 s │ Enter sends to #lobby                                               ",
            ">                                                                                                   ",
        ])
        model.status = .stopped(reason: "you quit")
        expectScreen(model, [
            " #lobby (4)                                                                                         ",
            "                                                                               │1 (server)          ",
            "                                                                               │2 #lobby            ",
            "                                                                               │ @alice (you)       ",
            "                                                                               │ +bob               ",
            "                                                                               │  carol             ",
            "                                                                               │  小明              ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "10:05 -!- You joined #lobby                                                    │                    ",
            " alice │ disconnected: you quit (/reconnect to connect again) │ Enter sends to #lobby               ",
            ">                                                                                                   ",
        ])
    }

    @Test("nick colours are stable and differ between people")
    func nickColours() {
        let a1 = Palette.nickStyle("bob", own: false), a2 = Palette.nickStyle("BOB", own: false)
        #expect(a1 == a2)
        let colours = Set(["alice", "bob", "carol", "dave", "eve", "小明"].map { Palette.nickStyle($0, own: false).foreground })
        #expect(colours.count >= 4)
    }
}

@Suite("keys and the model")
struct UpdateTests {
    @Test("Down picks a person without opening or marking anything; you are skipped; the first message makes the conversation")
    func pickUser() {
        var model = lobbyModel()
        #expect(model.target == "#lobby")
        // The sidebar: #lobby, @alice (you), +bob, carol, 小明, (server); alice is skipped.
        let commands = model.update(.key(.down))
        #expect(model.selection == .user("bob", room: .room("#lobby")))
        #expect(commands.isEmpty, "moving opens nothing and marks nothing read")
        #expect(model.target == "bob" && model.sendsToNewConversation)
        for character in "hi 你好" { _ = model.update(.key(.character(character))) }
        #expect(model.update(.key(.enter)) == [.open("bob"), .send(text: "hi 你好", to: "bob")])
        let lines = draw(model).lines
        #expect(lines[10].contains("Enter sends to bob (new)"))
        #expect(lines[0].hasPrefix(" bob (new direct conversation"))
        _ = model.update(.key(.up))
        #expect(model.selection == .conversation(.room("#lobby")), "Up from bob skips alice (you)")
    }

    @Test("Home and End jump to the ends of the sidebar when the input is empty")
    func homeEnd() {
        var model = lobbyModel()
        _ = model.update(.key(.end))
        #expect(model.selection == .user("小明", room: .room("#lobby")))
        _ = model.update(.key(.home))
        #expect(model.selection == .conversation(.server))
    }

    @Test("refused: empty messages, yourself, before registration, the server window")
    func refusals() {
        var model = lobbyModel()
        #expect(model.update(.key(.enter)) == [.note("Empty message: nothing sent", conversation: .room("#lobby"), isError: true)])
        model.selection = .user("alice", room: .room("#lobby"))
        _ = model.update(.key(.character("x")))
        guard case .note(let text, _, true) = model.update(.key(.enter)).first else { Issue.record("no refusal"); return }
        #expect(text.hasPrefix("That is you"))
        model.everRegistered = false
        model.selection = .conversation(.room("#lobby"))
        _ = model.update(.key(.character("x")))
        guard case .note(let early, _, true) = model.update(.key(.enter)).first else { Issue.record("no refusal"); return }
        #expect(early.hasPrefix("Not connected yet"))
    }

    @Test("commands: /msg, /me, /join, /nick, unknown and wrong arguments")
    func commands() {
        var model = lobbyModel()
        func run(_ line: String) -> [UICommand] {
            model.editor.set(line)
            return model.update(.key(.enter))
        }
        // Typed in #lobby, landing in the conversation with bob: echoed where typed too.
        #expect(run("/msg bob hello there") == [.send(text: "hello there", to: "bob"),
                                                .note("-> bob: hello there", conversation: .room("#lobby"), isError: false)])
        #expect(run("/me waves") == [.action(text: "waves", to: "#lobby")])
        #expect(run("/join #dev") == [.irc(IRCMessage("JOIN", "#dev"))])
        #expect(run("/nick 小明2") == [.irc(IRCMessage("NICK", "小明2"))])
        #expect(run("/quit gone") == [.quit(reason: "gone")])
        #expect(run("/frobnicate") == [.note("Unknown command /frobnicate: /help lists the commands", conversation: .room("#lobby"), isError: true)])
        #expect(run("/msg bob") == [.note("Usage: /msg NICK TEXT — send a direct message", conversation: .room("#lobby"), isError: true)])
        #expect(run("/nick 9x").first.map { if case .note(let t, _, true) = $0 { return t.contains("digit") } else { return false } } == true)
        #expect(run("//not a command") == [.send(text: "/not a command", to: "#lobby")])
        let help = run("/help")
        #expect(help.count == SlashCommands.all.count + ChatModel.keyHelp.count)
        for name in ["/msg", "/query", "/me", "/nick", "/join", "/part", "/topic", "/away", "/whois", "/names", "/clear", "/disconnect", "/reconnect", "/quit"] {
            #expect(help.contains { if case .note(let t, _, _) = $0 { return t.hasPrefix(name) } else { return false } }, "\(name) missing from /help")
        }
    }

    @Test("room operator commands become the IRC lines irssi sends")
    func operatorCommands() {
        var model = lobbyModel()
        func run(_ line: String) -> [UICommand] {
            model.editor.set(line)
            return model.update(.key(.enter))
        }
        #expect(run("/kick bob too loud") == [.irc(IRCMessage("KICK", "#lobby", "bob", "too loud"))])
        #expect(run("/kick bob") == [.irc(IRCMessage("KICK", "#lobby", "bob"))])
        #expect(run("/ban mallory") == [.irc(IRCMessage("MODE", "#lobby", "+b", "mallory!*@*"))])
        #expect(run("/ban *!*@evil.example") == [.irc(IRCMessage("MODE", "#lobby", "+b", "*!*@evil.example"))])
        #expect(run("/unban mallory!*@*") == [.irc(IRCMessage("MODE", "#lobby", "-b", "mallory!*@*"))])
        #expect(run("/op bob carol") == [.irc(IRCMessage("MODE", "#lobby", "+oo", "bob", "carol"))])
        #expect(run("/devoice a b c d e") == [.irc(IRCMessage("MODE", "#lobby", "-vvvv", "a", "b", "c", "d")),
                                              .irc(IRCMessage("MODE", "#lobby", "-v", "e"))])
        #expect(run("/invite bob") == [.irc(IRCMessage("INVITE", "bob", "#lobby"))])
        #expect(run("/invite bob #dev") == [.irc(IRCMessage("INVITE", "bob", "#dev"))])
        #expect(run("/mode +ik sesame") == [.irc(IRCMessage("MODE", "#lobby", "+ik", "sesame"))])
        #expect(run("/mode alice +i") == [.irc(IRCMessage("MODE", "alice", "+i"))])
        #expect(run("/mode") == [.irc(IRCMessage("MODE", "#lobby"))])
        #expect(run("/quote WHO #lobby %na") == [.irc(IRCMessage("WHO", "#lobby", "%na")),
                                                 .note("Sent to the server: WHO #lobby %na", conversation: .room("#lobby"), isError: false)])
        #expect(run("/ignore mallory") == [.ignore("mallory")])
        #expect(run("/ignore") == [.ignore(nil)])
        #expect(run("/unignore mallory") == [.unignore("mallory")])
        #expect(run("/kick") == [.note("Usage: /kick [#ROOM] NICK [REASON] — (room operators) remove someone from the room", conversation: .room("#lobby"), isError: true)])
        // irssi's and WeeChat's form names the room, from wherever it is typed.
        #expect(run("/kick #dev bob too loud") == [.irc(IRCMessage("KICK", "#dev", "bob", "too loud"))])
        #expect(run("/op #dev bob carol") == [.irc(IRCMessage("MODE", "#dev", "+oo", "bob", "carol"))])
        #expect(run("/ban #dev mallory") == [.irc(IRCMessage("MODE", "#dev", "+b", "mallory!*@*"))])
        #expect(notes(run("/kick #dev")) == ["Usage: /kick [#ROOM] NICK [REASON] — (room operators) remove someone from the room"])
        model.selection = .conversation(.server)
        #expect(notes(run("/op bob")) == ["Not in a room here: /op #ROOM NICK…, or go to the room"])
        #expect(notes(run("/invite bob")) == ["Not in a room here: /invite NICK #ROOM, or go to the room"])
    }

    @Test("a paste of many lines asks first, and goes as one message of several lines (the client makes it a multiline batch where it can)")
    func paste() {
        var model = lobbyModel()
        #expect(model.update(.key(.paste("one\ntwo"))) == [.send(text: "one\ntwo", to: "#lobby")])
        #expect(model.update(.key(.paste("1\n2\n3\n4\n5"))).isEmpty)
        #expect(draw(model).lines[11].hasPrefix("Paste 5 lines to #lobby? y/n"))
        #expect(model.update(.key(.character("y"))) == [.send(text: "1\n2\n3\n4\n5", to: "#lobby")])
        _ = model.update(.key(.paste("1\n2\n3\n4")))
        #expect(model.update(.key(.character("n"))).count == 1)
        #expect(model.pendingPaste == nil)
    }

    @Test("a flood in view asks to mark read once per round trip, not once per line")
    func markReadOncePerRoundTrip() {
        var model = lobbyModel()
        var asked = 0
        for i in 0..<1000 {
            let line = ChatLine(time: Double(i), kind: .message, sender: "bob", text: "flood \(i)")
            asked += model.receive(.line(.room("#lobby"), line)).filter { $0 == .markRead(.room("#lobby")) }.count
            if i == 500 { model.receive(.markedRead(.room("#lobby"))) }
        }
        #expect(asked == 2, "one before the client's answer, one after it")
    }

    @Test("a direct message elsewhere rings the bell; one in view is marked read")
    func bell() {
        var model = lobbyModel()
        let line = ChatLine(time: 0, kind: .message, sender: "bob", text: "psst", isHighlight: true)
        #expect(model.update(.client(.line(.direct("bob"), line))) == [.notify(title: "bob", body: "psst"), .bell])
        model.bellEnabled = false
        model.settings.set("notify", "off")
        #expect(model.update(.client(.line(.direct("bob"), line))) == [])
        #expect(model.update(.client(.line(.room("#lobby"), line))) == [.markRead(.room("#lobby"))])
    }

    @Test("the search hit just opened is drawn reversed until the next key (tour 2: it looked like its neighbours)")
    func revealedHitMarked() {
        var model = lobbyModel(extra: [":bob!b@h PRIVMSG #lobby :find me", ":bob!b@h PRIVMSG #lobby :not me"])
        let line = model.viewedConversation!.lines.first { $0.text == "find me" }!
        model.revealing = (.room("#lobby"), line.time, line.text)
        let screen = draw(model)
        let hit = (0..<model.height).first { screen.line($0).contains("find me") }!
        let other = (0..<model.height).first { screen.line($0).contains("not me") }!
        #expect(screen[0, hit].style.reverse && screen[14, hit].style.reverse)
        #expect(!screen[0, other].style.reverse)
        _ = model.update(.key(.character("x")))
        #expect(!draw(model)[0, hit].style.reverse, "the next key ends it")
    }

    @Test("a topic too long for the title row ends in an ellipsis")
    func longTopic() {
        let model = lobbyModel(extra: [":srv 332 alice #lobby :Builds, bugs, releases and whatever else comes up on a long Friday afternoon"])
        #expect(draw(model).lines[0] == " #lobby (4) — Builds, bugs, releases and whatever else…     ", "cut at a word")
    }

    @Test("a scroll past the oldest row (lines gone since it was set) draws the oldest rows at the top, no blank rows")
    func scrolledPastTheTop() {
        var model = lobbyModel(extra: (0..<40).map { ":bob!b@h PRIVMSG #lobby :line \($0)" })
        for _ in 0..<50 { _ = model.update(.key(.pageUp)) }
        let top = draw(model).lines
        // As a search hit's scroll does when the conversation then has fewer rows than it counted.
        model.scroll[model.viewedID] = 60
        expectScreen(model, top)
        #expect(top[9].contains("33 more rows below (PgDn)"))
        #expect(top[1...8].allSatisfy { !$0.hasPrefix("                    ") }, "every row above the note has a line")
    }

    @Test("PgUp scrolls back, PgDn returns")
    func scrolling() {
        var model = lobbyModel(extra: (0..<40).map { ":bob!b@h PRIVMSG #lobby :line \($0)" })
        // At the bottom: before PgUp and again after PgDn.
        let bottom = [
            " #lobby (4)                                                 ",
            "10:05 <bob> line 31                            │1 (server)  ",
            "10:05 <bob> line 32                            │2 #lobby    ",
            "10:05 <bob> line 33                            │ @alice…    ",
            "10:05 <bob> line 34                            │ +bob       ",
            "10:05 <bob> line 35                            │  carol     ",
            "10:05 <bob> line 36                            │  小明      ",
            "10:05 <bob> line 37                            │            ",
            "10:05 <bob> line 38                            │            ",
            "10:05 <bob> line 39                            │            ",
            " alice │ connected │ Enter sends to #lobby                  ",
            ">                                                           ",
        ]
        expectScreen(model, bottom)
        _ = model.update(.key(.pageUp))
        // Eight rows up, and the pane says so.
        expectScreen(model, [
            " #lobby (4)                                                 ",
            "10:05 <bob> line 24                            │1 (server)  ",
            "10:05 <bob> line 25                            │2 #lobby    ",
            "10:05 <bob> line 26                            │ @alice…    ",
            "10:05 <bob> line 27                            │ +bob       ",
            "10:05 <bob> line 28                            │  carol     ",
            "10:05 <bob> line 29                            │  小明      ",
            "10:05 <bob> line 30                            │            ",
            "10:05 <bob> line 31                            │            ",
            "                      8 more rows below (PgDn) │            ",
            " alice │ connected │ Enter sends to #lobby                  ",
            ">                                                           ",
        ])
        _ = model.update(.key(.pageDown))
        expectScreen(model, bottom)
        // PgUp stops at the oldest line (41 rows, 8 shown above the marker), so one PgDn moves at once.
        for _ in 0..<50 { _ = model.update(.key(.pageUp)) }
        #expect(model.scroll[model.viewedID] == 33)
        _ = model.update(.key(.pageDown))
        #expect(model.scroll[model.viewedID] == 25)
        _ = model.update(.key(.pageUp))
        model.editor.set("back to the bottom")
        _ = model.update(.key(.enter))
        #expect(model.scroll[model.viewedID] == 0, "sending jumps to the newest lines")
    }

    @Test("Tab completes nicknames and commands")
    func completion() {
        var model = lobbyModel()
        for character in "ca" { _ = model.update(.key(.character(character))) }
        _ = model.update(.key(.tab))
        #expect(model.editor.text == "carol: ")
        model.editor.set("/wh")
        _ = model.update(.key(.tab))
        #expect(model.editor.text == "/whois ")
    }

    @Test("Tab after /send asks the shell for the directory instead of reading it; the answer completes the path")
    func pathCompletionIsACommand() {
        var model = lobbyModel()
        model.editor.set("/send bob ~/D")
        #expect(model.update(.key(.tab)) == [.listFiles(word: "~/D")])
        #expect(model.editor.text == "/send bob ~/D", "nothing completed before the answer")
        let entries = [FileEntry(name: "Downloads", isDirectory: true), FileEntry(name: "Documents", isDirectory: true),
                       FileEntry(name: "notes.txt", isDirectory: false), FileEntry(name: ".Dotfile", isDirectory: false)]
        #expect(model.update(.filesListed(word: "~/D", entries: entries)) == [])
        #expect(model.editor.text == "/send bob ~/Documents/")
        // A second Tab cycles through what was listed, without asking again.
        #expect(model.update(.key(.tab)) == [])
        #expect(model.editor.text == "/send bob ~/Downloads/")
    }

    @Test("a directory listing that arrives after the path changed is not applied")
    func stalePathCompletion() {
        var model = lobbyModel()
        model.editor.set("/send bob re")
        #expect(model.update(.key(.tab)) == [.listFiles(word: "re")])
        _ = model.update(.key(.character("p")))
        _ = model.update(.filesListed(word: "re", entries: [FileEntry(name: "report.pdf", isDirectory: false)]))
        #expect(model.editor.text == "/send bob rep")
        #expect(PathCompletion.candidates(for: "rep", entries: [FileEntry(name: "report.pdf", isDirectory: false),
                                                               FileEntry(name: "other", isDirectory: false)]) == ["report.pdf"])
        #expect(PathCompletion.candidates(for: "/tmp/", entries: [FileEntry(name: ".x", isDirectory: false),
                                                                 FileEntry(name: "a", isDirectory: true)]) == ["/tmp/a/"])
        #expect(PathCompletion.directory(of: "/home/alice/Do") == "/home/alice" && PathCompletion.directory(of: "re") == ".")
    }
}

@Suite("transfer lines")
struct TransferRenderTests {
    @Test("a received file saved as slow (1).dat (slow.dat was taken): its progress line names it as saved")
    func progressNamesTheSavedFile() {
        var model = lobbyModel(width: 72, height: 8)
        model.selection = .conversation(.direct("bob"))
        model.receive(.line(.direct("bob"), ChatLine(time: 36_300, kind: .transfer(3), text: "Receiving slow (1).dat from bob into /tmp/dl")))
        model.receive(.markedRead(.direct("bob")))
        var info = TransferInfo(id: 3, direction: .receiving, peer: "bob", offeredName: "slow.dat", localPath: "/tmp/dl/slow (1).dat",
                                size: 1 << 20, state: .active, offeredAt: 0)
        info.transferred = 1 << 19
        info.startedAt = 100
        model.receive(.transfer(info))
        model.now = 101
        let rows = draw(model).lines
        #expect(rows.contains { $0.contains("receiving slow (1).dat  [") }, "\(rows)")
        #expect(!rows.contains { $0.contains("slow.dat") })
    }

    @Test("a running transfer's newest line shows a progress bar, percent, rate and time left")
    func progress() {
        var model = lobbyModel(width: 72, height: 8)
        model.selection = .conversation(.direct("bob"))
        model.receive(.line(.direct("bob"), ChatLine(time: 36_300, kind: .transfer(7), text: "bob offers big.iso, 100.0 MiB: /accept 7 or /reject 7", isHighlight: true)))
        model.receive(.markedRead(.direct("bob")))
        var info = TransferInfo(id: 7, direction: .receiving, peer: "bob", offeredName: "big.iso", localPath: "/tmp/big.iso",
                                size: 100 << 20, state: .active, offeredAt: 0)
        info.transferred = 45 << 20
        info.startedAt = 100
        model.receive(.transfer(info))
        model.now = 103
        // The progress has a row of its own saying what happens now, under the (answered) offer.
        expectScreen(model, [
            " bob (direct)                                                           ",
            "                                                         │ @alice (you) ",
            "10:05 -*- bob offers big.iso, 100.0 MiB: /accept 7 or    │ +bob         ",
            "          /reject 7                                      │  carol       ",
            "          receiving big.iso  [####-------] 45%  15.0     │  小明        ",
            "          MiB/s  4 s left                                │3 bob         ",
            " alice │ connected │ Enter sends to bob                                 ",
            ">                                                                       ",
        ])
        info.state = .done(sha256: "x", seconds: 6)
        model.receive(.transfer(info))
        expectScreen(model, [
            " bob (direct)                                                           ",
            "                                                         │ @alice (you) ",
            "                                                         │ +bob         ",
            "                                                         │  carol       ",
            "10:05 -*- bob offers big.iso, 100.0 MiB: /accept 7 or    │  小明        ",
            "          /reject 7                                      │3 bob         ",
            " alice │ connected │ Enter sends to bob                                 ",
            ">                                                                       ",
        ])
    }
}

@Suite("input row")
struct InputRowTests {
    @Test("a line longer than the row shows < where text is hidden to the left")
    func hiddenLeft() {
        var model = lobbyModel(width: 30, height: 5)
        model.editor.set(String(repeating: "0123456789", count: 5))
        expectScreen(model, [
            " #lobby (4)                   ",
            "                              ",
            "10:05 -!- You joined #lobby   ",
            " alice │ connected │ Enter…   ",
            "< 345678901234567890123456789 ",
        ])
        model.editor.set("short")
        expectScreen(model, [
            " #lobby (4)                   ",
            "                              ",
            "10:05 -!- You joined #lobby   ",
            " alice │ connected │ Enter…   ",
            "> short                       ",
        ])
    }
}

@Test("the arrows pass over the direct heading: from the last member of the last room straight to dave")
func headingSkipped() {
    var model = lobbyModel(extra: [":dave!d@h PRIVMSG alice :hi from outside"])
    model.selection = .user("小明", room: .room("#lobby"))
    _ = model.update(.key(.down))
    #expect(model.selection == .conversation(.direct("dave")))
    _ = model.update(.key(.up))
    #expect(model.selection == .user("小明", room: .room("#lobby")))
}
