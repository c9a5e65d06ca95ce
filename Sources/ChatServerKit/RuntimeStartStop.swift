#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ChatLink
import ChatStore
import ChatWeb
import ChatTransport
import IRCWire

// Start and stop: the shutdown, `ServerHandle`, `ServerRuntime.start`, `LinkListener`, `ConnectionTable`.
extension ServerRuntime {
    func shutdown() {
        state.writeRoomRecords()
        state.flushPresence(now: WallClock.now())
        apply()
        // The store worker's writes (the saved rooms with history off) end before the server does.
        if let store {
            store.finish()
            storeFinished = true
            for (job, outcome) in store.takeResults() { state.storeAnswered(job, outcome, now: WallClock.now()) }
            state.writeRoomRecords()
            // (What waited for an answer the worker gave only now is written here, at once.)
            state.flushPresence(now: WallClock.now())
            apply()
        }
        var sink = Sink(runtime: self)
        order.flushAll(&sink)
        for connection in connections.all {
            let goodbye = IRCMessage(command: "ERROR", params: ["Closing Link: the host closed the room (server shutting down)"]).serialized()
            if case .websocket(_, let subprotocol)? = connection.web {
                connection.output.append(WebSocket.messages(goodbye[...], as: subprotocol) + WebSocket.closeFrame(.goingAway, "server shutting down"))
                connection.web = .closing(until: 0)
            } else if connection.web == nil {
                connection.output.append(goodbye)
            }
            sendLastWords(connection)
            Glibc.shutdown(connection.fd, Int32(SHUT_WR))
            discardUnread(connection.fd)
            close(connection.fd)
        }
        connections = ConnectionTable()
        for fd in listeners { close(fd) }
        passwords.stop()
        // Uploads being stored are stored; the rest are deleted at the next start.
        uploads?.finish()
        for worker in pushWorkers { worker.stop() }
        historyReader?.stop()
        handRowsToWriter()
        historyWriter?.stop()
        logger("server stopped")
    }
}


/// Starts and stops a server from any thread.
public final class ServerHandle: Sendable {
    /// The port the server listens on (useful when it was started on port 0).
    public let port: Int
    /// The TLS port, when there is one.
    public let tlsPort: Int?
    /// The port other servers link to, when there is one.
    public let linkPort: Int?
    /// The web port (HTTP and WebSocket), when there is one.
    public let webPort: Int?
    let wakeup: Wakeup
    private let stopping = Atomic<Bool>(false)
    private let finished = Semaphore()
    private let heldRuns = Atomic<Int>(0)
    private let turns = Atomic<Int>(0)
    private let behindCount = Atomic<Int>(0)
    private let droppedReaders = Atomic<Int>(0)
    private let givenUp = Atomic<Int>(0)
    private let commits = Atomic<Int>(0)

    /// History commits made (one per batch of rows the writer took): tests count them.
    public var historyCommits: Int { commits.load(ordering: .acquiring) }
    func countCommit() { commits.add(1, ordering: .releasing) }

    /// How many runs of join announcements were held back for a crowd (`HeldJoins`).
    public var heldAnnouncementRuns: Int { heldRuns.load(ordering: .relaxed) }
    func countHeldRun() { heldRuns.add(1, ordering: .relaxed) }
    /// How many times a reader fell behind and its senders waited (RuntimeBackpressure.swift),
    /// how many times one was given up on (it took nothing for 2 s, or was behind 10 s), and how
    /// many readers were cut off at their send queue's bound.
    public var readersBehind: Int { behindCount.load(ordering: .relaxed) }
    public var readersGivenUp: Int { givenUp.load(ordering: .relaxed) }
    func countGivenUp() { givenUp.add(1, ordering: .relaxed) }
    public var slowReadersDropped: Int { droppedReaders.load(ordering: .relaxed) }
    func countBehind() { behindCount.add(1, ordering: .relaxed) }
    func countSlowReaderDropped() { droppedReaders.add(1, ordering: .relaxed) }
    /// Loop turns finished (written out and closed what it had to): tests wait on it for "the
    /// turn that handled this line is over".
    public var turnsDone: Int { turns.load(ordering: .acquiring) }
    func countTurn() { turns.add(1, ordering: .releasing) }

    init(port: Int, tlsPort: Int?, linkPort: Int? = nil, webPort: Int? = nil, wakeup: Wakeup) {
        self.port = port
        self.tlsPort = tlsPort
        self.linkPort = linkPort
        self.webPort = webPort
        self.wakeup = wakeup
    }

    var stopRequested: Bool { stopping.load(ordering: .acquiring) }

    private let replacementTLS = Locked<TLSContext?>(nil)

    /// Uses this TLS context for connections accepted from now on; connected clients stay.
    public func replaceTLS(_ context: TLSContext) {
        replacementTLS.withLock { $0 = context }
        wakeup.signal()
    }

    func takeReplacementTLS() -> TLSContext? { replacementTLS.withLock { state in defer { state = nil }; return state } }

    /// Asks the loop to stop and waits until it has closed every socket.
    public func stop() {
        stopping.store(true, ordering: .releasing)
        wakeup.signal()
        finished.wait()
    }

    func markFinished() { finished.signal() }

    /// Binds the listeners now (so errors such as a busy port surface at once), then runs the
    /// loop on the calling thread when `blocking`, or on a new thread.
    /// `tls`: a second port speaking TLS with this context (port 0: any free port).
    /// `plaintext: false`: only the TLS port listens (`port` is then that one).
    public static func start(config: ServerConfig, bind: String?, port: Int, tls: (port: Int, context: TLSContext)? = nil,
                             plaintext: Bool = true, accounts: AccountStore? = nil, history: HistoryOptions? = nil,
                             link: LinkListener? = nil, webPort: Int? = nil, webTLS: TLSContext? = nil,
                             sendQueueLimit: Int = 1 << 20, blocking: Bool = false,
                             logger: @escaping @Sendable (String) -> Void) throws(TransportError) -> ServerHandle {
        Sockets.ignoreSIGPIPE()
        // A file-size limit reached is a failed write (EFBIG, retried like a full disk), not the end of the server.
        signal(SIGXFSZ, SIG_IGN)
        let plain = plaintext || tls == nil ? try Sockets.listen(bind: bind, port: port) : []
        var secure: [Int32] = []
        if let tls {
            do { secure = try Sockets.listen(bind: bind, port: tls.port) } catch { plain.forEach { close($0) }; throw error }
        }
        var linkFDs: [Int32] = []
        if let port = link?.port {
            do { linkFDs = try Sockets.listen(bind: link?.bind ?? bind, port: port) } catch {
                (plain + secure).forEach { close($0) }
                throw error
            }
        }
        var webFDs: [Int32] = []
        if let webPort {
            do { webFDs = try Sockets.listen(bind: bind, port: webPort) } catch {
                (plain + secure + linkFDs).forEach { close($0) }
                throw error
            }
        }
        let tlsPort = secure.first.map(Sockets.boundPort)
        let handle = ServerHandle(port: plain.first.map(Sockets.boundPort) ?? tlsPort ?? 0, tlsPort: tlsPort,
                                  linkPort: linkFDs.first.map(Sockets.boundPort), webPort: webFDs.first.map(Sockets.boundPort), wakeup: try Wakeup())
        // History: a reader for the loop, a writer thread that commits in batches and wakes the
        // loop with the highest msgid each commit made durable.
        let health = HistoryHealth()
        var reader: HistoryStore?
        var worker: HistoryStore?
        var writer: HistoryWriter?
        if let history, history.days > 0 {
            // (Whether the data directory can be written is checked by chat-tui before it opens
            // anything there: accounts, certificates and history alike.)
            do {
                // The loop's reader waits at most 100 ms for the writer's lock (a read marker
                // being set): a long prune must not freeze the loop.
                let database = try Database(path: history.path)
                database.setBusyTimeout(milliseconds: 100)
                reader = try HistoryStore(database: database)
                // The store worker's own connection: history reads never run on the loop.
                worker = try HistoryStore(database: Database(path: history.path))
                let wakeup = handle.wakeup
                writer = try HistoryWriter(path: history.path, synchronous: history.synchronous, committed: { [handle] _ in
                    handle.countCommit()
                    wakeup.signal()
                }, failed: logger, retention: (history.days, history.perTarget), health: health, beforeCommit: history.beforeCommit)
            } catch {
                plain.forEach { close($0) }
                secure.forEach { close($0) }
                throw .unavailable("cannot keep history in \(history.path): \(error)")
            }
        }
        var fileHost: FileHost?
        if !webFDs.isEmpty, let uploads = config.uploads {
            do { fileHost = try FileHost(uploads, now: WallClock.now(), log: logger) } catch {
                (plain + secure + linkFDs + webFDs).forEach { close($0) }
                throw .unavailable("cannot keep uploads in \(uploads.directory): \(error)")
            }
        }
        var state = ServerState(config: config, accounts: accounts, history: reader)
        if writer != nil {
            state.historyHealth = health
            // The saved rooms are written by the history writer, off the loop, in order with the rows.
            state.roomBook.roomRecords.viaWriter = true
        }
        let runtime = try ServerRuntime(state: state, listeners: plain + secure + linkFDs + webFDs,
                                        listenerTLS: plain.map { _ in nil } + secure.map { _ in tls?.context }
                                            + linkFDs.map { _ in link?.server } + webFDs.map { _ in webTLS },
                                        listenerIsLink: (plain + secure).map { _ in false } + linkFDs.map { _ in true } + webFDs.map { _ in false },
                                        listenerIsWeb: (plain + secure + linkFDs).map { _ in false } + webFDs.map { _ in true },
                                        linkClientTLS: link?.client,
                                        tlsPort: handle.tlsPort, control: handle,
                                        sendQueueLimit: sendQueueLimit, fileHost: fileHost, history: writer, reader: worker, committed: health,
                                        accounts: accounts, logger: logger)
        let box = RuntimeBox(runtime)
        if blocking {
            box.runtime.run()
            handle.markFinished()
        } else {
            Threads.start(name: "chat-tui server") {
                box.runtime.run()
                handle.markFinished()
            }
        }
        return handle
    }
}

/// Where other servers link to this one, and the TLS it speaks on links.
public struct LinkListener: Sendable {
    /// The link port (0: any free one; nil: we only dial out).
    public var port: Int?
    public var bind: String?
    /// Presented on the link port (TLS links); nil: plain links only.
    public var server: TLSContext?
    /// Presented when we dial out over TLS, so the peer can pin our certificate.
    public var client: TLSContext?

    public init(port: Int?, bind: String? = nil, server: TLSContext?, client: TLSContext?) {
        self.port = port
        self.bind = bind
        self.server = server
        self.client = client
    }
}

/// Hands the runtime to the one thread that will use it from then on.
private final class RuntimeBox: @unchecked Sendable {
    let runtime: ServerRuntime
    init(_ runtime: ServerRuntime) { self.runtime = runtime }
}

/// The runtime's connections in an array: an ID is a slot in its low 24 bits and a serial
/// number above them, so finding a connection is an index and a compare (a stale ID, whose
/// slot was reused, finds nothing), and IDs still sort by arrival and are never reused.
struct ConnectionTable<Element: AnyObject> {
    private var slots: [(id: UInt64, element: Element)?] = []
    private var free: [Int] = []
    private var serial: UInt64 = 0
    private var pendingSlot: Int?
    static var slotBits: UInt64 { 24 }

    /// The ID the next `insert` takes (its slot is set aside until then).
    mutating func nextID() -> UInt64 {
        let slot = pendingSlot ?? free.popLast() ?? { slots.append(nil); return slots.count - 1 }()
        pendingSlot = slot
        serial += 1
        return serial << Self.slotBits | UInt64(slot)
    }

    mutating func insert(_ element: Element, as id: UInt64) {
        let slot = Int(id & (1 << Self.slotBits - 1))
        precondition(slot == pendingSlot, "insert with the ID nextID gave")
        pendingSlot = nil
        slots[slot] = (id, element)
    }

    subscript(id: UInt64) -> Element? {
        let slot = Int(truncatingIfNeeded: id & (1 << Self.slotBits - 1))
        guard slot < slots.count, let entry = slots[slot], entry.id == id else { return nil }
        return entry.element
    }

    mutating func remove(_ id: UInt64) {
        let slot = Int(id & (1 << Self.slotBits - 1))
        guard slot < slots.count, slots[slot]?.id == id else { return }
        slots[slot] = nil
        free.append(slot)
    }

    var all: [Element] { slots.compactMap { $0?.element } }
}
