import Testing
@testable import ChatServerKit
import IRCWire

/// One MODE command by the operator of #dev and what it must produce.
struct ModeCase: CustomTestStringConvertible, Sendable {
    let line: String
    /// What every member sees (nil: nothing is announced).
    let announced: String?
    /// Numerics the operator gets, in order.
    let numerics: [String]
    var testDescription: String { line }
}

let modeCases: [ModeCase] = [
    ModeCase(line: "MODE #dev +i", announced: "MODE #dev +i", numerics: []),
    ModeCase(line: "MODE #dev +imsn", announced: "MODE #dev +ims", numerics: []),
    ModeCase(line: "MODE #dev -t", announced: "MODE #dev -t", numerics: []),
    ModeCase(line: "MODE #dev +t", announced: nil, numerics: []),
    ModeCase(line: "MODE #dev +k sesame", announced: "MODE #dev +k sesame", numerics: []),
    ModeCase(line: "MODE #dev +k :", announced: nil, numerics: ["696"]),
    ModeCase(line: "MODE #dev +k a,b", announced: nil, numerics: ["696"]),
    ModeCase(line: "MODE #dev +k " + String(repeating: "k", count: 33), announced: nil, numerics: ["696"]),
    ModeCase(line: "MODE #dev +k", announced: nil, numerics: []),
    ModeCase(line: "MODE #dev +l 10", announced: "MODE #dev +l 10", numerics: []),
    ModeCase(line: "MODE #dev +l 0", announced: nil, numerics: ["696"]),
    ModeCase(line: "MODE #dev +l ten", announced: nil, numerics: ["696"]),
    ModeCase(line: "MODE #dev -l", announced: nil, numerics: []),
    ModeCase(line: "MODE #dev +b bad", announced: "MODE #dev +b bad!*@*", numerics: []),
    ModeCase(line: "MODE #dev +b *@evil.example", announced: "MODE #dev +b *!*@evil.example", numerics: []),
    ModeCase(line: "MODE #dev +e friend!*@*", announced: "MODE #dev +e friend!*@*", numerics: []),
    ModeCase(line: "MODE #dev +I *!*@lan", announced: "MODE #dev +I *!*@lan", numerics: []),
    ModeCase(line: "MODE #dev +b", announced: nil, numerics: ["368"]),
    ModeCase(line: "MODE #dev b", announced: nil, numerics: ["368"]),
    ModeCase(line: "MODE #dev e", announced: nil, numerics: ["349"]),
    ModeCase(line: "MODE #dev I", announced: nil, numerics: ["347"]),
    ModeCase(line: "MODE #dev +o bob", announced: "MODE #dev +o bob", numerics: []),
    ModeCase(line: "MODE #dev +v BOB", announced: "MODE #dev +v bob", numerics: []),
    ModeCase(line: "MODE #dev +o ghost", announced: nil, numerics: ["401"]),
    ModeCase(line: "MODE #dev +o carol", announced: nil, numerics: ["441"]),
    ModeCase(line: "MODE #dev +xyi", announced: "MODE #dev +i", numerics: ["472", "472"]),
    ModeCase(line: "MODE #dev +kl-t key 5", announced: "MODE #dev +kl-t key 5", numerics: []),
    // MODES=6: the seventh change with a parameter is ignored.
    ModeCase(line: "MODE #dev +bbbbbbb a b c d e f g", announced: "MODE #dev +bbbbbb a!*@* b!*@* c!*@* d!*@* e!*@* f!*@*", numerics: []),
    ModeCase(line: "MODE #dev +vvvv bob bob bob bob", announced: "MODE #dev +v bob", numerics: []),
]

@Suite("server state: room modes")
struct StateModeTests {
    /// alice runs #dev, bob is in it, carol is not.
    static func room() -> (Harness, alice: ConnectionID, bob: ConnectionID, carol: ConnectionID) {
        var h = Harness { $0.room = nil }
        let alice = h.register("alice")
        let bob = h.register("bob")
        let carol = h.register("carol")
        h.send(alice, "JOIN #dev")
        h.send(bob, "JOIN #dev")
        return (h, alice, bob, carol)
    }

    @Test("MODE changes by a room operator", arguments: modeCases)
    func operatorChanges(_ c: ModeCase) {
        var (h, alice, bob, _) = Self.room()
        h.send(alice, c.line)
        let announced = h.out.messages(to: bob).filter { $0.command == "MODE" }.map { $0.params.joined(separator: " ") }
        #expect(announced == (c.announced.map { [String($0.dropFirst(5))] } ?? []))
        #expect(h.commands(to: alice).filter { $0 != "MODE" } == c.numerics)
    }

    @Test("a refused key is one parameter in 696 (* where it cannot be shown as one), the reason trailing", arguments: [
        ("MODE #dev +k :two words", ":test.server 696 alice #dev k * :"),
        ("MODE #dev +k :", ":test.server 696 alice #dev k * :"),
        ("MODE #dev +k a,b", ":test.server 696 alice #dev k a,b :"),
    ])
    func refusedKey(_ line: String, _ start: String) {
        var (h, alice, _, _) = Self.room()
        h.send(alice, line)
        let refusal = h.out.messages(to: alice).first { $0.command == "696" }
        #expect(refusal?.params.count == 5, "\(h.lines(to: alice))")
        #expect(h.lines(to: alice).first?.hasPrefix(start) == true, "\(h.lines(to: alice))")
    }

    @Test("members who are not operators and outsiders get 482 once; listing needs no privilege")
    func privileges() {
        var (h, alice, bob, carol) = Self.room()
        h.send(bob, "MODE #dev +im")
        #expect(h.commands(to: bob) == ["482"])
        #expect(h.lines(to: alice).isEmpty)
        h.send(carol, "MODE #dev +i")
        #expect(h.commands(to: carol) == ["482"], "outsiders get 482 too, as the modern docs say")
        h.send(alice, "MODE #dev +b spam!*@*")
        h.send(bob, "MODE #dev +b")
        #expect(h.lines(to: bob).first?.hasPrefix(":test.server 367 bob #dev spam!*@* alice!u@127.0.0.1 ") == true)
        #expect(h.commands(to: bob) == ["367", "368"])
    }

    @Test("324 shows the key to members only, 329 the creation time")
    func modeQuery() {
        var (h, alice, _, carol) = Self.room()
        h.send(alice, "MODE #dev +kl sesame 5")
        h.send(alice, "MODE #dev")
        #expect(h.lines(to: alice) == [":test.server 324 alice #dev +ntkl sesame 5", ":test.server 329 alice #dev \(Int(h.now))"])
        h.send(carol, "MODE #dev")
        #expect(h.lines(to: carol).first == ":test.server 324 carol #dev +ntkl * 5")
    }

    @Test("-k needs no right key and shows *; a removed ban is gone from the list")
    func removals() {
        var (h, alice, bob, _) = Self.room()
        h.send(alice, "MODE #dev +k sesame")
        h.send(alice, "MODE #dev -k wrong")
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 MODE #dev -k *"])
        h.send(alice, "MODE #dev +b x")
        h.send(alice, "MODE #dev -b X!*@*")
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 MODE #dev -b x!*@*"], "masks compare without case")
        h.send(alice, "MODE #dev b")
        #expect(h.commands(to: alice) == ["368"])
    }

    @Test("a full list gets 478")
    func listFull() {
        var (h, alice, _, _) = Self.room()
        for start in stride(from: 0, to: ChannelModes.listLimit, by: 5) {
            h.send(alice, "MODE #dev +bbbbb " + (start..<start + 5).map { "m\($0)" }.joined(separator: " "))
        }
        h.send(alice, "MODE #dev +b one-more")
        #expect(h.lines(to: alice) == [":test.server 478 alice #dev b :Channel list is full"])
    }

    @Test("user modes: +i, +w, +B by oneself; +o only from OPER; 501 unknown; 502 for others; 221")
    func userModes() {
        var h = Harness()
        let alice = h.register("alice")
        _ = h.register("bob")
        h.send(alice, "MODE alice +iwBo")
        #expect(h.lines(to: alice) == [":alice!u@127.0.0.1 MODE alice +iwB"])
        h.send(alice, "MODE alice")
        #expect(h.lines(to: alice) == [":test.server 221 alice +Biw"])
        h.send(alice, "MODE alice +Z")
        #expect(h.commands(to: alice) == ["501"])
        h.send(alice, "MODE bob +i")
        #expect(h.commands(to: alice) == ["502"])
        h.send(alice, "MODE nobody +i")
        #expect(h.commands(to: alice) == ["401"])
        h.send(alice, "MODE alice -i")
        #expect(h.lines(to: alice) == [":alice!u@127.0.0.1 MODE alice -i"])
    }

    @Test("CHANMODES, PREFIX and 004 come from the mode table")
    func advertised() {
        var h = Harness()
        let alice = h.register("alice")
        let lines = h.lines(to: alice)
        #expect(lines.contains(":test.server 004 alice test.server chat-tui-0.2 Biow CIbeiklmnostv Ibeklov"))
        let isupport = h.out.messages(to: alice).filter { $0.command == "005" }.flatMap { $0.params.dropFirst().dropLast() }
        #expect(isupport.contains("CHANMODES=beI,k,l,Cimnst") && isupport.contains("PREFIX=(ov)@+"))
        #expect(isupport.contains("EXCEPTS=e") && isupport.contains("INVEX=I") && isupport.contains("MODES=6"))
    }
}

/// A mask and a hostmask, matched or not under rfc1459.
struct MaskCase: CustomTestStringConvertible, Sendable {
    let mask: String
    let hostmask: String
    let matches: Bool
    var testDescription: String { "\(mask) \(matches ? "~" : "!~") \(hostmask)" }
}

let maskCases: [MaskCase] = [
    MaskCase(mask: "*!*@*", hostmask: "bob!u@10.0.0.1", matches: true),
    MaskCase(mask: "bob!*@*", hostmask: "BOB!u@10.0.0.1", matches: true),
    MaskCase(mask: "b?b!*@*", hostmask: "bab!u@h", matches: true),
    MaskCase(mask: "bob!*@*", hostmask: "bobby!u@h", matches: false),
    MaskCase(mask: "*!*@10.0.0.*", hostmask: "x!y@10.0.0.7", matches: true),
    MaskCase(mask: "*!*@10.0.0.*", hostmask: "x!y@10.0.1.7", matches: false),
    MaskCase(mask: "dan[1]!*@*", hostmask: "DAN{1}!u@h", matches: true),
    MaskCase(mask: "zoë!*@*", hostmask: "ZOË!u@h", matches: true),
    MaskCase(mask: "*!ident@*", hostmask: "n!other@h", matches: false),
]

@Test("ban masks match nick!user@host under the advertised casemapping", arguments: maskCases)
func maskMatching(_ c: MaskCase) {
    #expect(IRCMask.matches(c.mask, c.hostmask, casemapping: .rfc1459) == c.matches)
}

@Test("masks are completed to nick!user@host", arguments: [
    ("bob", "bob!*@*"), ("*@host", "*!*@host"), ("bob!x", "bob!x@*"), ("user@host", "*!user@host"), ("a!b@c", "a!b@c"),
])
func maskCompletion(_ pair: (String, String)) {
    #expect(IRCMask.normalise(pair.0) == pair.1)
}

@Test("masks with spaces, commas, controls or over 200 bytes are refused", arguments: ["", "a b", "a,b", "a\u{7}", String(repeating: "x", count: 201)])
func maskRefused(_ raw: String) {
    #expect(IRCMask.normalise(raw) == nil)
}
