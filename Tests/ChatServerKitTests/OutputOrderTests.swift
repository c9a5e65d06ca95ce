import Testing
@testable import ChatServerKit
import IRCWire

/// The output-ordering core without sockets: random interleavings of arrivals (a crowd, whose
/// JOINs are held at the room), room messages (the sender's echo held for its commit), replies,
/// refusals sent ahead, departures (the room's lists change), commits, turns and flushes through
/// the commit gate. After every step each connection has been given a prefix of what the items
/// gave it, in order, nothing twice, and nothing has left that was written after a handover not
/// committed; once everything is committed and the last turn is over, all of it has left.
@Suite("the output-ordering core: every member gets every event once, in order")
struct OutputOrderTests {
    /// What `OutputOrder` wrote, per connection, as lines.
    struct RecordingSink: OutputSink {
        var written: [ConnectionID: [String]] = [:]
        var open: Set<ConnectionID> = []
        var committed: Int64 = 0
        var failing = false
        /// Each connection's stream (every byte appended) and how much of it has left (flushed).
        var stream: [ConnectionID: Int] = [:]
        var sent: [ConnectionID: Int] = [:]
        /// Each write: where it began, and the newest msgid handed over when it was made (the
        /// test's own record, to check the gate against).
        var writes: [ConnectionID: [(start: Int, after: Int64)]] = [:]
        var handedOver: Int64 = 0
        var woken: Set<ConnectionID> = []
        /// The history reads given to the reader, in order, with what was committed then and
        /// whether history was failing.
        var reads: [(serial: UInt64, committed: Int64, failing: Bool)] = []

        mutating func write(_ bytes: [UInt8], from: Int, to id: ConnectionID) -> Int? {
            let text = String(decoding: bytes[from...], as: UTF8.self)
            written[id, default: []] += text.split(separator: "\r\n").map(String.init)
            let start = stream[id, default: 0]
            stream[id] = start + bytes.count - from
            writes[id, default: []].append((start, handedOver))
            return start
        }

        func isOpen(_ id: ConnectionID) -> Bool { open.contains(id) }

        mutating func wake(_ id: ConnectionID) { woken.insert(id) }

        mutating func read(_ query: HistoryQuery) { reads.append((query.serial, committed, failing)) }

        /// The runtime's flush: as far as the gate allows; stopped short, the connection parks.
        /// Nothing that leaves was written after a handover not committed.
        mutating func flush(_ id: ConnectionID, _ order: inout OutputOrder) -> Bool {
            let from = sent[id, default: 0], total = stream[id, default: 0]
            let limit = order.isGated(id) ? order.sendable(id, sent: from, committed: committed, unbounded: failing) : .max
            let to = limit == .max ? total : min(total, from + limit)
            var kept = true
            for write in writes[id] ?? [] where write.start >= from && write.start < to && !failing {
                kept = kept && write.after <= committed
            }
            sent[id] = to
            woken.remove(id)
            if to < total { order.park(id) }
            return kept
        }
    }

    /// A deterministic generator (xorshift), so a failing seed can be run again.
    struct Random: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    }

    /// The room as the state would keep it: members in their groups by form, and the stamp that
    /// changes when the lists change other than by growing.
    struct Room {
        var groups: [(variant: RenderVariant, connections: [ConnectionID])] = [(RenderVariant(), []), (RenderVariant.time, [])]
        var generation: UInt64 = 1
        var members: [ConnectionID] { groups.flatMap(\.connections) }

        mutating func add(_ id: ConnectionID, group: Int) { groups[group].connections.append(id) }

        mutating func remove(_ id: ConnectionID) {
            for g in groups.indices { groups[g].connections.removeAll { $0 == id } }
            generation += 1
        }
    }

    /// The lines a delivery gives `id` (its form's rendering), for the expected sequence.
    static func lines(_ message: IRCMessage, _ stamp: Stamp, _ variant: RenderVariant) -> [String] {
        String(decoding: Rendering.render(message, stamp, variant), as: UTF8.self).split(separator: "\r\n").map(String.init)
    }

    @Test("random interleavings", arguments: 1...24)
    func interleavings(seed: Int) {
        var random = Random(state: 0x9E37_79B9_7F4A_7C15 &* UInt64(seed))
        var order = OutputOrder(holdLimit: 1 << 20, historyOn: true)
        var sink = RecordingSink()
        var room = Room()
        var expected: [ConnectionID: [String]] = [:]
        var nextID: UInt64 = 1
        var nextMsgid: UInt64 = 1
        var minted: [UInt64] = []
        var now = 100.0
        var serial = 0
        /// The reads asked, in order, with the newest msgid handed over when each was.
        var asked: [(serial: UInt64, after: Int64)] = []

        func newConnection() -> ConnectionID {
            let id = ConnectionID(nextID)
            nextID += 1
            sink.open.insert(id)
            return id
        }
        // Lines are only ever appended: each step checks what is new since the last.
        var verified: [ConnectionID: Int] = [:]
        func check(_ step: String) {
            for (id, lines) in sink.written where lines.count > verified[id] ?? 0 {
                let want = expected[id] ?? []
                let from = verified[id] ?? 0
                let fits = lines.count <= want.count && want[from..<lines.count].elementsEqual(lines[from...])
                #expect(fits, "seed \(seed), \(step): \(id) got \(lines[from...].prefix(3)) where \(want.dropFirst(from).prefix(3)) was due")
                verified[id] = lines.count
            }
        }
        /// A room delivery to every member but `skipping`, with the room's lists.
        func deliver(_ message: IRCMessage, skipping: [ConnectionID], storable: Bool) {
            let stamp = Stamp(time: now, msgid: storable ? nextMsgid : nil)
            if storable { minted.append(nextMsgid); nextMsgid += 1 }
            let delivery = Delivery(message: message, stamp: stamp, groups: room.groups, skipping: skipping,
                                    lists: ("#r", room.generation), storable: storable)
            // As the runtime does: the rows to history's writer first, then the delivery.
            if let msgid = stamp.msgid {
                order.handOver(Int64(msgid))
                sink.handedOver = Int64(msgid)
            }
            for group in room.groups {
                for id in group.connections where !skipping.contains(id) {
                    expected[id, default: []] += Self.lines(message, stamp, group.variant)
                }
            }
            order.deliver(delivery, &sink)
        }

        // A crowd to begin with, some turns apart, so held JOINs come into play.
        for _ in 0..<(seed % 2 == 0 ? 110 : 20) {
            let id = newConnection()
            room.add(id, group: random.below(2))
            deliver(IRCMessage(source: "u\(id.raw)!u@h", command: "JOIN", params: ["#r"]), skipping: [], storable: true)
            if random.below(8) == 0 { order.endOfTurn(now: now, &sink) }
        }
        check("the crowd")
        for step in 0..<400 {
            serial += 1
            switch random.below(15) {
            case 0, 1:
                // An arrival: its JOIN to everyone, itself included.
                let id = newConnection()
                room.add(id, group: random.below(2))
                deliver(IRCMessage(source: "u\(id.raw)!u@h", command: "JOIN", params: ["#r"]), skipping: [], storable: true)
            case 2, 3, 4:
                // A member speaks: the room gets it, the sender its echo once committed.
                guard let sender = room.members.randomElement(using: &random) else { break }
                let message = IRCMessage(source: "u\(sender.raw)!u@h", command: "PRIVMSG", params: ["#r", "m\(serial)"])
                let msgid = nextMsgid
                deliver(message, skipping: [sender], storable: true)
                let echo = Rendering.render(message, Stamp(time: now, msgid: msgid), RenderVariant())
                expected[sender, default: []] += Self.lines(message, Stamp(time: now, msgid: msgid), RenderVariant())
                order.sendAfterCommit(echo, to: sender, msgid: msgid, &sink)
            case 5:
                // A reply to one member.
                guard let id = room.members.randomElement(using: &random) else { break }
                let line = ":server NOTICE u\(id.raw) :r\(serial)"
                expected[id, default: []].append(line)
                order.send(Array((line + "\r\n").utf8), to: id, &sink)
            case 6:
                // A departure: a PART to the room, then the lists change (a new stamp).
                guard room.members.count > 1, let leaving = room.members.randomElement(using: &random) else { break }
                deliver(IRCMessage(source: "u\(leaving.raw)!u@h", command: "PART", params: ["#r"]), skipping: [], storable: true)
                room.remove(leaving)
            case 7, 8:
                // History commits some of what was minted.
                if let upTo = minted.randomElement(using: &random) { sink.committed = max(sink.committed, Int64(upTo)) }
                order.released(&sink)
            case 9, 10:
                now += Double(random.below(300)) / 1000
                order.endOfTurn(now: now, &sink)
            case 11:
                // A history read: it reaches the reader once what was handed over before it is committed.
                guard let id = room.members.randomElement(using: &random) else { break }
                asked.append((UInt64(serial), sink.handedOver))
                order.read(Self.query(id, serial: UInt64(serial)), &sink)
            case 12, 13:
                // The runtime flushes some connections (those woken by a commit among them).
                let some = Array(sink.woken) + room.members.shuffled(using: &random).prefix(3)
                for id in some {
                    #expect(sink.flush(id, &order), "seed \(seed), step \(step): \(id) sent bytes written after a handover not committed")
                }
            default:
                // A refusal ahead of what waits: delivered right after what was written so far.
                guard let id = room.members.randomElement(using: &random) else { break }
                let line = ":server FAIL PRIVMSG TEMPORARILY_UNAVAILABLE :a\(serial)"
                order.sendAhead(Array((line + "\r\n").utf8), to: id, &sink)
                // It is the last line written, ahead of whatever still waits for that member.
                let given = sink.written[id] ?? []
                #expect(given.last == line, "seed \(seed): the refusal for \(id) was not written at once")
                expected[id, default: []].insert(line, at: max(0, given.count - 1))
            }
            check("step \(step)")
            // Each read given so far was asked in that order, and found its rows committed.
            for (index, read) in sink.reads.enumerated() {
                #expect(index < asked.count && asked[index].serial == read.serial, "seed \(seed): reads out of order")
                if index < asked.count { #expect(read.failing || read.committed >= asked[index].after, "seed \(seed): a read went before its rows' commit") }
            }
        }
        // Everything committed, the hold's time over: everyone has all of it.
        sink.committed = .max
        order.released(&sink)
        now += 1
        order.endOfTurn(now: now, &sink)
        order.flushAll(&sink)
        for (id, want) in expected {
            #expect(sink.written[id] ?? [] == want, "seed \(seed): \(id) got \(sink.written[id]?.count ?? 0) of \(want.count) lines")
        }
        #expect(sink.reads.map(\.serial) == asked.map(\.serial), "seed \(seed): every read reached the reader once all was committed")
        // Every connection the gate stopped was woken by the commits, and then all of it leaves.
        #expect(order.parked.isEmpty, "seed \(seed): still parked after everything was committed")
        for id in sink.stream.keys {
            #expect(sink.flush(id, &order))
            #expect(sink.sent[id] == sink.stream[id], "seed \(seed): \(id) kept output back after the last commit")
        }
        if seed % 2 == 0 { #expect(order.heldRuns > 0, "a crowd's JOINs were held at least once") }
    }

    @Test("an echo waits for its commit and what follows for that member waits behind it")
    func echoWaits() {
        var order = OutputOrder(holdLimit: 1 << 20, historyOn: true)
        var sink = RecordingSink()
        let alice = ConnectionID(1)
        sink.open = [alice]
        order.sendAfterCommit(Array(":alice PRIVMSG #r :hi\r\n".utf8), to: alice, msgid: 5, &sink)
        order.send(Array(":server NOTICE alice :after\r\n".utf8), to: alice, &sink)
        #expect(sink.written[alice] == nil)
        sink.committed = 4
        order.released(&sink)
        #expect(sink.written[alice] == nil)
        sink.committed = 5
        order.released(&sink)
        #expect(sink.written[alice] == [":alice PRIVMSG #r :hi", ":server NOTICE alice :after"])
    }

    @Test("past the hold limit, all but the unconfirmed echoes go out; the echoes follow their commit")
    func holdLimit() {
        var order = OutputOrder(holdLimit: 64, historyOn: true)
        var sink = RecordingSink()
        let alice = ConnectionID(1)
        sink.open = [alice]
        order.sendAfterCommit(Array(":alice PRIVMSG #r :hi\r\n".utf8), to: alice, msgid: 9, &sink)
        for n in 0..<4 { order.send(Array(":server NOTICE alice :line \(n) of something long\r\n".utf8), to: alice, &sink) }
        #expect(sink.written[alice]?.first == ":server NOTICE alice :line 0 of something long")
        #expect(sink.written[alice]?.contains(":alice PRIVMSG #r :hi") == false)
        #expect(order.heldBytes(of: alice) < 64 + 60)
        sink.committed = 9
        order.released(&sink)
        #expect(sink.written[alice]?.contains(":alice PRIVMSG #r :hi") == true)
        #expect(order.lastWords(of: alice, committed: 9).isEmpty)
    }

    @Test("last words: what is held up to the first echo not committed, nothing after")
    func lastWords() {
        var order = OutputOrder(holdLimit: 1 << 20, historyOn: true)
        var sink = RecordingSink()
        let alice = ConnectionID(1)
        sink.open = [alice]
        order.sendAfterCommit(Array("E1\r\n".utf8), to: alice, msgid: 3, &sink)
        order.send(Array("L1\r\n".utf8), to: alice, &sink)
        order.sendAfterCommit(Array("E2\r\n".utf8), to: alice, msgid: 7, &sink)
        order.send(Array("L2\r\n".utf8), to: alice, &sink)
        #expect(order.lastWords(of: alice, committed: 5).map { String(decoding: $0, as: UTF8.self) } == ["E1\r\n", "L1\r\n"])
        #expect(order.heldBytes(of: alice) == 0)
    }

    @Test("without history an echo goes at once")
    func historyOff() {
        var order = OutputOrder(holdLimit: 1 << 20, historyOn: false)
        var sink = RecordingSink()
        let alice = ConnectionID(1)
        sink.open = [alice]
        order.sendAfterCommit(Array("E1\r\n".utf8), to: alice, msgid: 3, &sink)
        #expect(sink.written[alice] == ["E1"])
    }

    @Test("the commit gate: bytes written after a handover wait for its commit, those before go; a commit wakes the parked connection")
    func gate() {
        var order = OutputOrder(holdLimit: 1 << 20, historyOn: true)
        var sink = RecordingSink()
        let alice = ConnectionID(1), bob = ConnectionID(2)
        sink.open = [alice, bob]
        order.send(Array("before\r\n".utf8), to: alice, &sink)
        order.handOver(7)
        sink.handedOver = 7
        order.send(Array("after\r\n".utf8), to: alice, &sink)
        order.send(Array("more\r\n".utf8), to: alice, &sink)
        #expect(order.marks(of: alice).map(\.start) == [8], "one mark per handover, where its first byte begins")
        #expect(sink.flush(alice, &order))
        #expect(sink.sent[alice] == 8 && order.parked == [alice])
        // Bob had nothing written after the handover: nothing stops him.
        order.handOver(6)
        #expect(!order.isGated(bob))
        sink.committed = 6
        order.released(&sink)
        #expect(sink.woken.isEmpty && order.parked == [alice], "a commit short of the mark wakes nobody")
        sink.committed = 7
        order.released(&sink)
        #expect(sink.woken == [alice] && order.parked.isEmpty)
        #expect(sink.flush(alice, &order))
        #expect(sink.sent[alice] == sink.stream[alice] && !order.isGated(alice))
    }

    @Test("the commit gate lets everything go while history cannot store, or past the send queue's bound; a closed connection is forgotten")
    func gateUnbounded() {
        var order = OutputOrder(holdLimit: 1 << 20, historyOn: true)
        var sink = RecordingSink()
        let alice = ConnectionID(1), bob = ConnectionID(2)
        sink.open = [alice, bob]
        order.handOver(3)
        sink.handedOver = 3
        order.send(Array("one\r\n".utf8), to: alice, &sink)
        order.send(Array("two\r\n".utf8), to: bob, &sink)
        #expect(order.sendable(alice, sent: 0, committed: 0, unbounded: true) == .max)
        #expect(!order.isGated(alice), "past the bound the marks go: no reader is dropped for the gate")
        sink.sent[alice] = sink.stream[alice]   // (the runtime sent it all)
        #expect(sink.flush(bob, &order) && order.parked == [bob])
        sink.failing = true
        order.released(&sink)
        #expect(sink.woken == [bob], "history failing: the parked connection goes")
        sink.failing = false
        order.handOver(4)
        sink.handedOver = 4
        order.send(Array("three\r\n".utf8), to: alice, &sink)
        #expect(sink.flush(alice, &order) && order.parked == [alice])
        sink.open = [bob]
        order.forget(alice)
        sink.committed = 4
        order.released(&sink)
        #expect(!order.isGated(alice) && order.parked.isEmpty && !sink.woken.contains(alice))
    }

    static func query(_ id: ConnectionID, serial: UInt64) -> HistoryQuery {
        HistoryQuery(connection: id, serial: serial, reads: [], purpose: .search(from: nil, limit: 1))
    }

    @Test("a history read waits for the rows handed over before it; reads keep their order; while history cannot store they go at once")
    func readsAfterCommit() {
        var order = OutputOrder(holdLimit: 1 << 20, historyOn: true)
        var sink = RecordingSink()
        let alice = ConnectionID(1), bob = ConnectionID(2)
        order.read(Self.query(alice, serial: 1), &sink)
        #expect(sink.reads.map(\.serial) == [1], "nothing handed over: at once")
        order.handOver(5)
        order.read(Self.query(alice, serial: 2), &sink)
        order.handOver(8)
        order.read(Self.query(bob, serial: 3), &sink)
        #expect(sink.reads.count == 1, "rows up to 5 and 8 wait for their commit")
        sink.committed = 6
        order.released(&sink)
        #expect(sink.reads.map(\.serial) == [1, 2], "the first read's rows are committed, not the second's")
        order.handOver(9)
        sink.committed = 8
        order.read(Self.query(alice, serial: 4), &sink)
        #expect(sink.reads.map(\.serial) == [1, 2], "a later read does not pass one waiting")
        order.released(&sink)
        #expect(sink.reads.map(\.serial) == [1, 2, 3])
        sink.failing = true
        order.released(&sink)
        #expect(sink.reads.map(\.serial) == [1, 2, 3, 4], "history failing: it reads what is stored")
        #expect(order.readsWaiting.isEmpty)
        var off = OutputOrder(holdLimit: 1 << 20, historyOn: false)
        off.handOver(3)
        sink.reads = []
        off.read(Self.query(bob, serial: 5), &sink)
        #expect(sink.reads.map(\.serial) == [5], "history off: nothing to wait for")
    }
}
