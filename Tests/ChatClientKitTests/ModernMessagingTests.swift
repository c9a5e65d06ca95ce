import Testing
@testable import ChatClientKit
import IRCWire

@Suite("client state: replies, reactions, deletions, typing, renames, metadata, multiline")
struct ModernMessagingTests {
    let said = "@msgid=m1;time=2026-12-01T10:00:00.000Z :bob!b@h PRIVMSG #lobby :first words of a long message"

    @Test("a reply carries its parent's msgid; reactions aggregate by emoji with who gave them, and can be taken back")
    func repliesAndReactions() throws {
        let (state, _) = fold(welcome + [
            said,
            "@msgid=m2;+draft/reply=m1 :carol!c@h PRIVMSG #lobby :agreed",
            "@+draft/react=👍;+draft/reply=m1 :carol!c@h TAGMSG #lobby",
            "@+draft/react=👍;+draft/reply=m1 :dave!d@h TAGMSG #lobby",
            "@+draft/react=❤;+draft/reply=m1 :alice!al@10.0.0.1 TAGMSG #lobby",
            "@+draft/react=👍;+draft/reply=m1 :carol!c@h TAGMSG #lobby",
            "@+draft/unreact=👍;+draft/reply=m1 :dave!d@h TAGMSG #lobby",
        ])
        let lines = try #require(state.conversation("#lobby")).lines.filter { $0.kind == .message }
        #expect(lines.map(\.text) == ["first words of a long message", "agreed"])
        #expect(lines[1].replyTo == "m1")
        #expect(lines[0].reactions == [Reaction(emoji: "👍", nicks: ["carol"]), Reaction(emoji: "❤", nicks: ["alice"])],
                "carol once though she reacted twice; dave took his back")
    }

    @Test("REDACT: the line's text goes and it says who deleted it, in rooms and direct conversations")
    func redaction() throws {
        let (state, _) = fold(welcome + [said, "@msgid=m9 :bob!b@h PRIVMSG alice :secret", ":op!o@h REDACT #lobby m1 :spam", ":bob!b@h REDACT alice m9"])
        let room = try #require(state.conversation("#lobby")).lines.first { $0.msgid == "m1" }
        #expect(room?.deletedBy == "op" && room?.text == "")
        #expect(state.conversation("bob")?.lines.first { $0.msgid == "m9" }?.deletedBy == "bob")
    }

    @Test("typing: active and paused are kept with their time, done or a message clears it; our own is ignored; an active every 3 s is one event")
    func typing() throws {
        let (state, events) = fold(welcome + [
            "@+typing=active;time=2026-12-01T10:00:00.000Z :bob!b@h TAGMSG #lobby",
            "@+typing=active;time=2026-12-01T10:00:03.000Z :bob!b@h TAGMSG #lobby",
            "@+typing=paused;time=2026-12-01T10:00:05.000Z :carol!c@h TAGMSG #lobby",
            "@+typing=active :alice!al@10.0.0.1 TAGMSG #lobby",
        ])
        let typing = try #require(state.conversation("#lobby")).typing
        #expect(Set(typing.keys) == ["bob", "carol"] && typing["carol"]?.paused == true)
        #expect(events.filter { if case .typing = $0 { return true } else { return false } }.count == 2)
        let bob = try #require(typing["bob"])
        #expect(bob.current(at: bob.time + 5.9) && !bob.current(at: bob.time + 6))
        let (after, _) = fold(welcome + ["@+typing=active :bob!b@h TAGMSG #lobby", ":bob!b@h PRIVMSG #lobby :done typing",
                                         "@+typing=active :carol!c@h TAGMSG #lobby", "@+typing=done :carol!c@h TAGMSG #lobby"])
        #expect(after.conversation("#lobby")?.typing.isEmpty == true)
    }

    @Test("RENAME: the conversation moves with its lines and members, and says who renamed it")
    func rename() throws {
        let (state, _) = fold(welcome + [said, ":op!o@h RENAME #lobby #hall :better name"])
        #expect(state.conversation("#lobby") == nil)
        let hall = try #require(state.conversation("#hall"))
        #expect(hall.name == "#hall" && hall.isJoined && hall.members.count == 3)
        #expect(hall.lines.map(\.text).suffix(2) == ["first words of a long message", "op renamed the room #lobby to #hall: better name"])
        #expect(state.book.order.contains(.room("#hall")) && !state.book.order.contains(.room("#lobby")))
    }

    @Test("metadata: display names and other keys by person, removed, following a nick change; a room's keys are not a person's")
    func metadata() {
        let (state, _) = fold(welcome + [
            ":srv METADATA bob display-name * :Bob Builder",
            ":srv METADATA bob pronouns * :he/him",
            ":srv METADATA #lobby url * :https://example.org",
            ":srv 761 alice alice display-name * :Alice L",
            ":bob!b@h NICK robert",
            ":srv METADATA robert pronouns *",
        ])
        #expect(state.book.displayName(of: "robert") == "Bob Builder" && state.book.profiles["robert"]?["pronouns"] == nil)
        #expect(state.book.displayName(of: "alice") == "Alice L")
        #expect(state.book.profiles["#lobby"] == nil)
    }

    @Test("a multiline batch is one message: lines joined by newlines (a concat line continues the one before, a blank line kept), the batch's msgid and time")
    func multiline() throws {
        let (state, _) = fold(welcome + [
            "@msgid=ml;time=2026-12-01T10:00:00.000Z :bob!b@h BATCH +x draft/multiline #lobby",
            "@batch=x :bob!b@h PRIVMSG #lobby :line one",
            "@batch=x;draft/multiline-concat :bob!b@h PRIVMSG #lobby : continued",
            "@batch=x :bob!b@h PRIVMSG #lobby :",
            "@batch=x :bob!b@h PRIVMSG #lobby :line three",
            ":bob!b@h BATCH -x",
        ])
        let lines = try #require(state.conversation("#lobby")).lines.filter { $0.kind == .message }
        #expect(lines.map(\.text) == ["line one continued\n\nline three"])
        #expect(lines.first?.msgid == "ml" && lines.first?.time == ServerTime.parse("2026-12-01T10:00:00.000Z"))
    }
}
