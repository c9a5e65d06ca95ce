import Testing
@testable import ChatUI
@testable import ChatClientKit
import IRCWire

@Suite("desktop notifications (issue 46)")
struct NotificationTests {
    func notifications(_ commands: [UICommand]) -> [String] {
        commands.compactMap { if case .notify(let title, let body) = $0 { return title + " | " + body } else { return nil } }
    }

    @Test("a direct message or a mention out of sight notifies; in view with the terminal focused, your own, a join or notify off do not")
    func when() {
        var model = lobbyModel()
        #expect(notifications(model.receive(":bob!b@h PRIVMSG alice :are you there?", now: 36400)) == ["bob | are you there?"])
        #expect(notifications(model.receive(":carol!c@h PRIVMSG #lobby :alice: look", now: 36401)) == [], "in view, focused")
        _ = model.update(.key(.focus(false)))
        #expect(notifications(model.receive(":carol!c@h PRIVMSG #lobby :alice: look again", now: 36402)) == ["carol in #lobby | alice: look again"])
        #expect(notifications(model.receive(":carol!c@h PRIVMSG #lobby :not about you", now: 36403)) == [])
        #expect(notifications(model.receive(":bob!b@h PRIVMSG alice :\u{1}ACTION waves\u{1}", now: 36404)) == ["bob | * bob waves"])
        #expect(notifications(model.receive(":dave!d@h JOIN #lobby", now: 36405)) == [])
        #expect(notifications(model.receive(":alice!a@h PRIVMSG bob :mine", now: 36406)) == [])
        _ = model.update(.key(.focus(true)))
        _ = model.type("/set notify off")
        #expect(notifications(model.receive(":bob!b@h PRIVMSG alice :again", now: 36407)) == [])
        _ = model.type("/set notify bell")
        _ = model.type("/set bell off")
        #expect(model.receive(":bob!b@h PRIVMSG alice :ring", now: 36408) == [.bell], "notify = bell rings even with the bell off")
    }

    @Test("the bytes: OSC 777 by default, OSC 9 for iTerm2 and Windows Terminal, OSC 99 for kitty; inside tmux wrapped with every ESC doubled")
    func bytes() {
        #expect(DesktopNotification.style(environment: ["TERM": "xterm-256color"]) == .osc777)
        #expect(DesktopNotification.style(environment: ["TERM": "tmux-256color", "TMUX": "/tmp/t,1,0", "VTE_VERSION": "7600"]) == .osc777)
        #expect(DesktopNotification.style(environment: ["TERM_PROGRAM": "iTerm.app"]) == .osc9)
        #expect(DesktopNotification.style(environment: ["WT_SESSION": "x"]) == .osc9)
        #expect(DesktopNotification.style(environment: ["TERM": "xterm-kitty"]) == .osc99)
        #expect(DesktopNotification.sequence(.osc777, title: "bob in #lobby", body: "hi", inTmux: false) == "\u{1B}]777;notify;bob in #lobby;hi\u{1B}\\")
        #expect(DesktopNotification.sequence(.osc9, title: "bob", body: "hi", inTmux: false) == "\u{1B}]9;bob: hi\u{1B}\\")
        #expect(DesktopNotification.sequence(.osc99, title: "bob", body: "hi", inTmux: false)
                == "\u{1B}]99;i=1:d=0;bob\u{1B}\\\u{1B}]99;i=1:d=1:p=body;hi\u{1B}\\")
        #expect(DesktopNotification.sequence(.osc777, title: "bob", body: "hi", inTmux: true)
                == "\u{1B}Ptmux;\u{1B}\u{1B}]777;notify;bob;hi\u{1B}\u{1B}\\\u{1B}\\")
    }

    @Test("nothing in a message can end the sequence or start another: controls become spaces, a ; in the title a comma, long text is cut")
    func hostileText() {
        let sequence = DesktopNotification.sequence(.osc777, title: "m;allory", body: "x\u{1B}]0;pwned\u{7}\u{9B}y", inTmux: false)
        #expect(sequence == "\u{1B}]777;notify;m,allory;x ]0;pwned  y\u{1B}\\")
        #expect(DesktopNotification.sequence(.osc9, title: "t", body: String(repeating: "a", count: 500), inTmux: false).count < 220)
    }

    @Test("notify = command: the program and its words, then the title and the text as two arguments, no shell")
    func command() {
        #expect(DesktopNotification.commandArguments("notify-send -a chat-tui", title: "bob", body: "$(rm -rf ~); `x`")
                == ["notify-send", "-a", "chat-tui", "bob", "$(rm -rf ~); `x`"])
        #expect(DesktopNotification.commandArguments("", title: "bob", body: "hi") == nil)
        // Words as a shell splits them (quotes group, a backslash keeps the next character), nothing expanded.
        #expect(DesktopNotification.commandArguments("notify-send -a 'chat tui' \"$HOME x\" a\\ b", title: "t", body: "b")
                == ["notify-send", "-a", "chat tui", "$HOME x", "a b", "t", "b"])
        #expect(DesktopNotification.commandArguments("notify-send 'open", title: "t", body: "b") == nil)
        var model = lobbyModel()
        #expect(notes(model.type("/set notify-command notify-send 'open")) == ["notify-command: a quote is not closed in \"notify-send 'open\""])
    }

    @Test("old news never notifies: lines restored from the log at start, the lines shown on joining; a line missed while away does")
    func oldNews() {
        var model = lobbyModel()
        var restored = ChatLine(time: 36000, kind: .message, sender: "bob", text: "from yesterday", isOwn: false, isHighlight: true)
        restored.isHistory = true
        restored.isOldNews = true
        #expect(notifications(model.receive(.line(.direct("bob"), restored))) == [])
        #expect(!model.receive(.line(.direct("bob"), restored)).contains(.bell))
        var missed = ChatLine(time: 36001, kind: .message, sender: "bob", text: "while you were out", isOwn: false, isHighlight: true)
        missed.isHistory = true
        #expect(notifications(model.receive(.line(.direct("bob"), missed))) == ["bob | while you were out"])
    }

    @Test("focus reporting: ESC [ I and ESC [ O")
    func focusKeys() {
        var decoder = KeyDecoder()
        var keys: [Key] = []
        for scalar in "\u{1B}[O\u{1B}[Ix".unicodeScalars { keys += decoder.feed(scalar) }
        #expect(keys == [.focus(false), .focus(true), .character("x")])
    }
}
