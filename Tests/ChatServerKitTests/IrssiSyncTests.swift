import Testing
@testable import ChatServerKit
import IRCWire

/// irssi calls a room "synced" once each query it sends after joining has its end numeric,
/// matched by the numeric and the room in its second parameter (servers-redirect.c). These are
/// irssi 1.4's queries, in its order, and the exact lines it must get back; InspIRCd 3.15 gives
/// the same numerics, the same parameters (it quotes the last one with `:`, which irssi reads
/// the same). Issue 24 measured "synced in 10 secs" against us and 8 against InspIRCd: the
/// seconds are irssi's own flood queue (cmd_queue_speed, 2.2 s a queued command), not a reply
/// it waits for; tests/interop/test_irssi_sync.py measures it with the queue off.
@Suite("server state: the replies irssi waits for to sync a room")
struct IrssiSyncTests {
    /// irssi registers with these capabilities (its CAP REQ against us).
    static let irssiCaps = ["multi-prefix", "extended-join", "setname", "invite-notify", "away-notify", "chghost", "account-notify", "server-time"]

    @Test("after the JOIN of #lobby: MODE, WHOX, MODE b (and e, I) each end with 324/329, 315, 368, 349, 347 for the room")
    func queriesAfterJoin() {
        var h = Harness()
        let irssi = h.connect()
        h.send(irssi, "CAP LS 302", "JOIN :", "CAP REQ :\(Self.irssiCaps.joined(separator: " "))", "CAP END")
        h.send(irssi, "NICK irs", "USER root root 127.0.0.1 :root")
        // The JOIN of #lobby comes with the welcome; irssi starts its queries after the 366.
        #expect(h.commands(to: irssi).suffix(3) == ["JOIN", "353", "366"])
        let created = h.lines(to: irssi).count
        #expect(created > 3)

        h.send(irssi, "MODE #lobby")
        #expect(h.lines(to: irssi) == [
            ":test.server 324 irs #lobby +nt",
            ":test.server 329 irs #lobby \(Int(h.now))",
        ])
        // WHOX, as irssi sends it when 005 says WHOX: its query type 743 comes back first.
        h.send(irssi, "WHO #lobby %tcuhnfdar,743")
        #expect(h.lines(to: irssi) == [
            ":test.server 354 irs 743 #lobby root 127.0.0.1 irs H@ 0 0 :root",
            ":test.server 315 irs #lobby :End of /WHO list",
        ])
        // Without WHOX (older irssi, or a WHO by hand): 352 and the same 315.
        h.send(irssi, "WHO #lobby")
        #expect(h.lines(to: irssi) == [
            ":test.server 352 irs #lobby root 127.0.0.1 test.server irs H@ :0 root",
            ":test.server 315 irs #lobby :End of /WHO list",
        ])
        h.send(irssi, "MODE #lobby b")
        #expect(h.lines(to: irssi) == [":test.server 368 irs #lobby :End of channel ban list"])
        // We advertise EXCEPTS and INVEX (and 004 lists e and I), so a client may ask these too.
        h.send(irssi, "MODE #lobby e")
        #expect(h.lines(to: irssi) == [":test.server 349 irs #lobby :End of channel exception list"])
        h.send(irssi, "MODE #lobby I")
        #expect(h.lines(to: irssi) == [":test.server 347 irs #lobby :End of Channel Invite Exception List"])
    }

    @Test("a room joined later, with a ban and two members: the lists come before their end numerics, every member in the WHOX reply")
    func roomWithMembersAndBan() {
        var h = Harness()
        let alice = h.register("alice")
        h.send(alice, "JOIN #dev", "MODE #dev +b spam!*@*")
        let irssi = h.register("irs", caps: Self.irssiCaps)
        h.send(irssi, "JOIN #dev")
        #expect(h.commands(to: irssi) == ["JOIN", "353", "366"])

        h.send(irssi, "MODE #dev")
        #expect(h.commands(to: irssi) == ["324", "329"])
        #expect(h.out.messages(to: irssi).allSatisfy { $0.params[1] == "#dev" })
        h.send(irssi, "WHO #dev %tcuhnfdar,743")
        let who = h.out.messages(to: irssi)
        #expect(who.map(\.command) == ["354", "354", "315"])
        #expect(Set(who.dropLast().map { $0.params[5] }) == ["alice", "irs"])
        #expect(who.last?.params[1] == "#dev")
        h.send(irssi, "MODE #dev b")
        #expect(h.commands(to: irssi) == ["367", "368"])
        #expect(h.out.messages(to: irssi).map { $0.params[1] } == ["#dev", "#dev"])
        #expect(h.out.messages(to: irssi).first?.params[2] == "spam!*@*")
    }
}
