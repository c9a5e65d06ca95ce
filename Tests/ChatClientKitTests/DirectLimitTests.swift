import Testing
@testable import ChatClientKit
import IRCWire

/// A flood of direct messages from strangers: the client keeps at most its limit of direct
/// conversations (and of what it knows about each), closing the least recently active.
@Suite("the limit on direct conversations")
struct DirectLimitTests {
    /// Folds lines into a state with a small limit, and into a view built only from the events
    /// (as the screen's), which must end up holding the same conversations.
    func flood(_ lines: [String], limit: Int = 5) -> (ClientState, [ClientEvent]) {
        var state = ClientState(nick: "alice", directLimit: limit)
        var view = ConversationBook(nick: "alice")
        var events: [ClientEvent] = []
        for line in welcome + lines {
            let produced = state.apply(try! IRCMessage(parsing: line), now: 1000)
            for event in produced { view.apply(event) }
            events += produced
        }
        #expect(view.conversations == state.book.conversations && view.order == state.book.order,
                "the view built from events drifted from the client's book")
        return (state, events)
    }

    func directs(_ state: ClientState) -> [String] {
        state.book.order.filter { $0.kind == .direct }.map(\.key)
    }

    func strangers(_ range: Range<Int>) -> [String] {
        range.map { ":s\($0)!u@10.9.9.9 PRIVMSG alice :hello from stranger \($0)" }
    }

    @Test("1,000 strangers leave 5 direct conversations: the most recent ones, and the one we wrote in")
    func strangersPastTheLimit() {
        let (state, events) = flood([
            ":friend!f@10.0.0.2 PRIVMSG alice :hi alice",
            ":alice!al@10.0.0.1 PRIVMSG friend :hi friend",
        ] + strangers(0..<1000))
        #expect(directs(state).count == 5)
        #expect(Set(directs(state)) == ["friend", "s996", "s997", "s998", "s999"])
        // What the client keeps per conversation went with the closed ones.
        #expect(state.latestTime.keys.allSatisfy { state.book[$0] != nil })
        #expect(state.latestTime.count <= 5 + 1)
        let closed = events.filter { if case .closed = $0 { return true } else { return false } }
        #expect(closed.count == 1000 - 4)
        let notices = events.filter {
            if case .line(.server, let line) = $0 { return line.text.hasPrefix("More than 5 direct conversations") } else { return false }
        }
        #expect(notices.count == 1, "said once, not once per stranger")
    }

    @Test("a stranger who writes again is active again: the least recently active one is closed instead")
    func activityCounts() {
        let (state, _) = flood(strangers(0..<5) + [":s0!u@10.9.9.9 PRIVMSG alice :still here"] + strangers(5..<6))
        #expect(Set(directs(state)) == ["s0", "s2", "s3", "s4", "s5"])
    }

    @Test("when every conversation is ours, the least recently active of ours is closed")
    func allOurs() {
        let ours = (0..<6).map { ":alice!al@10.0.0.1 PRIVMSG p\($0) :hello p\($0)" }
        let (state, _) = flood(ours)
        #expect(Set(directs(state)) == ["p1", "p2", "p3", "p4", "p5"])
    }

    @Test("/query opens a conversation under the same limit")
    func queryCounts() {
        var (state, _) = flood(strangers(0..<5))
        let events = state.open("newfriend", now: 1000).events
        #expect(directs(state).count == 5 && state.book[.direct("newfriend")] != nil && state.book[.direct("s0")] == nil)
        #expect(events.contains(.closed(.direct("s0"))))
    }

    @Test("a partner's renames move what is kept about the conversation, leaving nothing under the old names")
    func renamesMoveFacts() {
        var lines = ["@msgid=m0;time=2024-01-01T00:00:00.000Z :bob!b@10.0.0.3 PRIVMSG alice :hi"]
        for i in 0..<100 { lines.append(":\(i == 0 ? "bob" : "bob\(i - 1)")!b@10.0.0.3 NICK bob\(i)") }
        let (state, _) = flood(lines)
        #expect(directs(state) == ["bob99"])
        #expect(state.latestMsgid == [.direct("bob99"): "m0"])
        #expect(state.latestTime.keys.allSatisfy { state.book[$0] != nil })
    }
}
