import Testing
@testable import ChatUI
@testable import ChatClientKit
import IRCWire

@Suite("the mouse (issue 46)")
struct MouseTests {
    func click(_ x: Int, _ y: Int) -> UIEvent { .key(.mouse(MouseEvent(button: .left, x: x, y: y, pressed: true))) }
    func wheel(_ up: Bool, _ x: Int, _ y: Int) -> UIEvent { .key(.mouse(MouseEvent(button: up ? .wheelUp : .wheelDown, x: x, y: y, pressed: true))) }

    @Test("SGR reports: buttons, wheel, release, modifiers, 1-based cells; motion and nonsense dropped")
    func decoding() {
        var decoder = KeyDecoder()
        var keys: [Key] = []
        for scalar in "\u{1B}[<0;10;5M\u{1B}[<0;10;5m\u{1B}[<64;1;1M\u{1B}[<65;3;4M\u{1B}[<2;7;8M\u{1B}[<20;2;2M\u{1B}[<32;2;2M\u{1B}[<0;0;5M".unicodeScalars {
            keys += decoder.feed(scalar)
        }
        #expect(keys == [.mouse(MouseEvent(button: .left, x: 9, y: 4, pressed: true)), .mouse(MouseEvent(button: .left, x: 9, y: 4, pressed: false)),
                         .mouse(MouseEvent(button: .wheelUp, x: 0, y: 0, pressed: true)), .mouse(MouseEvent(button: .wheelDown, x: 2, y: 3, pressed: true)),
                         .mouse(MouseEvent(button: .right, x: 6, y: 7, pressed: true)), .mouse(MouseEvent(button: .left, x: 1, y: 1, pressed: true))])
    }

    @Test("a click on a sidebar row picks it; on a heading or yourself nothing; the wheel over the sidebar moves the list, not the choice")
    func sidebar() {
        var model = threeRooms(size: 2, width: 80, height: 12)
        let x = model.layout.paneWidth + 3
        // Rows from the top: 1 (server), 2 #lobby, @alice, lobby1, lobby2, 3 #dev, …
        _ = model.update(click(x, 6))
        #expect(model.selection == .conversation(.room("#dev")) && model.currentRoom == "#dev")
        _ = model.update(click(x, 4))
        #expect(model.selection == .user("lobby1", room: .room("#lobby")))
        _ = model.update(click(x, 3))
        #expect(model.selection == .user("lobby1", room: .room("#lobby")), "your own row cannot be picked")
        let before = draw(model).lines[1]
        _ = model.update(wheel(false, x, 4))
        #expect(draw(model).lines[1] != before && model.selection == .user("lobby1", room: .room("#lobby")))
        _ = model.update(wheel(true, x, 4))
        #expect(draw(model).lines[1] == before)
    }

    @Test("the wheel over the messages scrolls them three rows; a click on a message opens the message cursor there; one in the input moves the caret")
    func pane() {
        var model = lobbyModel(width: 60, height: 12)
        for n in 1...30 { model.receive("@msgid=m\(n) :bob!b@h PRIVMSG #lobby :line \(n)", now: 36300 + Double(n)) }
        _ = model.update(wheel(true, 5, 5))
        #expect(model.scroll[.room("#lobby")] == 3)
        _ = model.update(wheel(false, 5, 5))
        #expect(model.scroll[.room("#lobby")] == 0)
        let screen = draw(model).lines
        let row = screen.firstIndex { $0.hasPrefix("10:05 <bob> line 28") }!
        _ = model.update(click(15, row))
        #expect(model.messageCursor == "m28")
        // The terminal reports the release too (tmux, xterm): it keeps what the press did.
        _ = model.update(.key(.mouse(MouseEvent(button: .left, x: 15, y: row, pressed: false))))
        #expect(model.messageCursor == "m28")
        #expect(draw(model).lines[10].hasPrefix(" alice │ connected │ r reply"))
        _ = model.update(click(15, 0))
        #expect(model.messageCursor == nil, "the title is not a message")
        model.editor.set("hello world")
        _ = model.update(click(2 + 6, 11))
        model.editor.insert("big ")
        #expect(model.editor.text == "hello big world")
    }

    @Test("mouse off: the screen takes no mouse events and tells the terminal to stop reporting them")
    func off() {
        var model = threeRooms(size: 2, width: 80, height: 12)
        #expect(model.type("/set mouse off").contains(.mouseReporting(false)))
        _ = model.update(click(model.layout.paneWidth + 3, 5))
        #expect(model.selection == .conversation(.room("#lobby")))
    }
}
