/// A crowd's join announcements held at the room across turns of the loop (see
/// `ServerRuntime.flushGathered`). A crowd arriving 32 a turn would otherwise cost every member
/// an append per turn: here each turn's run is one more chunk, and every member gets all it is
/// owed in one append when the hold is released (after `announcementDelay`, or past
/// `announcementBytes`), or alone, before anything else is written to it (`takeOwed`).
///
/// A member is owed everything held unless it has a position: where its bytes begin (it joined
/// while the room's arrivals were held, or was caught up since).
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
    /// Members whose bytes begin later than the first chunk: (group, chunk, offset in it).
    private var positions: [ConnectionID: (group: Int, chunk: Int, offset: Int)] = [:]
    /// The bytes held for the biggest group.
    private(set) var byteCount = 0
    private(set) var runs = 0

    /// A hold of `run`, or nil when some member's part of it is not a suffix of the run's bytes.
    init?(_ run: GatheredRun, now: Double) {
        room = run.room
        generation = run.generation
        since = now
        groups = run.groups.map { ($0.variant, []) }
        chunks = Array(repeating: [], count: run.groups.count)
        members = Array(repeating: SlotSet(), count: run.groups.count)
        guard add(run) else { return nil }
    }

    /// Adds the next run, when it goes to the same lists grown further and every member's part of
    /// it is a suffix of its bytes; false (and nothing changed) otherwise.
    mutating func add(_ run: GatheredRun) -> Bool {
        guard run.room == room, run.generation == generation, run.groups.count == groups.count,
              run.bytes.count == groups.count else { return false }
        var starts: [(group: Int, id: ConnectionID, start: Int)] = []
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
                    starts.append((g, id, start))
                } else {
                    starts.append((g, id, 0))
                }
            }
        }
        // A special member among those held already (skipped by a delivery): not a suffix.
        guard specialsSeen == run.special.count else { return false }
        let chunk = runs
        for g in groups.indices {
            chunks[g].append(run.bytes[g])
            for id in run.groups[g].connections[groups[g].connections.count...] { members[g].insert(Self.slot(id)) }
            groups[g].connections = run.groups[g].connections
        }
        for (g, id, start) in starts where !(chunk == 0 && start == 0) {
            positions[id] = (g, chunk, start)
        }
        runs += 1
        byteCount = chunks.map { $0.reduce(0) { $0 + $1.count } }.max() ?? 0
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
        let from = positions[id] ?? (g, 0, 0)
        guard from.chunk < chunks[g].count else { return [] }
        var owed: [[UInt8]] = []
        for c in from.chunk..<chunks[g].count {
            let chunk = chunks[g][c]
            let start = c == from.chunk ? from.offset : 0
            if start == 0 { owed.append(chunk) } else if start < chunk.count { owed.append(Array(chunk[start...])) }
        }
        positions[id] = (g, chunks[g].count, 0)
        return owed.filter { !$0.isEmpty }
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
            var chunkStarts: [Int] = []
            var at = 0
            for chunk in chunks[g] {
                chunkStarts.append(at)
                at += chunk.count
            }
            chunkStarts.append(at)
            for id in groups[g].connections where members[g].contains(Self.slot(id)) {
                guard let from = positions[id] else {
                    give(all, 0, id)
                    continue
                }
                let start = chunkStarts[from.chunk] + from.offset
                if start < all.count { give(all, start, id) }
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
