import Testing
@testable import ChatServerKit
import IRCWire
import ChatTransport

/// A stateful fuzzer of the server's state: a few clients send random sequences of real
/// commands with random arguments (from small pools, so they collide: the same nicknames, the
/// same rooms, modes on each other), and they come and go. After every step the invariants
/// hold: membership seen from the rooms equals membership seen from the users, every room has
/// a member, no nickname is held twice under the casemapping, the registered count matches,
/// and every line the state wrote parses and is within the limits. Seeds make a failure
/// repeatable; `make test` runs a fixed few, `make fuzz` runs more (CHAT_STATE_FUZZ_STEPS,
/// CHAT_STATE_FUZZ_SEEDS).
@Suite("the server's state under random commands")
struct StateFuzzTests {
    typealias Random = SplitMix

    static let nicks = ["alice", "Alice", "bob", "b0b", "carol", "dave[", "dave{", "x", "émile", "nick_with_a_very_long_name_indeed"]
    static let rooms = ["#lobby", "#a", "#A", "#b", "#c[", "#c{", "&local", "#x"]
    static let texts = ["hi", "", ":colon", "\u{1}ACTION waves\u{1}", "\u{1}DCC SEND f 1 2 3\u{1}", String(repeating: "long ", count: 120), "é✓ 你好"]
    static let modes = ["+o", "-o", "+v", "+b", "-b", "+k key", "-k *", "+l 3", "-l", "+i", "-i", "+m", "+n", "+t", "+s", "+C", "+ov", "+b $a:acct"]

    static func command(_ random: inout Random, selfNick: String) -> String {
        let nick = random.pick(nicks), room = random.pick(rooms), text = random.pick(texts)
        let tags = random.chance(20) ? "@label=l\(random.next() % 9);+draft/reply=\(random.next() % 5) " : ""
        switch random.next() % 22 {
        case 0: return "NICK \(nick)"
        case 1, 2: return "JOIN \(room)" + (random.chance(20) ? " key" : "")
        case 3: return "PART \(room) :\(text)"
        case 4, 5: return tags + "PRIVMSG \(random.chance(50) ? room : nick) :\(text)"
        case 6: return tags + "NOTICE \(random.chance(50) ? room : nick) :\(text)"
        case 7: return "MODE \(room) \(random.pick(modes)) \(nick)"
        case 8: return "KICK \(room) \(nick)\(random.chance(30) ? "," + random.pick(nicks) : "") :\(text)"
        case 9: return "TOPIC \(room)" + (random.chance(70) ? " :\(text)" : "")
        case 10: return "INVITE \(nick) \(room)"
        case 11: return "WHO \(random.chance(50) ? room : nick)"
        case 12: return "WHOIS \(nick)"
        case 13: return "NAMES \(room)"
        case 14: return "AWAY" + (random.chance(50) ? " :\(text)" : "")
        case 15: return tags + "TAGMSG \(room)"
        case 16: return "MONITOR + \(nick),\(random.pick(nicks))"
        case 17: return "LIST"
        case 18: return "LUSERS"
        case 19: return "MODE \(selfNick) \(random.chance(50) ? "+i" : "-i")"
        case 20: return "JOIN 0"
        default: return random.pick(["PING x", "CAP LS 302", "CAP REQ :multi-prefix echo-message", "SETNAME :new name", "USERHOST \(nick)", "ISON \(nick)", "\(random.next() % 1000)", "BOGUS", ""])
        }
    }

    /// The invariants, checked after each step; a description of the first broken one, or nil.
    static func broken(_ state: ServerState, _ outbox: Outbox) -> String? {
        let membership = state.roomBook.membership
        for (room, members) in membership.members {
            if members.isEmpty { return "room \(room) is kept with no members" }
            if state.roomBook.channels[room] == nil { return "members of \(room), which does not exist" }
            for user in members.keys {
                guard state.people.users[user] != nil else { return "a member of \(room) who is gone" }
                if !membership.rooms(of: user).contains(room) { return "\(room) lists a member whose rooms leave it out" }
            }
        }
        for (user, rooms) in membership.rooms {
            for room in rooms where membership.members[room]?[user] == nil { return "a user's rooms list \(room), whose members leave them out" }
        }
        for room in state.roomBook.channels.keys where membership.members[room] == nil { return "room \(room) has no members list" }
        var folded: Set<String> = []
        var registered = 0
        for user in state.people.users.values {
            guard let nick = user.nick else { continue }
            if !folded.insert(state.casemapping.fold(nick)).inserted { return "the nickname \(nick) is held twice" }
            if state.people.nicks[state.casemapping.fold(nick)] !== user { return "\(nick) is not found under its own name" }
            if user.sessions.contains(where: \.registered) { registered += 1 }
        }
        if registered != state.registeredCount { return "LUSERS would count \(state.registeredCount) users, there are \(registered)" }
        for item in outbox.items {
            let bytes: [UInt8]
            switch item {
            case .send(_, let b), .sendAhead(_, let b), .sendAfterCommit(_, let b, _): bytes = b
            case .deliver(let delivery):
                for group in delivery.groups {
                    let line = Rendering.render(delivery.message, delivery.stamp, group.variant)
                    if let problem = lineProblem(line) { return problem }
                }
                continue
            default: continue
            }
            if let problem = lineProblem(bytes) { return problem }
        }
        return nil
    }

    static func lineProblem(_ bytes: [UInt8]) -> String? {
        for line in bytes.split(separator: 10, omittingEmptySubsequences: true) {
            let body = line.last == 13 ? line.dropLast() : line
            if body.count > IRCLimits.lineBytes - 2 + IRCLimits.tagBytes { return "a line of \(body.count) bytes" }
            if body.contains(13) || body.contains(0) { return "a line with CR or NUL inside" }
            if (try? IRCMessage(bytes: Array(body))) == nil { return "a line that does not parse: \(String(decoding: body, as: UTF8.self))" }
        }
        return nil
    }

    static func run(seed: UInt64, steps: Int) -> String? {
        var random = Random(seed: seed)
        var harness = Harness()
        var clients: [(id: ConnectionID, nick: String)] = []
        for step in 0..<steps {
            if clients.count < 2 || (clients.count < 6 && random.chance(5)) {
                let nick = random.pick(nicks)
                let id = harness.connect(from: random.pick(["127.0.0.1", "10.0.0.2", "2001:db8::1"]))
                let caps = random.chance(50) ? "CAP REQ :message-tags echo-message multi-prefix labeled-response batch\r\n" : ""
                for line in (caps + "NICK \(nick)\r\nUSER u 0 * :r\r\nCAP END").split(separator: "\r\n") {
                    harness.state.received(Array(line.utf8), from: id, now: harness.now)
                }
                clients.append((id, nick))
            } else if random.chance(3) {
                let gone = clients.remove(at: Int(random.next() % UInt64(clients.count)))
                if random.chance(50) {
                    harness.state.received(Array("QUIT :bye".utf8), from: gone.id, now: harness.now)
                } else {
                    harness.state.disconnected(gone.id, reason: "Connection reset", now: harness.now)
                }
            } else {
                let client = clients[Int(random.next() % UInt64(clients.count))]
                let line = command(&random, selfNick: client.nick)
                harness.state.received(Array(line.utf8), from: client.id, now: harness.now)
            }
            if random.chance(10) {
                harness.now += Double(random.next() % 5)
                harness.state.tick(now: harness.now)
            }
            let outbox = harness.runChecks(harness.state.takeOutbox())
            for case .close(let id) in outbox.items { clients.removeAll { $0.id == id } }
            if let problem = broken(harness.state, outbox) { return "seed \(seed), step \(step): \(problem)" }
        }
        return nil
    }

    static var environmentSteps: Int? { Environment["CHAT_STATE_FUZZ_STEPS"].flatMap { Int($0) } }

    @Test("random commands from coming and going clients keep every invariant (fixed seeds)", arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func invariants(seed: UInt64) {
        #expect(Self.run(seed: seed, steps: Self.environmentSteps ?? 1500) == nil)
    }
}

/// The same invariants with a linked server (InspIRCd's spanning-tree protocol, as
/// LinkStateTests speaks it) sending random lines of its own: users arriving, joining, talking,
/// changing nicknames (into ours too), kicked, killed, saved; servers introduced behind it and
/// split away; modes, topics, garbage; and the link itself lost and made again.
@Suite("the server's state under random link lines")
struct LinkFuzzTests {
    typealias Random = SplitMix
    static let link = ConnectionID(900)
    static let rooms = ["#lobby", "#a", "#b", "#A"]
    static let nicks = ["alice", "bob", "remote", "Remote", "r3", "carol", "x[", "x{"]

    /// A line from the hub (SID 1HB) or a leaf behind it (2LF), about users 1HBAAAAA0–5 and 2LFAAAAA0–2.
    static func linkLine(_ random: inout Random, _ ts: Int) -> String {
        let server = random.chance(75) ? "1HB" : "2LF"
        let uuid = server + "AAAAA" + String(random.next() % (server == "1HB" ? 6 : 3))
        let other = random.pick(["1HBAAAAA0", "1HBAAAAA3", "2LFAAAAA1", "0AAAAAAAB", "0AAAAAAAC", "0AAAAAAAZ"])
        let room = random.pick(rooms)
        let nick = random.pick(nicks)
        switch random.next() % 20 {
        case 0, 1: return ":\(server) UID \(uuid) \(ts) \(nick) h.example h.example u 10.0.0.9 \(ts) +i :real"
        case 2, 3: return ":\(server) FJOIN \(room) \(ts - Int(random.next() % 3)) +nt :\(random.pick(["o", "v", ""])),\(uuid):0 ,\(other):0"
        case 4, 5: return ":\(uuid) PRIVMSG \(random.pick([room, "alice", "bob", other])) :hello \(random.next() % 100)"
        case 6: return ":\(uuid) NOTICE \(room) :a notice"
        case 7: return ":\(uuid) NICK \(nick) \(ts + Int(random.next() % 3) - 1)"
        case 8: return ":\(uuid) PART \(room) :bye"
        case 9: return ":\(uuid) QUIT :gone"
        case 10: return ":\(server) FMODE \(room) \(ts) \(random.pick(["+o", "-o", "+v", "+b", "+k", "-k", "+l", "+i", "-i"])) \(random.pick([uuid, other, "*!*@x", "key", "5"]))"
        case 11: return ":\(uuid) KICK \(room) \(other) :out"
        case 12: return ":\(server) FTOPIC \(room) \(ts) \(ts) \(nick)!u@h :topic \(random.next() % 9)"
        case 13: return ":\(uuid) AWAY \(random.chance(50) ? "\(ts) :away" : "")"
        case 14: return ":1HB SERVER leaf.test * 1 2LF :a leaf"
        case 15: return ":1HB SQUIT \(random.pick(["leaf.test", "2LF", "nowhere.test"])) :split"
        case 16: return ":\(server) KILL \(other) :killed"
        case 17: return ":\(server) SAVE \(other) \(ts)"
        case 18: return ":\(uuid) MODE \(uuid) \(random.pick(["+i", "-i", "+o", "+w"]))"
        default:
            return random.pick(["PING 1HB 0AA", ":1HB PING 1HB 0AA", "FJOIN", ":1HB UID", ":1HBAAAAA9 PRIVMSG #nowhere :x", "BOGUS :line",
                                ":1HB BURST", ":1HB ENDBURST", ":2LF UID 1HBAAAAA0 1 clash h h u 1.2.3.4 1 + :wrong sid",
                                ":\(uuid) METADATA \(room) key :value", ":1HB FNAME x", ":\(uuid) INVITE alice \(room) \(ts)"])
        }
    }

    static func handshake(_ h: inout Harness) {
        h.state.linkConnected(link, peer: "127.0.0.1:7000", dialled: nil, secure: false, now: h.now)
        for line in ["CAPAB START 1205", "CAPAB CAPABILITIES :CASEMAPPING=rfc1459", "CAPAB END", "SERVER hub.test pw 0 1HB :The hub", ":1HB BURST 1"] {
            h.state.linkReceived(Array(line.utf8), from: link, now: h.now)
        }
    }

    static func run(seed: UInt64, steps: Int) -> String? {
        var random = Random(seed: seed)
        var h = Harness { config in
            config.links.sid = "0AA"
            config.links.blocks = [LinkBlock(name: "hub.test", password: "pw", tls: false)]
        }
        let alice = h.register("alice")
        let bob = h.register("bob")
        h.send(bob, "JOIN #a")
        handshake(&h)
        var linked = true
        // The last lines, said with a failure so it can be made a regression test.
        var trace: [String] = []
        for step in 0..<steps {
            let ts = 1_000_000 + step / 10
            if !linked || random.chance(1) {
                if linked { h.state.disconnected(link, reason: "link cut", now: h.now) } else { handshake(&h) }
                trace.append(linked ? "(link cut)" : "(link made)")
                linked.toggle()
            } else if random.chance(15) {
                let (who, nick) = random.chance(50) ? (alice, "alice") : (bob, "bob")
                let line = StateFuzzTests.command(&random, selfNick: nick)
                trace.append("\(nick): \(line)")
                h.state.received(Array(line.utf8), from: who, now: h.now)
            } else {
                let line = linkLine(&random, ts)
                trace.append("link: \(line)")
                h.state.linkReceived(Array(line.utf8), from: link, now: h.now)
            }
            if trace.count > 40 { trace.removeFirst() }
            if random.chance(5) {
                h.now += 1
                h.state.tick(now: h.now)
            }
            let outbox = h.runChecks(h.state.takeOutbox())
            if outbox.closed.contains(link) { linked = false }
            if let problem = StateFuzzTests.broken(h.state, outbox) { return "seed \(seed), step \(step): \(problem); after:\n" + trace.joined(separator: "\n") }
        }
        return nil
    }

    @Test("random lines from a linked network keep every invariant (fixed seeds)", arguments: [1, 2, 3, 4] as [UInt64])
    func invariants(seed: UInt64) {
        #expect(Self.run(seed: seed, steps: StateFuzzTests.environmentSteps ?? 1500) == nil)
    }
}
