import Testing
@testable import ChatServerKit
import IRCWire

/// The direct-message lane (`relayPlainDirect`): a plain `PRIVMSG bob :hi` is relayed from its
/// bytes. It must send exactly what the general path sends, and leave every other line to it.
@Suite("Direct-message lane")
struct DirectLaneTests {
    /// Every form a recipient can ask for (all six bits, those that do not apply included).
    static let variants = (0..<64).map { RenderVariant(rawValue: UInt8($0)) }

    @Test("Rendering.direct writes byte for byte what render writes, in every variant")
    func directMatchesRender() {
        let texts = ["hi", "hello world", ":starts with a colon", "  spaced  ", "caf\u{E9} \u{1F600} \u{4E2D}",
                     "\u{1B}[31mred\u{202E}", String(repeating: "x", count: 496),
                     String(repeating: "\u{4E2D}", count: 166), String(repeating: "\u{1F600}", count: 124)]
        let tagSets: [[IRCTag]] = [[], [IRCTag("account", "alice")], [IRCTag("account", "a;b c\\d"), IRCTag("bot")]]
        let stamps = [Stamp(time: 1_700_000_000.123, msgid: 42), Stamp(time: 0, msgid: nil)]
        var compared = 0
        for variant in Self.variants {
            for text in texts {
                for tags in tagSets {
                    for stamp in stamps {
                        for command in ["PRIVMSG", "NOTICE"] {
                            let message = IRCMessage(tags: tags, source: "alice!u@127.0.0.1", command: command, params: ["Bob", text])
                            let expected = Rendering.render(message, stamp, variant)
                            let header = Rendering.directHeader(command, source: "alice!u@127.0.0.1", target: "Bob")
                            let direct = Rendering.direct(header: header, text: Array(text.utf8)[...], tags: tags, stamp, variant)
                            #expect(direct == expected, "\(variant.rawValue) \(command) \(text.prefix(20)) \(tags)")
                            compared += 1
                        }
                    }
                }
            }
        }
        #expect(compared == 64 * 9 * 3 * 2 * 2)
    }

    /// The lane takes a plain line; the same message written another way (no colon) goes the
    /// general way. Both must reach the recipient identically, for each set of capabilities.
    @Test("a direct message arrives the same through the lane and the general path", arguments: [
        [String](), ["server-time"], ["message-tags"], ["account-tag"], ["server-time", "message-tags", "account-tag"],
    ])
    func laneMatchesGeneralPath(caps: [String]) throws {
        var h = Harness()
        let alice = h.register("alice")
        let bob = h.register("bob", caps: caps)
        h.send(alice, "MODE alice +B")
        let session = try #require(h.state.people.sessions[alice])
        let taken = h.state.relayPlainDirect(Array("PRIVMSG bob :word".utf8), from: session, now: h.now)
        #expect(taken, "the lane takes it")
        h.out = h.state.takeOutbox()
        let lane = Self.rawLines(h.out, to: bob)
        h.send(alice, "PRIVMSG bob word")
        let plain = PlainTextLine(Array("PRIVMSG bob word".utf8))
        #expect(plain == nil, "the general path's")
        let general = Self.rawLines(h.out, to: bob)
        #expect(lane.count == 1 && general.count == 1)
        // The msgids differ (two messages); everything else is the same.
        func withoutID(_ lines: [String]) -> [String] {
            lines.map { $0.replacing(/msgid=[^; ]+;?/, with: "") }
        }
        #expect(withoutID(lane) == withoutID(general))
        #expect(lane.first?.hasSuffix(":alice!u@127.0.0.1 PRIVMSG bob :word\r\n") == true)
        if caps.contains("message-tags") { #expect(lane.first?.contains("msgid=") == true && lane.first?.contains("bot") == true) }
        if caps.contains("server-time") { #expect(lane.first?.hasPrefix("@time=") == true) }
    }

    /// What went to `id`, as the bytes sent (not parsed again: a stray CR would survive).
    static func rawLines(_ outbox: Outbox, to id: ConnectionID) -> [String] {
        outbox.items.compactMap { item in
            if case .send(let to, let bytes) = item, to == id { return String(decoding: bytes, as: UTF8.self) }
            return nil
        }
    }

    @Test("the lane takes only what it can send as the general path would", arguments: [
        ("PRIVMSG bob :hi", true), ("NOTICE bob :hi", true), ("PRIVMSG BOB :case", true),
        ("PRIVMSG alice :to myself", false), ("PRIVMSG #lobby :a room", false), ("PRIVMSG nobody :x", false),
        ("PRIVMSG bob,carol :two", false), ("@+typing=active PRIVMSG bob :tagged", false), ("privmsg bob :lower", false),
        ("PRIVMSG bob :a\rforged", false), ("PRIVMSG carol :away", false), ("NOTICE carol :away but a notice", true),
    ])
    func laneTakes(line: String, taken: Bool) throws {
        var h = Harness()
        let alice = h.register("alice")
        _ = h.register("bob")
        let carol = h.register("carol")
        h.send(carol, "AWAY :out")
        let session = try #require(h.state.people.sessions[alice])
        let result = h.state.relayPlainDirect(Array(line.utf8), from: session, now: h.now)
        #expect(result == taken)
        // Nor from a client with echo-message, in a multiline batch, or before registering.
        let echo = h.register("echo", caps: ["echo-message"])
        let echoSession = try #require(h.state.people.sessions[echo])
        let echoTaken = h.state.relayPlainDirect(Array("PRIVMSG bob :hi".utf8), from: echoSession, now: h.now)
        #expect(!echoTaken)
        let early = h.connect()
        let earlySession = try #require(h.state.people.sessions[early])
        let earlyTaken = h.state.relayPlainDirect(Array("PRIVMSG bob :hi".utf8), from: earlySession, now: h.now)
        #expect(!earlyTaken)
        let batching = h.register("batching", caps: ["batch", "draft/multiline"])
        h.send(batching, "BATCH +m draft/multiline bob")
        let batchingSession = try #require(h.state.people.sessions[batching])
        let batchingTaken = h.state.relayPlainDirect(Array("PRIVMSG bob :hi".utf8), from: batchingSession, now: h.now)
        #expect(!batchingTaken)
    }

    /// The lane remembers whom a connection last wrote to (`Session.lastDirect`); every change
    /// of either side's name or host, or the person leaving, must send the next line right.
    @Test("a run of messages to one person follows every change of name, host or person")
    func lastTargetFollowsChanges() throws {
        var h = Harness()
        let alice = h.register("alice")
        let bob = h.register("bob")
        let carol = h.register("carol")
        h.send(alice, "PRIVMSG bob :one")
        h.send(alice, "PRIVMSG bob :two")
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 PRIVMSG bob :two"])
        #expect(h.state.people.sessions[alice]?.lastDirect?.user === h.state.people.sessions[bob]?.user, "remembered")
        // The same person by another spelling: the line names them as they write their nick.
        h.send(alice, "PRIVMSG BoB :three")
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 PRIVMSG bob :three"])
        // A NOTICE after PRIVMSGs to the same bytes.
        h.send(alice, "NOTICE BoB :four")
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 NOTICE bob :four"])
        // The target renames: the old name is nobody's, the new one reaches them.
        h.send(bob, "NICK robert")
        h.send(alice, "NOTICE BoB :five")
        #expect(h.lines(to: bob).isEmpty)
        h.send(alice, "PRIVMSG BoB :six")
        #expect(h.commands(to: alice) == ["401"] && h.lines(to: bob).isEmpty)
        h.send(alice, "PRIVMSG robert :seven")
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 PRIVMSG robert :seven"])
        // The sender renames: the next line carries the new prefix.
        h.send(alice, "NICK alicia")
        h.send(alice, "PRIVMSG robert :eight")
        #expect(h.lines(to: bob) == [":alicia!u@127.0.0.1 PRIVMSG robert :eight"])
        // Someone else takes the freed name and is written to by it; then its owner leaves and a
        // newcomer takes it: the line goes to whoever holds the name now.
        h.send(carol, "NICK bob")
        h.send(alice, "PRIVMSG bob :nine")
        #expect(h.lines(to: carol) == [":alicia!u@127.0.0.1 PRIVMSG bob :nine"] && h.lines(to: bob).isEmpty)
        h.send(carol, "QUIT :bye")
        h.send(alice, "PRIVMSG bob :ten")
        #expect(h.commands(to: alice) == ["401"])
        #expect(h.state.people.sessions[alice]?.lastDirect == nil, "the departed user is not kept alive")
        let newcomer = h.register("bob")
        h.send(alice, "PRIVMSG bob :eleven")
        #expect(h.lines(to: newcomer) == [":alicia!u@127.0.0.1 PRIVMSG bob :eleven"] && h.lines(to: carol).isEmpty)
        // A host change (CHGHOST by an operator's vhost, here set directly) is in the next line.
        let user = try #require(h.state.people.sessions[alice]?.user)
        user.host = "cloak.example"
        h.send(alice, "PRIVMSG bob :twelve")
        #expect(h.lines(to: newcomer) == [":alicia!u@cloak.example PRIVMSG bob :twelve"])
        // The sender leaving forgets it (no reference kept to whoever it wrote to).
        let session = try #require(h.state.people.sessions[alice])
        h.send(alice, "QUIT")
        #expect(session.gone && session.lastDirect == nil)
    }

    @Test("a CR inside the text goes out as a space, never raw: no forged second line")
    func carriageReturn() {
        var h = Harness()
        let alice = h.register("alice")
        let bob = h.register("bob")
        h.state.received(Array("PRIVMSG bob :hi\r:admin!x@y PRIVMSG bob :click".utf8), from: alice, now: h.now)
        h.out = h.state.takeOutbox()
        #expect(Self.rawLines(h.out, to: bob) == [":alice!u@127.0.0.1 PRIVMSG bob :hi :admin!x@y PRIVMSG bob :click\r\n"])
    }

    @Test("what the lane leaves to the general path still gets its replies")
    func fallbacks() {
        var h = Harness()
        let alice = h.register("alice")
        let bob = h.register("bob")
        // Away: the sender is told (301), so the general path answers.
        h.send(bob, "AWAY :lunch")
        h.send(alice, "PRIVMSG bob :are you there")
        #expect(h.commands(to: alice) == ["301"] && h.lines(to: bob) == [":alice!u@127.0.0.1 PRIVMSG bob :are you there"])
        h.send(bob, "AWAY")
        // To oneself, lower case, a source, several targets, an empty text, invalid UTF-8.
        h.send(alice, "PRIVMSG alice :me")
        #expect(h.lines(to: alice) == [":alice!u@127.0.0.1 PRIVMSG alice :me"])
        h.send(alice, "privmsg bob :lower")
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 PRIVMSG bob :lower"])
        h.send(alice, ":alice PRIVMSG bob :sourced")
        #expect(h.lines(to: bob) == [":alice!u@127.0.0.1 PRIVMSG bob :sourced"])
        h.send(alice, "PRIVMSG nobody :x")
        #expect(h.commands(to: alice) == ["401"])
        h.send(alice, "PRIVMSG bob :")
        #expect(h.commands(to: alice) == ["412"] && h.lines(to: bob).isEmpty)
        h.state.received(Array("PRIVMSG bob :caf".utf8) + [0xC3], from: alice, now: h.now)
        h.out = h.state.takeOutbox()
        #expect(h.lines(to: bob).isEmpty && h.commands(to: alice) == ["FAIL"], "not UTF-8: refused by the general path")
        // With echo-message the sender gets its copy, so it is not the lane's.
        let carol = h.register("carol", caps: ["echo-message"])
        h.send(carol, "PRIVMSG bob :echoed")
        #expect(h.lines(to: carol) == [":carol!u@127.0.0.1 PRIVMSG bob :echoed"] && h.commands(to: bob) == ["PRIVMSG"])
        // A NOTICE to someone away is not answered: the lane takes it.
        h.send(bob, "AWAY :gone")
        h.send(alice, "NOTICE bob :fyi")
        #expect(h.lines(to: alice).isEmpty && h.lines(to: bob) == [":alice!u@127.0.0.1 NOTICE bob :fyi"])
        // Before registration nothing is relayed.
        let stranger = h.connect()
        h.send(stranger, "PRIVMSG bob :early")
        #expect(h.commands(to: stranger) == ["451"] && h.lines(to: bob).isEmpty)
    }
}
