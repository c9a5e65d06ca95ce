import Synchronization
import ChatTransport

/// Items handed from any thread to one writer thread, taken in batches: the writer is woken
/// once per batch (when the queue goes from empty to not), not once per item, and told when to stop.
/// With a `bound`, producers that can wait (`waitForRoom`) are held while that many items are
/// queued, until the writer takes them: the backlog stays bounded and nothing is dropped.
final class BatchQueue<Item: Sendable>: Sendable {
    private struct State {
        var items: [Item] = []
        var stopped = false
        /// Producers waiting for the writer to take what is queued.
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Locked(State())
    private let ready = Semaphore()
    private let finished = Semaphore()
    let bound: Int

    init(bound: Int = .max) { self.bound = bound }

    /// Wakes the writer without an item (it has other work: the rooms' changes).
    func wake() { ready.signal() }

    func append(_ items: [Item]) {
        guard !items.isEmpty else { return }
        let wasEmpty = state.withLock { state -> Bool in
            defer { state.items += items }
            return state.items.isEmpty
        }
        if wasEmpty { ready.signal() }
    }

    /// Items queued now.
    var count: Int { state.withLock { $0.items.count } }

    /// Returns at once while fewer than `bound` items are queued (or the writer was told to
    /// stop); otherwise when the writer takes them.
    func waitForRoom() async {
        if state.withLock({ $0.items.count < bound || $0.stopped }) { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.items.count < bound || state.stopped { return true }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Puts items back at the front (a batch to try again).
    func putBack(_ items: [Item]) {
        state.withLock { $0.items.insert(contentsOf: items, at: 0) }
    }

    /// The writer's wait: up to `timeout` seconds for items, then whatever is queued (perhaps
    /// nothing) and whether a stop was asked for.
    func take(waiting timeout: Double) -> (items: [Item], stopped: Bool) {
        waitForItems(timeout)
        return takeNow()
    }

    /// The writer's wait alone, for a writer that takes the items under a lock of its own.
    func waitForItems(_ timeout: Double) { ready.wait(seconds: timeout) }

    /// Whether items are waiting now (the writer's look before it waits).
    var hasItems: Bool { state.withLock { !$0.items.isEmpty } }

    func takeNow() -> (items: [Item], stopped: Bool) {
        let (items, stopped, released) = state.withLock { state in
            defer {
                state.items.removeAll(keepingCapacity: true)
                state.waiting = []
            }
            return (state.items, state.stopped, state.waiting)
        }
        for producer in released { producer.resume() }
        return (items, stopped)
    }

    /// Asks the writer to stop after what is queued, and waits until it has (`writerFinished`).
    func stopAndWait() {
        let released = state.withLock { state in
            state.stopped = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for producer in released { producer.resume() }
        ready.signal()
        finished.wait()
    }

    func writerFinished() { finished.signal() }
}
