import Foundation
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
        let (whois, _) = fold(welcome + [":srv 760 alice bob avatar * :https://example.org/bob.png", ":srv 760 alice bob pronouns * :he/him"])
        #expect(whois.book[.server]?.lines.map(\.text).suffix(2) == ["bob's avatar: https://example.org/bob.png", "bob's pronouns: he/him"])
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

@Suite("client state: sending multiline messages and replies")
struct MultilineSendingTests {
    /// Registered with these capabilities (and multiline's limits when offered).
    func registered(_ caps: String, value: String = "max-bytes=4096,max-lines=24") -> ClientState {
        var config = ClientConfig(host: "127.0.0.1", nick: "alice")
        config.wantedCapabilities = caps.split(separator: " ").map(String.init)
        var state = ClientState(config: config)
        _ = state.connectionStarted()
        let offered = caps.split(separator: " ").map { $0 == "draft/multiline" ? "draft/multiline=" + value : String($0) }.joined(separator: " ")
        for line in [":srv CAP * LS :" + offered, ":srv CAP alice ACK :" + caps] + welcome {
            _ = state.receive(try! IRCMessage(parsing: line), now: 1000)
        }
        return state
    }

    func sent(_ reduction: Reduction) -> [String] {
        reduction.actions.compactMap { action -> String? in
            switch action {
            case .send(let message), .sendLine(let message, _): String(decoding: message.serialized().dropLast(2), as: UTF8.self)
            default: nil
            }
        }
    }

    @Test("a text of several lines where the server takes multiline: one batch, a blank line kept, a long line cut with concat; the echo confirms it whole")
    func batch() throws {
        var state = registered("batch message-tags echo-message draft/multiline")
        let long = String(repeating: "x", count: 600)
        let lines = sent(state.send("one\n\n" + long, to: "#lobby", isAction: false, replyTo: "p1", queueing: false, now: 1000))
        #expect(lines.first == "@+draft/reply=p1 BATCH +ml1 draft/multiline #lobby")
        #expect(lines[1] == "@batch=ml1 PRIVMSG #lobby :one" && lines[2] == "@batch=ml1 PRIVMSG #lobby :")
        #expect(lines[3].hasPrefix("@batch=ml1 PRIVMSG #lobby :x") && lines[4].hasPrefix("@batch=ml1;draft/multiline-concat PRIVMSG #lobby :x"))
        #expect(lines.count == 6 && lines.last == "BATCH -ml1")
        #expect(state.sent.lines.map(\.text) == ["one\n\n" + long], "waiting for its echo, as one")
        // The server's echo: the same lines from us, under its own batch reference.
        let echo = ["@msgid=e1 :alice!al@10.0.0.1 BATCH +s draft/multiline #lobby"]
            + lines.dropFirst().dropLast().map { $0.replacingOccurrences(of: "@batch=ml1", with: "@batch=s").replacingOccurrences(of: " PRIVMSG", with: " :alice!al@10.0.0.1 PRIVMSG") }
            + [":alice!al@10.0.0.1 BATCH -s"]
        for line in echo { _ = state.receive(try IRCMessage(parsing: line), now: 1000) }
        #expect(state.sent.lines.isEmpty, "the echo confirmed it")
    }

    @Test("without multiline, or past its limits: each non-blank line as a message of its own, the reply tag on each")
    func lines() {
        var plain = registered("batch message-tags echo-message")
        #expect(sent(plain.send("one\n\ntwo", to: "#lobby", isAction: false, replyTo: "p1", queueing: false, now: 1000))
                == ["@+draft/reply=p1 PRIVMSG #lobby :one", "@+draft/reply=p1 PRIVMSG #lobby :two"])
        var small = registered("batch message-tags echo-message draft/multiline", value: "max-bytes=4096,max-lines=2")
        #expect(sent(small.send("a\nb\nc", to: "#lobby", isAction: false, queueing: false, now: 1000)) == ["PRIVMSG #lobby :a", "PRIVMSG #lobby :b", "PRIVMSG #lobby :c"])
    }
}

@Suite("client state: modern messaging, what a review found")
struct ModernMessagingReviewTests {
    @Test("pieces of a long line join back exactly (a multiline concat must not lose the space at a cut), never past the limit, never inside a character")
    func exactPieces() {
        let text = (0..<120).map { "wörd\($0)" }.joined(separator: " ") + " " + String(repeating: "字", count: 200)
        let pieces = ClientState.exactPieces(text, maxBytes: 100)
        #expect(pieces.joined() == text)
        #expect(pieces.allSatisfy { $0.utf8.count <= 100 } && pieces.count > 5)
        #expect(pieces.first?.hasSuffix(" ") == true, "cut after a space, kept on the piece before")
        #expect(ClientState.exactPieces("short", maxBytes: 100) == ["short"] && ClientState.exactPieces("", maxBytes: 100) == [""])
    }

    @Test("a reaction must be a short emoji without control characters (a newline could fake a line); at most 20 kinds per message")
    func reactionLimits() throws {
        var lines = welcome + ["@msgid=m1 :bob!b@h PRIVMSG #lobby :hi", "@+draft/react=a\\nb;+draft/reply=m1 :eve!e@h TAGMSG #lobby"]
        for n in 0..<30 { lines.append("@+draft/react=x\(n);+draft/reply=m1 :eve!e@h TAGMSG #lobby") }
        let (state, _) = fold(lines)
        let reactions = try #require(state.conversation("#lobby")?.lines.first { $0.msgid == "m1" }).reactions
        #expect(reactions.count == 20 && !reactions.contains { $0.emoji.contains("\n") })
    }

    @Test("a rename onto a room we had left replaces it (listed once); the room is rejoined under its new name after a reconnect")
    func renameOntoLeftRoom() {
        var state = ClientState(nick: "alice")
        for line in welcome + [":alice!al@10.0.0.1 JOIN #hall", ":alice!al@10.0.0.1 PART #hall", ":op!o@h RENAME #lobby #hall :merged"] {
            _ = state.apply(try! IRCMessage(parsing: line), now: 1000)
        }
        #expect(state.book.order.filter { $0 == .room("#hall") }.count == 1 && state.conversation("#hall")?.isJoined == true)
        #expect(state.conversation("#lobby") == nil)
    }
}

@Suite("client state: typing notices and their refusals (issue 46: one line per refusal)")
struct TypingRefusalTests {
    func registered() -> ClientState {
        MultilineSendingTests().registered("message-tags echo-message")
    }

    func sent(_ reduction: Reduction) -> [String] { MultilineSendingTests().sent(reduction) }

    /// Every line the reductions put anywhere, and the lines refused.
    func said(_ reductions: [Reduction]) -> [String] {
        reductions.flatMap(\.events).compactMap { event -> String? in
            switch event {
            case .line(let id, let line): "\(id) \(line.text)"
            case .notSent(let target, let text, let reason): "not sent to \(target): \(text) (\(reason))"
            default: nil
            }
        }
    }

    @Test("typing then a line to a +m room: the server refuses both, one refusal is said; typing there stops for a while")
    func oneLinePerRefusal() {
        var state = registered()
        _ = state.receive(try! IRCMessage(parsing: ":alice!a@h JOIN #quiet"), now: 1000)
        #expect(sent(state.typing("active", to: "#quiet", now: 1001, connected: true)) == ["@+typing=active TAGMSG #quiet"])
        #expect(sent(state.send("hello", to: "#quiet", isAction: false, queueing: false, now: 1002)) == ["PRIVMSG #quiet :hello"])
        let answers = [":srv 404 alice #quiet :Cannot send to channel (+m)", ":srv 404 alice #quiet :Cannot send to channel (+m)"]
        let reductions = answers.map { state.receive(try! IRCMessage(parsing: $0), now: 1003) }
        #expect(said(reductions) == ["not sent to #quiet: hello (refused by the server: Cannot send to channel (+m))"])
        // The room refused a notice: no more typing to it for now (nothing to refuse again).
        #expect(sent(state.typing("active", to: "#quiet", now: 1010, connected: true)) == [])
        #expect(sent(state.typing("active", to: "#quiet", now: 1003 + TypingOut.quietAfterRefusal, connected: true)) == ["@+typing=active TAGMSG #quiet"])
    }

    @Test("no typing to a room we are not in; a refusal with no notice or line behind it is still shown")
    func notInRoom() {
        var state = registered()
        #expect(sent(state.typing("active", to: "#elsewhere", now: 1001, connected: true)) == [])
        let reduction = state.receive(try! IRCMessage(parsing: ":srv 404 alice #elsewhere :Cannot send to channel"), now: 1002)
        #expect(!said([reduction]).isEmpty, "a refusal nothing of ours explains is not dropped")
    }

    @Test("our line echoed: the notices before it went through, so a later refusal is not put down to them")
    func echoClears() {
        var state = registered()
        _ = state.receive(try! IRCMessage(parsing: ":alice!a@h JOIN #lobby"), now: 1000)
        _ = state.typing("active", to: "#lobby", now: 1001, connected: true)
        _ = state.send("hi", to: "#lobby", isAction: false, queueing: false, now: 1002)
        _ = state.receive(try! IRCMessage(parsing: ":alice!a@h PRIVMSG #lobby :hi"), now: 1003)
        #expect(state.typingOut.inFlight.isEmpty)
    }
}
