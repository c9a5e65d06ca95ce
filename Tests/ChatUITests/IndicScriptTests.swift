import Testing
@testable import ChatUI

/// Indic and South-East Asian scripts on the chat screen (issue 42, item 5): a conjunct with its
/// vowel sign is one cluster as wide as terminals draw it (each spacing code point a column, as
/// wcwidth counts), held whole in its cell and written past curses, so no letter is lost and the
/// sidebar stays in its column.
@Suite("Indic and South-East Asian scripts on the chat screen")
struct IndicScriptTests {
    static let lines = [
        "हिन्दी में नमस्ते दोस्त क्षमा",   // Devanagari: vowel signs (Mc), conjuncts (virama), anusvara
        "বাংলা ভাষা শিক্ষা",               // Bengali
        "தமிழ் மொழி கொண்டு",              // Tamil: two-part vowel signs
        "ภาษาไทย สวัสดี ที่นี่",            // Thai: stacked tone marks
        "ភាសាខ្មែរ សួស្ដី",                 // Khmer: subscript consonants (coeng)
    ]

    @Test("widths as terminals draw them: each spacing code point a column; marks that do not space none")
    func widths() {
        #expect(DisplayWidth.of(Character("हि")) == 2)
        #expect(DisplayWidth.of(Character("न्दी")) == 3)
        #expect(DisplayWidth.of(Character("में")) == 1)
        #expect(DisplayWidth.of(Character("ที่")) == 1)
        #expect(DisplayWidth.of(Character("e\u{301}")) == 1)
        #expect(DisplayWidth.of("हिन्दी") == 5)
    }

    @Test("a cluster three columns wide holds its cell and two continuations; nothing of it is dropped")
    func cells() {
        var screen = Screen(width: 10, height: 1)
        #expect(screen.put("हिन्दी!", x: 0, y: 0) == 6)
        #expect(screen[0, 0].text == "हि" && screen[1, 0].isContinuation)
        #expect(screen[2, 0].text == "न्दी" && screen[3, 0].isContinuation && screen[4, 0].isContinuation)
        #expect(screen[5, 0].text == "!")
        #expect(screen.line(0) == "हिन्दी!    ")
        #expect(ClusterOverlay.needsDirectWrite("हि") && ClusterOverlay.needsDirectWrite("न्दी") && !ClusterOverlay.needsDirectWrite("में"))
        #expect(ClusterOverlay.overhang("न्दी") == 0, "nothing past its own columns to write again")
    }

    @Test("the whole 60×14 screen with a line in each script: every letter there, the sidebar in its column, with attributes")
    func golden() {
        let model = lobbyModel(height: 14, extra: Self.lines.map { ":bob!b@h PRIVMSG #lobby :" + $0 })
        expectScreen(model, [
            " #lobby (4)                                                 ",
            "                                               │1 (server)  ",
            "                                               │2 #lobby    ",
            "                                               │ @alice…    ",
            "                                               │ +bob       ",
            "                                               │  carol     ",
            "10:05 -!- You joined #lobby                    │  小明      ",
            // Fewer characters than columns: marks take none, conjuncts and vowel signs their own
            // (wcwidth's sum puts every border at column 47, as a terminal draws them).
            "10:05 <bob> हिन्दी में नमस्ते दोस्त क्षमा             │            ",
            "10:05 <bob> বাংলা ভাষা শিক্ষা                   │            ",
            "10:05 <bob> தமிழ் மொழி கொண்டு                    │            ",
            "10:05 <bob> ภาษาไทย สวัสดี ที่นี่                    │            ",
            "10:05 <bob> ភាសាខ្មែរ សួស្ដី                       │            ",
            " alice │ connected │ Enter sends to #lobby                  ",
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
            "dddddddBBBdd                                   d            ",
            "dddddddBBBdd                                   d            ",
            "dddddddBBBdd                                   d            ",
            "dddddddBBBdd                                   d            ",
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "dd                                                          ",
        ], legend: StyleLegend.lobby)
    }
}
