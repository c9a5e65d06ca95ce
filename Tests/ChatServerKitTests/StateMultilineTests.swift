import Testing
@testable import ChatServerKit
import IRCWire

@Suite("server state: draft/multiline")
struct StateMultilineTests {
    static let caps = ["draft/multiline", "batch", "message-tags", "echo-message"]

    @Test("CAP LS 302 gives the limits as the capability's value")
    func advertised() {
        var h = Harness()
        let id = h.connect()
        h.send(id, "CAP LS 302")
        #expect(h.out.messages(to: id).first?.params.last?.contains("draft/multiline=max-bytes=4096,max-lines=24") == true)
    }

    @Test("a batch reaches multiline clients as a batch and others as separate lines; the sender gets its echo")
    func relayed() {
        var h = Harness()
        let alice = h.register("alice", caps: Self.caps)
        let bob = h.register("bob", caps: ["draft/multiline", "batch", "message-tags"])
        let carol = h.register("carol")
        h.send(alice, "BATCH +p1 draft/multiline #lobby",
               "@batch=p1 PRIVMSG #lobby :first line",
               "@batch=p1;draft/multiline-concat PRIVMSG #lobby :, continued",
               "@batch=p1 PRIVMSG #lobby :third line")
        #expect(h.out.items.isEmpty, "nothing goes out until the batch closes")
        h.send(alice, "BATCH -p1")
        let toBob = h.out.messages(to: bob)
        #expect(toBob.map(\.command) == ["BATCH", "PRIVMSG", "PRIVMSG", "PRIVMSG", "BATCH"])
        let reference = String(toBob[0].params[0].dropFirst())
        #expect(toBob[0].params == ["+" + reference, "draft/multiline", "#lobby"] && toBob[0].tag("msgid") != nil)
        #expect(toBob[1...3].allSatisfy { $0.tag("batch") == reference })
        #expect(toBob[2].tag("draft/multiline-concat") != nil && toBob[2].params[1] == ", continued")
        #expect(toBob[4].params == ["-" + reference])
        #expect(h.lines(to: carol) == [":alice!u@127.0.0.1 PRIVMSG #lobby :first line",
                                       ":alice!u@127.0.0.1 PRIVMSG #lobby :, continued",
                                       ":alice!u@127.0.0.1 PRIVMSG #lobby :third line"])
        #expect(h.out.messages(to: alice).map(\.command) == ["BATCH", "PRIVMSG", "PRIVMSG", "PRIVMSG", "BATCH"])
    }

    @Test("one message, one msgid: on the batch's opening line (and the first fallback line), none on its lines; blank lines kept in the batch")
    func oneMsgid() {
        var h = Harness()
        let alice = h.register("alice", caps: Self.caps + ["server-time"])
        let bob = h.register("bob", caps: ["draft/multiline", "batch", "message-tags"])
        let carol = h.register("carol", caps: ["message-tags"])
        h.send(alice, "BATCH +p draft/multiline #lobby", "@batch=p PRIVMSG #lobby :one", "@batch=p PRIVMSG #lobby :",
               "@batch=p PRIVMSG #lobby :three", "BATCH -p")
        let toBob = h.out.messages(to: bob)
        #expect(toBob.map { $0.params.last! }.dropFirst().dropLast() == ["one", "", "three"], "the blank line is kept")
        let msgid = toBob[0].tag("msgid")
        #expect(msgid != nil && toBob.dropFirst().allSatisfy { $0.tag("msgid") == nil })
        let toCarol = h.out.messages(to: carol)
        #expect(toCarol.map { $0.params.last! } == ["one", "three"], "no blank line as a message of its own")
        #expect(toCarol.map { $0.tag("msgid") } == [msgid, nil])
        let echo = h.out.messages(to: alice)
        #expect(echo[0].tag("msgid") == msgid && echo.dropFirst().allSatisfy { $0.tag("msgid") == nil })
    }

    @Test("limits: more than max-lines or max-bytes gets FAIL and nothing is relayed")
    func limits() {
        var h = Harness { $0.multilineMaxLines = 3 }
        let alice = h.register("alice", caps: Self.caps)
        let bob = h.register("bob")
        h.send(alice, "BATCH +x draft/multiline bob")
        for i in 0..<4 { h.send(alice, "@batch=x PRIVMSG bob :line \(i)") }
        h.send(alice, "BATCH -x")
        #expect(h.lines(to: bob).isEmpty)
        h.send(alice, "BATCH +y draft/multiline bob")
        h.send(alice, "@batch=y PRIVMSG bob :" + String(repeating: "z", count: 400))
        #expect(h.lines(to: alice).isEmpty)
        var h2 = Harness { $0.multilineMaxBytes = 100 }
        let a2 = h2.register("alice", caps: Self.caps)
        _ = h2.register("bob")
        h2.send(a2, "BATCH +z draft/multiline bob", "@batch=z PRIVMSG bob :" + String(repeating: "z", count: 101))
        #expect(h2.lines(to: a2) == [":test.server FAIL BATCH MULTILINE_MAX_BYTES 100 :The message is longer than 100 bytes"])
    }

    @Test("a line to another target, a mixed command, a stray batch tag and BATCH without the capability get FAIL")
    func invalid() {
        var h = Harness()
        let alice = h.register("alice", caps: Self.caps)
        _ = h.register("bob")
        h.send(alice, "BATCH +a draft/multiline bob", "@batch=a PRIVMSG carol :x")
        #expect(h.lines(to: alice) == [":test.server FAIL BATCH MULTILINE_INVALID_TARGET bob carol :Every line must go to the batch's target"])
        h.send(alice, "BATCH -a")
        h.send(alice, "BATCH +b draft/multiline bob", "@batch=b PRIVMSG bob :x", "@batch=b NOTICE bob :y")
        #expect(h.commands(to: alice) == ["FAIL"])
        h.send(alice, "BATCH -b")
        h.send(alice, "@batch=nope PRIVMSG bob :x")
        #expect(h.commands(to: alice) == ["FAIL"])
        let carol = h.register("carol")
        h.send(carol, "BATCH +c draft/multiline bob")
        #expect(h.commands(to: carol) == ["NOTICE"], "without the capability (or standard-replies) the FAIL comes as a NOTICE")
        h.send(carol, "CAP REQ :draft/multiline")
        #expect(h.out.messages(to: carol).first?.params[1] == "NAK", "draft/multiline needs batch")
    }

    @Test("a labelled batch: the echo is the draft/multiline batch carrying the label, not wrapped in a labeled-response batch")
    func labelled() {
        var h = Harness()
        let alice = h.register("alice", caps: Self.caps + ["labeled-response"])
        _ = h.register("bob")
        h.send(alice, "@label=L1 BATCH +m draft/multiline bob", "@batch=m PRIVMSG bob :one", "@batch=m PRIVMSG bob :two")
        h.send(alice, "BATCH -m")
        let lines = h.out.messages(to: alice)
        #expect(lines.map(\.command) == ["BATCH", "PRIVMSG", "PRIVMSG", "BATCH"])
        #expect(lines[0].tag("label") == "L1" && lines[0].params[1] == "draft/multiline" && lines[0].tag("batch") == nil)
        let inner = String(lines[0].params[0].dropFirst())
        #expect(lines[1].tag("batch") == inner && lines[2].tag("batch") == inner)
        #expect(lines[1...].allSatisfy { $0.tag("label") == nil })
        #expect(lines.last?.params == ["-" + inner])
        // To someone away: the 301 too, so two things; then the labeled-response batch wraps both.
        let carol = h.register("carol")
        h.send(carol, "AWAY :out")
        h.send(alice, "@label=L2 BATCH +n draft/multiline carol", "@batch=n PRIVMSG carol :one", "BATCH -n")
        let wrapped = h.out.messages(to: alice)
        #expect(wrapped.first?.params.last == "labeled-response" && wrapped.first?.tag("label") == "L2")
        #expect(wrapped.map(\.command) == ["BATCH", "BATCH", "PRIVMSG", "BATCH", "301", "BATCH"])
    }
}
