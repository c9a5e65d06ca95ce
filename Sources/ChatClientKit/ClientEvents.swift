import ChatTransport

/// What a `ChatClient` has published and its front end not yet taken, with a bound: past it
/// the client stops reading its connection until the front end has taken half of them (the
/// server's lines then wait in the kernel and TCP slows the server). A flood no longer piles
/// up in memory behind a screen that draws slower than the lines come (make bench's 100,000
/// lines: up to 8 MB of events waiting, more than the lines the screen keeps).
public final class EventBacklog: Sendable {
    public let bound: Int
    private let state = Locked<(count: Int, waiting: [CheckedContinuation<Void, Never>])>((0, []))

    public init(bound: Int) { self.bound = bound }

    public var count: Int { state.withLock { $0.count } }

    public func added() { state.withLock { $0.count += 1 } }

    /// One event taken: a reader waiting for room goes on once half the bound is free.
    public func taken() {
        let resumed = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.count -= 1
            guard state.count <= bound / 2, !state.waiting.isEmpty else { return [] }
            defer { state.waiting.removeAll() }
            return state.waiting
        }
        for continuation in resumed { continuation.resume() }
    }

    /// Returns at once below the bound; otherwise once the front end has caught up by half.
    public func waitForRoom() async {
        guard state.withLock({ $0.count >= bound }) else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.count <= bound / 2 { return true }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }
}

/// A client's events, in order: an `AsyncStream` whose iterator counts what it hands out in
/// the client's `EventBacklog`.
public struct ClientEvents: AsyncSequence, Sendable {
    public typealias Element = ClientEvent
    public typealias Failure = Never
    let stream: AsyncStream<ClientEvent>
    public let backlog: EventBacklog

    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Element = ClientEvent
        public typealias Failure = Never
        var base: AsyncStream<ClientEvent>.AsyncIterator
        let backlog: EventBacklog

        public mutating func next() async -> ClientEvent? {
            guard let event = await base.next() else { return nil }
            backlog.taken()
            return event
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> ClientEvent? {
            guard let event = await base.next(isolation: actor) else { return nil }
            backlog.taken()
            return event
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: stream.makeAsyncIterator(), backlog: backlog) }
}
