import Testing
@testable import ChatUI
import ChatClientKit
import IRCWire

@Suite("chat screen: replies, reactions, deletions, typing, multiline, renames, display names")
struct ModernMessagingGoldenTests {
    let at = 3600.0 * 10 + 60 * 5

    @Test("a reply quotes its parent above it; reactions sit under the message (yours in the highlight colour); a deletion says who")
    func replyReactionsDeletion() {
        var model = lobbyModel(extra: [
            "@msgid=m1 :bob!b@h PRIVMSG #lobby :who is up for lunch at noon today?",
            "@msgid=m2;+draft/reply=m1 :carol!c@h PRIVMSG #lobby :me!",
            "@+draft/react=👍;+draft/reply=m1 :carol!c@h TAGMSG #lobby",
            "@+draft/react=👍;+draft/reply=m1 :alice!a@h TAGMSG #lobby",
            "@+draft/react=🎉;+draft/reply=m1 :小明!x@h TAGMSG #lobby",
            "@msgid=m3 :bob!b@h PRIVMSG #lobby :buy cheap watches",
            ":alice!a@h REDACT #lobby m3 :spam",
        ])
        model.now = at
        expectScreen(model, [
            " #lobby (4)                                                 ",
            "                                               │1 (server)  ",
            "                                               │2 #lobby    ",
            "                                               │ @alice…    ",
            "10:05 -!- You joined #lobby                    │ +bob       ",
            "10:05 <bob> who is up for lunch at noon today? │  carol     ",
            "            👍 2  🎉 1                         │  小明      ",
            "              ↳ bob: who is up for lunch at…   │            ",
            "10:05 <carol> me!                              │            ",
            "10:05 <bob> (deleted by alice)                 │            ",
            " alice │ connected │ Enter sends to #lobby                  ",
            ">                                                           ",
        ], styles: [
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "                                               ddddddddddd  ",
            "                                               dRRRRRRRRrrrr",
            "                                               dAAAAAAAA    ",
            "ddddddddddddddddddddddddddd                    dBBBBB       ",
            "dddddddBBBdd                                   dCCCCCCC     ",
            "            hhhh  dddd                         dXXXXXX      ",
            "              dddddddddddddddddddddddddddddd   d            ",
            "dddddddCCCCCdd                                 d            ",
            "dddddddBBBdddddddddddddddddddd                 d            ",
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "dd                                                          ",
        ], legend: StyleLegend.lobby)
    }

    @Test("a multiline message: its lines under the first at the indent, a blank line kept; 'carol is typing…' in the status line, gone after 6 s")
    func multilineAndTyping() {
        var model = lobbyModel(extra: [
            "@msgid=ml :bob!b@h BATCH +x draft/multiline #lobby",
            "@batch=x :bob!b@h PRIVMSG #lobby :func greet() {",
            "@batch=x :bob!b@h PRIVMSG #lobby :    print(\"hi\")",
            "@batch=x :bob!b@h PRIVMSG #lobby :}",
            "@batch=x :bob!b@h PRIVMSG #lobby :",
            "@batch=x :bob!b@h PRIVMSG #lobby :that is all",
            ":bob!b@h BATCH -x",
        ])
        model.receive("@+typing=active :carol!c@h TAGMSG #lobby", now: at)
        model.now = at + 1
        expectScreen(model, [
            " #lobby (4)                                                 ",
            "                                               │1 (server)  ",
            "                                               │2 #lobby    ",
            "                                               │ @alice…    ",
            "10:05 -!- You joined #lobby                    │ +bob       ",
            "10:05 <bob> func greet() {                     │  carol     ",
            "                print(\"hi\")                    │  小明      ",
            "            }                                  │            ",
            "                                               │            ",
            "            that is all                        │            ",
            " alice │ connected │ carol is typing… │ Enter sends to…     ",
            ">                                                           ",
        ])
        model.now = at + 6
        #expect(!draw(model).lines[model.height - 2].contains("typing"), "an active that is not renewed lapses after 6 s")
    }

    @Test("display names beside nicknames in the sidebar; a renamed room keeps its place, lines and members")
    func displayNamesAndRename() {
        var model = lobbyModel(extra: [
            ":srv METADATA bob display-name * :Bob B.",
            ":srv METADATA 小明 display-name * :Xiao Ming",
            ":bob!b@h PRIVMSG #lobby :hello",
        ])
        model.receive(":alice!a@h RENAME #lobby #hall :a better name", now: at)
        model.now = at
        expectScreen(model, [
            " #hall (4)                                                  ",
            "                                               │1 (server)  ",
            "                                               │2 #hall     ",
            "                                               │ @alice…    ",
            "                                               │ +bob ·…    ",
            "                                               │  carol     ",
            "10:05 -!- You joined #lobby                    │  小明 ·…   ",
            "10:05 <bob> hello                              │            ",
            "10:05 -!- alice renamed the room #lobby to     │            ",
            "          #hall: a better name                 │            ",
            " alice │ connected │ Enter sends to #hall                   ",
            ">                                                           ",
        ])
    }
}

@Suite("chat screen: the message cursor")
struct MessageCursorTests {
    let lines = [
        "@msgid=m1 :bob!b@h PRIVMSG #lobby :who is up for lunch?",
        "@msgid=m2 :carol!c@h PRIVMSG #lobby :me",
        "@msgid=m3 :alice!a@h PRIVMSG #lobby :me too",
    ]

    @Test("Alt-Up and Ctrl-Up arrive as the cursor keys (xterm's modifiers 3 and 5); plain Up stays Up")
    func decoded() {
        var decoder = KeyDecoder()
        func keys(_ text: String) -> [Key] { text.unicodeScalars.flatMap { decoder.feed($0) } }
        #expect(keys("\u{1B}[1;3A") == [.messageUp] && keys("\u{1B}[1;5A") == [.messageUp] && keys("\u{1B}[1;3B") == [.messageDown])
        #expect(keys("\u{1B}[A") == [.up] && keys("\u{1B}[1;2A") == [.up])
    }

    @Test("the highlighted message in reverse, the keys in the status line; Up moves to the one before; the whole screen")
    func highlighted() {
        var model = lobbyModel(extra: lines)
        _ = model.update(.key(.messageUp))
        _ = model.update(.key(.up))
        expectScreen(model, [
            " #lobby (4)                                                 ",
            "                                               │1 (server)  ",
            "                                               │2 #lobby    ",
            "                                               │ @alice…    ",
            "                                               │ +bob       ",
            "                                               │  carol     ",
            "10:05 -!- You joined #lobby                    │  小明      ",
            "10:05 <bob> who is up for lunch?               │            ",
            "10:05 <carol> me                               │            ",
            "10:05 <alice> me too                           │            ",
            " alice │ connected │ r reply · e react · d delete · y copy  ",
            ">                                                           ",
        ], styles: [
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "                                               ddddddddddd  ",
            "                                               dRRRRRRRRrrrr",
            "                                               dAAAAAAAA    ",
            "                                               dBBBBB       ",
            "                                               dCCCCCCC     ",
            "ddddddddddddddddddddddddddd                    dXXXXXX      ",
            "dddddddBBBdd                                   d            ",
            "rrrrrrrrrrrrrrrr                               d            ",
            "dddddddAAAAAdd                                 d            ",
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "dd                                                          ",
        ], legend: StyleLegend.lobby)
    }

    @Test("r: the input says whom it answers and Enter sends a reply; e then a digit reacts; d deletes; y copies; Esc leaves")
    func actions() {
        var model = lobbyModel(extra: lines)
        _ = model.update(.key(.messageUp))
        _ = model.update(.key(.up))
        _ = model.update(.key(.up))
        _ = model.update(.key(.character("r")))
        #expect(model.messageCursor == nil && model.replyingTo?.msgid == "m1")
        #expect(draw(model).lines[10].contains("replying to bob: who is up for lunch?"))
        #expect(model.type("count me in") == [.reply(text: "count me in", to: "#lobby", parent: "m1")])
        #expect(model.replyingTo == nil)
        // p on a reply goes to the message it answers.
        model.receive("@msgid=m4;+draft/reply=m1 :bob!b@h PRIVMSG #lobby :great", now: 36_300)
        _ = model.update(.key(.messageUp))
        _ = model.update(.key(.character("p")))
        #expect(model.messageCursor == "m1")
        _ = model.update(.key(.escape))
        _ = model.update(.key(.messageUp))
        _ = model.update(.key(.character("e")))
        #expect(draw(model).lines[10].contains("react with: 1 👍 2 ❤️"))
        #expect(model.update(.key(.character("1"))) == [.irc(IRCMessage(tags: [IRCTag("+draft/react", "👍"), IRCTag("+draft/reply", "m4")], command: "TAGMSG", params: ["#lobby"]))])
        #expect(model.messageCursor == nil, "one reaction, then the cursor is done")
        _ = model.update(.key(.messageUp))
        #expect(model.update(.key(.character("d"))) == [], "asked first")
        #expect(model.update(.key(.character("y"))) == [.irc(IRCMessage(command: "REDACT", params: ["#lobby", "m4"]))])
        _ = model.update(.key(.messageUp))
        #expect(model.update(.key(.character("y"))).first == .copy("great"))
        _ = model.update(.key(.messageUp))
        _ = model.update(.key(.escape))
        #expect(model.messageCursor == nil)
        // Another letter while the cursor is on is text: the cursor goes and the input takes it.
        _ = model.update(.key(.messageUp))
        _ = model.update(.key(.character("k")))
        #expect(model.messageCursor == nil && model.editor.text == "k")
        model.editor.set("")
        #expect(model.type("/react 1 :tada:") == [.irc(IRCMessage(tags: [IRCTag("+draft/react", "🎉"), IRCTag("+draft/reply", "m1")], command: "TAGMSG", params: ["#lobby"]))])
        #expect(model.type("/delete 99").first.map { if case .note(let text, _, true) = $0 { text.hasPrefix("No message [99]") } else { false } } == true)
    }
}

@Suite("chat screen: typing notifications sent")
struct TypingSentTests {
    @Test("active when writing starts and at most every 3 s; paused after 5 s without a key; done when the input empties; none for commands or after Enter")
    func typing() {
        var model = lobbyModel()
        model.now = 1000
        #expect(model.update(.key(.character("h"))) == [.typing("active", to: "#lobby")])
        #expect(model.update(.key(.character("i"))).isEmpty, "within 3 s: nothing more")
        model.now = 1003
        #expect(model.update(.key(.character("!"))) == [.typing("active", to: "#lobby")])
        #expect(model.update(.tick(now: 1007)).isEmpty)
        #expect(model.update(.tick(now: 1008)) == [.typing("paused", to: "#lobby")])
        _ = model.update(.key(.backspace)); _ = model.update(.key(.backspace))
        #expect(model.update(.key(.backspace)) == [.typing("done", to: "#lobby")], "emptied")
        #expect(model.update(.key(.character("/"))).isEmpty && model.update(.key(.character("j"))).isEmpty, "a command is not a message")
        model.editor.set("")
        _ = model.update(.key(.character("o")))
        let sent = model.update(.key(.enter))
        #expect(!sent.contains(.typing("done", to: "#lobby")) && sent.contains(.send(text: "o", to: "#lobby")), "the message itself says it is done")
    }
}
