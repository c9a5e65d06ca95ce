import Foundation
import Testing
@testable import ChatServerKit
import ChatStore
import IRCTestSupport
import IRCWire

extension Harness {
    /// The messages to `id` in the last exchange with this command.
    func said(_ command: String, to id: ConnectionID) -> [IRCMessage] { out.messages(to: id).filter { $0.command == command } }
}

/// Multiclient and always-on (issue 45): one person on every device, present while away.
@Suite("server state: one person on every device, present while away (issue 45)")
struct PresenceTests {
    let plainCaps: [String] = []
    let modern = ["draft/chathistory", "batch", "server-time", "message-tags", "echo-message", "draft/read-marker"]

    @Test("three devices of one account are one person: one nickname, one member, each line on every device, away only when all are")
    func threeDevices() throws {
        let server = try RestartableServer(accounts: ["alice", "bob"])
        var h = try server.start()
        let bob = h.loggedIn("bob", caps: ["away-notify"])
        h.send(bob, "JOIN #lobby")
        let laptop = h.loggedIn("alice", account: "alice@laptop", caps: ["echo-message"])
        h.send(laptop, "JOIN #lobby")
        // The phone asks for another nickname: it is alice all the same, put in her room.
        let phone = h.loggedIn("alice_phone", account: "alice@phone", caps: plainCaps)
        #expect(h.said("001", to: phone).first?.params.first == "alice")
        #expect(h.lines(to: phone).contains(":alice!alice@127.0.0.1 JOIN #lobby"), "\(h.lines(to: phone))")
        #expect(h.names(to: phone) == ["@bob", "alice"])
        let page = h.loggedIn("alice", account: "alice@page", caps: modern)
        #expect(h.said("JOIN", to: page).map { $0.params[0] } == ["#lobby"])
        #expect(h.state.members(of: "#lobby") == ["alice", "bob"], "one member, whatever the devices")
        #expect(h.state.people.users.values.filter { $0.account == "alice" }.count == 1)
        #expect(h.state.people.byAccount["alice"]?.sessions.count == 3)
        h.send(bob, "LUSERS")
        #expect(h.said("251", to: bob).first?.params.last?.hasPrefix("There are 2 users") == true, "two people, four connections")

        // A line from one device reaches the others (the phone did not ask for echo-message).
        h.send(laptop, "PRIVMSG #lobby :from the laptop")
        #expect(h.lines(to: laptop) == [":alice!alice@127.0.0.1 PRIVMSG #lobby :from the laptop"], "its echo, once")
        #expect(h.lines(to: phone) == [":alice!alice@127.0.0.1 PRIVMSG #lobby :from the laptop"])
        #expect(h.said("PRIVMSG", to: page).map { $0.params.last } == ["from the laptop"])
        #expect(h.lines(to: bob) == [":alice!alice@127.0.0.1 PRIVMSG #lobby :from the laptop"])
        h.send(phone, "PRIVMSG bob :from the phone")
        #expect(h.lines(to: phone).isEmpty, "no echo asked for by the phone itself")
        #expect(h.lines(to: laptop) == [":alice!alice@127.0.0.1 PRIVMSG bob :from the phone"], "the others see what it said")
        #expect(h.said("PRIVMSG", to: bob).map { $0.params.last } == ["from the phone"])
        h.send(bob, "PRIVMSG alice :to all of you")
        for device in [laptop, phone, page] {
            #expect(h.said("PRIVMSG", to: device).map { $0.params.last } == ["to all of you"])
        }

        // Away per device: the person is away only when every device is.
        h.send(phone, "AWAY :on the bus")
        #expect(h.lines(to: phone) == [":test.server 306 alice :You have been marked as being away"])
        #expect(h.lines(to: bob).isEmpty, "two devices are still here")
        h.send(laptop, "AWAY :lunch")
        h.send(page, "AWAY :gone")
        #expect(h.lines(to: bob) == [":alice!alice@127.0.0.1 AWAY :gone"])
        h.send(laptop, "AWAY")
        #expect(h.lines(to: bob) == [":alice!alice@127.0.0.1 AWAY"])

        // A nickname change on one device is the person's.
        h.send(page, "NICK alice2")
        #expect(h.lines(to: phone) == [":alice!alice@127.0.0.1 NICK :alice2"] || h.lines(to: phone) == [":alice!alice@127.0.0.1 NICK alice2"])
        #expect(h.state.members(of: "#lobby") == ["alice2", "bob"])
    }

    @Test("NICK before the login (as most clients send it): no 433 for the account's own nickname; a guest asking for it gets 433 when it registers")
    func nickBeforeLogin() throws {
        var h = Harness(historyOf: try historyStore(), accounts: try accountStore())
        let first = h.loggedIn("alice", caps: [])
        _ = first
        let second = h.saslClient("alice", caps: "sasl")
        #expect(h.said("433", to: second).isEmpty, "not refused before the login had a chance")
        h.send(second, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "correct horse"), "CAP END")
        #expect(h.said("433", to: second).isEmpty)
        #expect(h.said("001", to: second).first?.params.first == "alice")
        let guest = h.saslClient("alice", caps: "server-time")
        #expect(h.said("433", to: guest).isEmpty)
        h.send(guest, "CAP END")
        #expect(h.said("433", to: guest).count == 1, "a guest is told at registration")
        h.send(guest, "NICK visitor")
        #expect(h.said("001", to: guest).first?.params.first == "visitor")
    }

    @Test("all devices gone: still in the rooms, away \"not connected\", the nickname held, an invitation kept; one comes back to its rooms and what it missed, once")
    func alwaysOn() throws {
        let server = try RestartableServer(accounts: ["alice", "bob"])
        var h = try server.start()
        let bob = h.loggedIn("bob", caps: ["away-notify"])
        h.send(bob, "JOIN #lobby", "JOIN #side", "MODE #side +i")
        let laptop = h.loggedIn("alice", account: "alice@laptop", caps: plainCaps)
        h.send(laptop, "JOIN #lobby")
        let phone = h.loggedIn("alice", account: "alice@phone", caps: ["batch", "server-time"])
        h.send(laptop, "QUIT :closing the lid")
        #expect(h.lines(to: bob).isEmpty, "the phone is still here: nobody is told")
        h.send(phone, "QUIT :tunnel")
        #expect(h.lines(to: bob) == [":alice!alice@127.0.0.1 AWAY :not connected"], "away, not gone: no QUIT")
        #expect(h.state.members(of: "#lobby") == ["alice", "bob"])

        h.send(bob, "PRIVMSG #lobby :said while she was away", "PRIVMSG alice :a word for you", "INVITE alice #side", "WHOIS alice")
        #expect(h.said("301", to: bob).first?.params.last == "not connected")
        #expect(h.said("341", to: bob).count == 1)
        let guest = h.register("alice")
        #expect(h.said("433", to: guest).count == 1, "the nickname is held")
        #expect(h.said("001", to: guest).isEmpty)

        // The phone comes back: its rooms, the invitation, and what it missed, in batches with times.
        h.holdingReads = true
        let back = h.loggedIn("alice", account: "alice@phone", caps: ["batch", "server-time"])
        #expect(h.said("JOIN", to: back).map { $0.params[0] } == ["#lobby"])
        #expect(h.said("INVITE", to: back).map { $0.params } == [["alice", "#side"]])
        #expect(h.lines(to: bob) == [":alice!alice@127.0.0.1 AWAY"], "back: no longer away")
        var missed: [IRCMessage] = []
        while !h.heldReads.isEmpty {
            h.releaseReads()
            missed += h.said("PRIVMSG", to: back)
        }
        #expect(missed.map { $0.params.last ?? "" } == ["said while she was away", "a word for you"])
    }

    @Test("a device that cannot ask for history is shown what it missed in its rooms and direct conversations, each line once, with times")
    func missedLinesOnce() throws {
        let server = try RestartableServer(accounts: ["alice", "bob"])
        var h = try server.start()
        let bob = h.loggedIn("bob", caps: [])
        h.send(bob, "JOIN #lobby")
        let phone = h.loggedIn("alice", account: "alice@phone", caps: ["batch", "server-time"])
        h.send(phone, "JOIN #lobby")
        h.send(bob, "PRIVMSG #lobby :before she left")
        h.send(phone, "QUIT")
        h.now += 1
        h.send(bob, "PRIVMSG #lobby :one", "PRIVMSG alice :two")
        h.now += 1
        h.holdingReads = true
        let back = h.loggedIn("alice", account: "alice@phone", caps: ["batch", "server-time"])
        var seen: [IRCMessage] = []
        while !h.heldReads.isEmpty {
            h.releaseReads()
            seen += h.out.messages(to: back)
        }
        let texts = seen.filter { $0.command == "PRIVMSG" }.map { $0.params.last ?? "" }
        #expect(texts == ["one", "two"], "\(seen.map(\.line))")
        #expect(seen.filter { $0.command == "PRIVMSG" }.allSatisfy { $0.tag("time") != nil })
        #expect(seen.contains { $0.command == "BATCH" && $0.params.count > 1 && $0.params[1] == "chathistory" })
        #expect(seen.contains { $0.command == "NOTICE" && $0.params.last?.contains("1 message you missed") == true })
        #expect(seen.contains { $0.command == "NOTICE" && $0.params.last?.contains("1 direct message you missed") == true })

        // Back again at once: nothing is shown twice.
        h.send(back, "QUIT")
        let again = h.loggedIn("alice", account: "alice@phone", caps: ["batch", "server-time"])
        var more: [IRCMessage] = h.out.messages(to: again)
        while !h.heldReads.isEmpty {
            h.releaseReads()
            more += h.out.messages(to: again)
        }
        #expect(!more.contains { $0.command == "PRIVMSG" }, "\(more.map(\.line))")

        // Another device, never seen before: each room's last lines, as a JOIN gives them.
        let laptop = h.loggedIn("alice", account: "alice@laptop", caps: ["batch", "server-time"])
        var first: [IRCMessage] = h.out.messages(to: laptop)
        while !h.heldReads.isEmpty {
            h.releaseReads()
            first += h.out.messages(to: laptop)
        }
        #expect(first.filter { $0.command == "PRIVMSG" }.map { $0.params.last ?? "" } == ["before she left", "one"], "\(first.map(\.line))")
    }

    @Test("a device connected when the server stops has seen what was said: after the restart nothing is replayed to it (tour 3: a plain client got lines it had read)")
    func seenAtShutdown() throws {
        let server = try RestartableServer(accounts: ["alice", "bob"])
        var h = try server.start()
        let bob = h.loggedIn("bob", caps: [])
        h.send(bob, "JOIN #lobby")
        let alice = h.loggedIn("alice", caps: [])
        h.send(alice, "JOIN #lobby")
        h.now += 1
        h.send(bob, "PRIVMSG #lobby :read live", "PRIVMSG alice :also read live")
        h.now += 1
        h.state.flushPresence(now: h.now)
        h.out = h.runChecks(h.state.takeOutbox())
        var after = try server.start(at: h.now + 10)
        after.holdingReads = true
        let back = after.loggedIn("alice", caps: [])
        var seen: [IRCMessage] = after.out.messages(to: back)
        while !after.heldReads.isEmpty {
            after.releaseReads()
            seen += after.out.messages(to: back)
        }
        #expect(!seen.contains { $0.command == "PRIVMSG" }, "\(seen.map(\.line))")
    }

    @Test("always-on users survive a restart: back in their rooms, away, their nickname held; a guest does not stay")
    func restart() throws {
        let server = try RestartableServer(accounts: ["alice", "bob"])
        var h = try server.start()
        let alice = h.loggedIn("alice", caps: [])
        h.send(alice, "JOIN #lobby", "JOIN #dev")
        let guest = h.register("visitor")
        h.send(guest, "JOIN #lobby")
        h.send(alice, "QUIT")
        h.send(guest, "QUIT")
        #expect(h.state.members(of: "#lobby") == ["alice"], "the guest left for good")
        _ = h.tick(advance: 5)

        var after = try server.start(at: 1_000_100)
        #expect(after.state.members(of: "#lobby") == ["alice"])
        #expect(after.state.members(of: "#dev") == ["alice"])
        let bob = after.loggedIn("bob", caps: [])
        after.send(bob, "WHOIS alice", "NICK alice")
        #expect(after.said("301", to: bob).first?.params.last == "not connected")
        #expect(after.said("433", to: bob).count == 1)
        let back = after.loggedIn("alice", caps: [])
        #expect(Set(after.said("JOIN", to: back).map { $0.params[0] }) == ["#lobby", "#dev"])
    }

    @Test("rooms joined and nicknames taken while connected are written within seconds: a crash (no goodbye) keeps them")
    func writtenWhileConnected() throws {
        let server = try RestartableServer(accounts: ["alice"])
        var h = try server.start()
        let alice = h.loggedIn("alice", caps: [])
        h.send(alice, "JOIN #first")
        _ = h.tick(advance: 1)
        h.send(alice, "JOIN #late", "PART #first", "NICK alicia")
        for _ in 0..<5 { _ = h.tick(advance: 1) }
        #expect(try PresenceStore(database: Database(path: server.path)).all().first?.rooms == ["#late"])
        // The server is gone without a word (kill -9): what was written is what comes back.
        let after = try server.start(at: 1_000_100)
        #expect(after.state.members(of: "#late") == ["alicia"])
        #expect(after.state.members(of: "#first").isEmpty)
    }

    @Test("a guest is one connection as before; multiclient off keeps a second login apart; always-on off lets the account go")
    func policies() throws {
        let server = try RestartableServer(accounts: ["alice"])
        var h = try server.start()
        let guest = h.register("visitor")
        let second = h.register("visitor")
        #expect(h.said("433", to: second).count == 1, "a guest's nickname is its own")
        _ = guest

        var apart = Harness(historyOf: try historyStore(), accounts: try accountStore()) { $0.multiclient = false }
        let one = apart.loggedIn("alice", caps: [])
        let two = apart.loggedIn("alice_", account: "alice", caps: [])
        #expect(apart.said("001", to: two).first?.params.first == "alice_")
        #expect(apart.state.people.users.values.filter { $0.account == "alice" }.count == 2)
        apart.send(one, "QUIT")
        apart.send(two, "QUIT")
        #expect(apart.state.people.users.isEmpty, "no always-on without multiclient")

        var off = Harness(historyOf: try historyStore(), accounts: try accountStore()) { $0.alwaysOn = .off }
        let watcher = off.register("watcher")
        let alice = off.loggedIn("alice", caps: [])
        off.send(alice, "QUIT :bye")
        #expect(off.lines(to: watcher).contains(":alice!alice@127.0.0.1 QUIT :Quit: bye"))
        #expect(off.state.people.users.count == 1)
    }

    @Test("PERSISTENCE: STATUS before the MOTD ends, GET, SET ON|OFF|DEFAULT under opt-in and opt-out; errors for guests and bad words")
    func persistence() throws {
        var h = Harness(historyOf: try historyStore(), accounts: try accountStore())
        let alice = h.loggedIn("alice", caps: ["draft/persistence", "standard-replies"])
        let commands = h.commands(to: alice)
        let status = try #require(commands.firstIndex(of: "PERSISTENCE"))
        let motdEnd = try #require(commands.firstIndex { $0 == "376" || $0 == "422" })
        #expect(status < motdEnd, "said before the end of the MOTD")
        #expect(h.said("PERSISTENCE", to: alice).first?.params == ["STATUS", "DEFAULT", "ON"], "opt-out: on by default")
        h.send(alice, "PERSISTENCE SET OFF")
        #expect(h.said("PERSISTENCE", to: alice).map(\.params) == [["STATUS", "OFF", "OFF"]])
        h.send(alice, "PERSISTENCE SET sideways")
        #expect(h.lines(to: alice) == [":test.server FAIL PERSISTENCE INVALID_PARAMS SET :PERSISTENCE SET takes ON, OFF or DEFAULT"])
        let watcher = h.register("watcher")
        h.send(alice, "QUIT")
        #expect(h.state.people.users.count == 1, "off: she left")
        h.send(watcher, "PERSISTENCE GET")
        #expect(h.lines(to: watcher).first?.hasPrefix(":test.server FAIL PERSISTENCE ACCOUNT_REQUIRED") == true)

        var optIn = Harness(historyOf: try historyStore(), accounts: try accountStore()) { $0.alwaysOn = .optIn }
        let carol = optIn.loggedIn("alice", caps: ["draft/persistence"])
        #expect(optIn.said("PERSISTENCE", to: carol).first?.params == ["STATUS", "DEFAULT", "OFF"])
        optIn.send(carol, "PERSISTENCE SET ON")
        #expect(optIn.said("PERSISTENCE", to: carol).first?.params == ["STATUS", "ON", "ON"])
        optIn.send(carol, "QUIT")
        #expect(optIn.state.people.byAccount["alice"] != nil, "opted in: kept")

        var none = Harness(historyOf: try historyStore(), accounts: try accountStore()) { $0.alwaysOn = .off }
        let cap = none.connect()
        none.send(cap, "CAP LS 302")
        #expect(!(none.lines(to: cap).first ?? "").contains("draft/persistence"), "not offered when the server keeps nobody")
    }

    @Test("read markers move on every device; KILL ends an always-on user; one unused for the expiry leaves")
    func markersKillExpiry() throws {
        var h = Harness(historyOf: try historyStore(), accounts: try accountStore()) {
            $0.operators = [OperatorBlock(name: "root", passwordHash: OperatorBlock.hash("pw", salt: "s"))]
            $0.alwaysOnExpireDays = 1
        }
        let laptop = h.loggedIn("alice", account: "alice@laptop", caps: modern)
        let phone = h.loggedIn("alice", account: "alice@phone", caps: modern)
        h.send(laptop, "MARKREAD #lobby timestamp=2026-12-01T10:00:00.000Z")
        #expect(h.said("MARKREAD", to: phone).map(\.params) == [["#lobby", "timestamp=2026-12-01T10:00:00.000Z"]])

        let root = h.register("root")
        h.send(root, "OPER root pw")
        h.send(laptop, "QUIT")
        h.send(phone, "QUIT")
        #expect(h.state.members(of: "#lobby").contains("alice"))
        h.send(root, "KILL alice :enough")
        #expect(h.lines(to: root).contains { $0.contains("QUIT :Killed (root (enough))") })
        #expect(!h.state.members(of: "#lobby").contains("alice"))
        #expect(h.state.people.byAccount["alice"] == nil)

        let again = h.loggedIn("alice", caps: [])
        h.send(again, "QUIT")
        #expect(h.state.members(of: "#lobby").contains("alice"))
        // A day and a minute later, nobody having used it: it leaves (checked once a minute).
        for _ in 0..<3 { _ = h.tick(advance: 30_000) }
        #expect(!h.state.members(of: "#lobby").contains("alice"))
    }

    @Test("bounds: devices per account, invitations kept, and the server-wide count of always-on users")
    func bounds() throws {
        var h = Harness(historyOf: try historyStore(), accounts: try accountStore(["alice", "bob", "carol"])) { $0.alwaysOnLimit = 2 }
        for n in 0..<(ServerState.devicesPerAccount + 5) {
            let id = h.loggedIn("alice", account: "alice@d\(n)", caps: [])
            h.now += 1
            h.send(id, "QUIT")
        }
        #expect(h.state.people.presence["alice"]?.devices.count == ServerState.devicesPerAccount)
        #expect(h.state.people.presence["alice"]?.devices["d0"] == nil, "the least recently seen went first")
        let bob = h.loggedIn("bob", caps: [])
        h.send(bob, "JOIN #a")
        for n in 0..<(ServerState.missedInvitesLimit + 3) {
            h.send(bob, "JOIN #r\(n)", "MODE #r\(n) +i", "INVITE alice #r\(n)")
        }
        let alice = h.state.people.byAccount["alice"]!
        #expect(alice.missedInvites.count == ServerState.missedInvitesLimit)
        #expect(alice.missedInvites.first?.params.last == "#r3", "the oldest dropped")
        h.send(bob, "QUIT")
        #expect(h.state.people.alwaysOnCount == 2)
        let carol = h.loggedIn("carol", caps: [])
        let watcher = h.register("watcher")
        h.send(carol, "QUIT")
        #expect(h.state.people.alwaysOnCount == 2, "full: carol leaves")
        #expect(h.state.people.byAccount["carol"] == nil)
        #expect(h.lines(to: watcher).contains { $0.hasPrefix(":carol!") && $0.contains(" QUIT ") }, "\(h.lines(to: watcher))")
    }
}

@Suite("server state: the built-in NickServ (issue 45)")
struct NickServTests {
    func nickServ(_ h: Harness, to id: ConnectionID) -> [String] {
        h.out.messages(to: id).filter { $0.command == "NOTICE" && $0.source?.hasPrefix("NickServ!") == true }.map { $0.params.last ?? "" }
    }

    @Test("IDENTIFY from a client without SASL: logged in, and the connection becomes the account's user (its nickname, its rooms)")
    func identify() throws {
        var h = Harness(historyOf: try historyStore(), accounts: try accountStore(["alice"]))
        let laptop = h.loggedIn("alice", caps: [])
        h.send(laptop, "JOIN #dev")
        let old = h.register("oldclient")
        h.send(old, "PRIVMSG NickServ :IDENTIFY alice wrong")
        #expect(nickServ(h, to: old) == ["Wrong account name or password"])
        h.send(old, "PRIVMSG NickServ :IDENTIFY alice correct horse")
        #expect(nickServ(h, to: old) == ["You are now logged in as alice"])
        #expect(h.lines(to: old).contains(":oldclient!u@127.0.0.1 NICK alice"), "\(h.lines(to: old))")
        #expect(h.said("JOIN", to: old).map { $0.params[0] }.sorted() == ["#dev", "#lobby"])
        #expect(h.state.people.byAccount["alice"]?.sessions.count == 2)
        #expect(h.state.members(of: "#lobby") == ["alice"], "oldclient, the guest it was, left")
        h.send(old, "NAMES #lobby")
        #expect(!h.names(to: old).contains { $0.lowercased().contains("nickserv") }, "never a member")
        h.send(old, "NS INFO")
        #expect(nickServ(h, to: old).first == "Account alice is registered")
        #expect(nickServ(h, to: old).contains { $0.hasPrefix("Devices seen:") && $0.contains("connected now: 2") })
        h.send(old, "PRIVMSG NickServ :SET ALWAYS-ON OFF")
        #expect(nickServ(h, to: old) == ["Always-on is off for alice"])
        h.send(laptop, "QUIT")
        h.send(old, "QUIT")
        #expect(h.state.people.byAccount["alice"] == nil, "off: she left with her last device")
    }

    @Test("REGISTER makes an account of the nickname; GHOST ends another login of one's account; REGAIN renames whoever holds its name")
    func registerGhostRegain() throws {
        var h = Harness(historyOf: try historyStore(), accounts: try accountStore(["alice"])) { $0.multiclient = false; $0.nickProtection = .off }
        let newcomer = h.register("dana")
        h.send(newcomer, "PRIVMSG NickServ :REGISTER hunter2hunter2")
        #expect(nickServ(h, to: newcomer) == ["Account dana created; you are logged in"])
        #expect(h.state.accountBook.directory?.lookup("dana") != nil)
        h.send(newcomer, "PRIVMSG NickServ :REGISTER again")
        #expect(nickServ(h, to: newcomer).first?.contains("already logged in") == true)

        let one = h.loggedIn("alice_", account: "alice", caps: [])
        let two = h.loggedIn("alice__", account: "alice", caps: [])
        h.send(two, "PRIVMSG NickServ :GHOST alice_")
        #expect(nickServ(h, to: two) == ["alice_ has been ended"])
        #expect(h.lines(to: one).contains { $0.hasPrefix("ERROR") }, "\(h.lines(to: one))")
        let squatter = h.register("alice")
        h.send(two, "PRIVMSG NickServ :REGAIN")
        #expect(h.lines(to: squatter).contains { $0.contains("you are now Guest") })
        #expect(nickServ(h, to: two) == ["You are alice"])
        h.send(squatter, "PRIVMSG NickServ :GHOST alice")
        #expect(nickServ(h, to: squatter) == ["Log in first (IDENTIFY)"])
    }
}

@Suite("server state: a guest back within a minute (chat-tui.org/resume, issue 45)")
struct ResumeTests {
    mutating func resumeClient(_ h: inout Harness, token: String?, nick: String) -> ConnectionID {
        let id = h.connect()
        var lines = ["CAP LS 302", "CAP REQ :chat-tui.org/resume"]
        if let token { lines.append("RESUME \(token)") }
        lines += ["NICK \(nick)", "USER web 0 * :web", "CAP END"]
        for line in lines { h.state.received(Array(line.utf8), from: id, now: h.now) }
        h.out = h.runChecks(h.state.takeOutbox())
        return id
    }

    @Test("a dropped guest keeps its nickname and rooms for a minute; RESUME with its token makes a new connection that guest again, once")
    mutating func resume() {
        var h = Harness()
        let watcher = h.register("watcher")
        let first = resumeClient(&h, token: nil, nick: "visitor")
        let token = try! #require(h.said("RESUME", to: first).first?.params.last)
        #expect(h.said("RESUME", to: first).first?.params.first == "TOKEN")
        h.send(first, "JOIN #dev")
        h.state.disconnected(first, reason: "Connection reset", now: h.now)
        h.out = h.runChecks(h.state.takeOutbox())
        #expect(!h.lines(to: watcher).contains { $0.contains("QUIT") }, "kept, not gone")
        #expect(h.state.members(of: "#dev") == ["visitor"])

        h.now += 20
        let second = resumeClient(&h, token: token, nick: "someone")
        #expect(h.said("001", to: second).first?.params.first == "visitor")
        #expect(Set(h.said("JOIN", to: second).map { $0.params[0] }) == ["#lobby", "#dev"])
        let fresh = h.said("RESUME", to: second).first?.params.last
        #expect(fresh != nil && fresh != token, "a new token: the old one is spent")
        #expect(!h.lines(to: watcher).contains { $0.contains("QUIT") })

        let thief = resumeClient(&h, token: token, nick: "thief")
        #expect(h.lines(to: thief).contains { $0.contains("FAIL RESUME INVALID_TOKEN") })
        #expect(h.said("001", to: thief).first?.params.first == "thief")

        // Dropped again and not back in a minute: it leaves.
        h.state.disconnected(second, reason: "Connection reset", now: h.now)
        h.out = h.runChecks(h.state.takeOutbox())
        _ = h.tick(advance: 61)
        #expect(h.lines(to: watcher).contains(":visitor!web@127.0.0.1 QUIT :Connection closed"), "\(h.lines(to: watcher))")
        #expect(!h.state.members(of: "#dev").contains("visitor"))
        #expect(h.state.people.resumableCount == 0)
        #expect(h.state.people.resumeTokens.values.map { $0.replyName } == ["thief"], "visitor's token went with it")
    }

    @Test("a guest who QUITs is gone at once; a client that did not ask for resume gets no token and is not kept")
    mutating func quitAndNoCap() {
        var h = Harness()
        let watcher = h.register("watcher")
        let guest = resumeClient(&h, token: nil, nick: "visitor")
        h.send(guest, "QUIT :bye")
        #expect(h.lines(to: watcher) == [":visitor!web@127.0.0.1 QUIT :Quit: bye"])
        let plain = h.register("plain")
        #expect(h.said("RESUME", to: plain).isEmpty)
        h.state.disconnected(plain, reason: "Connection reset", now: h.now)
        h.out = h.runChecks(h.state.takeOutbox())
        #expect(h.lines(to: watcher).contains { $0.hasPrefix(":plain!") && $0.contains("QUIT") })
    }
}

@Suite("server state: one person per account across a link (issue 45)")
struct PresenceLinkTests {
    @Test("a linked server sees one user for an account's two devices; when both go it sees alice away, never a QUIT; a session arriving later adds nobody")
    func oneUserAcrossTheLink() throws {
        var h = Harness(historyOf: try historyStore(), accounts: try accountStore()) { config in
            config.links.sid = "0AA"
            config.links.blocks = [LinkBlock(name: "hub.test", password: "pw", tls: false)]
        }
        let laptop = h.loggedIn("alice", account: "alice@laptop", caps: [])
        let phone = h.loggedIn("alice", account: "alice@phone", caps: [])
        h.state.linkConnected(LinkStateTests.link, peer: "127.0.0.1:7000", dialled: nil, secure: false, now: h.now)
        var sent = LinkStateTests.linkLines(h.state.takeOutbox())
        sent += LinkStateTests.linkLines(LinkStateTests.receive(&h, ["CAPAB START 1205", "CAPAB CAPABILITIES :CASEMAPPING=rfc1459", "CAPAB END",
                                                                    "SERVER hub.test pw 0 1HB :The hub", ":1HB BURST 1", ":1HB ENDBURST"]))
        #expect(sent.filter { $0.contains(" UID ") }.count == 1, "\(sent)")
        h.send(laptop, "QUIT")
        h.send(phone, "QUIT")
        let after = LinkStateTests.linkLines(h.out)
        #expect(after.contains { $0.hasSuffix("AWAY \(Int(h.now)) :not connected") }, "\(after)")
        #expect(!after.contains { $0.contains(" QUIT") })
        _ = h.loggedIn("alice", account: "alice@laptop", caps: [])
        let back = LinkStateTests.linkLines(h.out)
        #expect(!back.contains { $0.contains(" UID ") }, "no second user: \(back)")
        #expect(back.contains { $0.hasSuffix(" AWAY") }, "back from away: \(back)")
    }
}

@Suite("server state: an account's login token, what a web tab keeps instead of the password (issue 47)")
struct LoginTokenTests {
    /// A web tab's connection: resume asked for, then RESUME with `token`, then registration.
    func tokenClient(_ h: inout Harness, token: String, nick: String = "alice") -> ConnectionID {
        let id = h.connect()
        h.send(id, "CAP LS 302", "CAP REQ :chat-tui.org/resume", "RESUME \(token)", "NICK \(nick)", "USER web 0 * :web", "CAP END")
        return id
    }

    func given(_ h: Harness, to id: ConnectionID) -> String? {
        h.said("RESUME", to: id).first { $0.params.first == "TOKEN" }?.params.last
    }

    @Test("a password login that asked for resume is given a token; the token logs in (as the device it named) after a restart, without a password; a client that did not ask gets none")
    func loginByToken() throws {
        let server = try RestartableServer(accounts: ["alice"])
        var h = try server.start()
        let tab = h.loggedIn("alice", account: "alice@web-1", caps: ["chat-tui.org/resume"])
        let token = try #require(given(h, to: tab))
        #expect(token.count == 48)
        let terminal = h.loggedIn("alice", account: "alice@laptop", caps: [])
        #expect(given(h, to: terminal) == nil)

        var again = try server.start(at: 1_000_600)
        let back = tokenClient(&again, token: token, nick: "someone")
        #expect(again.replies("900", to: back).first?.last == "You are now logged in as alice")
        #expect(again.replies("903", to: back).isEmpty, "no SASL was made")
        #expect(given(again, to: back) == nil, "the tab keeps the token it has")
        #expect(again.state.people.sessions[back]?.device == "web-1")
        #expect(again.state.people.sessions[back]?.user.account == "alice")
        #expect(!again.replies("001", to: back).isEmpty)

        let guess = tokenClient(&again, token: String(repeating: "0", count: 48), nick: "mallory")
        #expect(again.lines(to: guess).contains { $0.contains("FAIL RESUME INVALID_TOKEN") })
        #expect(again.state.people.sessions[guess]?.user.account == nil)
    }

    @Test("RESUME FORGET ends the connection's token (Sign out); a new password ends every token; 30 days unused ends one")
    func tokenEnds() throws {
        let server = try RestartableServer(accounts: ["alice", "carol"])
        var h = try server.start()
        let tab = h.loggedIn("alice", caps: ["chat-tui.org/resume"])
        let forgotten = try #require(given(h, to: tab))
        h.send(tab, "RESUME FORGET")
        #expect(h.lines(to: tab).contains { $0.contains("NOTE RESUME FORGOTTEN") })
        let signedOut = tokenClient(&h, token: forgotten)
        #expect(h.lines(to: signedOut).contains { $0.contains("FAIL RESUME INVALID_TOKEN") }, "forgotten at once")
        let second = h.loggedIn("alice", caps: ["chat-tui.org/resume"])
        let changed = try #require(given(h, to: second))
        let other = h.loggedIn("carol", caps: ["chat-tui.org/resume"])
        let unused = try #require(given(h, to: other))

        // alice's password changed while the server was down.
        try AccountStore(database: Database(path: server.path)).setCredential(key: "alice", SCRAMCredential.derive(password: "a new one", iterations: 4096))
        var again = try server.start(at: 1_000_600)
        for token in [forgotten, changed] {
            let id = tokenClient(&again, token: token)
            #expect(again.lines(to: id).contains { $0.contains("FAIL RESUME INVALID_TOKEN") }, "\(again.lines(to: id))")
        }
        #expect(again.state.tokenBook.byAccount["alice"] == nil, "the refused token is dropped")
        #expect(again.state.tokenBook.byAccount["carol"]?.count == 1)
        _ = again.tick(advance: Double(ServerState.loginTokenExpireDays) * 86_400 + 61)
        #expect(again.state.tokenBook.byAccount["carol"] == nil, "expired: \(again.state.tokenBook.byAccount)")
        let late = tokenClient(&again, token: unused)
        #expect(again.lines(to: late).contains { $0.contains("FAIL RESUME INVALID_TOKEN") })
        #expect(try LoginTokenStore(database: Database(path: server.path)).all().isEmpty, "and gone from the file")
    }

    @Test("at most 8 tokens an account: a ninth login drops the least recently used")
    func bounded() throws {
        let server = try RestartableServer(accounts: ["alice"])
        var h = try server.start()
        var tokens: [String] = []
        for _ in 0..<9 {
            h.now += 1
            let id = h.loggedIn("alice", caps: ["chat-tui.org/resume"])
            tokens.append(try #require(given(h, to: id)))
        }
        #expect(h.state.tokenBook.byAccount["alice"]?.count == ServerState.loginTokensPerAccount)
        #expect(try LoginTokenStore(database: Database(path: server.path)).all()["alice"]?.count == 8)
        let oldest = tokenClient(&h, token: tokens[0])
        #expect(h.lines(to: oldest).contains { $0.contains("FAIL RESUME INVALID_TOKEN") })
        let newest = tokenClient(&h, token: tokens[8])
        #expect(h.replies("900", to: newest).count == 1)
    }
}
