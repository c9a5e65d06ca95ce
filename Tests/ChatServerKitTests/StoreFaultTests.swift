import Foundation
import Testing
@testable import ChatServerKit
import ChatStore
import IRCWire

/// The honest store (issue 28): the loop holds the accounts, rooms and read markers in memory,
/// hands every write to a worker, and fails closed, saying so, when the database cannot be used.
@Suite("server state: the store off the loop, failing closed")
struct StoreFaultTests {
    /// A database file of its own, and a second connection to it: another process (`chat-tui account`).
    final class File {
        let path = NSTemporaryDirectory() + "chat-tui-store-\(UUID().uuidString).db"
        func accounts() throws -> AccountStore { try AccountStore(database: Database(path: path)) }
        func add(_ name: String, to store: AccountStore) throws {
            try store.add(name: name, credential: SCRAMCredential.derive(password: "correct horse", iterations: 4096), now: 1)
        }
        deinit { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
    }

    @Test("accounts that cannot be read at start: every nickname, login and REGISTER is refused with the reason, logged once; readable again, all works")
    func unreadableAtStart() throws {
        let file = File()
        let store = try file.accounts()
        try file.add("alice", to: store)
        // The look-alike keys cannot be read: nothing can say whether `aIice` imitates alice.
        try store.database.execute("ALTER TABLE account_skeletons RENAME TO hidden")
        var h = Harness(accountsOf: store)
        #expect(h.state.takeOutbox().logs == ["accounts: cannot read the account database (database: no such table: account_skeletons); nicknames, logins and registrations are refused until it can be read"])
        let id = h.saslClient("alice", caps: "sasl standard-replies")
        #expect(h.lines(to: id).last == ":test.server 433 * alice :Nickname cannot be checked: accounts are unavailable right now; try again in a moment")
        h.send(id, "NICK mallory")
        #expect(h.commands(to: id) == ["433"], "no nickname is known not to be an account's")
        h.send(id, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "correct horse"))
        #expect(h.lines(to: id).last == ":test.server 904 * :SASL authentication failed: accounts are unavailable right now; try again in a moment")
        h.now += 1
        h.state.tick(now: h.now)
        let retry = h.runChecks(h.state.takeOutbox())
        #expect(!retry.logs.contains { $0.hasPrefix("accounts: cannot read") }, "said once a burst, not each second")

        try store.database.execute("ALTER TABLE hidden RENAME TO account_skeletons")
        h.now += 1
        h.state.tick(now: h.now)
        let recovered = h.runChecks(h.state.takeOutbox())
        #expect(recovered.logs.contains("accounts: the account database is readable again"))
        #expect(recovered.logs.contains("accounts: 1 accounts (readable again)"))
        h.send(id, "NICK mallory")
        #expect(h.commands(to: id).isEmpty)
        h.send(id, "NICK aIice")
        #expect(h.lines(to: id) == [":test.server 432 mallory aIice :Nickname looks too much like the account alice"])
        h.send(id, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "correct horse"))
        #expect(h.commands(to: id).last == "903")
    }

    @Test("an account added by another process logs in at once: a login naming no account reads the accounts again first (issue 42, item 3); a deleted one's markers go with it")
    func changedElsewhere() throws {
        let file = File()
        let store = try file.accounts()
        try file.add("alice", to: store)
        let history = try HistoryStore(database: Database(path: file.path))
        var h = Harness(historyOf: history, accounts: store)
        let cli = try file.accounts()
        try file.add("carol", to: cli)
        let early = h.saslClient("carol")
        h.send(early, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("carol", "correct horse"))
        #expect(h.commands(to: early).last == "903", "logged in without waiting for the reload tick")
        #expect(h.out.logs.contains("accounts: 2 accounts (reloaded: changed on disk)"))
        // A name that is still nobody's: read again, then refused as before.
        let nobody = h.saslClient("nobody")
        h.send(nobody, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("nobody", "correct horse"))
        #expect(h.commands(to: nobody).last == "904")
        #expect(h.state.accountBook.loginsAfterThisReload.isEmpty && h.state.accountBook.loginsAfterNextReload.isEmpty)
        h.now += 61
        let late = h.saslClient("carol2")
        h.send(late, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("carol", "correct horse"), "CAP END")
        #expect(h.commands(to: late).contains("903"))
        h.send(late, "MARKREAD #room timestamp=2026-01-01T00:00:00.000Z")
        #expect(h.state.cache.accountMarkers["carol"]?["#room"] != nil, "\(h.lines(to: late))")
        // An unchanged database is one read of the counter, and no reload.
        h.now += 1
        h.state.tick(now: h.now)
        #expect(!h.runChecks(h.state.takeOutbox()).logs.contains { $0.hasPrefix("accounts: ") })

        try cli.delete(key: "carol")
        #expect(try history.readMarker(account: "carol", target: "#room") == nil, "gone in the delete's transaction")
        h.now += 1
        h.state.tick(now: h.now)
        _ = h.runChecks(h.state.takeOutbox())
        #expect(h.state.cache.accountMarkers["carol"] == nil)
        h.send(early, "QUIT")
        let taker = h.register("carolx")
        h.send(taker, "NICK carol")
        #expect(h.commands(to: taker) == ["NICK"], "no longer an account's nickname")
    }

    @Test("REGISTER whose account cannot be written: FAIL TEMPORARILY_UNAVAILABLE in its label, the name not taken, the slot given back; written once the database can be")
    func registerWriteFails() throws {
        let file = File()
        let store = try file.accounts()
        var h = Harness(accountsOf: store)
        try store.database.execute("PRAGMA query_only = ON")
        let id = h.saslClient("dave", caps: "sasl standard-replies labeled-response batch")
        h.send(id, "@label=r1 REGISTER * * :long enough")
        #expect(h.lines(to: id) == ["@label=r1 :test.server FAIL REGISTER TEMPORARILY_UNAVAILABLE dave :The account could not be written (accounts are unavailable right now; try again in a moment)"])
        #expect(h.out.logs.contains { $0.contains("accounts: cannot add dave: database: attempt to write a readonly database") }, "\(h.out.logs)")
        #expect(h.state.accountBook.directory?.lookup("dave") == nil)
        #expect(h.state.accountBook.accountsCreated.values.allSatisfy { $0.isEmpty })
        try store.database.execute("PRAGMA query_only = OFF")
        h.send(id, "@label=r2 REGISTER * * :long enough")
        #expect(h.lines(to: id).contains("@batch=b1 :test.server REGISTER SUCCESS dave :Account created; you are logged in"), "\(h.lines(to: id))")
        #expect(h.state.accountBook.directory?.lookup("dave")?.name == "dave", "known at once, before any reload")
        #expect(try store.lookup("dave") != nil)
    }

    @Test("lines after a REGISTER wait for the account to be written: a JOIN sent with it comes after the answer")
    func registerHoldsLines() throws {
        let file = File()
        var h = Harness(accountsOf: try file.accounts())
        let id = h.saslClient("erin", caps: "sasl")
        h.send(id, "REGISTER * * :long enough", "CAP END", "JOIN #after")
        let commands = h.commands(to: id)
        let success = try #require(commands.firstIndex(of: "REGISTER"))
        let join = try #require(commands.firstIndex(of: "JOIN"))
        #expect(success < join)
        #expect(commands.contains("001"))
    }

    @Test("read markers are held in memory: MARKREAD reads nothing and hands the write over; an account keeps at most 1,000 conversations' markers")
    func markersInMemory() throws {
        let file = File()
        let store = try file.accounts()
        try file.add("alice", to: store)
        let history = try HistoryStore(database: Database(path: file.path))
        _ = try history.setReadMarker(account: "alice", target: "#before", time: 1_700_000_000_000)
        var h = Harness(historyOf: history, accounts: store)
        #expect(h.state.cache.accountMarkers["alice"]?["#before"] == 1_700_000_000_000, "read at start")
        let id = h.loggedIn("alice", caps: ["draft/read-marker", "standard-replies"])
        h.send(id, "MARKREAD #before")
        #expect(h.lines(to: id) == [":test.server MARKREAD #before timestamp=2023-11-14T22:13:20.000Z"])
        h.send(id, "MARKREAD #new timestamp=2026-01-01T00:00:00.000Z")
        #expect(h.out.items.contains(.setMarker(account: "alice", target: "#new", time: 1_767_225_600_000)))
        for n in 0..<998 { h.state.received(Array("MARKREAD #r\(n) timestamp=2026-01-01T00:00:00.000Z".utf8), from: id, now: h.now) }
        _ = h.state.takeOutbox()
        h.send(id, "MARKREAD #onetoomany timestamp=2026-01-01T00:00:00.000Z")
        #expect(h.lines(to: id) == [":test.server FAIL MARKREAD INTERNAL_ERROR #onetoomany :Read markers are kept for at most 1000 conversations per account"])
        h.send(id, "MARKREAD #new timestamp=2026-02-01T00:00:00.000Z")
        #expect(h.commands(to: id) == ["MARKREAD"], "one it has moves on")
    }

    @Test("deleting an account is one transaction: when it cannot finish, the account and what it owns stay")
    func deleteIsTransaction() throws {
        let file = File()
        let store = try file.accounts()
        try file.add("alice", to: store)
        let history = try HistoryStore(database: Database(path: file.path))
        _ = try history.setReadMarker(account: "alice", target: "#room", time: 1)
        // A trigger standing in for a write that fails half-way (a full disk): the markers' delete is refused.
        try store.database.execute("CREATE TRIGGER refuse BEFORE DELETE ON read_markers BEGIN SELECT RAISE(ABORT, 'disk full'); END")
        #expect(throws: AccountStore.Problem.self) { try store.delete(key: "alice") }
        #expect(try store.lookup("alice") != nil, "rolled back whole")
        #expect(try history.readMarker(account: "alice", target: "#room") == 1)
        try store.database.execute("DROP TRIGGER refuse")
        try store.delete(key: "alice")
        #expect(try store.lookup("alice") == nil)
        #expect(try history.readMarker(account: "alice", target: "#room") == nil)
    }
}
