import Foundation
import Testing
@testable import ChatServerKit
import ChatStore
import IRCWire

/// One server database file (accounts, rooms, history) that several `ServerState`s open in
/// turn: a new state on the same file is the server after a restart. The file goes with it.
final class RestartableServer {
    let path = NSTemporaryDirectory() + "chat-tui-rooms-\(UUID().uuidString).db"
    let caps = ["draft/chathistory", "batch", "server-time", "message-tags"]

    init(accounts names: [String] = ["alice", "carol"]) throws {
        let accounts = try AccountStore(database: Database(path: path))
        for name in names { try accounts.add(name: name, credential: SCRAMCredential.derive(password: "correct horse", iterations: 4096), now: 1) }
    }

    /// The server, started (again) on the file, `now` seconds in.
    func start(at now: Double = 1_000_000) throws -> Harness {
        var h = Harness(historyOf: try HistoryStore(database: Database(path: path)), accounts: try AccountStore(database: Database(path: path))) {
            $0.room = nil
        }
        h.now = now
        return h
    }

    func rooms() throws -> RoomStore { try RoomStore(database: Database(path: path)) }

    deinit {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }
}

extension Harness {
    /// Registered and logged in to `account` (password "correct horse").
    mutating func loggedIn(_ nick: String, account: String? = nil, caps: [String], from host: String = "127.0.0.1") -> ConnectionID {
        let id = saslClient(nick, from: host, caps: (["sasl"] + caps).joined(separator: " "))
        send(id, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain(account ?? nick, "correct horse"), "CAP END")
        return id
    }

    func replies(_ numeric: String, to id: ConnectionID) -> [[String]] {
        out.messages(to: id).filter { $0.command == numeric }.map(\.params)
    }
}

@Suite("server state: rooms kept across restarts (issue 23, item 6)")
struct RoomPersistenceTests {
    @Test("a room's modes, key, limit, bans, exceptions, invite exceptions and topic, with their setters and times, and its creation time come back after a restart")
    func rulesComeBack() throws {
        let server = try RestartableServer()
        var first = try server.start()
        let alice = first.loggedIn("alice", caps: server.caps)
        first.send(alice, "JOIN #club")
        first.now += 5
        first.send(alice, "MODE #club +smkl sesame 5", "MODE #club +beI *!*@bad.example *!*@good.example *!*@friends.example",
                   "TOPIC #club :members only")
        let created = 1_000_000.0
        let saved = try #require(try server.rooms().record("#club"))
        #expect(saved.flags == "mnst" && saved.roomKey == "sesame" && saved.limit == 5 && saved.everClosed)
        #expect(saved.createdAt == created && saved.topic == "members only" && saved.operatorAccounts == ["alice"])

        var second = try server.start(at: 1_000_100)
        let back = second.loggedIn("alice", caps: server.caps)
        second.send(back, "JOIN #club sesame")
        #expect(second.names(to: back) == ["@alice"], "her account ran the room: +o again")
        #expect(second.replies("332", to: back) == [["alice", "#club", "members only"]])
        #expect(second.replies("333", to: back).first?.suffix(2) == ["alice!alice@127.0.0.1", "1000005"])
        second.send(back, "MODE #club")
        #expect(second.replies("324", to: back) == [["alice", "#club", "+mnstkl", "sesame", "5"]])
        #expect(second.replies("329", to: back) == [["alice", "#club", "1000000"]], "the creation time is the first one")
        second.send(back, "MODE #club b", "MODE #club e", "MODE #club I")
        #expect(second.replies("367", to: back) == [["alice", "#club", "*!*@bad.example", "alice!alice@127.0.0.1", "1000005"]])
        #expect(second.replies("348", to: back).map { $0[2] } == ["*!*@good.example"])
        #expect(second.replies("346", to: back).map { $0[2] } == ["*!*@friends.example"])
        // The ban holds for someone with the key, the limit counts.
        let banned = second.connect(from: "bad.example")
        second.send(banned, "NICK troll", "USER troll 0 * :troll")
        second.send(banned, "JOIN #club sesame")
        #expect(second.commands(to: banned) == ["474"])
    }

    @Test("a stranger without the key cannot join a restored +k room, and reads none of its history, by CHATHISTORY or on joining")
    func strangerRefused() throws {
        let server = try RestartableServer()
        var first = try server.start()
        let alice = first.loggedIn("alice", caps: server.caps)
        first.send(alice, "JOIN #vault", "MODE #vault +sk sesame", "PRIVMSG #vault :the plan")
        // Killed: nobody left the room.

        var second = try server.start(at: 1_000_100)
        let mallory = second.register("mallory", caps: server.caps)
        second.send(mallory, "JOIN #vault")
        #expect(second.commands(to: mallory) == ["475"])
        second.send(mallory, "JOIN #vault guess")
        #expect(second.commands(to: mallory) == ["475"])
        second.send(mallory, "CHATHISTORY LATEST #vault * 10")
        #expect(second.lines(to: mallory) == [":test.server FAIL CHATHISTORY INVALID_TARGET LATEST #vault :Messages could not be retrieved"])
        #expect(second.state.members(of: "#vault").isEmpty, "the room was not made")
        let plainClient = second.register("eve")
        second.send(plainClient, "JOIN #vault")
        #expect(second.commands(to: plainClient) == ["475"], "no replay-on-join either")

        let back = second.loggedIn("alice", caps: server.caps)
        second.send(back, "JOIN #vault sesame")
        second.send(back, "CHATHISTORY LATEST #vault * 10")
        #expect(second.historyLines(to: back).map { $0.params.last! } == ["the plan"], "the room's own history, to its members")
    }

    @Test("the accounts given +o run the room again; others with the key do not; +o taken is not given back; a record without accounts is run by the first who passes")
    func operators() throws {
        let server = try RestartableServer()
        var first = try server.start()
        let alice = first.loggedIn("alice", caps: [])
        let carol = first.loggedIn("carol", caps: [])
        let bob = first.register("bob")
        first.send(alice, "JOIN #ops", "MODE #ops +k sesame")
        first.send(bob, "JOIN #ops sesame")
        first.send(carol, "JOIN #ops sesame")
        first.send(alice, "MODE #ops +oo carol bob")
        #expect(try server.rooms().record("#ops")?.operatorAccounts == ["alice", "carol"], "bob has no account")
        first.send(alice, "MODE #ops -o carol")
        #expect(try server.rooms().record("#ops")?.operatorAccounts == ["alice"])
        // A room made by someone with no account, closed.
        let dave = first.register("dave")
        first.send(dave, "JOIN #anyone", "MODE #anyone +k door")

        var second = try server.start(at: 1_000_100)
        let bob2 = second.register("bob")
        second.send(bob2, "JOIN #ops sesame")
        #expect(second.names(to: bob2) == ["bob"], "the first in, but not an operator's account")
        let carol2 = second.loggedIn("carol", caps: [])
        second.send(carol2, "JOIN #ops sesame")
        #expect(!second.names(to: carol2).contains("@carol"))
        let alice2 = second.loggedIn("alice", caps: [])
        second.send(alice2, "JOIN #ops sesame")
        #expect(second.names(to: alice2).contains("@alice"), "into the live room too")
        let erin = second.register("erin")
        second.send(erin, "JOIN #anyone door")
        #expect(second.names(to: erin) == ["@erin"], "no accounts kept: the first who passes its rules runs it")
    }

    @Test("a deleted account runs none of the rooms it ran: whoever takes the name next is not an operator")
    func deletedAccount() throws {
        let server = try RestartableServer()
        var first = try server.start()
        let alice = first.loggedIn("alice", caps: [])
        first.send(alice, "JOIN #club", "MODE #club +k sesame")
        #expect(try server.rooms().record("#club")?.operatorAccounts == ["alice"])
        let accounts = try AccountStore(database: Database(path: server.path))
        try accounts.delete(key: "alice")
        try accounts.add(name: "alice", credential: SCRAMCredential.derive(password: "correct horse", iterations: 4096), now: 2)
        #expect(try server.rooms().record("#club")?.operatorAccounts == [])

        var second = try server.start(at: 1_000_100)
        let other = second.loggedIn("alice", caps: [])
        second.send(other, "JOIN #club")
        #expect(second.commands(to: other) == ["475"], "not let in as the room's operator")
    }

    @Test("an invite-only room that emptied is not locked: its operators' accounts get in uninvited (not past a ban), nobody else does")
    func inviteOnlyOwner() throws {
        let server = try RestartableServer()
        var first = try server.start()
        let alice = first.loggedIn("alice", caps: [])
        let carol = first.loggedIn("carol", caps: [])
        first.send(alice, "JOIN #staff", "MODE #staff +i", "INVITE carol #staff")
        first.send(carol, "JOIN #staff")
        first.send(alice, "MODE #staff +o carol", "MODE #staff +b carol!*@*")

        var second = try server.start(at: 1_000_100)
        let bob = second.register("bob")
        second.send(bob, "JOIN #staff")
        #expect(second.commands(to: bob) == ["473"])
        let carol2 = second.loggedIn("carol", caps: [])
        second.send(carol2, "JOIN #staff")
        #expect(second.commands(to: carol2) == ["474"], "an operator's account is invited, and an invitation does not pass a ban")
        let alice2 = second.loggedIn("alice", caps: [])
        second.send(alice2, "JOIN #staff")
        #expect(second.names(to: alice2) == ["@alice"])
    }

    @Test("a closed room's record removed (too many records): whoever makes the room next reads none of its history, also after a restart")
    func removedRecordKeepsFloor() throws {
        let server = try RestartableServer()
        var first = try server.start()
        first.state.roomRecords.limit = 1
        let alice = first.loggedIn("alice", caps: server.caps)
        first.send(alice, "JOIN #gone", "MODE #gone +s", "PRIVMSG #gone :the secret plan", "PART #gone")
        first.now += 1
        first.send(alice, "JOIN #other", "MODE #other +m")
        #expect(try server.rooms().summaries().map(\.key) == ["#other"], "the closed room's record went, the live one stayed")
        first.now += 10
        let mallory = first.register("mallory", caps: server.caps)
        first.send(mallory, "JOIN #gone", "PRIVMSG #gone :mine now")
        first.send(mallory, "CHATHISTORY LATEST #gone * 10")
        #expect(first.historyLines(to: mallory).map { $0.params.last! } == ["mine now"])

        var second = try server.start(at: 1_000_100)
        let eve = second.register("eve", caps: server.caps)
        second.send(eve, "JOIN #gone", "PRIVMSG #gone :after the restart")
        #expect(second.names(to: eve) == ["@eve"])
        second.send(eve, "CHATHISTORY LATEST #gone * 10")
        #expect(second.historyLines(to: eve).map { $0.params.last! } == ["after the restart"])
        let frank = second.register("frank")
        second.send(frank, "JOIN #gone")
        #expect(second.out.messages(to: frank).filter { $0.command == "PRIVMSG" }.map { $0.params.last! } == ["after the restart"],
                "the replay on joining is under the same floor")
    }

    @Test("a record deleted from the database while the room was empty changes nothing while the server runs: the rules held in memory still guard the room")
    func recordLostInRun() throws {
        let server = try RestartableServer()
        var h = try server.start()
        let alice = h.loggedIn("alice", caps: server.caps)
        h.send(alice, "JOIN #lost", "MODE #lost +k sesame", "PRIVMSG #lost :before", "PART #lost")
        try server.rooms().remove("#lost")
        h.now += 10
        let mallory = h.register("mallory", caps: server.caps)
        h.send(mallory, "JOIN #lost")
        #expect(h.commands(to: mallory) == ["475"], "no JOIN reads the database: the key is known from memory")
        #expect(h.state.members(of: "#lost").isEmpty)
    }

    @Test("an open room that ends as a new room would be leaves no record; one that goes back to that state loses its record unless it was ever closed; a closed mark with no history left is dropped at start")
    func whatIsKept() throws {
        let server = try RestartableServer()
        var h = try server.start()
        let alice = h.loggedIn("alice", caps: [])
        h.send(alice, "JOIN #plain", "PART #plain")
        h.send(alice, "JOIN #moderated", "MODE #moderated +m")
        #expect(try server.rooms().summaries().map(\.key) == ["#moderated"])
        h.send(alice, "MODE #moderated -m")
        #expect(try server.rooms().summaries().isEmpty)
        h.send(alice, "JOIN #once", "MODE #once +i", "MODE #once -i")
        #expect(try server.rooms().record("#once")?.everClosed == true, "it was closed once: kept")
        try server.rooms().markClosed("#nohistory", since: 1)
        let restarted = try server.start()
        #expect(restarted.state.closedRooms.isEmpty)
        #expect(try server.rooms().closedMarks().isEmpty)
    }

    @Test("a write that fails is logged and the room goes on in memory, tried again each second; a room's record is held in memory, so its JOIN does not depend on the database")
    func failures() throws {
        let server = try RestartableServer()
        var h = try server.start()
        let alice = h.loggedIn("alice", caps: [])
        h.send(alice, "JOIN #kept", "MODE #kept +s", "PART #kept")
        // The store worker's connection can no longer write (as on a read-only file).
        try h.accounts!.database.execute("PRAGMA query_only = ON")
        h.send(alice, "JOIN #room", "MODE #room +s")
        #expect(h.out.logs.contains { $0.hasPrefix("rooms: cannot save 1 changes to the saved rooms") })
        h.send(alice, "MODE #room")
        #expect(h.replies("324", to: alice).first?[2] == "+nst")
        h.send(alice, "JOIN #kept")
        #expect(h.commands(to: alice) == ["JOIN", "353", "366"])
        h.send(alice, "MODE #kept")
        #expect(h.replies("324", to: alice).first?[2] == "+nst", "its rules as saved, from memory")
        // Tried again with the next write; logged once while it keeps failing.
        h.now += 1
        h.state.tick(now: h.now)
        let retried = h.runChecks(h.state.takeOutbox())
        #expect(!retried.logs.contains { $0.hasPrefix("rooms: cannot save") }, "said once a burst")
        #expect(h.state.roomRecords.writeFailing)
        #expect(try server.rooms().record("#room") == nil)
        try h.accounts!.database.execute("PRAGMA query_only = OFF")
        h.now += 1
        h.state.tick(now: h.now)
        let written = h.runChecks(h.state.takeOutbox())
        #expect(written.logs.contains("rooms: the saved rooms are written again"))
        #expect(try server.rooms().record("#room")?.flags == "nst", "nothing was lost meanwhile")
    }
}

@Suite("saved rooms: changes gathered and written together (review of issue 23, item 6)")
struct RoomWriteBatchTests {
    @Test("a hundred mode changes are one write of the latest record; a record read before the write is the pending one")
    func gathered() throws {
        let path = NSTemporaryDirectory() + "chat-tui-rooms-batch-\(UUID().uuidString).db"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let accounts = try AccountStore(database: Database(path: path))
        var state = ServerState(config: { var c = ServerConfig(); c.name = "test.server"; c.room = nil; return c }(), accounts: accounts)
        let id = ConnectionID(1)
        state.connected(id, host: "127.0.0.1", peer: "127.0.0.1:1", now: 1000)
        for line in ["NICK alice", "USER a 0 * :a", "JOIN #club"] { state.received(Array(line.utf8), from: id, now: 1000) }
        let rooms = try RoomStore(database: accounts.database)
        for n in 0..<100 { state.received(Array("MODE #club +l \(n + 1)".utf8), from: id, now: 1000) }
        _ = state.takeOutbox()
        #expect(try rooms.record("#club") == nil, "nothing written before the tick")
        #expect(state.pendingRecord("#club")?.limit == 100)
        state.tick(now: 1001)
        // The tick hands one job of the latest record to the store worker (run here as it would).
        let jobs = state.takeOutbox().items.compactMap { item -> StoreJob? in
            if case .store(let job) = item, case .saveRooms = job { return job } else { return nil }
        }
        #expect(jobs.count == 1)
        #expect(try rooms.record("#club") == nil, "the loop wrote nothing itself")
        for job in jobs { state.storeAnswered(job, job.run(on: accounts), now: 1001) }
        #expect(try rooms.record("#club")?.limit == 100)
        #expect(state.roomRecords.pending.isEmpty)
        #expect(state.pendingRecord("#club")?.limit == 100)
    }
}
