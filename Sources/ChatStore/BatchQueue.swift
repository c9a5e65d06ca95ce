import Synchronization
import ChatTransport

/// Items handed from any thread to one writer thread, taken in batches: the writer is woken
/// once per batch (when the queue goes from empty to not), not once per item, and told when to stop.
final class BatchQueue<Item: Sendable>: Sendable {
    private let state = Mutex<(items: [Item], stopped: Bool)>(([], false))
    private let ready = Semaphore()
    private let finished = Semaphore()

    func append(_ items: [Item]) {
        guard !items.isEmpty else { return }
        let wasEmpty = state.withLock { state -> Bool in
            defer { state.items += items }
            return state.items.isEmpty
        }
        if wasEmpty { ready.signal() }
    }

    /// Puts items back at the front (a batch to try again).
    func putBack(_ items: [Item]) {
        state.withLock { $0.items.insert(contentsOf: items, at: 0) }
    }

    /// The writer's wait: up to `timeout` seconds for items, then whatever is queued (perhaps
    /// nothing) and whether a stop was asked for.
    func take(waiting timeout: Double) -> (items: [Item], stopped: Bool) {
        ready.wait(seconds: timeout)
        return takeNow()
    }

    func takeNow() -> (items: [Item], stopped: Bool) {
        state.withLock { state in
            defer { state.items.removeAll(keepingCapacity: true) }
            return (state.items, state.stopped)
        }
    }

    /// Asks the writer to stop after what is queued, and waits until it has (`writerFinished`).
    func stopAndWait() {
        state.withLock { $0.stopped = true }
        ready.signal()
        finished.wait()
    }

    func writerFinished() { finished.signal() }
}
