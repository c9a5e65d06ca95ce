import Testing
@testable import ChatServerKit
import IRCWire

@Suite("server state: draft/metadata-2")
struct StateMetadataTests {
    let caps = ["draft/metadata-2", "batch", "message-tags"]

    @Test("offered with its limits; SUB, UNSUB and SUBS answer 770, 771 and 772; a bad key is KEY_INVALID; past the limit TOO_MANY_SUBS")
    func subscriptions() {
        var h = Harness()
        let id = h.connect()
        h.send(id, "CAP LS 302")
        #expect(h.out.messages(to: id).flatMap(\.params).joined(separator: " ").contains("draft/metadata-2=max-subs=50,max-keys=20,max-value-bytes=300"))
        let alice = h.register("alice", caps: caps)
        h.send(alice, "METADATA * SUB display-name Avatar $bad avatar")
        #expect(h.lines(to: alice) == [":test.server FAIL METADATA KEY_INVALID $bad :Invalid key",
                                       ":test.server 770 alice :display-name avatar"])
        h.send(alice, "METADATA * SUBS")
        #expect(h.lines(to: alice) == [":test.server 772 alice :avatar display-name"])
        h.send(alice, "METADATA * UNSUB avatar")
        #expect(h.lines(to: alice) == [":test.server 771 alice :avatar"])
        h.send(alice, "METADATA * SUB " + (0..<60).map { "k\($0)" }.joined(separator: " "))
        #expect(h.out.messages(to: alice).first?.params.prefix(3) == ["METADATA", "TOO_MANY_SUBS", "k49"])
        h.send(alice, "METADATA * FROB")
        #expect(h.lines(to: alice) == [":test.server FAIL METADATA SUBCOMMAND_INVALID FROB :Unknown METADATA subcommand"])
        h.send(alice, "METADATA")
        #expect(h.commands(to: alice) == ["FAIL"])
    }

    @Test("SYNC of a room is for its members: an outsider is refused and reads none of its members' metadata (issue 43, item 11)")
    func syncOutsider() {
        var h = Harness { $0.room = nil }
        let alice = h.register("alice", caps: caps)
        h.send(alice, "JOIN #club", "METADATA * SET display-name :Alice Liddell")
        let mallory = h.register("mallory", caps: caps)
        h.send(mallory, "METADATA * SUB display-name", "METADATA #club SYNC")
        #expect(h.lines(to: mallory).last == ":test.server FAIL METADATA INVALID_TARGET #club :You are not in that room")
        #expect(!h.lines(to: mallory).contains { $0.contains("Alice Liddell") })
        h.send(mallory, "JOIN #club")
        h.send(mallory, "METADATA #club SYNC")
        #expect(h.lines(to: mallory).contains { $0.contains("Alice Liddell") }, "a member may")
    }

    @Test("SET on oneself: 761 to the setter, METADATA to subscribed neighbours only; GET, LIST (in a metadata batch), removal, KEY_NOT_SET, limits")
    func setAndGet() {
        var h = Harness()
        let alice = h.register("alice", caps: caps)
        let bob = h.register("bob", caps: caps)
        let carol = h.register("carol", caps: caps)
        h.send(bob, "METADATA * SUB display-name")
        h.send(alice, "METADATA * SET display-name :Alice Liddell")
        #expect(h.lines(to: alice) == [":test.server 761 alice alice display-name * :Alice Liddell"])
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 METADATA alice display-name * :Alice Liddell"])
        #expect(h.lines(to: carol).isEmpty, "not subscribed")
        h.send(carol, "METADATA alice GET display-name pronouns")
        #expect(h.lines(to: carol) == [":test.server 761 carol alice display-name * :Alice Liddell", ":test.server 766 carol alice pronouns :key not set"])
        h.send(carol, "METADATA alice LIST")
        #expect(h.out.messages(to: carol).map(\.command) == ["BATCH", "761", "BATCH"] && h.out.messages(to: carol)[0].params.last == "metadata")
        h.send(carol, "METADATA alice SET display-name :Not Alice")
        #expect(h.out.messages(to: carol).first?.params.prefix(3) == ["METADATA", "KEY_NO_PERMISSION", "alice"])
        h.send(alice, "METADATA * SET status :" + String(repeating: "x", count: 301))
        #expect(h.out.messages(to: alice).first?.params.prefix(2) == ["METADATA", "VALUE_INVALID"])
        h.send(alice, "METADATA * SET pronouns")
        #expect(h.lines(to: alice) == [":test.server 766 alice alice pronouns :key not set"])
        h.send(alice, "METADATA * SET display-name")
        #expect(h.lines(to: alice) == [":test.server 761 alice alice display-name :*"])
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 METADATA alice display-name *"], "removed: no value")
        for n in 0..<20 { h.send(alice, "METADATA * SET k\(n) :v") }
        h.send(alice, "METADATA * SET one-more :v")
        #expect(h.lines(to: alice) == [":test.server FAIL METADATA LIMIT_REACHED alice :At most 20 keys"])
        h.send(alice, "METADATA * CLEAR")
        #expect(h.commands(to: alice).count == 20)
        h.send(alice, "METADATA nobody GET x")
        #expect(h.lines(to: alice) == [":test.server FAIL METADATA INVALID_TARGET nobody :No such nick or room"])
    }

    @Test("a room's metadata: set by its operators only; on joining, the room's and its members' subscribed keys; WHOIS shows display-name and pronouns (760)")
    func roomsAndJoin() {
        var h = Harness { $0.room = nil }
        let op = h.register("op", caps: caps)
        h.send(op, "JOIN #den", "METADATA * SET display-name :The Op", "METADATA * SET pronouns :they/them")
        h.send(op, "METADATA #den SET url :https://example.org")
        #expect(h.lines(to: op) == [":test.server 761 op #den url * :https://example.org"])
        let bob = h.register("bob", caps: caps)
        h.send(bob, "METADATA #den SET url :mine")
        #expect(h.out.messages(to: bob).first?.params.prefix(2) == ["METADATA", "KEY_NO_PERMISSION"])
        h.send(bob, "METADATA * SUB display-name url", "JOIN #den")
        let lines = h.out.messages(to: bob).filter { $0.command == "METADATA" }
        #expect(lines.map(\.params) == [["#den", "url", "*", "https://example.org"], ["op", "display-name", "*", "The Op"]])
        #expect(lines.allSatisfy { $0.tag("batch") != nil })
        h.send(bob, "WHOIS op")
        #expect(h.lines(to: bob).filter { $0.contains(" 760 ") } == [":test.server 760 bob op display-name * :The Op", ":test.server 760 bob op pronouns * :they/them"])
    }
}
