/// Where the runtime's output goes once the order is decided: bytes appended to one
/// connection's send buffer now (the bounds on that buffer, and dropping a reader that does not
/// keep up, are the sink's), and whether a connection may still be written to.
protocol OutputSink {
    /// Appends `bytes[from...]` to the connection's output; where they begin in the connection's
    /// stream (bytes ever appended), nil when nothing was appended (closed, or a web connection
    /// that takes no IRC now).
    mutating func write(_ bytes: [UInt8], from: Int, to id: ConnectionID) -> Int?
    /// The connection is open and not closing.
    func isOpen(_ id: ConnectionID) -> Bool
    /// The highest msgid history has committed (read when it is needed: the writer moves it on).
    var committed: Int64 { get }
    /// History cannot store now: nothing waits for a commit.
    var failing: Bool { get }
    /// A connection the gate stopped may send again: its output is to be flushed this turn.
    mutating func wake(_ id: ConnectionID)
    /// A history read whose rows are all committed: to the reader now.
    mutating func read(_ query: HistoryQuery)
}

/// The server's output ordering, as a value: what each connection gets, in which order, and
/// when, given the outbox's items, history's commits and the clock. The runtime performs it
/// (`OutputSink`); nothing here touches a socket, so it is tested with random interleavings
/// (`OutputOrderTests`): every connection ends up with exactly the bytes the items gave it, in
/// the items' order, whatever was gathered, held or released early.
///
/// The policies:
/// - **Gathered runs.** Room deliveries in a row to the same room's lists (`GatheredRun`) are
///   written as one append per member, when something else comes or the turn ends; a line for
///   a connection the run owes something is written after the run.
/// - **Held joins.** At the end of a turn, a run of nothing but JOINs to a room of `crowd`
///   members or more is held at the room (`HeldJoins`) with the runs of the next turns, until
///   `announcementDelay` has passed or `announcementBytes` are held; a member is caught up
///   (given what is held for it) before anything else is written to it.
/// - **Echoes held for their commit.** The sender's copy of a stored message waits until
///   history has committed its msgid; what comes for that connection afterwards waits behind
///   it, in order. Past `holdLimit` bytes waiting (a writer that cannot store), everything but
///   the unconfirmed echoes goes out, so memory stays bounded and no echo claims what is not stored.
/// - **Ahead.** A refusal while history cannot store goes ahead of the held echoes.
/// - **The commit gate.** Once a stored message is handed to history's writer (`handOver`),
///   nothing written after it, to anyone, leaves the server before it is committed: a message
///   reaches no one (a room, a link) that a crash could still take from history. Bytes are
///   appended to the connection's buffer at once; the gate marks where in its stream they begin
///   (`Gate`), the runtime flushes only up to the first mark not committed (`sendable`) and
///   parks the connection there (`park`); a commit wakes it (`released`). While history cannot
///   store, or past the send queue's bound, the marks go (no reader is dropped for the gate).
/// - **Reads after the rows before them.** A history read goes to the reader once every row
///   handed over before it is committed (`read`): the database then has every line said before
///   it was asked, and the loop keeps no copy of rows waiting for their commit. While history
///   cannot store, reads go at once (they find what is stored).
struct OutputOrder {
    /// One connection's output waiting behind an echo: (msgid, bytes), msgid 0 for what is not an echo.
    struct Held {
        let id: ConnectionID
        var entries: [(msgid: UInt64, bytes: [UInt8])] = []
        var byteCount = 0
    }

    /// A room this big has its join announcements held back a little.
    static let crowd = 100
    /// For at most this long, and at most this many bytes per member.
    static let announcementDelay = 0.4
    static let announcementBytes = 64 * 1024

    /// Held output past this many bytes for one connection releases all but its unconfirmed echoes.
    let holdLimit: Int
    /// History's writer is on: echoes wait for their commit.
    let historyOn: Bool
    private(set) var gathering: GatheredRun?
    private(set) var heldJoins: HeldJoins?
    /// Per connection slot (`HeldJoins.slot`): its held output, if any.
    private var held: [Held?] = []
    /// Connections with held output, in the order they began to hold.
    private(set) var holding: [ConnectionID] = []
    /// How many connections hold output: with none (history off, or nothing unconfirmed) a
    /// write needs no look at `held`.
    private var heldCount = 0
    /// Runs of join announcements held so far (the bench's counter).
    private(set) var heldRuns = 0

    /// Where a connection's stream must stop until a commit: (stream offset, msgid) in order.
    struct Gate {
        let id: ConnectionID
        var marks: [(start: Int, msgid: Int64)] = []
        var parked = false
    }
    /// The highest msgid handed to history's writer.
    private(set) var handedOver: Int64 = 0
    /// Per connection slot (`HeldJoins.slot`): its marks, if any. Owner: the order; bound: one
    /// mark per handover a connection's unsent output spans (they go as commits pass, and all at
    /// once past the send queue's bound); end: the commit, or the connection's close (`forget`).
    private var gates: [Gate?] = []
    private var gateCount = 0
    /// Connections stopped at a mark, to be woken by the commit they wait for.
    private(set) var parked: [ConnectionID] = []
    /// History reads waiting for the rows handed over before them, in the order asked, with the
    /// newest msgid handed over then. Owner: the order; bound: the reads asked while a commit
    /// runs (a connection asks one at a time, or one per room a JOIN names); end: that commit,
    /// or history failing.
    private(set) var readsWaiting: [(after: Int64, query: HistoryQuery)] = []

    init(holdLimit: Int, historyOn: Bool) {
        self.holdLimit = holdLimit
        self.historyOn = historyOn
    }

    /// When the held join announcements are due, if any are held.
    var heldJoinsDue: Double? { heldJoins.map { $0.since + Self.announcementDelay } }

    /// The bytes waiting behind an echo for `id`.
    func heldBytes(of id: ConnectionID) -> Int { heldEntry(id)?.byteCount ?? 0 }

    // MARK: The outbox's items

    /// Bytes for one connection (a command's replies).
    mutating func send(_ bytes: [UInt8], to id: ConnectionID, _ sink: inout some OutputSink) {
        if let run = gathering, !run.owesNothing(id) { flushGathered(&sink) }
        put(bytes, id, &sink)
    }

    /// Bytes for one connection ahead of what waits there for a commit.
    mutating func sendAhead(_ bytes: [UInt8], to id: ConnectionID, _ sink: inout some OutputSink) {
        if let run = gathering, !run.owesNothing(id) { flushGathered(&sink) }
        guard sink.isOpen(id) else { return }
        catchUp(id, &sink)
        let slot = HeldJoins.slot(id)
        let waiting = heldEntry(id)
        if waiting != nil { forgetHeld(id) }
        inOrder(bytes, from: 0, id, &sink)
        if let waiting {
            held[slot] = waiting
            heldCount += 1
        }
    }

    /// The sender's copy of a stored message: now if history has committed its msgid, else held.
    mutating func sendAfterCommit(_ bytes: [UInt8], to id: ConnectionID, msgid: UInt64, _ sink: inout some OutputSink) {
        if let run = gathering, !run.owesNothing(id) { flushGathered(&sink) }
        guard historyOn, sink.committed < Int64(bitPattern: msgid) else {
            put(bytes, id, &sink)
            return
        }
        guard sink.isOpen(id) else { return }
        // A crowd's held JOINs from before the echo go first (after it, they would wait behind it).
        catchUp(id, &sink)
        hold(id, msgid: msgid, bytes)
    }

    /// A message to many: gathered with the same room's next deliveries, or written per form now.
    mutating func deliver(_ delivery: Delivery, _ sink: inout some OutputSink) {
        if let run = gathering, !run.takes(delivery) { flushGathered(&sink) }
        if let lists = delivery.lists {
            if gathering == nil { gathering = GatheredRun(room: lists.room, generation: lists.generation) }
            gathering!.add(delivery)
            return
        }
        // Serialised once per form, appended to each recipient of that form.
        for group in delivery.groups where !group.connections.isEmpty {
            let bytes = Rendering.render(delivery.message, delivery.stamp, group.variant, serialized: delivery.serialized)
            for id in group.connections where delivery.skipping.isEmpty || !delivery.skipping.contains(id) {
                put(bytes, id, &sink)
            }
        }
    }

    // MARK: Turns, commits, closing

    /// A connection is about to close with its last words: what the gathered run and the held
    /// joins owe it goes first.
    mutating func closing(_ id: ConnectionID, _ sink: inout some OutputSink) {
        if let run = gathering, !run.owesNothing(id) { flushGathered(&sink) }
        guard sink.isOpen(id) else { return }
        catchUp(id, &sink)
    }

    /// Writes the gathered run: the whole run, shared, to most members; its own part to a member
    /// that joined during the run or that a delivery skipped. At the end of a turn a run of only
    /// JOINs to a crowd is held at the room instead.
    mutating func flushGathered(_ sink: inout some OutputSink, endOfTurn: Bool = false, now: Double = 0) {
        guard let run = gathering else { return }
        gathering = nil
        if endOfTurn && run.onlyJoins && run.memberCount >= Self.crowd {
            if heldJoins?.add(run) == true {
                heldRuns += 1
                return
            }
            releaseHeldJoins(&sink)
            if let hold = HeldJoins(run, now: now) {
                heldJoins = hold
                heldRuns += 1
                return
            }
        } else if heldJoins?.room == run.room {
            // Everyone in the room is owed the held runs first: one append each, not a catch-up each.
            releaseHeldJoins(&sink)
        }
        for (g, group) in run.groups.enumerated() where g < run.bytes.count && !run.bytes[g].isEmpty {
            let all = run.bytes[g]
            for id in group.connections {
                if run.special.isEmpty || !run.special.contains(id) {
                    put(all, id, &sink)
                } else if let own = run.part(of: id, group: g) {
                    put(own, id, &sink)
                }
            }
        }
    }

    /// The end of a loop turn: the gathered run written (or held), and the held joins released
    /// once they are due or big enough.
    mutating func endOfTurn(now: Double, _ sink: inout some OutputSink) {
        flushGathered(&sink, endOfTurn: true, now: now)
        if let hold = heldJoins, now >= hold.since + Self.announcementDelay || hold.byteCount >= Self.announcementBytes {
            releaseHeldJoins(&sink)
        }
    }

    /// Every member of the held runs gets what it is owed.
    mutating func releaseHeldJoins(_ sink: inout some OutputSink) {
        guard let hold = heldJoins else { return }
        heldJoins = nil
        hold.release { bytes, from, id in
            guard sink.isOpen(id) else { return }
            // (Nothing is held any more, so there is no catching up to do first.)
            inOrder(bytes, from: from, id, &sink)
        }
    }

    /// History committed more: held output up to each connection's first uncommitted echo goes
    /// out, in order (all but unconfirmed echoes past `holdLimit`), and connections the gate
    /// stopped whose mark is committed now are woken.
    mutating func released(_ sink: inout some OutputSink) {
        releaseHeldEchoes(&sink)
        wakeParked(&sink)
        releaseReads(&sink)
    }

    // MARK: Reads

    /// A history read: to the reader now if every row handed over is committed (or history
    /// cannot store), else when it is; reads keep the order they were asked in.
    mutating func read(_ query: HistoryQuery, _ sink: inout some OutputSink) {
        if readsWaiting.isEmpty && (!historyOn || handedOver <= sink.committed || sink.failing) {
            sink.read(query)
        } else {
            readsWaiting.append((handedOver, query))
        }
    }

    private mutating func releaseReads(_ sink: inout some OutputSink) {
        guard !readsWaiting.isEmpty else { return }
        let done = sink.committed, failing = sink.failing
        let due = readsWaiting.prefix { failing || $0.after <= done }.count
        guard due > 0 else { return }
        let reads = readsWaiting.prefix(due)
        readsWaiting.removeFirst(due)
        for entry in reads { sink.read(entry.query) }
    }

    private mutating func releaseHeldEchoes(_ sink: inout some OutputSink) {
        guard !holding.isEmpty else { return }
        let list = holding
        holding.removeAll()
        var seen: Set<ConnectionID> = []
        for id in list where seen.insert(id).inserted {
            guard sink.isOpen(id) else {
                forgetHeld(id)
                continue
            }
            release(id, all: heldBytes(of: id) > holdLimit, &sink)
            if heldEntry(id) != nil { holding.append(id) }
        }
    }

    /// The connection's last words from what it held: up to the first echo not committed
    /// (with a full disk it may never be: no echo claims it). It holds nothing afterwards.
    mutating func lastWords(of id: ConnectionID, committed: Int64) -> [[UInt8]] {
        guard let entry = heldEntry(id) else { return [] }
        forgetHeld(id)
        var words: [[UInt8]] = []
        for item in entry.entries {
            if item.msgid != 0 && Int64(bitPattern: item.msgid) > committed { break }
            words.append(item.bytes)
        }
        return words
    }

    /// A connection closed: nothing more is kept for it.
    mutating func forget(_ id: ConnectionID) {
        forgetHeld(id)
        forgetGate(id)
        heldJoins?.forget(id)
    }

    // MARK: The commit gate

    /// Rows up to `msgid` went to history's writer: what is written from now on waits for them.
    mutating func handOver(_ msgid: Int64) {
        if msgid > handedOver { handedOver = msgid }
    }

    /// How many of a connection's unsent bytes may go now (`sent`: the stream offset its unsent
    /// output begins at): up to its first mark not committed, `.max` for all. `unbounded`: its
    /// output passed the send queue's bound (or history cannot store): the marks go.
    mutating func sendable(_ id: ConnectionID, sent: Int, committed: Int64, unbounded: Bool) -> Int {
        guard gateCount > 0, let slot = gateSlot(id) else { return .max }
        if unbounded {
            forgetGate(id)
            return .max
        }
        let passed = gates[slot]!.marks.firstIndex { $0.msgid > committed } ?? gates[slot]!.marks.count
        if passed == gates[slot]!.marks.count {
            forgetGate(id)
            return .max
        }
        if passed > 0 { gates[slot]!.marks.removeFirst(passed) }
        return max(0, gates[slot]!.marks[0].start - sent)
    }

    /// The connection has marks (its flush must ask `sendable`).
    func isGated(_ id: ConnectionID) -> Bool { gateCount > 0 && gateSlot(id) != nil }

    /// The connection's flush stopped at a mark: it waits for that commit (writability aside).
    mutating func park(_ id: ConnectionID) {
        guard let slot = gateSlot(id), !gates[slot]!.parked else { return }
        gates[slot]!.parked = true
        parked.append(id)
    }

    /// Parked connections whose first mark is committed now (or all, while history cannot
    /// store) are flushed this turn; a closed one is forgotten.
    private mutating func wakeParked(_ sink: inout some OutputSink) {
        guard !parked.isEmpty else { return }
        let list = parked
        parked.removeAll(keepingCapacity: true)
        let done = sink.committed, failing = sink.failing
        for id in list {
            guard let slot = gateSlot(id), gates[slot]!.parked else { continue }
            guard sink.isOpen(id) else {
                forgetGate(id)
                continue
            }
            if failing || gates[slot]!.marks.first.map({ $0.msgid <= done }) ?? true {
                gates[slot]!.parked = false
                sink.wake(id)
            } else {
                parked.append(id)
            }
        }
    }

    /// The bytes just appended at `start` of the connection's stream wait for the newest handover,
    /// when it is not committed (one mark per handover: later bytes wait behind it anyway).
    private mutating func mark(_ id: ConnectionID, start: Int, committed: Int64) {
        guard handedOver > committed else { return }
        let slot = HeldJoins.slot(id)
        if slot >= gates.count { gates.append(contentsOf: repeatElement(nil, count: slot + 1 - gates.count)) }
        if gates[slot]?.id != id {
            if gates[slot] == nil { gateCount += 1 }
            gates[slot] = Gate(id: id)
        }
        if gates[slot]!.marks.last?.msgid != handedOver { gates[slot]!.marks.append((start, handedOver)) }
    }

    /// The marks of `id` (for tests and the bench).
    func marks(of id: ConnectionID) -> [(start: Int, msgid: Int64)] { gateSlot(id).map { gates[$0]!.marks } ?? [] }

    private func gateSlot(_ id: ConnectionID) -> Int? {
        let slot = HeldJoins.slot(id)
        guard slot < gates.count, gates[slot]?.id == id else { return nil }
        return slot
    }

    private mutating func forgetGate(_ id: ConnectionID) {
        guard let slot = gateSlot(id) else { return }
        gates[slot] = nil
        gateCount -= 1
    }

    /// Every write goes through here: appended now, and marked when a handover waits.
    private mutating func emit(_ bytes: [UInt8], from: Int, _ id: ConnectionID, _ sink: inout some OutputSink) {
        guard let start = sink.write(bytes, from: from, to: id), handedOver > 0 else { return }
        mark(id, start: start, committed: sink.committed)
    }

    /// The server stops: everything gathered and held for a crowd goes out.
    mutating func flushAll(_ sink: inout some OutputSink) {
        flushGathered(&sink)
        releaseHeldJoins(&sink)
    }

    // MARK: Within

    /// Bytes for one connection after what it is owed: the common path. A closed connection gets
    /// nothing (the sink drops a write to it; what it holds is dropped when it closes).
    private mutating func put(_ bytes: [UInt8], _ id: ConnectionID, _ sink: inout some OutputSink) {
        if heldJoins != nil {
            guard sink.isOpen(id) else { return }
            catchUp(id, &sink)
        }
        inOrder(bytes, from: 0, id, &sink)
    }

    /// What a crowd's held announcements owe a connection, ahead of whatever comes next for it.
    private mutating func catchUp(_ id: ConnectionID, _ sink: inout some OutputSink) {
        guard heldJoins != nil && heldJoins!.mayOwe(id) else { return }
        for owed in heldJoins!.takeOwed(id) { inOrder(owed, from: 0, id, &sink) }
    }

    /// `bytes[from...]` after what the connection has waiting: behind a held echo, or written now.
    private mutating func inOrder(_ bytes: [UInt8], from: Int, _ id: ConnectionID, _ sink: inout some OutputSink) {
        guard heldCount > 0, heldEntry(id) != nil else {
            emit(bytes, from: from, id, &sink)
            return
        }
        let slot = HeldJoins.slot(id)
        held[slot]!.entries.append((0, from == 0 ? bytes : Array(bytes[from...])))
        held[slot]!.byteCount += bytes.count - from
        // Past the limit (echoes waiting for a writer that cannot store), what is not an
        // unconfirmed echo goes now: held output stays bounded.
        if held[slot]!.byteCount > holdLimit { release(id, all: true, &sink) }
    }

    private mutating func hold(_ id: ConnectionID, msgid: UInt64, _ bytes: [UInt8]) {
        let slot = HeldJoins.slot(id)
        if slot >= held.count { held.append(contentsOf: repeatElement(nil, count: slot + 1 - held.count)) }
        if held[slot]?.id != id {
            if held[slot] == nil { heldCount += 1 }
            held[slot] = Held(id: id)
            holding.append(id)
        }
        held[slot]!.entries.append((msgid, bytes))
        held[slot]!.byteCount += bytes.count
    }

    /// Everything held up to the first echo not committed yet; with `all`, everything but the
    /// unconfirmed echoes.
    private mutating func release(_ id: ConnectionID, all: Bool, _ sink: inout some OutputSink) {
        guard let entry = heldEntry(id) else { return }
        let done = sink.committed
        let waiting = { (item: (msgid: UInt64, bytes: [UInt8])) in item.msgid != 0 && Int64(bitPattern: item.msgid) > done }
        var out: [[UInt8]] = []
        var kept: [(msgid: UInt64, bytes: [UInt8])] = []
        if all {
            for item in entry.entries { if waiting(item) { kept.append(item) } else { out.append(item.bytes) } }
        } else {
            let count = entry.entries.firstIndex(where: waiting) ?? entry.entries.count
            out = entry.entries.prefix(count).map(\.bytes)
            kept = Array(entry.entries.dropFirst(count))
        }
        let slot = HeldJoins.slot(id)
        // Written with nothing held (so in order, now), then what still waits is held again.
        forgetHeld(id)
        for bytes in out { inOrder(bytes, from: 0, id, &sink) }
        if !kept.isEmpty {
            held[slot] = Held(id: id, entries: kept, byteCount: kept.reduce(0) { $0 + $1.bytes.count })
            heldCount += 1
        }
    }

    private func heldEntry(_ id: ConnectionID) -> Held? {
        let slot = HeldJoins.slot(id)
        guard slot < held.count, let entry = held[slot], entry.id == id else { return nil }
        return entry
    }

    private mutating func forgetHeld(_ id: ConnectionID) {
        let slot = HeldJoins.slot(id)
        if slot < held.count, held[slot]?.id == id {
            held[slot] = nil
            heldCount -= 1
        }
    }
}

/// Room deliveries gathered by `OutputOrder` (see `flushGathered`). Deliveries are taken while
/// they go to the same room's lists with the same stamp: each later list then begins with the
/// earlier one, so a member's bytes are the run's from the first delivery it was in, less the
/// deliveries that skipped it.
struct GatheredRun {
    let room: String
    let generation: UInt64
    /// The latest lists (each group only grew during the run).
    private(set) var groups: [(variant: RenderVariant, connections: [ConnectionID])] = []
    /// Per group: every delivery's lines in that group's form, one after another.
    private(set) var bytes: [[UInt8]] = []
    /// Per group: where each delivery's lines start in `bytes`, and their end (the last entry).
    private var offsets: [[Int]] = []
    private(set) var deliveries = 0
    /// Every delivery so far was a JOIN (the announcements a crowd arriving makes).
    private(set) var onlyJoins = true
    var memberCount: Int { groups.reduce(0) { $0 + $1.connections.count } }
    /// Members that joined during the run: the delivery they were first in.
    private var firstDelivery: [ConnectionID: Int] = [:]
    /// Members a delivery skipped (a sender without echo, a requester): which ones.
    private var skipped: [ConnectionID: [Int]] = [:]
    /// The members skipped by the latest delivery that were new in it: nothing is owed to them yet.
    private var fresh: [ConnectionID] = []
    /// Members with a part of their own (joined during the run, or skipped at least once).
    private(set) var special: Set<ConnectionID> = []
    /// Per group: how many members its first delivery went to (the rest joined during the run).
    private(set) var startCounts: [Int] = []

    init(room: String, generation: UInt64) {
        self.room = room
        self.generation = generation
    }

    func takes(_ delivery: Delivery) -> Bool {
        guard let lists = delivery.lists, lists.room == room, lists.generation == generation else { return false }
        // A long run's bookkeeping stops paying; so do runs with many own parts.
        guard deliveries < 512 && special.count < 64 else { return false }
        // The same stamp means the lists only grew; checked all the same, as `add` relies on it.
        guard delivery.groups.count >= groups.count else { return false }
        return groups.indices.allSatisfy { delivery.groups[$0].connections.count >= groups[$0].connections.count }
    }

    /// Nothing gathered is owed to `id` (it is not a member, or its first delivery skipped it).
    func owesNothing(_ id: ConnectionID) -> Bool {
        if fresh.contains(id) { return true }
        return !groups.contains { $0.connections.contains(id) }
    }

    mutating func add(_ delivery: Delivery) {
        let index = deliveries
        deliveries += 1
        if delivery.message.command != "JOIN" { onlyJoins = false }
        fresh = []
        for (g, group) in delivery.groups.enumerated() {
            if g >= bytes.count {
                bytes.append([])
                offsets.append(Array(repeating: 0, count: index))
                groups.append((group.variant, []))
                startCounts.append(index == 0 ? group.connections.count : 0)
            }
            let old = groups[g].connections.count
            let start = bytes[g].count
            offsets[g].append(start)
            if !group.connections.isEmpty { bytes[g] += Rendering.render(delivery.message, delivery.stamp, group.variant, serialized: delivery.serialized) }
            if index > 0 {
                for id in group.connections[old...] {
                    firstDelivery[id] = index
                    special.insert(id)
                }
            }
            groups[g].connections = group.connections
        }
        // (Lists with the same stamp never lose a group; kept aligned all the same.)
        for g in delivery.groups.count..<max(delivery.groups.count, groups.count) { offsets[g].append(bytes[g].count) }
        for id in delivery.skipping {
            skipped[id, default: []].append(index)
            special.insert(id)
            if index == 0 || firstDelivery[id] == index { fresh.append(id) }
        }
    }

    /// Where in `bytes[g]` the part of a member of group `g` begins, when its part is all that
    /// follows: a member skipped by nothing, or only by its first delivery (a JOIN's requester,
    /// whose copy went with its reply). Nil for a part with a hole in it.
    func suffixStart(of id: ConnectionID, group g: Int) -> Int? {
        let first = firstDelivery[id] ?? 0
        let ends = offsets[g]
        switch skipped[id] {
        case nil: return first < deliveries ? ends[first] : bytes[g].count
        case let skips? where skips == [first]: return first + 1 < deliveries ? ends[first + 1] : bytes[g].count
        default: return nil
        }
    }

    /// The bytes of a special member of group `g`: from its first delivery on, without those that skipped it.
    /// (The stretches between its skips, each appended in one go: a sender's part in a flood
    /// was a Set and a copy of the offsets, then an append per delivery, 31,000 instructions.)
    func part(of id: ConnectionID, group g: Int) -> [UInt8]? {
        let first = firstDelivery[id] ?? 0
        let all = bytes[g], starts = offsets[g]
        func start(_ index: Int) -> Int { index < deliveries ? starts[index] : all.count }
        var own: [UInt8] = []
        own.reserveCapacity(all.count - start(first))
        var from = first
        // Skips are in delivery order (a delivery may name a connection twice).
        for skip in skipped[id] ?? [] where skip >= from {
            if skip > from { own += all[start(from)..<start(skip)] }
            from = skip + 1
        }
        if from < deliveries { own += all[start(from)...] }
        return own.isEmpty ? nil : own
    }
}
