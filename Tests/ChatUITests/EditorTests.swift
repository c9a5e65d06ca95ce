import Testing
@testable import ChatUI

@Suite("line editor")
struct EditorTests {
    func editor(_ text: String) -> LineEditor {
        var e = LineEditor()
        e.insert(text)
        return e
    }

    @Test("Left and Backspace move over whole graphemes", arguments: ["中", "👨‍👩‍👧", "e\u{301}", "👍🏽", "🇯🇵"])
    func graphemes(_ cluster: String) {
        var e = editor("a" + cluster + "b")
        e.left()
        e.backspace()
        #expect(e.text == "ab")
        e.right()
        #expect(e.cursor == 2)
    }

    @Test("a combining mark typed after a letter joins it")
    func combiningInput() {
        var e = editor("cafe")
        e.insert("\u{301}")
        #expect(e.characters.count == 4 && e.text == "cafe\u{301}")
    }

    @Test("Ctrl-W, Ctrl-U, Ctrl-K and Ctrl-Y")
    func killAndYank() {
        var e = editor("hello big world")
        e.deleteWordBackward()
        #expect(e.text == "hello big ")
        e.yank()
        #expect(e.text == "hello big world")
        e.home()
        for _ in 0..<6 { e.right() }
        e.killToEnd()
        #expect(e.text == "hello ")
        e.killToStart()
        #expect(e.text == "")
        e.yank()
        #expect(e.text == "hello ")
    }

    @Test("Alt-b, Alt-f and Ctrl-Left/Right move by words; Alt-d deletes the next word (Ctrl-Y puts it back)")
    func words() {
        var model = lobbyModel()
        model.editor.set("alpha beta  gamma")
        _ = model.update(.key(.wordLeft))
        #expect(model.editor.cursor == 12, "to the start of gamma")
        _ = model.update(.key(.alt("b")))
        #expect(model.editor.cursor == 6, "over the two spaces, to the start of beta")
        _ = model.update(.key(.alt("b")))
        _ = model.update(.key(.alt("b")))
        #expect(model.editor.cursor == 0, "stops at the start")
        _ = model.update(.key(.alt("f")))
        #expect(model.editor.cursor == 5, "to the end of alpha")
        _ = model.update(.key(.wordRight))
        #expect(model.editor.cursor == 10, "to the end of beta")
        _ = model.update(.key(.character("Q")))
        #expect(model.editor.text == "alpha betaQ  gamma")
        _ = model.update(.key(.alt("d")))
        #expect(model.editor.text == "alpha betaQ", "the spaces and gamma")
        _ = model.update(.key(.control("y")))
        #expect(model.editor.text == "alpha betaQ  gamma")
        var e = editor("日本 語")
        e.wordLeft()
        #expect(e.cursor == 3, "graphemes, not bytes")
    }

    @Test("Delete removes the grapheme under the cursor")
    func deleteForward() {
        var e = editor("中文")
        e.home()
        e.deleteForward()
        #expect(e.text == "文")
    }

    @Test("history: Ctrl-P and Ctrl-N, with the draft kept")
    func history() {
        var e = LineEditor()
        e.insert("first"); _ = e.submit()
        e.insert("second"); _ = e.submit()
        e.insert("draft")
        e.historyPrevious()
        #expect(e.text == "second")
        e.historyPrevious()
        #expect(e.text == "first")
        e.historyPrevious()
        #expect(e.text == "first")
        e.historyNext()
        e.historyNext()
        #expect(e.text == "draft")
    }

    @Test("Tab completion cycles through matches; at the start of the line it adds a colon")
    func completion() {
        var e = editor("al")
        e.complete(nicks: ["alice", "Alfred", "bob"], commands: [])
        #expect(e.text == "Alfred: ")
        e.complete(nicks: ["alice", "Alfred", "bob"], commands: [])
        #expect(e.text == "alice: ")
        e.complete(nicks: ["alice", "Alfred", "bob"], commands: [])
        #expect(e.text == "Alfred: ")
        var mid = editor("hi 小")
        mid.complete(nicks: ["小明"], commands: [])
        #expect(mid.text == "hi 小明 ")
        var command = editor("/jo")
        command.complete(nicks: [], commands: SlashCommands.completions)
        #expect(command.text == "/join ")
    }

    @Test("long input scrolls horizontally so the cursor stays visible")
    func horizontalScroll() {
        let e = editor(String(repeating: "中", count: 30))
        let (text, column) = e.visible(width: 20)
        #expect(DisplayWidth.of(text) <= 20)
        #expect(column <= 19)
        #expect(text.hasSuffix("中"))
    }
}

@Suite("key decoding")
struct KeyDecoderTests {
    func decode(_ text: String) -> [Key] {
        var decoder = KeyDecoder()
        var keys: [Key] = []
        for scalar in text.unicodeScalars { keys += decoder.feed(scalar) }
        return keys + decoder.flush()
    }

    @Test("Ctrl-Left and Ctrl-Right (CSI 1;5D, 1;5C) are word moves; Alt-Left stays the previous conversation")
    func wordKeys() {
        #expect(decode("\u{1B}[1;5D\u{1B}[1;5C\u{1B}[1;3D\u{1B}[D") == [.wordLeft, .wordRight, .altLeft, .left])
        #expect(decode("\u{1B}b\u{1B}f\u{1B}d") == [.alt("b"), .alt("f"), .alt("d")])
    }

    @Test("bracketed paste arrives as one paste")
    func paste() {
        #expect(decode("a\u{1B}[200~line one\r\nline two\u{1B}[201~b") == [.character("a"), .paste("line one\nline two"), .character("b")])
    }

    @Test("control keys, Enter, Backspace, a lone Escape")
    func controls() {
        #expect(decode("\u{17}\u{0D}\u{7F}\u{9}") == [.control("w"), .enter, .backspace, .tab])
        #expect(decode("\u{1B}") == [.escape])
    }

    @Test("unknown escape sequences are dropped, not typed")
    func unknownSequences() {
        #expect(decode("\u{1B}[99~x\u{1B}[1;5Zy") == [.character("x"), .character("y")])
    }

    @Test("Home, End and the other keys arrive as escape sequences when terminfo does not match (tmux with TERM=xterm-256color)", arguments: [
        ("\u{1B}[1~", Key.home), ("\u{1B}[4~", .end), ("\u{1B}[7~", .home), ("\u{1B}[8~", .end),
        ("\u{1B}[H", .home), ("\u{1B}[F", .end), ("\u{1B}OH", .home), ("\u{1B}OF", .end),
        ("\u{1B}[1;5H", .home), ("\u{1B}[3~", .delete), ("\u{1B}[5~", .pageUp), ("\u{1B}[6~", .pageDown),
        ("\u{1B}[A", .up), ("\u{1B}OB", .down), ("\u{1B}[1;5C", .wordRight), ("\u{1B}[D", .left),
    ])
    func fallbackSequences(_ c: (String, Key)) {
        #expect(decode(c.0 + "x") == [c.1, .character("x")])
    }
}
