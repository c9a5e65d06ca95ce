import Testing
@testable import ChatServerKit
import IRCWire
import ChatStore

/// Drives `ServerState` directly, with no sockets: connect, send lines, read the outbox.
struct Harness {
    var state: ServerState
    var now: Double = 1_000_000
    private var nextID: UInt64 = 1
    var out = Outbox()

    init(accounts: AccountStore? = nil, history: HistoryStore? = nil, configure: (inout ServerConfig) -> Void = { _ in }) {
        var config = ServerConfig()
        config.name = "test.server"
        configure(&config)
        state = ServerState(config: config, accounts: accounts, history: history)
        self.history = history
        self.accounts = accounts
    }

    /// The account database the store worker would use (its jobs run here at once).
    let accounts: AccountStore?

    /// History written as the runtime's writer would, but at once (each row before the items after it).
    let history: HistoryStore?

    /// Runs the password checks the state asked for, as the runtime's worker does (here inline,
    /// unless `holdingChecks`), and adds what their answers produced.
    var holdingChecks = false
    var heldChecks: [PasswordCheck] = []

    /// History reads kept back (as a busy store worker would) until `releaseReads`.
    var holdingReads = false
    var heldReads: [HistoryQuery] = []

    /// Answers the held reads now, in the order they were asked.
    @discardableResult
    mutating func releaseReads() -> Outbox {
        var result = Outbox()
        let reads = heldReads
        heldReads = []
        for query in reads {
            state.historyAnswered(query, query.run(on: history!), now: now)
            result.items += state.takeOutbox().items
        }
        out = runChecks(result)
        return out
    }

    /// Connections whose long reply waits for its next step (`continueReplies`).
    var continuations: [ConnectionID] = []

    mutating func runChecks(_ outbox: Outbox) -> Outbox {
        var result = outbox
        var index = 0
        while index < result.items.count {
            // Rows committed as they come, before anything after them (a read waits for them).
            if let history {
                if case .deliver(let delivery) = result.items[index], !delivery.rows.isEmpty { try? history.insert(delivery.rows) }
                if case .storeRows(let rows) = result.items[index] { try? history.insert(rows) }
            }
            if case .continueReply(let id) = result.items[index], !continuations.contains(id) { continuations.append(id) }
            if case .readHistory(let query) = result.items[index], let history {
                // The store worker's read, made here at once (or later, with `holdingReads`).
                if holdingReads {
                    heldReads.append(query)
                } else {
                    state.historyAnswered(query, query.run(on: history), now: now)
                    result.items += state.takeOutbox().items
                }
            }
            if case .store(let job) = result.items[index], let accounts {
                // The store worker's job, run here at once.
                state.storeAnswered(job, job.run(on: accounts), now: now)
                result.items += state.takeOutbox().items
            }
            if case .checkPassword(let check) = result.items[index] {
                if holdingChecks {
                    heldChecks.append(check)
                } else {
                    state.passwordChecked(check, check.run(), now: now)
                    result.items += state.takeOutbox().items
                }
            }
            index += 1
        }
        // Deleted messages forgotten once the reads that found them have answered.
        if let history {
            for item in result.items {
                if case .forgetRow(let target, let msgid) = item { try? history.forget(target: target, msgid: msgid) }
                if case .renameHistory(let old, let new) = item { try? history.rename(from: old, to: new) }
                if case .setMarker(let account, let target, let time) = item { _ = try? history.setReadMarker(account: account, target: target, time: time) }
            }
        }
        // The saved rooms' changes written at once (after the lines that waited for an answer),
        // as the runtime's tick writes them each second.
        state.writeRoomRecords()
        let written = state.takeOutbox().items
        result.items += written
        // With history off they go to the store worker: written here at once.
        for case .store(let job) in written {
            guard let accounts else { continue }
            state.storeAnswered(job, job.run(on: accounts), now: now)
            result.items += state.takeOutbox().items
        }
        return result
    }

    /// The next step of every long reply the last outbox asked to go on with, as the runtime
    /// does once the client has taken the last one.
    @discardableResult
    mutating func continueReplies() -> Outbox {
        var result = Outbox()
        let due = continuations
        continuations = []
        for id in due {
            state.continueReply(id, now: now)
            result.items += state.takeOutbox().items
        }
        out = runChecks(result)
        return out
    }

    /// Answers the held checks now.
    @discardableResult
    mutating func releaseChecks() -> Outbox {
        var result = Outbox()
        for check in heldChecks {
            state.passwordChecked(check, check.run(), now: now)
            result.items += state.takeOutbox().items
        }
        heldChecks = []
        out = result
        return result
    }

    mutating func connect(from host: String = "127.0.0.1") -> ConnectionID {
        let id = ConnectionID(nextID)
        nextID += 1
        state.connected(id, host: host, peer: "\(host):\(40000 + id.raw)", now: now)
        _ = state.takeOutbox()
        return id
    }

    /// Sends lines from `id` and returns the outbox they produced.
    @discardableResult
    mutating func send(_ id: ConnectionID, _ lines: String...) -> Outbox {
        for line in lines { state.received(Array(line.utf8), from: id, now: now) }
        out = runChecks(state.takeOutbox())
        return out
    }

    mutating func register(_ nick: String, caps: [String] = []) -> ConnectionID {
        let id = connect()
        if !caps.isEmpty { send(id, "CAP REQ :\(caps.joined(separator: " "))") }
        send(id, "NICK \(nick)", "USER u 0 * :Real \(nick)", "CAP END")
        return id
    }

    mutating func tick(advance seconds: Double) -> Outbox {
        now += seconds
        state.tick(now: now)
        out = runChecks(state.takeOutbox())
        return out
    }

    func lines(to id: ConnectionID) -> [String] { out.messages(to: id).map(\.line) }

    /// The names in the 353 replies to `id`, as a set: the server does not sort them.
    func names(to id: ConnectionID) -> Set<String> {
        Set(out.messages(to: id).filter { $0.command == "353" }.flatMap { $0.params[3].split(separator: " ").map(String.init) })
    }
    func commands(to id: ConnectionID) -> [String] { out.messages(to: id).map(\.command) }
}
