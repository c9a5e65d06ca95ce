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
        let membership = state.membership
        for (room, members) in membership.members {
            if members.isEmpty { return "room \(room) is kept with no members" }
            if state.channels[room] == nil { return "members of \(room), which does not exist" }
            for user in members.keys {
                guard state.users[user] != nil else { return "a member of \(room) who is gone" }
                if !membership.rooms(of: user).contains(room) { return "\(room) lists a member whose rooms leave it out" }
            }
        }
        for (user, rooms) in membership.rooms {
            for room in rooms where membership.members[room]?[user] == nil { return "a user's rooms list \(room), whose members leave them out" }
        }
        for room in state.channels.keys where membership.members[room] == nil { return "room \(room) has no members list" }
        var folded: Set<String> = []
        var registered = 0
        for user in state.users.values {
            guard let nick = user.nick else { continue }
            if !folded.insert(state.casemapping.fold(nick)).inserted { return "the nickname \(nick) is held twice" }
            if state.nicks[state.casemapping.fold(nick)] !== user { return "\(nick) is not found under its own name" }
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
