import Testing
@testable import ChatUI
@testable import ChatClientKit
import IRCWire

/// What an irssi or WeeChat user's second tour found (issue 46).
@Suite("the second tour's findings (issue 46)")
struct DailyDriverTests {
    @Test("Up on an empty line picks the recipient; with arrows = history it recalls earlier lines, as irssi and WeeChat do")
    func arrowsHistory() {
        var model = threeRooms(size: 2, width: 80, height: 12)
        _ = model.type("first line")
        #expect(model.editor.isEmpty)
        let before = model.selection
        _ = model.update(.key(.down))
        #expect(model.selection != before, "pick: Down moves the selection")
        _ = model.update(.key(.up))
        #expect(model.selection == before && model.editor.isEmpty)
        #expect(notes(model.type("/set arrows history")).first?.contains("arrows") == true)
        _ = model.update(.key(.up))
        #expect(model.editor.text == "/set arrows history" && model.selection == before)
        _ = model.update(.key(.up))
        #expect(model.editor.text == "first line" && model.selection == before)
        _ = model.update(.key(.down))
        _ = model.update(.key(.down))
        #expect(model.editor.isEmpty && model.selection == before)
        #expect(notes(model.type("/set arrows sideways")) == ["arrows is one of pick, history, not \"sideways\""])
    }

    @Test("Ctrl-C with text typed clears the line (Ctrl-Y brings it back); on an empty line it asks, then quits")
    func ctrlC() {
        var model = lobbyModel()
        model.editor.set("half a thought")
        #expect(model.update(.key(.control("c"))) == [])
        #expect(model.editor.isEmpty)
        _ = model.update(.key(.control("y")))
        #expect(model.editor.text == "half a thought")
        model.editor.set("")
        _ = model.update(.key(.control("c")))
        #expect(model.update(.key(.character("y"))) == [.quit(reason: "Leaving")])
    }

    @Test("sidebar-members: every room's people, only the current room's, or none; the conversations below stay in reach")
    func sidebarMembers() {
        var model = threeRooms(size: 3, width: 80, height: 14)
        func labels() -> [String] { model.sidebar.map { if case .user(let nick, _) = $0 { return "  " + nick } else { return model.rowName(SidebarRow(network: 0, item: $0)) } } }
        #expect(labels().filter { $0.hasPrefix("  ") }.count == 12)
        _ = model.type("/set sidebar-members current")
        #expect(labels() == ["(server)", "#lobby", "  alice", "  lobby1", "  lobby2", "  lobby3", "#dev", "#ops"])
        _ = model.update(.key(.alt("3")))
        #expect(labels() == ["(server)", "#lobby", "#dev", "  alice", "  dev1", "  dev2", "  dev3", "#ops"])
        _ = model.type("/set sidebar-members off")
        #expect(labels() == ["(server)", "#lobby", "#dev", "#ops"])
        let screen = draw(model).lines
        #expect(screen[1].contains("│1 (server)"), "row 1: \(screen[1])")
        #expect(screen[4].contains("│4 #ops"), "row 4: \(screen[4])")
    }

    @Test("a click on a sidebar row leaves the list where it was: the row clicked stays under the pointer")
    func clickKeepsList() {
        var model = threeRooms(size: 8, width: 80, height: 12)
        let x = model.layout.paneWidth + 3
        _ = model.update(.key(.mouse(MouseEvent(button: .wheelDown, x: x, y: 4, pressed: true))))
        _ = model.update(.key(.mouse(MouseEvent(button: .wheelDown, x: x, y: 4, pressed: true))))
        let before = draw(model).lines
        let row = before.firstIndex { $0.contains("│3 #dev") }!
        _ = model.update(.key(.mouse(MouseEvent(button: .left, x: x, y: row, pressed: true))))
        #expect(model.viewedID == .room("#dev"))
        #expect(draw(model).lines[row].contains("│3 #dev"), "the clicked row moved: \(draw(model).lines)")
    }

    @Test("/query NICK TEXT opens the conversation and says TEXT there")
    func queryWithText() {
        var model = lobbyModel()
        let commands = model.type("/query bob are you around?")
        #expect(commands == [.open("bob"), .send(text: "are you around?", to: "bob")])
        #expect(model.pendingShow == .direct("bob"), "the view goes there once the client has opened it")
        #expect(model.type("/query carol") == [.open("carol")])
    }

    @Test("/notice to the conversation in view shows once (its own echo), to another with a note where it was typed")
    func noticeOnce() {
        var model = lobbyModel()
        #expect(model.type("/notice #lobby heads up") == [.irc(IRCMessage("NOTICE", "#lobby", "heads up"))])
        #expect(notes(model.type("/notice bob psst")) == ["-> -bob- psst"])
    }

    @Test("an alias stops at a refused step, and an empty $2- leaves no trailing space")
    func aliasSteps() {
        var model = lobbyModel()
        _ = model.type("/alias two /msg $1 $2-; /me did it")
        // /msg to yourself is refused: /me is not run.
        let refused = model.type("/two alice")
        #expect(refused.contains { if case .note(_, _, isError: true) = $0 { return true } else { return false } })
        #expect(!refused.contains { if case .action = $0 { return true } else { return false } })
        #expect(notes(refused).last == "The rest of /two was not run")
        #expect(model.aliases.expand("/two bob", nick: "alice", target: "#lobby") == ["/msg bob", "/me did it"])
    }

    @Test("/window server goes to the server window; /window lists numbers aligned past 9 with unread counts")
    func windowServer() {
        var model = threeRooms(size: 2, width: 80, height: 12)
        for n in 1...9 { model.receive(":p\(n)!p@h PRIVMSG alice :hi \(n)", now: 36400 + Double(n)) }
        _ = model.type("/window server")
        #expect(model.viewedID == .server)
        let list = notes(model.type("/window"))
        #expect(list.first == " 1  (server)")
        #expect(list[4] == " 5  p1  (1 unread, for you)")
        #expect(list.last == "13  p9  (1 unread, for you)")
    }

    @Test("Tab on a room's name at the start of a line adds a space, not \": \"")
    func tabRoom() {
        var model = threeRooms(size: 2, width: 80, height: 12)
        model.editor.set("#de")
        _ = model.update(.key(.tab))
        #expect(model.editor.text == "#dev ")
        model.editor.set("lobb")
        _ = model.update(.key(.tab))
        #expect(model.editor.text == "lobby1: ")
    }
}

@Suite("opening a highlight shows its line (issue 46, second tour)")
struct RevealTests {
    @Test("Enter on a highlight far up scrolls so its line is in view, whatever folded joins and long lines lie below it")
    func revealed() {
        var model = lobbyModel(width: 60, height: 14)
        for n in 1...30 { model.receive(":bob!b@h PRIVMSG #lobby :before \(n)", now: 36000 + Double(n)) }
        model.receive(":dave!d@h PRIVMSG #lobby :alice, are you there?", now: 36100)
        for n in 1...12 { model.receive(":guest\(n)!g@h JOIN #lobby", now: 36200 + Double(n)) }
        for n in 1...20 {
            model.receive(":bob!b@h PRIVMSG #lobby :after \(n) " + String(repeating: "long words wrap here ", count: n % 3 + 1), now: 36300 + Double(n))
        }
        _ = model.type("/highlights")
        _ = model.update(.key(.enter))
        let screen = draw(model).lines
        let row = screen.firstIndex { $0.contains("<dave> alice, are you there?") }
        #expect(row != nil, "\(screen)")
        if let row { #expect((3...10).contains(row), "the line is near the middle: row \(row)") }
    }
}

@Suite("/window by name as WeeChat's /buffer (issue 46, second tour)")
struct WindowNameTests {
    @Test("/window ops, /buffer dev, /win ob (anywhere in the name) find rooms without their #")
    func names() {
        var model = threeRooms(size: 2, width: 80, height: 12)
        _ = model.type("/window ops")
        #expect(model.viewedID == .room("#ops"))
        _ = model.type("/buffer dev")
        #expect(model.viewedID == .room("#dev"))
        _ = model.type("/win ob")
        #expect(model.viewedID == .room("#lobby"))
        #expect(notes(model.type("/window zzz")) == ["No conversation called zzz (/window lists them)"])
    }
}

@Suite("a room picked from /list is where the view goes (issue 46)")
struct ListPickTests {
    @Test("Enter on a room in the /list picker joins it, and its join takes the view there, as a typed /join does")
    func pickedJoin() {
        var model = lobbyModel()
        _ = model.type("/list")
        _ = model.receive(.roomList([ListedRoom(name: "#rust", users: 3, topic: "")]))
        #expect(model.update(.key(.enter)) == [.irc(IRCMessage("JOIN", "#rust"))])
        model.receive(":alice!a@h JOIN #rust", now: 36400)
        #expect(model.viewedID == .room("#rust"))
    }
}
