import Testing
@testable import ChatServerKit
import IRCWire

@Suite("server state: draft/channel-rename")
struct StateRenameTests {
    let caps = ["draft/channel-rename", "draft/chathistory", "batch", "message-tags", "server-time"]

    @Test("RENAME by the operator: RENAME to members with the capability, PART and JOIN (topic, names) to the others; the room keeps modes, topic and members")
    func rename() throws {
        var h = Harness(historyOf: try historyStore()) { $0.room = nil }
        let op = h.register("op", caps: caps)
        h.send(op, "JOIN #boaring", "TOPIC #boaring :about boredom", "MODE #boaring +m", "PRIVMSG #boaring :said before")
        let modern = h.register("modern", caps: caps)
        let old = h.register("old")
        h.send(modern, "JOIN #boaring")
        h.send(old, "JOIN #boaring")
        h.send(op, "RENAME #boaring #boring :Typo fix")
        let renamed = "@time=1970-01-12T13:46:40.000Z :op!u@127.0.0.1 RENAME #boaring #boring :Typo fix"
        #expect(h.lines(to: op) == [renamed])
        #expect(h.lines(to: modern) == [renamed])
        #expect(h.commands(to: old) == ["PART", "JOIN", "332", "333", "353", "366"])
        #expect(h.lines(to: old).prefix(2) == [":old!u@127.0.0.1 PART #boaring :Typo fix", ":old!u@127.0.0.1 JOIN #boring"])
        h.send(old, "PRIVMSG #boring :hello")
        #expect(h.commands(to: old) == ["404"], "still +m")
        h.send(modern, "NAMES #boring")
        #expect(h.names(to: modern) == ["@op", "modern", "old"])
        // History follows the room, under its new name.
        h.send(modern, "CHATHISTORY LATEST #boring * 10")
        #expect(h.historyLines(to: modern).map { $0.params } == [["#boring", "said before"]])
        h.send(modern, "CHATHISTORY LATEST #boaring * 10")
        #expect(h.out.messages(to: modern).first?.params.prefix(2) == ["CHATHISTORY", "INVALID_TARGET"])
        // The old name points at the new one.
        let late = h.register("late", caps: caps)
        h.send(late, "JOIN #boaring")
        #expect(h.lines(to: late) == [":test.server FAIL JOIN CHANNEL_RENAMED #boaring #boring :The room has been renamed"])
        let lateOld = h.register("lateold")
        h.send(lateOld, "JOIN #boaring")
        #expect(h.lines(to: lateOld).first == ":test.server 470 lateold #boaring #boring :The room has been renamed")
        #expect(h.commands(to: lateOld).contains("JOIN"))
    }

    @Test("refusals: not an operator 482, not a member 442, no such room 403, a name taken or look-alike CHANNEL_NAME_IN_USE, the room everyone joins CANNOT_RENAME; a case change is allowed")
    func refusals() {
        var h = Harness()
        let caps = ["draft/channel-rename", "batch", "message-tags"]
        let op = h.register("op", caps: caps)
        let bob = h.register("bob", caps: caps)
        h.send(op, "JOIN #a", "JOIN #b")
        h.send(bob, "RENAME #nowhere #x")
        #expect(h.commands(to: bob) == ["403"])
        h.send(bob, "RENAME #a #x")
        #expect(h.commands(to: bob) == ["442"])
        h.send(bob, "JOIN #a")
        h.send(bob, "RENAME #a #x")
        #expect(h.commands(to: bob) == ["482"])
        h.send(op, "RENAME #a #B")
        #expect(h.lines(to: op) == [":test.server FAIL RENAME CHANNEL_NAME_IN_USE #a #B :The room name is already taken"])
        h.send(op, "RENAME #a #Ь")
        #expect(h.out.messages(to: op).first?.params.prefix(2) == ["RENAME", "CHANNEL_NAME_IN_USE"], "a look-alike of #b")
        h.send(op, "RENAME #lobby #hall")
        #expect(h.out.messages(to: op).first?.params.prefix(2) == ["RENAME", "CANNOT_RENAME"])
        h.send(op, "RENAME #a #A")
        #expect(h.lines(to: bob) == [":op!u@127.0.0.1 RENAME #a #A :"], "only the case: allowed, no PART and JOIN")
        h.send(op, "RENAME #A bad")
        #expect(h.out.messages(to: op).first?.params.prefix(2) == ["RENAME", "CANNOT_RENAME"])
    }
}

@Suite("server state: renames and deletions, what a review found")
struct StateRenameReviewTests {
    @Test("a room cannot take a closed room's name (its history stays from the next makers), nor be renamed on a server set to link; markers without an account follow the room")
    func refusalsAndMarkers() throws {
        var h = Harness(historyOf: try historyStore()) { $0.room = nil }
        let op = h.register("op", caps: ["draft/read-marker"])
        h.send(op, "JOIN #secret", "MODE #secret +i", "PRIVMSG #secret :old plans", "PART #secret")
        h.send(op, "JOIN #open", "MARKREAD #open timestamp=2026-12-01T10:00:00.000Z")
        h.send(op, "RENAME #open #secret")
        #expect(h.out.messages(to: op).first?.params.prefix(2) == ["RENAME", "CHANNEL_NAME_IN_USE"])
        h.send(op, "RENAME #open #hall")
        h.send(op, "MARKREAD #hall")
        #expect(h.lines(to: op) == [":test.server MARKREAD #hall timestamp=2026-12-01T10:00:00.000Z"])
        var linked = Harness { $0.room = nil; $0.links.blocks = [LinkBlock(name: "b.example", password: "x")] }
        let other = linked.register("op")
        linked.send(other, "JOIN #a")
        linked.send(other, "RENAME #a #b")
        #expect(linked.out.messages(to: other).first?.params.prefix(2) == ["RENAME", "CANNOT_RENAME"])
    }

    @Test("REDACT deletes messages only: a JOIN's msgid is unknown; a QUIT whose reason starts with # is replayed as said")
    func redactMessagesOnly() throws {
        var h = Harness(historyOf: try historyStore())
        let caps = ["draft/chathistory", "batch", "message-tags", "echo-message", "draft/message-redaction", "draft/event-playback"]
        let op = h.register("op", caps: caps)
        let bob = h.register("bob", caps: caps)
        h.send(bob, "QUIT :#elsewhere is better")
        h.send(op, "CHATHISTORY LATEST #lobby * 10")
        let events = h.historyLines(to: op)
        let join = try #require(events.first { $0.command == "JOIN" }?.tag("msgid"))
        #expect(events.first { $0.command == "QUIT" }?.params == ["Quit: #elsewhere is better"])
        h.send(op, "REDACT #lobby \(join)")
        #expect(h.out.messages(to: op).first?.params.prefix(2) == ["REDACT", "UNKNOWN_MSGID"])
        _ = bob
    }
}
