import Testing
@testable import ChatServerKit
import IRCWire

/// A crowd's join announcements held at the room across turns (`HeldJoins`): whatever the turns
/// and the catch-ups in between, each member gets every arrival after its own once, in order.
@Suite("join announcements held across turns")
struct HeldJoinsTests {
    /// A room's lists as the state keeps them: members grouped by form, each group only growing.
    struct Room {
        var groups: [(variant: RenderVariant, connections: [ConnectionID])] = [(RenderVariant(), []), (.time, [])]
        var next: UInt64 = 1
        var arrivals: [(id: ConnectionID, line: String)] = []

        /// One arrival's JOIN delivery: to everyone there, the joiner skipped (its copy goes with its reply).
        /// Its form: every third arrival's `.time`, or the group given (a new one past the last).
        mutating func arrive(group: Int? = nil) -> Delivery {
            let id = ConnectionID(next)
            let g = group ?? (next % 3 == 0 ? 1 : 0)
            if g >= groups.count { groups.append((.tags, [])) }
            groups[g].connections.append(id)
            let message = IRCMessage(source: "n\(next)!u@h", command: "JOIN", params: ["#lobby"])
            next += 1
            arrivals.append((id, "n\(id.raw)"))
            return Delivery(message: message, stamp: Stamp(time: 1_700_000_000 + Double(next), msgid: next), groups: groups,
                            skipping: [id], lists: ("#lobby", 7), storable: true)
        }
    }

    /// What `id` must get: the JOIN of everyone who arrived after it (or after the hold began, for those there before), in order.
    func expected(_ room: Room, _ id: ConnectionID, heldFrom: Int) -> [String] {
        let own = room.arrivals.firstIndex { $0.id == id }.map { $0 + 1 } ?? 0
        return room.arrivals[max(own, heldFrom)...].map(\.line)
    }

    /// A room of five, then a sixth arrival's JOIN held.
    func holdAfterFive() throws -> (Room, HeldJoins) {
        var room = Room()
        for _ in 0..<5 { _ = room.arrive() }
        var run = GatheredRun(room: "#lobby", generation: 7)
        run.add(room.arrive())
        return (room, try #require(HeldJoins(run, now: 0)))
    }

    func nicks(_ chunks: [[UInt8]]) -> [String] {
        chunks.flatMap { Outbox.parse($0) }.map { String($0.source!.prefix { $0 != "!" }) }
    }

    @Test("turns of arrivals, catch-ups between them and a member gone: each member's bytes are the arrivals after its own, once, in order",
          arguments: [(1, 5), (3, 4), (7, 9)])
    func turns(seed: Int, turns: Int) throws {
        var room = Room()
        // 120 there before the crowd's first held run.
        for _ in 0..<120 { _ = room.arrive() }
        let before = room.arrivals.count
        var random = seed
        func roll(_ n: Int) -> Int {
            random = (random &* 1_103_515_245 &+ 12_345) & 0x7fff_ffff
            return random % n
        }
        var got: [ConnectionID: [String]] = [:]
        var held: HeldJoins?
        var gone: ConnectionID?
        for turn in 0..<turns {
            var run = GatheredRun(room: "#lobby", generation: 7)
            for _ in 0..<(1 + roll(12)) { run.add(room.arrive()) }
            if held == nil {
                held = HeldJoins(run, now: 0)
                try #require(held != nil, "a run of JOINs, each joiner skipped only in its own, is held")
            } else {
                let added = held!.add(run)
                #expect(added, "turn \(turn): the room's next run of JOINs is held with the rest")
            }
            // Some members are written to between turns: they get what they are owed first, alone.
            for _ in 0..<5 {
                let member = room.arrivals[roll(room.arrivals.count)].id
                if member == gone { continue }
                #expect(held!.mayOwe(member))
                got[member, default: []] += nicks(held!.takeOwed(member))
            }
            if turn == 1, gone == nil {
                gone = room.arrivals[roll(before)].id
                held!.forget(gone!)
                #expect(!held!.mayOwe(gone!))
            }
        }
        held!.release { bytes, from, id in got[id, default: []] += nicks([Array(bytes[from...])]) }
        for (id, _) in room.arrivals where id != gone {
            let want = expected(room, id, heldFrom: before)
            #expect(got[id, default: []] == want, "\(id): \(got[id, default: []].count) lines, \(want.count) owed")
        }
        // A member that left was owed nothing more after it went (what it took before is all).
        #expect(room.arrivals.count > before)
    }

    @Test("a run another member was skipped in (its own message without echo) is not a suffix: not held, and the hold is unchanged")
    func holeNotHeld() throws {
        var (room, held) = try holdAfterFive()
        var run = GatheredRun(room: "#lobby", generation: 7)
        var join = room.arrive()
        join.skipping.append(room.arrivals[0].id)
        run.add(join)
        #expect(held.add(run) == false)
        // Unchanged: a member there before is owed the one run held (n6's JOIN), nothing of n7's.
        #expect(nicks(held.takeOwed(room.arrivals[1].id)) == ["n6"])
        // Another room's run, or the same room's after a departure (a new stamp), is not held either.
        var other = GatheredRun(room: "#other", generation: 7)
        other.add(room.arrive())
        #expect(held.add(other) == false)
        var later = GatheredRun(room: "#lobby", generation: 8)
        later.add(room.arrive())
        #expect(held.add(later) == false)
    }

    @Test("a closed member is forgotten: its slot's next connection is owed nothing, and the release gives the old ID nothing")
    func forgottenSlot() throws {
        var (room, held) = try holdAfterFive()
        let closed = room.arrivals[2].id
        held.forget(closed)
        // The same slot, a later serial (ConnectionTable's IDs): another connection.
        let reused = ConnectionID(1 << 24 | closed.raw)
        #expect(!held.mayOwe(closed) && !held.mayOwe(reused))
        let owedToReused = held.takeOwed(reused)
        #expect(owedToReused.isEmpty)
        var given: [ConnectionID] = []
        held.release { _, _, id in given.append(id) }
        #expect(!given.contains(closed))
        #expect(Set(given) == Set(room.arrivals.map(\.id).filter { $0 != closed && $0 != room.arrivals.last!.id }))
    }

    @Test("a run with a new form of member (a group the hold has not) is not held; a member in the run's first delivery but not in the hold is owed that run only")
    func groupsAndLateMembers() throws {
        var room = Room()
        room.groups = [(RenderVariant(), [])]
        for _ in 0..<3 { room.groups[0].connections.append(ConnectionID(room.next)); room.arrivals.append((ConnectionID(room.next), "n\(room.next)")); room.next += 1 }
        var run = GatheredRun(room: "#lobby", generation: 7)
        run.add(room.arrive(group: 0))
        var held = try #require(HeldJoins(run, now: 0))
        // Someone in the lists before the next run's first delivery, with no delivery of its own gathered.
        let late = ConnectionID(room.next)
        room.groups[0].connections.append(late)
        room.arrivals.append((late, "n\(room.next)"))
        room.next += 1
        var next = GatheredRun(room: "#lobby", generation: 7)
        next.add(room.arrive(group: 0))
        let added = held.add(next)
        #expect(added)
        let owedLate = nicks(held.takeOwed(late)), owedFirst = nicks(held.takeOwed(room.arrivals[0].id))
        #expect(owedLate == ["n\(late.raw + 1)"], "only the run it was there for")
        #expect(owedFirst == ["n4", "n\(late.raw + 1)"])
        var other = GatheredRun(room: "#lobby", generation: 7)
        other.add(room.arrive(group: 1))
        let addedOther = held.add(other)
        #expect(!addedOther, "a group the hold has not")
    }
}
