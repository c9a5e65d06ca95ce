import Testing
@testable import ChatServerKit
import IRCWire

@Suite("a room's kept recipient lists (FanOut)")
struct FanOutTests {
    /// Who the lists say, per variant, sorted.
    func contents(_ fanOut: FanOut) -> [RenderVariant: [ConnectionID]] {
        var result: [RenderVariant: [ConnectionID]] = [:]
        for group in fanOut.groups where !group.connections.isEmpty { result[group.variant, default: []] += group.connections }
        return result.mapValues { $0.sorted() }
    }

    @Test("adds and swap-removes in any order agree with a plain table of who is in")
    func againstAModel() {
        var fanOut = FanOut()
        var model: [ConnectionID: RenderVariant] = [:]
        let variants: [RenderVariant] = [[], [.time], [.time, .tags], [.tags, .account, .extendedJoin]]
        // A fixed pseudo-random walk (a linear congruential generator): the same every run.
        var seed: UInt64 = 12345
        func next(_ n: Int) -> Int {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Int((seed >> 33) % UInt64(n))
        }
        for step in 0..<3000 {
            let connection = ConnectionID(UInt64(next(60)) + 1000)
            if next(3) == 0 || model[connection] != nil && next(2) == 0 {
                fanOut.remove(connection)
                model[connection] = nil
            } else if model[connection] == nil {
                let variant = variants[next(variants.count)]
                fanOut.add(connection, variant)
                model[connection] = variant
            }
            var expected: [RenderVariant: [ConnectionID]] = [:]
            for (connection, variant) in model { expected[variant, default: []].append(connection) }
            #expect(contents(fanOut) == expected.mapValues { $0.sorted() }, "step \(step)")
            if contents(fanOut) != expected.mapValues({ $0.sorted() }) { return }
        }
        #expect(fanOut.isEmpty == model.isEmpty)
    }

    @Test("follows joins, parts, quits, kicks and a CAP REQ after registration; the sender is skipped or answered")
    func followsTheRoom() {
        var h = Harness()
        let alice = h.register("alice")
        let bob = h.register("bob")
        let carol = h.register("carol")
        let lobby = { h.state.roomBook.membership.fanOut["#lobby"].map(contents) ?? [:] }
        #expect(lobby() == [[]: [alice, bob, carol]])

        // bob asks for server-time once in the room: he moves to the lists of that form.
        h.send(bob, "CAP REQ :server-time")
        #expect(lobby() == [[]: [alice, carol], [.time]: [bob]])
        h.send(alice, "PRIVMSG #lobby :hello")
        #expect(h.lines(to: alice).isEmpty, "no echo-message: the sender is skipped")
        #expect(h.lines(to: carol) == [":alice!u@127.0.0.1 PRIVMSG #lobby :hello"])
        #expect(h.out.messages(to: bob).map(\.tags).first?.contains { $0.key == "time" } == true)

        h.send(carol, "PART #lobby")
        #expect(lobby() == [[]: [alice], [.time]: [bob]])
        h.send(alice, "KICK #lobby bob")
        #expect(lobby() == [[]: [alice]])
        let dave = h.register("dave", caps: ["echo-message"])
        #expect(lobby() == [[]: [alice, dave]])
        h.send(dave, "PRIVMSG #lobby :mine")
        #expect(h.lines(to: dave) == [":dave!u@127.0.0.1 PRIVMSG #lobby :mine"], "the echo once, as the reply")
        #expect(h.lines(to: alice) == [":dave!u@127.0.0.1 PRIVMSG #lobby :mine"])
        h.send(alice, "QUIT :bye")
        #expect(lobby() == [[]: [dave]])
        h.send(dave, "PART #lobby")
        #expect(h.state.roomBook.membership.fanOut["#lobby"] == nil, "an emptied room keeps no lists")
    }

    @Test("a member's NAMES (kept and extended on join) always equals the list made afresh for an outsider",
          arguments: [[], ["multi-prefix"], ["userhost-in-names"], ["multi-prefix", "userhost-in-names"]])
    func namesKept(caps: [String]) {
        var h = Harness { $0.operators = [OperatorBlock(name: "root", passwordHash: OperatorBlock.hash("pw", salt: "s"))] }
        let alice = h.register("alice", caps: caps)
        let outsider = h.register("outsider", caps: caps)
        h.send(outsider, "PART #lobby")
        var steps: [(String, () -> Void)] = []
        var carol = ConnectionID(0)
        steps.append(("bob joins", { _ = h.register("bob") }))
        steps.append(("carol joins", { carol = h.register("carol") }))
        steps.append(("a crowd joins", { for n in 0..<30 { _ = h.register("crowd\(n)") } }))
        steps.append(("bob is voiced", { h.send(alice, "MODE #lobby +v bob") }))
        steps.append(("bob is opped too", { h.send(alice, "MODE #lobby +o bob") }))
        steps.append(("carol renames", { h.send(carol, "NICK caroline") }))
        steps.append(("carol's host changes", { h.send(alice, "OPER root pw"); h.send(alice, "CHGHOST caroline cloak.example") }))
        steps.append(("dave joins after", { _ = h.register("dave") }))
        steps.append(("bob is kicked", { h.send(alice, "KICK #lobby bob") }))
        steps.append(("carol quits", { h.send(carol, "QUIT :bye") }))
        steps.append(("erin joins last", { _ = h.register("erin") }))
        for (what, step) in steps {
            step()
            h.send(alice, "NAMES #lobby")
            let member = h.names(to: alice)
            h.send(outsider, "NAMES #lobby")
            let fresh = h.names(to: outsider)
            #expect(member == fresh, "after: \(what)")
            #expect(!member.isEmpty)
        }
        #expect(h.names(to: outsider).contains { $0.contains("caroline") } == false, "carol quit")
    }
}
