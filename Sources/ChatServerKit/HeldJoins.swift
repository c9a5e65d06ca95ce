/// A crowd's join announcements held at the room across turns of the loop (see
/// `OutputOrder.flushGathered`). A crowd arriving 32 a turn would otherwise cost every member
/// an append per turn: here each turn's run is one more chunk, and every member gets all it is
/// owed in one append when the hold is released (after `announcementDelay`, or past
/// `announcementBytes`), or alone, before anything else is written to it (`takeOwed`).
///
/// A member is owed everything held unless it has a position: where its bytes begin in its
/// group's held bytes (it joined while the room's arrivals were held, or was caught up since).
struct HeldJoins {
    let room: String
    let generation: UInt64
    /// When the first run was held (monotonic seconds).
    let since: Double
    /// The room's lists as of the latest run (each group only grew).
    private(set) var groups: [(variant: RenderVariant, connections: [ConnectionID])]
    /// Per group: one chunk per run, in order.
    private(set) var chunks: [[[UInt8]]]
    /// Per group: its members' slots, so that "is this connection owed something?" is a bit test.
    private var members: [SlotSet]
    /// Per group: the bytes held, all chunks together.
    private var totals: [Int]
    /// Members whose bytes begin later than the start: where, in their group's held bytes.
    private var positions: [ConnectionID: Int] = [:]
    /// The bytes held for the biggest group.
    var byteCount: Int { totals.max() ?? 0 }

    /// A hold of `run`, or nil when some member's part of it is not a suffix of the run's bytes.
    init?(_ run: GatheredRun, now: Double) {
        room = run.room
        generation = run.generation
        since = now
        groups = run.groups.map { ($0.variant, []) }
        chunks = Array(repeating: [], count: run.groups.count)
        members = Array(repeating: SlotSet(), count: run.groups.count)
        totals = Array(repeating: 0, count: run.groups.count)
        guard add(run) else { return nil }
    }

    /// Adds the next run, when it goes to the same lists grown further and every member's part of
    /// it is a suffix of its bytes; false (and nothing changed) otherwise.
    mutating func add(_ run: GatheredRun) -> Bool {
        guard run.room == room, run.generation == generation, run.groups.count == groups.count,
              run.bytes.count == groups.count else { return false }
        var starts: [(id: ConnectionID, at: Int)] = []
        var specialsSeen = 0
        for g in groups.indices {
            let held = groups[g].connections.count
            let latest = run.groups[g].connections
            guard run.groups[g].variant == groups[g].variant, latest.count >= held,
                  run.startCounts.count > g, run.startCounts[g] >= held else { return false }
            // Members from the run's first delivery on: owed this run's chunk, or a suffix of it.
            for id in latest[held...] {
                if run.special.contains(id) {
                    guard let start = run.suffixStart(of: id, group: g) else { return false }
                    specialsSeen += 1
                    starts.append((id, totals[g] + start))
                } else {
                    starts.append((id, totals[g]))
                }
            }
        }
        // A special member among those held already (skipped by a delivery): not a suffix.
        guard specialsSeen == run.special.count else { return false }
        for g in groups.indices {
            chunks[g].append(run.bytes[g])
            totals[g] += run.bytes[g].count
            for id in run.groups[g].connections[groups[g].connections.count...] { members[g].insert(Self.slot(id)) }
            groups[g].connections = run.groups[g].connections
        }
        for (id, at) in starts where at > 0 { positions[id] = at }
        return true
    }

    /// Whether `id` may be owed something (a bit test; `takeOwed` says what).
    func mayOwe(_ id: ConnectionID) -> Bool {
        let slot = Self.slot(id)
        return members.contains { $0.contains(slot) }
    }

    /// What `id` is owed, now, in order; it is owed nothing held so far afterwards.
    mutating func takeOwed(_ id: ConnectionID) -> [[UInt8]] {
        let slot = Self.slot(id)
        // A member's bit is cleared when it closes (`forget`), so a bit names this connection.
        guard let g = members.firstIndex(where: { $0.contains(slot) }) else { return [] }
        let from = positions[id] ?? 0
        guard from < totals[g] else { return [] }
        var owed: [[UInt8]] = []
        var chunkStart = 0
        for chunk in chunks[g] {
            defer { chunkStart += chunk.count }
            guard !chunk.isEmpty, chunkStart + chunk.count > from else { continue }
            owed.append(from <= chunkStart ? chunk : Array(chunk[(from - chunkStart)...]))
        }
        positions[id] = totals[g]
        return owed
    }

    /// Forgets a connection that closed (its slot may be reused; the lists keep its stale ID,
    /// which finds no connection).
    mutating func forget(_ id: ConnectionID) {
        let slot = Self.slot(id)
        for g in members.indices { members[g].remove(slot) }
        positions[id] = nil
    }

    /// Every member's bytes: the held chunks joined, shared, from where each member's part
    /// begins (`from`); nothing for a member forgotten (closed).
    func release(_ give: (_ bytes: [UInt8], _ from: Int, _ id: ConnectionID) -> Void) {
        for g in groups.indices {
            let all = chunks[g].count == 1 ? chunks[g][0] : Array(chunks[g].joined())
            guard !all.isEmpty else { continue }
            for id in groups[g].connections where members[g].contains(Self.slot(id)) {
                let from = positions[id] ?? 0
                if from < all.count { give(all, from, id) }
            }
        }
    }

    /// The slot in an ID's low bits (`ConnectionTable`).
    static func slot(_ id: ConnectionID) -> Int { Int(truncatingIfNeeded: id.raw & (1 << 24 - 1)) }
}

/// A set of small integers (connection slots) as bits.
struct SlotSet {
    private var words: [UInt64] = []

    func contains(_ slot: Int) -> Bool {
        let word = slot >> 6
        return word < words.count && words[word] & (1 << UInt64(slot & 63)) != 0
    }

    mutating func insert(_ slot: Int) {
        let word = slot >> 6
        if word >= words.count { words.append(contentsOf: repeatElement(0, count: word + 1 - words.count)) }
        words[word] |= 1 << UInt64(slot & 63)
    }

    mutating func remove(_ slot: Int) {
        let word = slot >> 6
        if word < words.count { words[word] &= ~(1 << UInt64(slot & 63)) }
    }
}
