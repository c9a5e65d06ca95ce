import ChatStore
import IRCWire

/// A read of stored history for one connection, made by the store worker off the event loop
/// (`HistoryReader`): the loop hands it over and goes on; the connection's next lines wait for
/// the answer (`Session.busy`), so its replies keep the order of its commands. It is handed over
/// once every row handed to the writer before it is committed (`OutputOrder.read`): the
/// database then holds every line said before it was asked.
public struct HistoryQuery: Sendable, Equatable {
    public let connection: ConnectionID
    /// Tells this query's answer from one for an earlier query of the same connection.
    let serial: UInt64
    let reads: [HistoryRead]
    let purpose: HistoryPurpose

    /// One query per serial.
    public static func == (a: HistoryQuery, b: HistoryQuery) -> Bool { a.serial == b.serial && a.connection == b.connection }

    /// Runs the reads on the worker's own connection to the database.
    public func run(on store: HistoryStore) -> Result<[HistoryResult], Database.Failure> {
        do {
            var results: [HistoryResult] = []
            for read in reads {
                switch read {
                case .rows(let target, let direction, let bound, let limit, let kinds):
                    results.append(.rows(try store.rows(target, direction, bound, limit: limit, kinds: kinds)))
                case .latest(let target):
                    results.append(.latest(try store.latest(in: target)))
                case .conversations(let party, let from, let to, let limit):
                    results.append(.conversations(try store.conversations(of: party, from: from, to: to, limit: limit)))
                case .msgids(let target, let low, let high):
                    results.append(.msgids(try store.msgids(target, from: low, to: high)))
                case .search(let targets, let party, let text, let low, let high, let limit):
                    results.append(.rows(try store.search(targets: targets, party: party, text: text, low: low, high: high, limit: limit)))
                }
            }
            return .success(results)
        } catch {
            return .failure(error)
        }
    }
}

public enum HistoryRead: Sendable {
    case rows(target: String, direction: HistoryStore.Direction, bound: Int64, limit: Int, kinds: HistoryStore.Kinds)
    case latest(target: String)
    case conversations(party: String, from: Int64, to: Int64, limit: Int)
    /// Which msgids of `target` between the two are stored (the rows a linked server offers after a split).
    case msgids(target: String, low: Int64, high: Int64)
    /// soju.im/search: messages of these targets (and `party`'s direct conversations) holding `text`.
    case search(targets: [String], party: String?, text: String, low: Int64, high: Int64, limit: Int)
}

public enum HistoryResult: Sendable {
    case rows([HistoryRow])
    case latest(Int64?)
    case conversations([(target: String, peer: String, last: Int64)])
    case msgids(Set<Int64>)
}

/// What the answer is for.
enum HistoryPurpose: Sendable {
    /// CHATHISTORY LATEST/BEFORE/AFTER/AROUND/BETWEEN: the batch for `name`, the rows kept
    /// strictly between the bounds given (LATEST msgid=, BETWEEN).
    case chathistory(name: String, target: String, above: Int64?, below: Int64?)
    /// CHATHISTORY TARGETS: the rooms asked about (folded key, name shown), then the account's conversations.
    case targets(rooms: [(key: String, name: String)], low: Int64, high: Int64, limit: Int)
    /// The replay on joining, for a room whose recent lines are not in memory yet: only lines
    /// up to `upTo` (the newest msgid when it joined; what came after reached it live).
    case replay(name: String, key: String, upTo: Int64)
    /// After a split healed: our rows of the rooms shared with the linked server, said between
    /// the split and the heal (`upTo`), to send it.
    case splitOffer(rooms: [(key: String, name: String)], upTo: Int64)
    /// The rows a linked server sent of one room: those not stored here are kept and shown.
    case splitMerge(key: String, rows: [HistoryRow])
    /// REDACT: the message asked about, to check who sent it.
    case redact(RedactRequest)
    /// What a device missed while away (Presence.swift): its rooms' lines and its account's
    /// direct conversations since `since`, up to `upTo` (what came after reached it live).
    case missed(rooms: [(key: String, name: String)], since: Int64, upTo: Int64)
    case missedDirect(peers: [(target: String, peer: String)], since: Int64, upTo: Int64)
    /// SEARCH (soju.im/search): the lines found, from `from` (folded; nil: anyone), the newest `limit`.
    case search(from: String?, limit: Int)
}

extension ServerState {
    /// Hands a query to the store worker. A CHATHISTORY's response (and its label) waits for
    /// the answer; a JOIN's replay follows the JOIN's own response.
    mutating func requestHistory(_ session: Session, _ reads: [HistoryRead], _ purpose: HistoryPurpose) {
        cache.nextHistorySerial += 1
        session.historyQueries.insert(cache.nextHistorySerial)
        if purpose.isUnasked {
        } else if response?.session === session {
            response?.deferred = true
            session.deferredLabel = response?.label
        }
        outbox.items.append(.readHistory(HistoryQuery(connection: session.connection, serial: cache.nextHistorySerial, reads: reads,
                                                      purpose: purpose)))
    }

    /// The worker's answer: the reply it was for, then the lines that waited for it.
    public mutating func historyAnswered(_ query: HistoryQuery, _ result: Result<[HistoryResult], Database.Failure>, now: Double) {
        if net.links[query.connection] != nil || query.purpose.isLinks {
            linkHistoryAnswered(query, result, now: now)
            return
        }
        guard let session = people.sessions[query.connection], session.historyQueries.remove(query.serial) != nil else { return }
        if query.purpose.isUnasked {
            response = ResponseBuffer(session: session, label: nil)
        } else {
            response = ResponseBuffer(session: session, label: session.deferredLabel)
            session.deferredLabel = nil
        }
        switch result {
        case .success(let results):
            answer(query, results, session: session, now: now)
        case .failure(let error):
            log(session, "history: \(error)")
            if query.purpose.isUnasked {
                break
            } else {
                standardReply(session, "FAIL", command: "CHATHISTORY", code: "MESSAGE_ERROR", context: [query.purpose.context],
                              always: true, "History could not be read")
            }
        }
        flushResponse()
        resumeHeldLines(session, now: now)
    }

    private mutating func answer(_ query: HistoryQuery, _ results: [HistoryResult], session: Session, now: Double) {
        switch query.purpose {
        case .chathistory(let name, let target, let above, let below):
            var rows: [HistoryRow] = []
            var limit = 0
            for (read, result) in zip(query.reads, results) {
                guard case .rows(_, _, _, let readLimit, _) = read, case .rows(let stored) = result else { continue }
                rows += stored
                limit = max(limit, readLimit)
            }
            // AROUND: what is before the reference, then as much from it on as the limit leaves.
            if rows.count > limit { rows.removeLast(rows.count - limit) }
            if let above { rows.removeAll { $0.msgid <= above } }
            if let below { rows.removeAll { $0.msgid >= below } }
            let floor = historyFloor(target)
            if floor > 0 { rows.removeAll { $0.msgid < floor } }
            sendHistoryBatch(session, name, rows)
        case .targets(let rooms, let low, let high, let limit):
            var found: [(name: String, last: Int64)] = []
            for (index, result) in results.enumerated() {
                switch result {
                case .latest(let last):
                    guard index < rooms.count, let newest = last else { continue }
                    if newest > low, newest < high { found.append((rooms[index].name, newest)) }
                case .conversations(let conversations):
                    for conversation in conversations { found.append((conversation.peer, conversation.last)) }
                case .rows, .msgids:
                    break
                }
            }
            sendTargetsBatch(session, found, limit: limit)
        case .replay(let name, let key, let upTo):
            guard case .rows(let stored)? = results.first else { return }
            // With the lines said since it was asked (the read may have run before their commit).
            let tail = Self.merge(stored, cache.roomTails[key]?.rows ?? [], limit: config.replayOnJoin)
            // Kept while the room lives: the next joiner's replay needs no database.
            if roomBook.channels[key] != nil { cache.roomTails[key] = RoomTail(rows: tail, loaded: true) }
            guard roomBook.membership.isMember(session.user.id, of: key) else { return }
            replay(tail.filter { $0.msgid <= upTo }, to: session, key: key, name: name)
        case .redact(let redact):
            guard case .rows(let stored)? = results.first else { return }
            finishRedact(session, redact, row: stored.first, now: now)
        case .splitOffer, .splitMerge:
            break // a link's, answered by `linkHistoryAnswered`
        case .missed(let rooms, let since, let upTo):
            answerMissed(query, results, session: session, rooms: rooms, since: since, upTo: upTo)
        case .missedDirect(let peers, let since, let upTo):
            answerMissedDirect(query, results, session: session, peers: peers, since: since, upTo: upTo)
        case .search(let from, let limit):
            answerSearch(results, session: session, from: from, limit: limit)
        }
    }

    /// A room's stored last lines with those its tail gathered while they were read, each once,
    /// in msgid order, the newest `limit`.
    static func merge(_ stored: [HistoryRow], _ gathered: [HistoryRow], limit: Int) -> [HistoryRow] {
        guard !gathered.isEmpty else { return stored }
        var seen = Set(stored.map(\.msgid))
        var merged = stored
        for row in gathered where seen.insert(row.msgid).inserted { merged.append(row) }
        merged.sort { $0.msgid < $1.msgid }
        return Array(merged.suffix(limit))
    }

    /// The lines that waited while the connection's command was answered off the loop, in
    /// order, until one of them starts another such wait.
    mutating func resumeHeldLines(_ session: Session, now: Double) {
        while !session.busy, !session.heldLines.isEmpty, !session.gone {
            received(session.heldLines.removeFirst(), session: session, now: now)
        }
    }

    /// A new room line for the kept tails (`roomTails`): the replay on joining reads them, not the database.
    /// A tail grows to twice the replay's length before its front goes, in one move: dropping
    /// one row per message moved the whole tail each time (1,700 instructions a message in a
    /// flooded room of 50). Readers take its last `replayOnJoin` rows (`tail(of:)`).
    /// (A text row: `historyRows` asks once for all of a message's rows.)
    func extendTail(_ row: HistoryRow) {
        if let tail = cache.roomTails[row.target] { tail.rows.append(row, keepingAtLeast: config.replayOnJoin) }
    }

    /// The kept tail of a room, at most `replayOnJoin` rows (nil until its first read is answered).
    func tail(of key: String) -> [HistoryRow]? {
        guard let tail = cache.roomTails[key], tail.loaded else { return nil }
        return tail.rows.count > config.replayOnJoin ? Array(tail.rows.suffix(config.replayOnJoin)) : tail.rows
    }
}

extension Array where Element == HistoryRow {
    /// Appends, and past twice `keep` rows drops the oldest down to `keep`: amortised, one move
    /// per `keep` appends.
    mutating func append(_ row: HistoryRow, keepingAtLeast keep: Int) {
        append(row)
        if count > 2 * keep { removeFirst(count - keep) }
    }
}

extension HistoryPurpose {
    /// For a link (the exchange after a split), not a client.
    var isLinks: Bool {
        switch self {
        case .splitOffer, .splitMerge: true
        default: false
        }
    }

    /// Read for the server's own reasons (a join's replay, what a device missed), not a
    /// command: no response waits for it, and a failure is only logged.
    var isUnasked: Bool {
        switch self {
        case .replay, .missed, .missedDirect: true
        default: false
        }
    }

    /// The FAIL's context: what was asked about.
    var context: String {
        switch self {
        case .chathistory(let name, _, _, _): name
        case .targets: "TARGETS"
        case .replay(let name, _, _): name
        case .splitOffer: "SPLIT"
        case .splitMerge(let key, _): key
        case .redact(let redact): redact.name
        case .missed, .missedDirect: "*"
        case .search: "SEARCH"
        }
    }
}
