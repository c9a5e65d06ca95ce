import Testing
@testable import IRCWire

struct FoldCase: CustomTestStringConvertible, Sendable {
    let mapping: Casemapping
    let a: String
    let b: String
    let same: Bool
    var testDescription: String { "\(mapping) \(a) \(same ? "==" : "!=") \(b)" }
}

let foldCases: [FoldCase] = [
    FoldCase(mapping: .ascii, a: "Alice", b: "alice", same: true),
    FoldCase(mapping: .ascii, a: "a[b]", b: "a{b}", same: false),
    FoldCase(mapping: .rfc1459, a: "a[b]\\^", b: "A{B}|~", same: true),
    FoldCase(mapping: .rfc1459, a: "Zoë", b: "ZOË", same: true),
    FoldCase(mapping: .rfc1459, a: "Zoë", b: "Zoe\u{308}", same: true),
    FoldCase(mapping: .rfc1459, a: "ΑΛΦΑ", b: "αλφα", same: true),
    FoldCase(mapping: .rfc1459, a: "小明", b: "小明", same: true),
    FoldCase(mapping: .rfc1459, a: "小明", b: "小红", same: false),
    FoldCase(mapping: .rfc1459, a: "Bob[1]", b: "bob{1}", same: true),
    FoldCase(mapping: .ascii, a: "ZOË", b: "zoë", same: true),
    FoldCase(mapping: .strictRFC1459, a: "a[b]\\", b: "A{B}|", same: true),
    FoldCase(mapping: .strictRFC1459, a: "a^", b: "a~", same: false),
]

@Test("casemapping", arguments: foldCases)
func folding(_ c: FoldCase) {
    #expect(c.mapping.equal(c.a, c.b) == c.same)
    if c.same {
        var keys: [String: Int] = [:]
        keys[c.mapping.fold(c.a)] = 1
        #expect(keys[c.mapping.fold(c.b)] == 1, "folded forms must work as one dictionary key")
    }
}

@Test("unknown CASEMAPPING tokens fall back to rfc1459")
func casemappingToken() {
    #expect(Casemapping(token: "ascii") == .ascii)
    #expect(Casemapping(token: "RFC1459") == .rfc1459)
    #expect(Casemapping(token: "strict-rfc1459") == .strictRFC1459)
    #expect(Casemapping(token: "rfc7613") == .rfc1459)
}

struct NickCase: CustomTestStringConvertible, Sendable {
    let nick: String
    let valid: Bool
    var testDescription: String { "\(nick.debugDescription) \(valid ? "valid" : "invalid")" }
}

let nickCases: [NickCase] = [
    NickCase(nick: "alice", valid: true),
    NickCase(nick: "小明", valid: true),
    NickCase(nick: "Zoë", valid: true),
    NickCase(nick: "Zoe\u{308}", valid: true),
    NickCase(nick: "[bot]_`^{|}-", valid: true),
    NickCase(nick: "a1", valid: true),
    NickCase(nick: "Ελένη", valid: true),
    NickCase(nick: "1abc", valid: false),
    NickCase(nick: "-abc", valid: false),
    NickCase(nick: "#chan", valid: false),
    NickCase(nick: "a b", valid: false),
    NickCase(nick: "a,b", valid: false),
    NickCase(nick: "a!b", valid: false),
    NickCase(nick: "a@b", valid: false),
    NickCase(nick: ":a", valid: false),
    NickCase(nick: "a*", valid: false),
    NickCase(nick: "a\u{1B}[31m", valid: false),
    NickCase(nick: "bad\u{FFFD}", valid: false),
    NickCase(nick: "😀", valid: false),
    NickCase(nick: "a\u{200D}b", valid: false),
    NickCase(nick: String(repeating: "x", count: 31), valid: false),
    NickCase(nick: String(repeating: "中", count: 11), valid: false),
]

@Test("nickname rules", arguments: nickCases)
func nickRules(_ c: NickCase) {
    #expect((IRCNames.nickProblem(c.nick, maxBytes: 30) == nil) == c.valid)
}

@Test("room name rules", arguments: [
    ("#lobby", true), ("#中文", true), ("lobby", false), ("#", false), ("#a b", false), ("#a,b", false),
    ("#a\u{7}", false), ("#" + String(repeating: "x", count: 50), false),
])
func roomRules(_ name: String, _ valid: Bool) {
    #expect((IRCNames.channelProblem(name, maxBytes: 50) == nil) == valid)
}

@Test("glob matching", arguments: [
    ("*", "anything", true), ("a*", "alice", true), ("a?ice", "alice", true), ("*ce", "alice", true),
    ("b*", "alice", false), ("a?c", "alice", false), ("*i*e", "alice", true),
])
func glob(_ pattern: String, _ text: String, _ matches: Bool) {
    #expect(IRCNames.globMatch(pattern, text) == matches)
}
