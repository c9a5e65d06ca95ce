import Testing
@testable import IRCWire

struct SkeletonCase: CustomTestStringConvertible, Sendable {
    let a: String
    let b: String
    let alike: Bool
    var testDescription: String { "\(a.debugDescription) \(alike ? "~" : "!~") \(b.debugDescription)" }
}

let skeletonCases: [SkeletonCase] = [
    SkeletonCase(a: "bob", b: "b\u{043E}b", alike: true),
    SkeletonCase(a: "alice", b: "\u{0430}lice", alike: true),
    SkeletonCase(a: "alice", b: "alic\u{0435}", alike: true),
    SkeletonCase(a: "alice", b: "ali\u{0441}e", alike: true),
    SkeletonCase(a: "alice", b: "ａｌｉｃｅ", alike: true),
    SkeletonCase(a: "alice", b: "𝐚𝐥𝐢𝐜𝐞", alike: true),
    SkeletonCase(a: "paypal", b: "p\u{0430}ypal", alike: true),
    SkeletonCase(a: "#lobby", b: "#lobb\u{0443}", alike: true),
    SkeletonCase(a: "Zo\u{00EB}", b: "Zoe\u{0308}", alike: true),
    SkeletonCase(a: "morgan", b: "rnorgan", alike: true),
    SkeletonCase(a: "bill", b: "bi1l", alike: true),
    // Canonically equivalent: the Arabic damma and fatha in either order.
    SkeletonCase(a: "\u{0628}\u{064F}\u{064E}", b: "\u{0628}\u{064E}\u{064F}", alike: true),
    // A Hangul syllable and its jamo.
    SkeletonCase(a: "\u{AC01}", b: "\u{1100}\u{1161}\u{11A8}", alike: true),
    SkeletonCase(a: "bob", b: "rob", alike: false),
    SkeletonCase(a: "小明", b: "小红", alike: false),
    SkeletonCase(a: "alice", b: "alicia", alike: false),
    SkeletonCase(a: "Zoë", b: "Zoe", alike: false),
    SkeletonCase(a: "김민준", b: "김민주", alike: false),
]

@Test("skeletons", arguments: skeletonCases)
func skeletons(_ c: SkeletonCase) {
    let a = Confusables.skeleton(c.a), b = Confusables.skeleton(c.b)
    #expect((a == b) == c.alike, "\(a.debugDescription) vs \(b.debugDescription)")
    if c.alike {
        // Equal as scalars too: the skeleton is already in NFD, not only canonically equivalent.
        #expect(Array(a.unicodeScalars) == Array(b.unicodeScalars))
        var keys: [String: Int] = [:]
        keys[a] = 1
        #expect(keys[b] == 1, "skeletons must work as one dictionary key")
    }
}

@Test("folded first, capitals look alike too", arguments: [
    ("Alice", "\u{0410}LICE", true), ("PayPal", "P\u{0391}YPAL", true), ("Bob", "ROB", false),
])
func foldedSkeletons(_ a: String, _ b: String, _ alike: Bool) {
    let fold = { (name: String) in Confusables.skeleton(Casemapping.rfc1459.fold(name)) }
    #expect((fold(a) == fold(b)) == alike)
}

@Test("a skeleton is its own skeleton for plain names", arguments: ["alice", "bob_", "小明", "Ελένη", "dev山田"])
func skeletonStable(_ name: String) {
    let once = Confusables.skeleton(name)
    #expect(Confusables.skeleton(once) == once)
}

@Test("tables parse to the counts the generator wrote")
func tableCounts() {
    let tables = ConfusableTables.shared
    #expect(tables.prototypes.count == ConfusableData.prototypeCount)
    #expect(tables.decompositions.count == ConfusableData.decompositionCount)
    #expect(tables.rangeStarts.count == ConfusableData.scriptRangeCount)
    #expect(zip(tables.rangeEnds, tables.rangeStarts.dropFirst()).allSatisfy { $0 < $1 }, "ranges sorted and disjoint")
}

@Test("the compact tables give every entry of the data, as written, and nothing for a code point not in it")
func compactTablesMatchData() {
    let tables = ConfusableTables.shared
    for (text, table) in [(ConfusableData.prototypes, tables.prototypes), (ConfusableData.decompositions, tables.decompositions)] {
        var reference: [UInt32: [UInt32]] = [:]
        ConfusableTables.forEachEntry(text) { reference[$0[0]] = Array($0.dropFirst()) }
        #expect(reference.count == table.count)
        #expect(reference.allSatisfy { key, values in table[key].map { $0.map(\.value) } == values })
        for key: UInt32 in [0, 0x41, 0x10FFFF] where reference[key] == nil { #expect(table[key] == nil) }
    }
}

@Test("scripts of code points", arguments: [
    ("a", "Latin"), ("ａ", "Latin"), ("\u{0430}", "Cyrillic"), ("λ", "Greek"), ("山", "Han"), ("タ", "Katakana"),
    ("の", "Hiragana"), ("ㄅ", "Bopomofo"), ("김", "Hangul"), ("7", "Common"), ("_", "Common"),
    ("\u{0301}", "Inherited"), ("\u{0378}", "Unknown"),
] as [(Unicode.Scalar, String)])
func scripts(_ scalar: Unicode.Scalar, _ script: String) {
    #expect(Confusables.scriptName(scalar) == script)
}

struct SafetyCase: CustomTestStringConvertible, Sendable {
    let name: String
    /// Words the reason must contain, or nil when the name is safe.
    let reason: String?
    var testDescription: String { "\(name.debugDescription) \(reason.map { "refused: \($0)" } ?? "safe")" }
}

let nickSafetyCases: [SafetyCase] = [
    SafetyCase(name: "alice\u{034F}", reason: "invisible character (U+034F)"),
    SafetyCase(name: "\u{3164}", reason: "Hangul filler, which is invisible (U+3164)"),
    SafetyCase(name: "\u{115F}", reason: "Hangul filler, which is invisible (U+115F)"),
    SafetyCase(name: "\u{FFA0}", reason: "Hangul filler, which is invisible (U+FFA0)"),
    SafetyCase(name: "bob\u{1160}", reason: "Hangul filler, which is invisible (U+1160)"),
    SafetyCase(name: "\u{0301}\u{0301}", reason: "no visible letter or digit"),
    SafetyCase(name: "\u{0301}alice", reason: "starts with a combining mark (U+0301)"),
    SafetyCase(name: "a\u{200B}b", reason: "invisible character (U+200B)"),
    SafetyCase(name: "a\u{202E}b", reason: "text direction control (U+202E)"),
    SafetyCase(name: "a\u{2067}b", reason: "text direction control (U+2067)"),
    SafetyCase(name: "a\u{061C}b", reason: "text direction control (U+061C)"),
    SafetyCase(name: "\u{FEFF}alice", reason: "invisible character (U+FEFF)"),
    SafetyCase(name: "a\u{00AD}b", reason: "invisible character (U+00AD)"),
    SafetyCase(name: "a\u{FE0F}", reason: "invisible character (U+FE0F)"),
    SafetyCase(name: "a\u{E0041}", reason: "invisible character (U+E0041)"),
    SafetyCase(name: "a\u{0600}", reason: "invisible character (U+0600)"),
    SafetyCase(name: "a\u{0007}", reason: "control character (U+0007)"),
    SafetyCase(name: "a\u{009B}b", reason: "control character (U+009B)"),
    SafetyCase(name: "a\u{00A0}b", reason: "space (U+00A0)"),
    SafetyCase(name: "a\u{0378}", reason: "unassigned code point (U+0378)"),
    SafetyCase(name: "___", reason: "no visible letter or digit"),
    SafetyCase(name: "p\u{0430}ypal", reason: "mixes Latin and Cyrillic letters (\u{0430}, U+0430, is Cyrillic)"),
    SafetyCase(name: "\u{0430}lice", reason: "mixes Cyrillic and Latin letters (l, U+006C, is Latin)"),
    SafetyCase(name: "bob\u{0967}", reason: "mixes Latin and Devanagari characters"),
    SafetyCase(name: "αlice", reason: "mixes Greek and Latin letters"),
    SafetyCase(name: "김タ", reason: "mixes Hangul and Katakana letters"),
    SafetyCase(name: "山田김タ", reason: "mixes Hangul and Katakana letters"),
    SafetyCase(name: "ㄅの", reason: "mixes Bopomofo and Hiragana letters"),
    SafetyCase(name: "小明", reason: nil),
    SafetyCase(name: "Zoë", reason: nil),
    SafetyCase(name: "Zoe\u{0308}", reason: nil),
    SafetyCase(name: "Ελένη", reason: nil),
    SafetyCase(name: "山田タロウ", reason: nil),
    SafetyCase(name: "やまだタロウ", reason: nil),
    SafetyCase(name: "김민준", reason: nil),
    SafetyCase(name: "alice", reason: nil),
    SafetyCase(name: "bob_", reason: nil),
    SafetyCase(name: "[bot]7", reason: nil),
    SafetyCase(name: "dev山田", reason: nil),
    SafetyCase(name: "dev山田タロウ", reason: nil),
    SafetyCase(name: "dev김민준", reason: nil),
    SafetyCase(name: "Иван", reason: nil),
    SafetyCase(name: "محمد", reason: nil),
    SafetyCase(name: "\u{0628}\u{064E}", reason: nil),
]

@Test("nickname safety", arguments: nickSafetyCases)
func nickSafety(_ c: SafetyCase) {
    expectSafety(NameSafety.nickProblem(c.name), for: c, startingWith: "Nickname ")
}

func expectSafety(_ problem: String?, for c: SafetyCase, startingWith subject: String) {
    if let reason = c.reason {
        #expect(problem?.hasPrefix(subject) == true)
        #expect(problem?.contains(reason) == true, "\(problem ?? "no problem")")
    } else {
        #expect(problem == nil)
    }
}

let roomSafetyCases: [SafetyCase] = [
    SafetyCase(name: "#lobby\u{200B}", reason: "invisible character (U+200B)"),
    SafetyCase(name: "#a\u{009B}b", reason: "control character (U+009B)"),
    SafetyCase(name: "#a\u{202E}b", reason: "text direction control (U+202E)"),
    SafetyCase(name: "#\u{3164}", reason: "Hangul filler, which is invisible (U+3164)"),
    SafetyCase(name: "#a\u{2028}b", reason: "line break (U+2028)"),
    SafetyCase(name: "#a\u{3000}b", reason: "space (U+3000)"),
    SafetyCase(name: "#lobby", reason: nil),
    SafetyCase(name: "#lobb\u{0443}", reason: nil),
    SafetyCase(name: "#python-русский", reason: nil),
    SafetyCase(name: "#中文", reason: nil),
    SafetyCase(name: "#a-b_c.d", reason: nil),
]

@Test("room name safety", arguments: roomSafetyCases)
func roomSafety(_ c: SafetyCase) {
    expectSafety(NameSafety.channelProblem(c.name), for: c, startingWith: "Room name ")
}

@Test("the safe nicknames pass the base rules too, so the two layers agree on them",
      arguments: nickSafetyCases.filter { $0.reason == nil })
func safeNicksAreNicks(_ c: SafetyCase) {
    #expect(IRCNames.nickProblem(c.name, maxBytes: 30) == nil)
}

@Test("the safe room names pass the base rules too", arguments: roomSafetyCases.filter { $0.reason == nil })
func safeRoomsAreRooms(_ c: SafetyCase) {
    #expect(IRCNames.channelProblem(c.name, maxBytes: 50) == nil)
}

@Test("compatibility forms fold before the prototypes: fullwidth, mathematical, circled, ligatures", arguments: [
    ("#lobby", "#ｌｏｂｂｙ"), ("bob", "ｂｏｂ"), ("bob", "𝐛𝐨𝐛"), ("bob", "ⓑⓞⓑ"), ("fine", "ﬁne"),
])
func compatibilityForms(_ pair: (String, String)) {
    let fold = Casemapping.rfc1459.fold
    #expect(Confusables.skeleton(fold(pair.0)) == Confusables.skeleton(fold(pair.1)))
}
