#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ChatLink
import ChatStore
import ChatWeb
import ChatTransport
import IRCWire

/// Where and how the server keeps history (`--history-days`, `--history-sync`).
public struct HistoryOptions: Sendable {
    public var path: String
    /// Days kept; older rows are pruned in the background.
    public var days: Int
    /// The most rows kept per room or conversation.
    public var perTarget: Int
    /// SQLite `synchronous`: NORMAL (a process crash loses nothing committed) or FULL (a power loss neither).
    public var synchronous: String
    /// Called on the writer's thread before each commit (tests hold a commit back with it).
    var beforeCommit: (@Sendable () -> Void)?

    public init(path: String, days: Int = 30, perTarget: Int = 1_000_000, synchronous: String = "NORMAL") {
        self.path = path
        self.days = days
        self.perTarget = perTarget
        self.synchronous = synchronous
    }
}

/// A thread that does slow work for the loop: the loop hands it a job and goes on; the answer
/// is taken on the next wake-up. The passwords' (PBKDF2) and the history reads' each have one:
/// on two cores the other is the loop's.
final class Worker<Job: Sendable, Outcome: Sendable>: Sendable {
    private let jobs = Locked<(queue: [Job], stopped: Bool, draining: Bool)>(([], false, false))
    private let results = Locked<[(Job, Outcome)]>([])
    private let ready = Semaphore()
    private let done = Semaphore()
    private let wakeup: Wakeup

    init(name: String, wakeup: Wakeup, perform: @escaping @Sendable (Job) -> Outcome) {
        self.wakeup = wakeup
        Threads.start(name: name) { [self] in work(perform) }
    }

    func submit(_ job: Job) {
        jobs.withLock { $0.queue.append(job) }
        ready.signal()
    }

    func takeResults() -> [(Job, Outcome)] {
        results.withLock { taken in defer { taken.removeAll() }; return taken }
    }

    func stop() {
        jobs.withLock { $0.stopped = true }
        ready.signal()
    }

    /// Runs every job queued, then stops; returns when the thread has (the results stay to be taken).
    func finish() {
        jobs.withLock { $0.draining = true }
        ready.signal()
        done.wait()
    }

    /// Jobs still waiting that match are answered `outcome` without being run (their connection closed).
    func cancel(where matches: (Job) -> Bool, answer outcome: Outcome) {
        let removed: [Job] = jobs.withLock { state in
            let mine = state.queue.filter(matches)
            state.queue.removeAll(where: matches)
            return mine
        }
        guard !removed.isEmpty else { return }
        results.withLock { $0 += removed.map { ($0, outcome) } }
        wakeup.signal()
    }

    private func work(_ perform: (Job) -> Outcome) {
        while true {
            ready.wait()
            let next: Job? = jobs.withLock { state in
                state.stopped || state.queue.isEmpty ? nil : state.queue.removeFirst()
            }
            guard let job = next else {
                if jobs.withLock({ $0.stopped || $0.draining }) {
                    done.signal()
                    return
                }
                continue
            }
            let outcome = perform(job)
            results.withLock { $0.append((job, outcome)) }
            wakeup.signal()
        }
    }
}

typealias HistoryReader = Worker<HistoryQuery, Result<[HistoryResult], Database.Failure>>

/// Hands the account store to the store worker's thread, the one that uses it from then on.
final class AccountsBox: @unchecked Sendable {
    let accounts: AccountStore
    init(_ accounts: AccountStore) { self.accounts = accounts }
}
