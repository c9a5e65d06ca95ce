import Testing
@testable import ChatUI

@Suite("display width")
struct DisplayWidthTests {
    @Test("by grapheme cluster", arguments: [
        ("a", 1), ("中", 2), ("。", 2), ("ｱ", 1), ("한", 2), ("😀", 2), ("👍🏽", 2), ("👨‍👩‍👧", 2), ("❤️", 2),
        ("🇯🇵", 2), ("e\u{301}", 1), ("\u{301}", 0), ("\u{200B}", 0), ("é", 1), ("Ω", 1), ("1️⃣", 2),
    ])
    func width(_ text: String, _ expected: Int) {
        #expect(DisplayWidth.of(Character(text)) == expected)
    }

    @Test("of strings") func strings() {
        #expect(DisplayWidth.of("你好, world") == 11)
        #expect(DisplayWidth.of("Zoe\u{308} 👨‍👩‍👧") == 6)
    }
}

@Suite("screen grid")
struct ScreenGridTests {
    @Test("wide characters take two cells; one that does not fit becomes a space")
    func wide() {
        var screen = Screen(width: 5, height: 1)
        #expect(screen.put("中文字", x: 0, y: 0) == 5)
        #expect(screen.line(0) == "中文 ")
        #expect(screen[1, 0].isContinuation && screen[3, 0].isContinuation)
    }

    @Test("a limit stops text before it")
    func limit() {
        var screen = Screen(width: 10, height: 1)
        screen.put("abcdefgh", x: 2, y: 0, limit: 3)
        #expect(screen.line(0) == "  abc     ")
    }

    @Test("combining marks stay in their base's cell")
    func combining() {
        var screen = Screen(width: 4, height: 1)
        screen.put("e\u{301}x", x: 0, y: 0)
        #expect(screen[0, 0].text == "e\u{301}" && screen[1, 0].text == "x")
    }

    @Test("writing over half of a wide character blanks its other half")
    func overwriteHalf() {
        var screen = Screen(width: 4, height: 1)
        screen.put("中中", x: 0, y: 0)
        screen.put("a", x: 1, y: 0)
        #expect(screen.line(0) == " a中")
    }
}

@Suite("wrapping")
struct WrapTests {
    func texts(_ rows: [[Span]]) -> [String] { rows.map { $0.map(\.text).joined() } }

    @Test("at spaces, with a hanging indent")
    func words() {
        let rows = Wrapper.wrap([Span("the quick brown fox jumps over")], width: 12, indent: 2)
        #expect(texts(rows) == ["the quick", "brown fox", "jumps over"])
        #expect(rows.enumerated().allSatisfy { i, row in DisplayWidth.of(row.map(\.text).joined()) <= (i == 0 ? 12 : 10) })
    }

    @Test("CJK without spaces breaks between characters, never through one")
    func cjk() {
        let rows = Wrapper.wrap([Span("一二三四五六七八九十")], width: 7)
        #expect(texts(rows) == ["一二三", "四五六", "七八九", "十"])
    }

    @Test("emoji and combining marks are never split")
    func clusters() {
        let rows = Wrapper.wrap([Span("👨‍👩‍👧👨‍👩‍👧👨‍👩‍👧e\u{301}e\u{301}")], width: 5)
        #expect(texts(rows) == ["👨‍👩‍👧👨‍👩‍👧", "👨‍👩‍👧e\u{301}e\u{301}"])
    }

    @Test("styles survive wrapping")
    func styles() {
        let bold = Style(bold: true)
        let rows = Wrapper.wrap([Span("aaaa "), Span("bbbb", bold)], width: 5)
        #expect(rows[1] == [Span("bbbb", bold)])
    }
}

@Suite("formatting and control characters")
struct FormattingTests {
    @Test("mIRC codes become styles")
    func mirc() {
        let spans = FormattedText.spans("\u{2}bold\u{2} \u{3}4red\u{3} \u{1F}under\u{F}plain")
        #expect(spans.map(\.text) == ["bold", " ", "red", " ", "under", "plain"])
        #expect(spans[0].style.bold && !spans[1].style.bold)
        #expect(spans[2].style.foreground == 9)
        #expect(spans[4].style.underline && spans[5].style == .plain)
    }

    @Test("escape sequences and other controls are shown, not passed on")
    func controls() {
        let spans = FormattedText.spans("a\u{1B}[31mb\u{7}\u{9B}")
        #expect(spans.map(\.text).joined() == "a^[[31mb^G<U+009B>")
        #expect(spans.filter { $0.style.reverse }.map(\.text) == ["^[", "^G", "<U+009B>"])
        #expect(!spans.map(\.text).joined().unicodeScalars.contains { $0.value < 0x20 || (0x7F..<0xA0).contains($0.value) })
    }
}
