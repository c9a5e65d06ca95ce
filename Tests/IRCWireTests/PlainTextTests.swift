import Testing
@testable import IRCWire

@Test("bidi controls and invisible format characters are shown by their code", arguments: [
    ("holiday\u{202E}gpj.exe", "holiday<U+202E>gpj.exe"),
    ("a\u{2066}b\u{2069}c", "a<U+2066>b<U+2069>c"),
    ("rtl\u{200F}mark\u{200E}", "rtl<U+200F>mark<U+200E>"),
    ("zero\u{200B}width", "zero<U+200B>width"),
    ("bom\u{FEFF}", "bom<U+FEFF>"),
    ("\u{3164}", "<U+3164>"),
    ("csi\u{9B}2J", "csi<U+009B>2J"),
    ("esc\u{1B}]2;title\u{7}", "esc^[]2;title^G"),
])
func neutralised(_ c: (String, String)) {
    #expect(PlainText.visible(c.0) == c.1)
}

@Test("joiners that scripts and emoji need are kept", arguments: [
    "👨‍👩‍👧", "🏳️‍🌈", "می‌خواهم", "क्‍ष", "🏴󠁧󠁢󠁥󠁮󠁧󠁿",
])
func kept(_ text: String) {
    #expect(PlainText.visible(text) == text)
}

@Test("visible is idempotent, so it can be applied to a whole line at the end")
func idempotent() {
    let once = PlainText.visible("x\u{202E}y\u{1B}z\u{9B}\u{2}bold\u{2}")
    #expect(PlainText.visible(once) == once)
}
