import Testing
@testable import ChatServerKit
import IRCWire

@Suite("server state: --casemapping ascii (issue 42, item 6)")
struct StateCasemappingTests {
    @Test("ascii: 005 says so; a[ and a{ are two nicknames and #a[ and #a{ two rooms; letters still fold; rfc1459 keeps them one")
    func asciiFolds() {
        var h = Harness { $0.casemapping = .ascii }
        let one = h.connect()
        h.send(one, "NICK a[", "USER u 0 * :one")
        #expect(h.out.messages(to: one).contains { $0.command == "005" && $0.params.contains("CASEMAPPING=ascii") })
        let two = h.register("a{")
        #expect(h.state.user(named: "a{") !== h.state.user(named: "a["), "two people")
        h.send(two, "JOIN #a{")
        h.send(one, "JOIN #a[")
        #expect(h.names(to: one) == ["@a["], "a room of its own")
        let three = h.register("A[x")
        h.send(three, "NICK a[X")
        #expect(h.commands(to: three) == ["NICK"], "its own name in another case")
        let four = h.connect()
        h.send(four, "NICK A[")
        #expect(h.commands(to: four) == ["433"], "letters fold under ascii too")

        var rfc = Harness()
        _ = rfc.register("b[")
        let other = rfc.connect()
        rfc.send(other, "NICK b{")
        #expect(rfc.commands(to: other) == ["433"])
    }
}
