import Testing
@testable import ChatServerKit
import IRCWire

@Suite("server state: long replies made in steps, free text cleaned")
struct StateLongReplyTests {
    /// alice in `count` rooms (#r000…), bob asking; steps of 10.
    func rooms(_ count: Int) -> (Harness, ConnectionID, ConnectionID) {
        var h = Harness {
            $0.longReplyStep = 10
            $0.channelLimit = 1000
            $0.room = nil
        }
        let alice = h.register("alice")
        for n in 0..<count { h.send(alice, "JOIN #r" + String(n + 1000).dropFirst()) }
        let bob = h.register("bob", caps: ["batch", "labeled-response"])
        return (h, alice, bob)
    }

    @Test("LIST is made ten rooms a step, each step when the runtime asks, every room once, in order")
    func listInSteps() {
        var (h, alice, bob) = rooms(25)
        h.send(bob, "LIST")
        #expect(h.commands(to: bob) == ["321"] + Array(repeating: "322", count: 10))
        #expect(h.out.items.contains(.continueReply(bob)))
        // Meanwhile a room is made after the cursor and one before it is emptied: the new one
        // is listed, nothing twice.
        h.send(alice, "JOIN #zz", "PART #r000")
        h.continueReplies()
        #expect(h.commands(to: bob) == Array(repeating: "322", count: 10))
        h.continueReplies()
        let last = h.out.messages(to: bob)
        #expect(last.map(\.command) == Array(repeating: "322", count: 6) + ["323"])
        #expect(last.dropLast().last?.params[1] == "#zz")
        #expect(h.continuations.isEmpty, "done")
    }

    @Test("lines sent during a long reply wait for its end, so replies keep their order")
    func heldDuringReply() {
        var (h, _, bob) = rooms(15)
        h.send(bob, "LIST", "PING :after")
        #expect(h.commands(to: bob).last == "322")
        h.continueReplies()
        #expect(h.commands(to: bob).suffix(2) == ["323", "PONG"])
    }

    @Test("a labelled LIST in steps is one labeled-response batch, opened by the first step and closed by the last")
    func labelledSteps() {
        var (h, _, bob) = rooms(15)
        h.send(bob, "@label=q1 LIST")
        let first = h.out.messages(to: bob)
        #expect(first[0].command == "BATCH" && first[0].tag("label") == "q1" && first[0].params[1] == "labeled-response")
        let reference = String(first[0].params[0].dropFirst())
        #expect(first.dropFirst().allSatisfy { $0.tag("batch") == reference && $0.tag("label") == nil })
        h.continueReplies()
        let rest = h.out.messages(to: bob)
        #expect(rest.dropLast().allSatisfy { $0.tag("batch") == reference })
        #expect(rest.last?.line == ":test.server BATCH -\(reference)")
        #expect(rest.dropLast().last?.command == "323")
    }

    @Test("WHO of a big room goes in steps; a member who left meanwhile is not answered for")
    func whoInSteps() {
        var h = Harness { $0.longReplyStep = 10 }
        var ids: [ConnectionID] = []
        for n in 0..<24 { ids.append(h.register("user\(n)")) }
        let asker = ids[0]
        h.send(asker, "WHO #lobby")
        #expect(h.commands(to: asker) == Array(repeating: "352", count: 10))
        h.send(ids[23], "QUIT")
        h.continueReplies()
        h.continueReplies()
        #expect(h.commands(to: asker) == Array(repeating: "352", count: 3) + ["315"])
    }

    @Test("free text loses its control characters but keeps mIRC formatting", arguments: [
        ("USER", "\u{1B}]0;owned\u{7}Real \u{2}Bold\u{2}"), ("SETNAME", "A\rB\u{1}C\u{9B}D"), ("AWAY", "gone\u{1B}[2J"), ("TOPIC", "x\u{7}y\u{3}4red"),
    ])
    func freeText(_ command: String, _ text: String) {
        var h = Harness()
        let watcher = h.register("watcher", caps: ["away-notify", "setname"])
        let id = h.connect()
        h.send(id, "CAP REQ :setname")
        h.send(id, "NICK alice", command == "USER" ? "USER a 0 * :\(text)" : "USER a 0 * :plain", "CAP END")
        switch command {
        case "SETNAME": h.send(id, "SETNAME :\(text)")
        case "AWAY": h.send(id, "AWAY :\(text)")
        case "TOPIC": h.send(id, "JOIN #t", "TOPIC #t :\(text)")
        default: break
        }
        h.send(watcher, "WHOIS alice")
        let whois = h.out.messages(to: watcher).first { $0.command == "311" }?.params.last ?? ""
        let away = h.out.messages(to: watcher).first { $0.command == "301" }?.params.last
        let expected = String(String.UnicodeScalarView(text.unicodeScalars.filter {
            !($0.value < 0x20 || (0x7F...0x9F).contains($0.value)) || [0x02, 0x03].contains($0.value)
        }))
        switch command {
        case "USER", "SETNAME": #expect(whois == expected)
        case "AWAY": #expect(away == expected)
        default:
            h.send(watcher, "TOPIC #t")
            #expect(h.out.messages(to: watcher).first { $0.command == "332" }?.params.last == expected)
        }
        #expect(!expected.contains("\u{1B}") && (expected.contains("\u{2}") || expected.contains("\u{3}") || !text.contains("\u{2}")))
    }
}
