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

/// The shell around `ServerState`: owns the sockets, the epoll loop and the clock, feeds the
/// state events, and applies what it decides. One thread; one `send` per connection per loop turn.
final class ServerRuntime {
    final class Connection {
        let id: ConnectionID
        let fd: Int32
        let peer: String
        /// On the web port: HTTP until an upgrade, then WebSocket (`WebRuntime.swift`); nil for IRC and links.
        var web: WebMode?
        /// When it was accepted, or last answered a request (a web connection that never finishes
        /// a request is closed after a while), or an upload last made progress.
        var webSince = Monotonic.now()
        /// A file arriving on it (POST to the upload URL), its answer's keep-alive and the Host it was sent to.
        var upload: (file: FileHost.Upload, keepAlive: Bool, host: String?, secure: Bool)?
        /// An upload's progress in the current 10 s window (a trickle is closed: `closeIdleWeb`).
        var uploadWindow: (since: Double, bytes: Int) = (0, 0)
        /// Its upload's bytes handed to the upload worker and not written yet (reading stops past
        /// `uploadQueueBound`), and an upload whose last byte came, being stored: its answer
        /// waits for the worker, and nothing more is read meanwhile (answers stay in order).
        var uploadQueued = 0
        var uploadStoring: (file: FileHost.Upload, keepAlive: Bool, host: String?, secure: Bool)?
        /// An upload whose account password is being checked (HTTP Basic): its request and length.
        var pendingLogin: (request: HTTPRequest, length: Int)?
        /// A file going out on it, a chunk at a time as its output drains.
        var download: (fd: Int32, remaining: Int, keepAlive: Bool)?
        /// Counted among its address's web connections not yet upgraded (`webPending`).
        var webKey: String?
        var framer = LineFramer()
        var output = OutputBuffer()
        var waitingForWritable = false
        var queuedForFlush = false
        var closing = false
        /// Set on the TLS port, and on the web port once its first byte is a TLS handshake's;
        /// the handshake runs inside the loop, a step per readiness.
        var tls: TLSSession?
        /// On the web port with a certificate: the context to speak TLS with, if the first byte asks for it.
        var offeredTLS: TLSContext?
        /// On the plain port: the first bytes are checked for a TLS ClientHello.
        var firstRead = true
        /// Lines read and not yet handed to the state (pacing, or the state busy with this
        /// connection), oldest at `queueHead`.
        var queue: [FramedLine] = []
        var queueHead = 0
        var queued: Int { queue.count - queueHead }
        /// Command pacing (nil: none, as for loopback).
        var pacer: Pacer?
        /// What the line at the head of its queue costs, while it waits for its pacer: the loop
        /// wakes when that is covered, not at the first token (a CHATHISTORY costing two made it
        /// wake, fail and wake again: a busy loop, half a core for one flooding connection).
        var waitingCost = 1
        /// The address its history reads are paced by (nil: loopback, or no limits).
        var historyKey: String?
        /// The queue is full: its socket is not read until it drains.
        var readPaused = false
        /// Waiting in `paced` for its pacer; waiting in `continuing` for a long reply's next step.
        var inPaced = false
        var inContinuing = false
        /// The state's session for it, kept so a line costs no lookup (nil: refused at once).
        var session: Session?
        /// The address key its TLS handshake's CPU is charged to (nil: loopback, or no limits).
        var handshakeKey: String?
        /// A link to another server: its lines go to `ServerState.linkReceived`, unpaced.
        let isLink: Bool

        init(id: ConnectionID, fd: Int32, peer: String, tls: TLSSession?, isLink: Bool = false) {
            self.id = id
            self.fd = fd
            self.peer = peer
            self.tls = tls
            self.isLink = isLink
            if isLink { framer = LineFramer(maxLineBytes: LinkLimits.maxLine + IRCLimits.tagBytes) }
        }

        var handshaking: Bool { tls.map { !$0.handshakeDone } ?? false }
    }

    var state: ServerState
    private let listeners: [Int32]
    /// Per listener: whether it is the link port (other servers connect there).
    private let listenerIsLink: [Bool]
    /// Per listener: whether it is the web port (HTTP and WebSocket).
    private let listenerIsWeb: [Bool]
    /// Outgoing links: the TLS context that presents our certificate, and the dials under way,
    /// answered by their threads through `dialled` and the wakeup.
    private let linkClientTLS: TLSContext?
    private let dialled = DialResults()
    /// Per listener: the TLS context when it is the TLS port (replaced on a reload).
    private var listenerTLS: [TLSContext?]
    /// The TLS port, named to a client that speaks TLS to the plain one.
    private let tlsPort: Int?
    private let epoll: Epoll
    let control: ServerHandle
    let sendQueueLimit: Int
    let logger: @Sendable (String) -> Void
    var connections = ConnectionTable<Connection>()
    /// Uploads through the host (nil: none, or no web port).
    let fileHost: FileHost?
    /// The upload worker: an upload's bytes, fsync and rename, off the loop (nil with no uploads).
    let uploads: Worker<UploadJob, UploadOutcome>?
    /// Web connections not yet upgraded to WebSocket, per address key (loopback not counted):
    /// an HTTP client holds nothing an IRC client would not, and no more of them.
    var webPending: [String: Int] = [:]
    /// HTTP requests (and WebSocket upgrades) paced per address, as IRC lines are per connection:
    /// a burst, then a steady rate (issue 43, item 6). Owner: the web runtime; bound:
    /// `WebRuntime.requestPacerLimit` addresses (past it the ones at full burst, idle, go); end:
    /// when full again and idle.
    var webRequestPacers: [String: Pacer] = [:]
    /// HTTP connections not yet upgraded, from every address: at most a share of the descriptors,
    /// so a slowloris from many addresses leaves IRC clients, the store and links theirs (item 5).
    var webHTTPConnections = 0
    /// When the HTTP share's refusal was last logged (once a minute, not once a connection).
    var webBusyLoggedAt = -Double.infinity
    private var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)
    private var flushQueue: [Connection] = []
    /// What each connection gets, in which order and when (gathered runs, a crowd's held JOINs,
    /// echoes held for their commit): decided there, written here through `Sink`.
    private var order: OutputOrder
    /// TLS connections whose session holds bytes already read from the socket: epoll will not
    /// say so, so they are read again next turn.
    private var heldTLS: [Connection] = []
    private var toClose: [Connection] = []
    /// Connections found dead this turn, told to the state together (`processDepartures`).
    private var departures: [(ConnectionID, String)] = []
    private var listenersPausedUntil: Double?
    /// TLS handshake CPU seconds per address key in the current minute, and when it began.
    private var handshakeCPU: [String: Double] = [:]
    private var handshakeMinute = Monotonic.now()
    private var handshakeRefusalsLogged: Set<String> = []
    /// Addresses whose link-port refusal was logged this minute (one line each, not one a connection).
    private var linkRefusalsLogged: Set<String> = []
    private var ticks = 0
    private var lastTrim = 0
    private var eventsThisTick = 0
    private let passwords: Worker<PasswordCheck, PasswordOutcome>
    /// Web Push POSTs (WebPush.swift): a few threads, so one slow push service does not hold up
    /// the rest; taken round the table. Empty when the server sends no pushes.
    private let pushWorkers: [Worker<PushJob, PushDelivery>]
    private var nextPushWorker = 0
    /// The store worker: the account database's reads and writes while the server runs (`StoreJob`).
    private let store: Worker<StoreJob, StoreOutcome>?
    private let accounts: AccountStore?
    private var storeFinished = false
    /// History reads (CHATHISTORY, a room's last lines for a joiner) on a connection of their own.
    private let historyReader: HistoryReader?
    /// Connections with a check at the worker (cancelled if they close first).
    private var checking: Set<ConnectionID> = []
    /// Connections with lines waiting for their pacer (or for the state to take them).
    private var paced: [Connection] = []
    /// Connections with a long reply to go on with once their output drains.
    private var continuing: [Connection] = []
    /// History: the writer thread, and the connections with output waiting for its commits.
    private let historyWriter: HistoryWriter?
    private let committed: HistoryHealth
    /// History's commits gate the output: `OutputOrder`'s commit gate says how far each
    /// connection's output may go (nothing written after a handover leaves before its commit).
    /// Below this much unsent output, a long reply's next step is made.
    private static let continueBelow = 64 * 1024
    // Connections are numbered up from 1; the wakeup and the listeners take the top of the range.
    private static let wakeupToken = UInt64.max
    private static func listenerToken(_ index: Int) -> UInt64 { UInt64.max - 1 - UInt64(index) }

    init(state: ServerState, listeners: [Int32], listenerTLS: [TLSContext?], listenerIsLink: [Bool], listenerIsWeb: [Bool], linkClientTLS: TLSContext?,
         tlsPort: Int?, control: ServerHandle, sendQueueLimit: Int, fileHost: FileHost? = nil,
         history: HistoryWriter?, reader: HistoryStore?, committed: HistoryHealth, accounts: AccountStore? = nil,
         logger: @escaping @Sendable (String) -> Void) throws(TransportError) {
        self.listenerIsLink = listenerIsLink
        self.listenerIsWeb = listenerIsWeb
        self.linkClientTLS = linkClientTLS
        historyWriter = history
        historyReader = reader.map { store in
            let box = StoreBox(store)
            return HistoryReader(name: "chat-tui history reads", wakeup: control.wakeup) { $0.run(on: box.store) }
        }
        self.committed = committed
        order = OutputOrder(holdLimit: sendQueueLimit, historyOn: history != nil)
        self.state = state
        self.listeners = listeners
        self.listenerTLS = listenerTLS
        self.tlsPort = tlsPort
        self.control = control
        self.sendQueueLimit = sendQueueLimit
        self.fileHost = fileHost
        let directory = fileHost?.directory
        uploads = directory.map { directory in Worker(name: "chat-tui uploads", wakeup: control.wakeup) { $0.run(in: directory) } }
        self.logger = logger
        passwords = Worker(name: "chat-tui passwords", wakeup: control.wakeup) { $0.run() }
        if let settings = state.config.webPush, accounts != nil, let sender = PushSender() {
            pushWorkers = (0..<4).map { _ in
                Worker(name: "chat-tui web push", wakeup: control.wakeup) { job in
                    guard let (endpoint, headers, body) = job.request(settings, now: WallClock.now()) else { return .failed("the subscription's keys are unusable") }
                    return sender.post(endpoint, headers: headers, body: body, allowPrivate: settings.allowPrivate)
                }
            }
        } else {
            pushWorkers = []
        }
        self.accounts = accounts
        store = accounts.map { accounts in
            let box = AccountsBox(accounts)
            return Worker(name: "chat-tui store", wakeup: control.wakeup) { $0.run(on: box.accounts) }
        }
        epoll = try Epoll()
        for (index, fd) in listeners.enumerated() { try epoll.add(fd, token: Self.listenerToken(index)) }
        try epoll.add(control.wakeup.fd, token: Self.wakeupToken)
    }

    func run() {
        var nextTick = Monotonic.now() + 1
        while !control.stopRequested {
            var wake = nextTick
            for connection in paced { wake = min(wake, readyAt(connection)) }
            if let due = order.heldJoinsDue { wake = min(wake, due) }
            let ready = continuing.contains { $0.output.count + order.heldBytes(of: $0.id) < Self.continueBelow }
            // Rounded up: a wait of 0.9 ms must not become a busy 0 ms one.
            let timeout = heldTLS.isEmpty && !ready ? Int32(max(0, min(1000, ((wake - Monotonic.now()) * 1000).rounded(.up)))) : 0
            let events = epoll.wait(timeoutMilliseconds: timeout)
            eventsThisTick += events.count
            for event in events {
                handle(event)
            }
            if !heldTLS.isEmpty {
                let held = heldTLS
                heldTLS.removeAll()
                for connection in held where !connection.closing && connections[connection.id.raw] != nil { read(connection) }
            }
            drainPaced()
            continueReplies()
            let now = Monotonic.now()
            if let paused = listenersPausedUntil, now >= paused { resumeListeners() }
            if now >= nextTick {
                closeIdleWeb(now: now)
                if ticks % 3600 == 0 { fileHost?.purge(now: WallClock.now()) }
                state.tick(now: WallClock.now())
                apply()
                // A writer that cannot store wakes nobody: what is held is looked at here too.
                releaseCommitted()
                nextTick = now + 1
                ticks += 1
                // A burst (a big room's join announcements, a flood) leaves freed buffers that
                // malloc keeps; hand them back once things are quiet, so idle memory stays small.
                // Not under traffic: trimming takes milliseconds, which would show as latency.
                if eventsThisTick < 50 && ticks - lastTrim >= 5 {
                    Memory.returnFreedMemory()
                    // Once: the code that only ran at start-up stops counting (an empty server's
                    // RSS was two thirds code pages faulted in 64 KiB windows).
                    if lastTrim == 0 { Memory.trimCodePages() }
                    lastTrim = ticks
                }
                eventsThisTick = 0
            }
            flushAndClose()
        }
        shutdown()
    }

    private func handle(_ event: Epoll.Event) {
        if event.token == Self.wakeupToken {
            control.wakeup.drain()
            releaseCommitted()
            if let store {
                for (job, outcome) in store.takeResults() {
                    state.storeAnswered(job, outcome, now: WallClock.now())
                    apply()
                    if case .addAccount(let id, _, _, _) = job, let connection = connections[id.raw] {
                        // Its next lines waited for this answer.
                        drain(connection)
                    }
                }
            }
            for worker in pushWorkers {
                for (job, result) in worker.takeResults() {
                    state.webPushAnswered(job, result, now: WallClock.now())
                    apply()
                }
            }
            for (job, outcome) in uploads?.takeResults() ?? [] { uploadAnswered(job, outcome) }
            for (check, outcome) in passwords.takeResults() {
                checking.remove(check.connection)
                state.passwordChecked(check, outcome, now: WallClock.now())
                apply()
                // An upload's HTTP Basic login (WebRuntime.swift).
                if let connection = connections[check.connection.raw], connection.pendingLogin != nil {
                    webLoginChecked(connection, check, outcome)
                    continue
                }
                // Its next lines waited for this answer.
                if let connection = connections[check.connection.raw] { drain(connection) }
            }
            for (query, result) in historyReader?.takeResults() ?? [] {
                state.historyAnswered(query, result, now: WallClock.now())
                apply()
                if let connection = connections[query.connection.raw] { drain(connection) }
            }
            for (block, outcome) in dialled.list.withLock({ list in defer { list.removeAll() }; return list }) {
                linkDialled(block, outcome)
            }
            // A new certificate (SIGHUP): new connections get it; those up keep theirs.
            if let context = control.takeReplacementTLS() {
                listenerTLS = listenerTLS.map { $0 == nil ? nil : context }
                logger("TLS certificate reloaded")
            }
            return
        }
        if event.token >= Self.listenerToken(listeners.count - 1) {
            let index = Int(Self.listenerToken(0) - event.token)
            acceptAll(listeners[index], tls: listenerTLS[index], link: listenerIsLink[index], web: listenerIsWeb[index])
            return
        }
        guard let connection = connections[event.token] else { return }
        if connection.handshaking {
            if event.readable || event.writable || event.failed { read(connection) }
            return
        }
        if event.writable { queueFlush(connection) }
        // An error or hang-up is read even from a paused connection, to its end.
        if event.readable || event.failed { read(connection, evenIfPaused: event.failed) }
    }

    // MARK: Accepting

    private func acceptAll(_ listener: Int32, tls: TLSContext?, link: Bool = false, web: Bool = false) {
        // A bounded batch per turn keeps a connect storm from starving established clients:
        // 32 accepts cost well under a millisecond, so a chatting bystander waits no longer.
        for _ in 0..<32 {
            let accepted: (fd: Int32, peer: sockaddr_storage)?
            do {
                accepted = try Accept.next(listener)
            } catch {
                // Out of descriptors: stop watching the listeners briefly, or epoll reports them forever.
                logger("accept failed: \(error); pausing new connections for 100 ms")
                pauseListeners()
                return
            }
            guard let (fd, address) = accepted else { return }
            Sockets.setNoDelay(fd)
            let id = connections.nextID()
            let peer = SocketAddress.describe(address)
            // The web port speaks HTTP and HTTPS: which one is known from the first byte (`read`).
            let connection = Connection(id: ConnectionID(id), fd: fd, peer: peer,
                                        tls: web ? nil : tls.map { TLSSession(context: $0, fd: fd, server: true) }, isLink: link)
            if web { connection.offeredTLS = tls }
            do {
                try epoll.add(fd, token: id)
            } catch {
                logger("[\(peer)] refused: \(error)")
                close(fd)
                continue
            }
            connections.insert(connection, as: id)
            let host = SocketAddress.host(of: address)
            if web {
                // HTTP first; an IRC session only once it upgrades to WebSocket (`webRead`).
                connection.web = .http(webReader())
                admitWebConnection(connection, host: host)
                continue
            }
            if link {
                // Another server: no pacing and no client limits once in; the link block's
                // password and certificate are what let it in. Before that it is a stranger: an
                // address that failed to authenticate lately is closed at once, and handshakes
                // still under way are bounded per address and in all, with their TLS CPU.
                if let refusal = linkAdmissionProblem(host: host, tls: tls != nil) {
                    if linkRefusalsLogged.insert(ServerState.throttleKey(host)).inserted { logger("[\(peer)] link port: refused: \(refusal)") }
                    connections.remove(id)
                    epoll.remove(fd)
                    close(fd)
                    continue
                }
                if tls != nil, state.config.connectionLimits != nil { connection.handshakeKey = ServerState.throttleKey(host) }
                state.linkConnected(connection.id, peer: peer, dialled: nil, secure: tls != nil, now: WallClock.now())
                apply()
                continue
            }
            if let limits = state.config.connectionLimits, !(limits.exemptLoopback && ServerState.isLoopback(host)) {
                connection.pacer = Pacer(burst: limits.burst, perSecond: limits.linesPerSecond, now: Monotonic.now())
                connection.historyKey = ServerState.throttleKey(host)
                if tls != nil {
                    let key = ServerState.throttleKey(host)
                    connection.handshakeKey = key
                    if handshakeSpent(key) >= limits.handshakeCPUPerMinute {
                        // Nothing can be said in plain text to a TLS client: closed, and the log says why once.
                        if handshakeRefusalsLogged.insert(key).inserted {
                            logger("[\(peer)] TLS refused: handshakes from \(key) cost \(Int(handshakeSpent(key) * 1000)) ms of CPU this minute")
                        }
                        connections.remove(id)
                        epoll.remove(fd)
                        close(fd)
                        continue
                    }
                }
            }
            state.connected(connection.id, host: host, peer: peer, secure: connection.tls != nil, now: WallClock.now())
            connection.session = state.people.sessions[connection.id]
            // (The local address only when there are uploads: getsockname is a system call per arrival.)
            if fileHost != nil { connection.session?.fileHostBase = fileHostBase(secure: tls != nil, host: SocketAddress.localHost(of: fd)) }
            apply()
        }
    }

    /// Why a connection to the link port is closed at once, or nil: its address failed to
    /// authenticate lately (`ServerState.linkFailures`), or (with limits on, loopback as they
    /// say) it has `linkPendingPerAddress` handshakes under way, the port `linkPendingTotal`, or
    /// its TLS handshakes spent the minute's CPU. Bound: a stalled stranger holds one of at most
    /// 64 slots for the handshake timeout, not a descriptor each of 20,000.
    private func linkAdmissionProblem(host: String, tls: Bool) -> String? {
        if state.linkRefusedAtAccept(host: host, now: WallClock.now()) { return "it failed to authenticate \(LinkFailures.limit) times in a minute" }
        guard let limits = state.config.connectionLimits, !(limits.exemptLoopback && ServerState.isLoopback(host)) else { return nil }
        let key = ServerState.throttleKey(host)
        let pending = state.pendingLinkHandshakes(from: key)
        if pending.fromAddress >= Self.linkPendingPerAddress { return "\(pending.fromAddress) link handshakes from \(key) under way already" }
        if pending.total >= Self.linkPendingTotal { return "\(pending.total) link handshakes under way already" }
        if tls && handshakeSpent(key) >= limits.handshakeCPUPerMinute {
            return "TLS handshakes from \(key) cost \(Int(handshakeSpent(key) * 1000)) ms of CPU this minute"
        }
        return nil
    }
    static let linkPendingPerAddress = 4
    static let linkPendingTotal = 64

    /// The web port's first byte: 0x16 starts a TLS handshake (HTTPS, WSS), anything else is
    /// plain HTTP. False while there is no byte yet, or when the connection is gone.
    private func startWebTLS(_ connection: Connection) -> Bool {
        guard let context = connection.offeredTLS else { return true }
        var first: UInt8 = 0
        let got = recv(connection.fd, &first, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return false }
        connection.offeredTLS = nil
        guard got == 1 else {
            lost(connection, reason: got == 0 ? "Connection closed" : "Read error: \(TransportError.errnoText(errno))")
            return false
        }
        if first == 0x16 {
            connection.tls = TLSSession(context: context, fd: connection.fd, server: true)
            let host = SocketAddress.hostOfPeer(connection.peer)
            if let limits = state.config.connectionLimits, !(limits.exemptLoopback && ServerState.isLoopback(host)) {
                let key = ServerState.throttleKey(host)
                guard handshakeSpent(key) < limits.handshakeCPUPerMinute else {
                    if handshakeRefusalsLogged.insert(key).inserted {
                        logger("[\(connection.peer)] web TLS refused: handshakes from \(key) cost \(Int(handshakeSpent(key) * 1000)) ms of CPU this minute")
                    }
                    lost(connection, reason: "TLS refused")
                    return false
                }
                connection.handshakeKey = key
            }
        }
        return true
    }

    /// A web connection that upgraded to WebSocket becomes an IRC client like any other: the
    /// same pacing (unless loopback) and the same session.
    func admitWebClient(_ connection: Connection, requestHost: String?) {
        let host = SocketAddress.hostOfPeer(connection.peer)
        if let limits = state.config.connectionLimits, !(limits.exemptLoopback && ServerState.isLoopback(host)) {
            connection.pacer = Pacer(burst: limits.burst, perSecond: limits.linesPerSecond, now: Monotonic.now())
            connection.historyKey = ServerState.throttleKey(host)
        }
        state.connected(connection.id, host: host, peer: connection.peer, secure: connection.tls != nil, now: WallClock.now())
        connection.session = state.people.sessions[connection.id]
        connection.session?.fileHostBase = fileHostBase(secure: connection.tls != nil, host: requestHost, withPort: true)
            ?? fileHostBase(secure: connection.tls != nil, host: SocketAddress.localHost(of: connection.fd))
        apply()
    }

    /// The handshake CPU an address has cost this minute (a new minute forgets the last).
    private func handshakeSpent(_ key: String) -> Double {
        if Monotonic.now() - handshakeMinute >= 60 {
            handshakeMinute = Monotonic.now()
            handshakeCPU.removeAll()
            handshakeRefusalsLogged.removeAll()
            linkRefusalsLogged.removeAll()
        }
        return handshakeCPU[key] ?? 0
    }

    /// Whether the web port speaks HTTPS too (it has the server's certificate).
    var webHasTLS: Bool { zip(listenerTLS, listenerIsWeb).contains { $0.1 && $0.0 != nil } }

    /// An upload's account password, to the password worker; the connection is not read meanwhile.
    func submitWebLogin(_ connection: Connection, _ check: PasswordCheck) {
        checking.insert(check.connection)
        passwords.submit(check)
        setReadPaused(connection, true)
    }

    func resumeReading(_ connection: Connection) { setReadPaused(connection, false) }

    /// A download's next chunk goes when the socket can take it.
    func setWritableForDownload(_ connection: Connection) { setWritable(connection, true) }

    private func setWritable(_ connection: Connection, _ writable: Bool) {
        guard connection.waitingForWritable != writable else { return }
        connection.waitingForWritable = writable
        epoll.modify(connection.fd, token: connection.id.raw, readable: !connection.readPaused, writable: writable)
    }

    /// Stops or resumes reading a connection (its queue full, or drained again).
    func setReadPaused(_ connection: Connection, _ paused: Bool) {
        guard connection.readPaused != paused else { return }
        connection.readPaused = paused
        epoll.modify(connection.fd, token: connection.id.raw, readable: !paused, writable: connection.waitingForWritable)
        // Bytes TLS already decrypted are not announced by epoll: look at them again.
        if !paused, let tls = connection.tls, tls.buffered { heldTLS.append(connection) }
    }

    private func pauseListeners() {
        for fd in listeners { epoll.remove(fd) }
        listenersPausedUntil = Monotonic.now() + 0.1
    }

    private func resumeListeners() {
        for (index, fd) in listeners.enumerated() { try? epoll.add(fd, token: Self.listenerToken(index)) }
        listenersPausedUntil = nil
    }

    // MARK: Reading

    private func read(_ connection: Connection, evenIfPaused: Bool = false) {
        if connection.offeredTLS != nil, !startWebTLS(connection) { return }
        if let tls = connection.tls, !tls.handshakeDone {
            // A handshake step: whatever it waits for is what epoll watches next. A client that
            // stalls here costs one idle socket until the registration timeout closes it.
            let started = connection.handshakeKey == nil ? 0 : ThreadCPU.now()
            let progress = tls.handshake()
            if let key = connection.handshakeKey { handshakeCPU[key, default: 0] += ThreadCPU.now() - started }
            switch progress {
            case .done:
                if connection.web == nil {
                    state.secured(connection.id, clientCertificate: tls.peerFingerprint)
                    apply()
                }
                setWritable(connection, !connection.output.isEmpty)
                queueFlush(connection)
            case .wantRead:
                setWritable(connection, false)
                return
            case .wantWrite:
                setWritable(connection, true)
                return
            case .failed(let reason):
                logger("[\(connection.peer)] TLS handshake failed: \(PlainText.visible(reason))")
                lost(connection, reason: "TLS handshake failed")
                return
            }
        }
        // A full queue: nothing more is read until it drains (the kernel holds the rest back).
        // A paused connection that fails is not read further: it is gone with what it queued.
        if connection.readPaused {
            if evenIfPaused { lost(connection, reason: "Connection closed") }
            return
        }
        // One read per turn: level-triggered epoll brings us back while data remains, so a
        // flooding peer gets its share and no more.
        // A paced client reads 4 KiB at a time, so one read cannot put thousands of lines past its queue's bound.
        let limit = connection.pacer == nil ? readBuffer.count : 4096
        let result = connection.tls.map { $0.read(into: &readBuffer, limit: limit) } ?? SocketRead.once(connection.fd, into: &readBuffer, limit: limit)
        switch result {
        case .data(let count):
            if connection.firstRead {
                connection.firstRead = false
                // 0x16 0x03: a TLS handshake record on the plain port. Say where TLS is, in plain text.
                if connection.tls == nil, connection.web == nil, count >= 2, readBuffer[0] == 0x16, readBuffer[1] == 0x03 {
                    let answer = tlsPort.map { "This is the plain-text port; TLS is on port \($0)" } ?? "This server does not speak TLS; connect without it"
                    logger("[\(connection.peer)] spoke TLS to the plain port; told: \(answer)")
                    connection.output.append(IRCMessage(command: "ERROR", params: [answer]).serialized())
                    markClosing(connection)
                    return
                }
            }
            if connection.web != nil {
                webRead(connection, Array(readBuffer[0..<count]))
                return
            }
            readBuffer.withUnsafeBufferPointer { raw in
                connection.framer.feed(buffer: UnsafeBufferPointer(rebasing: raw[0..<count])) { framed in
                    connection.queue.append(framed)
                }
            }
            drain(connection)
            // One TLS record per read: what the session already holds is read next turn.
            if let tls = connection.tls, tls.buffered, !connection.closing, !connection.readPaused { heldTLS.append(connection) }
        case .wouldBlock:
            return
        case .endOfStream:
            let pending = connection.framer.pendingBytes
            let reason = pending > 0 ? "Connection closed mid-line (\(pending) bytes discarded)" : "Connection closed"
            lost(connection, reason: reason)
        case .failed(let code):
            lost(connection, reason: code == ECONNRESET ? "Connection reset by peer" : "Read error: \(TransportError.errnoText(code))")
        }
    }

    /// Hands queued lines to the state while its pacer allows and the state takes them; what
    /// is left waits in `paced`. A full queue pauses reading; a drained one resumes it.
    func drain(_ connection: Connection) {
        if connection.isLink {
            drainLink(connection)
            return
        }
        let now = Monotonic.now()
        // One reading of the clock for the lines of one read (they arrived together).
        let wall = WallClock.now()
        var waiting = false
        while connection.queueHead < connection.queue.count, !connection.closing {
            guard let session = connection.session, !session.gone else { break }
            guard !session.busy else { break }
            if var pacer = connection.pacer {
                let cost: Int
                if case .line(let line) = connection.queue[connection.queueHead] {
                    cost = Pacer.cost(of: line)
                } else {
                    cost = 1
                }
                // A history read waits for its address's pacer as well (both, or neither, taken).
                let addressKey = cost == Pacer.historyCost ? connection.historyKey : nil
                var address = addressKey.map { historyPacers[$0] ?? Self.newHistoryPacer(now) }
                guard pacer.readyAt(cost) <= now, (address?.readyAt(1) ?? now) <= now,
                      pacer.take(cost, now: now), address?.take(1, now: now) ?? true else {
                    connection.waitingCost = cost
                    waiting = true
                    break
                }
                if let addressKey, let address { rememberHistoryPacer(addressKey, address, now: now) }
                connection.pacer = pacer
            }
            // Moved out of the queue (its slot is about to be dropped), not copied.
            var framed = FramedLine.overlong(discardedBytes: 0)
            swap(&framed, &connection.queue[connection.queueHead])
            connection.queueHead += 1
            switch framed {
            case .line(let line): state.received(line, session: session, now: wall)
            case .overlong(let discarded): state.receivedOverlongLine(from: connection.id, discardedBytes: discarded)
            }
            apply()
        }
        if connection.queueHead == connection.queue.count {
            // A busy client's queue keeps its storage; a quiet one's (a few lines at a time, most
            // connections) goes, so an idle connection holds none.
            connection.queue.removeAll(keepingCapacity: connection.queue.count > 8 && connection.queue.count <= 64)
            connection.queueHead = 0
        } else if connection.queueHead >= 1024 {
            connection.queue.removeFirst(connection.queueHead)
            connection.queueHead = 0
        }
        if waiting && !connection.inPaced {
            connection.inPaced = true
            paced.append(connection)
        }
        let bound = state.config.connectionLimits?.queuedLines ?? 4096
        if connection.queued >= bound { setReadPaused(connection, true) } else if connection.queued < bound / 2 { setReadPaused(connection, false) }
    }

    /// A link's lines, all of them: another server is not paced (its burst is thousands of lines).
    private func drainLink(_ connection: Connection) {
        let wall = WallClock.now()
        while connection.queueHead < connection.queue.count, !connection.closing {
            var framed = FramedLine.overlong(discardedBytes: 0)
            swap(&framed, &connection.queue[connection.queueHead])
            connection.queueHead += 1
            if case .line(let line) = framed { state.linkReceived(line, from: connection.id, now: wall) }
            apply()
        }
        connection.queue.removeAll(keepingCapacity: connection.queue.count <= 64)
        connection.queueHead = 0
    }

    // MARK: Links out

    /// Dials a link on a thread of its own (resolving and connecting block); the socket comes
    /// back to the loop through `dialled` and the wakeup.
    private func dial(_ block: LinkBlock) {
        guard let host = block.host else { return }
        let results = dialled, wakeup = control.wakeup
        Threads.start(name: "chat-tui link \(block.name)") {
            let outcome: Result<Int32, TransportError>
            do throws(TransportError) {
                outcome = .success(try Sockets.connect(host: host, port: block.port, timeout: 10, nonBlocking: true))
            } catch {
                outcome = .failure(error)
            }
            results.list.withLock { $0.append((block, outcome)) }
            wakeup.signal()
        }
    }

    /// A dial's answer: the connection joins the loop (its TLS handshake starts at once), or the state hears why not.
    private func linkDialled(_ block: LinkBlock, _ outcome: Result<Int32, TransportError>) {
        switch outcome {
        case .failure(let error):
            state.linkDialFailed(block.name, reason: error.description, now: WallClock.now())
            apply()
        case .success(let fd):
            guard !block.tls || linkClientTLS != nil else {
                close(fd)
                state.linkDialFailed(block.name, reason: "TLS is not set up on this server (no certificate)", now: WallClock.now())
                apply()
                return
            }
            let id = connections.nextID()
            let tls = block.tls ? linkClientTLS.map { TLSSession(context: $0, fd: fd, server: false) } : nil
            let connection = Connection(id: ConnectionID(id), fd: fd, peer: "\(block.host ?? ""):\(block.port)", tls: tls, isLink: true)
            do {
                try epoll.add(fd, token: id)
            } catch {
                close(fd)
                state.linkDialFailed(block.name, reason: "\(error)", now: WallClock.now())
                apply()
                return
            }
            connections.insert(connection, as: id)
            state.linkConnected(connection.id, peer: connection.peer, dialled: block, secure: tls != nil, now: WallClock.now())
            apply()
            // The client speaks first in TLS: its hello goes out now.
            if tls != nil { read(connection) }
        }
    }

    /// When a paced connection's next line may go: its own pacer, and for a history read its
    /// address's too.
    private func readyAt(_ connection: Connection) -> Double {
        let own = connection.pacer?.readyAt(connection.waitingCost) ?? 0
        guard connection.waitingCost == Pacer.historyCost, let key = connection.historyKey, let address = historyPacers[key] else { return own }
        return max(own, address.readyAt(1))
    }

    /// History reads paced per address, on top of each connection's pacing: sixteen connections
    /// from one address no longer read sixteen times as much (issue 43, item 9). A burst of 20,
    /// then 4 a second. Owner: the runtime; bound: 10,000 addresses (the full ones dropped first);
    /// end: full again.
    private var historyPacers: [String: Pacer] = [:]
    private static func newHistoryPacer(_ now: Double) -> Pacer { Pacer(burst: 20, perSecond: 4, now: now) }
    private func rememberHistoryPacer(_ key: String, _ pacer: Pacer, now: Double) {
        if historyPacers[key] == nil && historyPacers.count >= 10_000 {
            historyPacers = historyPacers.filter { $0.value.readyAt(20) > now }
        }
        historyPacers[key] = pacer
    }

    /// Connections whose pacer may allow their next line by now.
    private func drainPaced() {
        guard !paced.isEmpty else { return }
        let now = Monotonic.now()
        let due = paced.filter { readyAt($0) <= now || $0.closing }
        guard !due.isEmpty else { return }
        paced.removeAll { readyAt($0) <= now || $0.closing }
        for connection in due {
            connection.inPaced = false
            if !connection.closing && connections[connection.id.raw] != nil { drain(connection) }
        }
    }

    /// The next step of each long reply whose connection has taken most of the last one.
    private func continueReplies() {
        guard !continuing.isEmpty else { return }
        let list = continuing
        continuing.removeAll()
        for connection in list {
            connection.inContinuing = false
            guard !connection.closing, connections[connection.id.raw] != nil else { continue }
            if connection.output.count + order.heldBytes(of: connection.id) >= Self.continueBelow {
                connection.inContinuing = true
                continuing.append(connection)
                continue
            }
            state.continueReply(connection.id, now: WallClock.now())
            apply()
            drain(connection)
        }
    }

    /// The peer is gone: every complete line it sent has been handled already.
    func lost(_ connection: Connection, reason: String) {
        guard !connection.closing else { return }
        // Its last lines are handled before it goes, as far as its pacing allows; a QUIT among
        // the rest is handled too, so its reason is not lost.
        drain(connection)
        guard !connection.closing else { return }
        if let quit = connection.queue[connection.queueHead...].last(where: { if case .line(let line) = $0 { return line.starts(with: Array("QUIT".utf8)) } else { return false } }),
           case .line(let line) = quit, let session = connection.session, !session.busy {
            state.received(line, session: session, now: WallClock.now())
            apply()
            guard !connection.closing else { return }
        }
        markClosing(connection)
        departures.append((connection.id, reason))
    }

    /// Tells the state about every connection found dead this turn, after all of them are
    /// marked closing: when thousands drop at once (a network blip, a load test ending), each
    /// QUIT then goes only to those still there, not into the buffers of the other dead ones.
    private func processDepartures() {
        while !departures.isEmpty {
            let batch = departures
            departures.removeAll()
            let now = WallClock.now()
            for (id, reason) in batch {
                state.disconnected(id, reason: reason, now: now)
                apply()
            }
        }
    }

    // MARK: Applying decisions

    func apply() {
        while !state.outbox.isEmpty {
            var outbox = state.takeOutbox()
            defer { state.recycle(&outbox) }
            // Taken from the end of the reversed list: each item is moved out, not copied (a copy
            // is a retain now and a release when the list is emptied, per line sent).
            outbox.items.reverse()
            var sink = Sink(runtime: self)
            while let item = outbox.items.popLast() {
                switch item {
                case .send(let id, let bytes):
                    order.send(bytes, to: id, &sink)
                case .sendAhead(let id, let bytes):
                    order.sendAhead(bytes, to: id, &sink)
                case .sendAfterCommit(let id, let bytes, let msgid):
                    order.sendAfterCommit(bytes, to: id, msgid: msgid, &sink)
                case .deliver(let delivery):
                    if let historyWriter, !delivery.rows.isEmpty {
                        historyWriter.append(delivery.rows)
                        handOver(delivery.rows)
                    }
                    order.deliver(delivery, &sink)
                case .close(let id):
                    if let connection = connections[id.raw] { markClosing(connection) }
                case .log(let text):
                    logger(text)
                case .checkPassword(let check):
                    checking.insert(check.connection)
                    passwords.submit(check)
                case .readHistory(let query):
                    historyReader?.submit(query)
                case .saveRooms(let changes):
                    historyWriter?.append(roomChanges: changes.list)
                case .dialLink(let block):
                    dial(block)
                case .storeRows(let rows):
                    if let historyWriter, !rows.isEmpty {
                        historyWriter.append(rows)
                        handOver(rows)
                    }
                case .setMarker(let account, let target, let time):
                    historyWriter?.setReadMarker(account: account, target: target, time: time)
                case .store(let job):
                    if storeFinished, let accounts {
                        // Stopping: the worker is done; what is left is written here.
                        state.storeAnswered(job, job.run(on: accounts), now: WallClock.now())
                    } else {
                        store?.submit(job)
                    }
                case .webPush(let job):
                    if pushWorkers.isEmpty {
                        state.webPushAnswered(job, .failed("no push workers"), now: WallClock.now())
                    } else {
                        pushWorkers[nextPushWorker % pushWorkers.count].submit(job)
                        nextPushWorker &+= 1
                    }
                case .forgetRow(let target, let msgid):
                    historyWriter?.forget(target: target, msgid: msgid)
                case .renameHistory(let old, let new):
                    historyWriter?.rename(from: old, to: new)
                case .continueReply(let id):
                    if let connection = connections[id.raw], !connection.inContinuing {
                        connection.inContinuing = true
                        continuing.append(connection)
                    }
                }
            }
        }
    }

    /// Where `OutputOrder` writes: a connection's output buffer, within its bounds.
    private struct Sink: OutputSink {
        // Unsafe unowned: made for one call and dropped, while the runtime lives; a plain
        // `unowned` paid an unowned retain and release per write (callgrind: 290 instructions
        // a direct message).
        unowned(unsafe) let runtime: ServerRuntime

        func write(_ bytes: [UInt8], from: Int, to id: ConnectionID) -> Int? { runtime.write(bytes, from: from, to: id) }

        func isOpen(_ id: ConnectionID) -> Bool { runtime.isOpen(id) }

        var committed: Int64 { runtime.committed.committed.load(ordering: .acquiring) }

        var failing: Bool { runtime.committed.failing.load(ordering: .acquiring) }

        func wake(_ id: ConnectionID) {
            guard let connection = runtime.connections[id.raw], !connection.closing else { return }
            runtime.queueFlush(connection)
        }
    }

    private func isOpen(_ id: ConnectionID) -> Bool {
        guard let connection = connections[id.raw] else { return false }
        return !connection.closing
    }

    private func write(_ bytes: [UInt8], from: Int, to id: ConnectionID) -> Int? {
        guard let connection = connections[id.raw], !connection.closing else { return nil }
        return write(bytes, from: from, connection)
    }

    /// `bytes[from...]` onto the connection's output, now (`OutputOrder` decided it is its turn);
    /// where they begin in its stream (nil: nothing appended).
    func write(_ bytes: [UInt8], from: Int, _ connection: Connection) -> Int? {
        // Where these bytes begin in the connection's stream (whatever else is appended to it).
        let start = connection.output.sent + connection.output.count
        switch connection.web {
        case .websocket(_, let subprotocol)?: connection.output.append(WebSocket.messages(bytes[from...], as: subprotocol))
        // After its close frame (or before its upgrade) nothing of IRC goes to a web connection.
        case .closing?, .http?: return nil
        case nil: connection.output.append(bytes, from: from)
        }
        // The limit is on what the peer has not taken: it applies at once to a socket the
        // kernel already refuses, and otherwise after this turn's write (`flushAndClose`).
        // Within one turn the output may grow to four times the limit (a busy room's burst)
        // but no further: replies one client's pipelined queries multiply stop there.
        let limit = connection.waitingForWritable ? sendQueueLimit : sendQueueLimit * 4
        if connection.output.count > limit {
            dropSlowReader(connection)
        } else {
            queueFlush(connection)
        }
        return start
    }

    /// Output held for commits that have happened now goes out, in order.
    private func releaseCommitted() {
        var sink = Sink(runtime: self)
        order.released(&sink)
    }

    private func handOver(_ rows: [HistoryRow]) {
        for row in rows { order.handOver(row.msgid) }
    }

    /// How many of a connection's unsent bytes may go now (`OutputOrder`'s commit gate).
    private func sendable(_ connection: Connection) -> Int {
        guard order.isGated(connection.id) else { return .max }
        return order.sendable(connection.id, sent: connection.output.sent, committed: committed.committed.load(ordering: .acquiring),
                       unbounded: connection.output.count > sendQueueLimit || committed.failing.load(ordering: .acquiring))
    }

    /// A reader this far behind is stalled; drop it rather than hold memory for it.
    private func dropSlowReader(_ connection: Connection) {
        guard !connection.closing else { return }
        markClosing(connection, discardOutput: true)
        departures.append((connection.id, "SendQ exceeded"))
    }

    func queueFlush(_ connection: Connection) {
        guard !connection.queuedForFlush else { return }
        connection.queuedForFlush = true
        flushQueue.append(connection)
    }

    func markClosing(_ connection: Connection, discardOutput: Bool = false) {
        guard !connection.closing else { return }
        // What gathered room lines and a crowd's held JOINs it is owed go with its last words
        // (a peer lost mid-turn).
        if !discardOutput {
            var sink = Sink(runtime: self)
            order.closing(connection.id, &sink)
            guard !connection.closing else { return }
        }
        connection.closing = true
        if discardOutput { connection.output = OutputBuffer() }
        toClose.append(connection)
    }

    private func flushAndClose() {
        var sink = Sink(runtime: self)
        let heldRuns = order.heldRuns
        order.endOfTurn(now: Monotonic.now(), &sink)
        for _ in heldRuns..<order.heldRuns { control.countHeldRun() }
        repeat {
            flushQueued()
            processDepartures()
            // The departures' QUITs to a room are gathered like any room delivery: out this turn.
            order.flushGathered(&sink)
        } while !flushQueue.isEmpty
        assert(order.gathering == nil, "a turn ends with every gathered room delivery handed out")
        closeClosing()
        control.countTurn()
    }

    private func flushQueued() {
        let queue = flushQueue
        flushQueue.removeAll(keepingCapacity: true)
        for connection in queue {
            connection.queuedForFlush = false
            guard !connection.closing, connections[connection.id.raw] != nil, !connection.handshaking else { continue }
            let limit = sendable(connection)
            if limit < connection.output.count {
                // What follows the limit waits for its commit: not woken by writability meanwhile.
                if limit > 0 {
                    let flushed = connection.tls.map { connection.output.flush(to: $0, limit: limit) }
                        ?? connection.output.flush(to: connection.fd, limit: limit)
                    if case .failed(let code) = flushed {
                        markClosing(connection, discardOutput: true)
                        departures.append((connection.id, code == EPIPE || code == ECONNRESET
                            ? "Connection reset by peer" : "Write error: \(TransportError.errnoText(code))"))
                        continue
                    }
                    if flushed == .wouldBlock {
                        setWritable(connection, true)
                        continue
                    }
                }
                setWritable(connection, false)
                order.park(connection.id)
                continue
            }
            let flushed = connection.tls.map { connection.output.flush(to: $0) } ?? connection.output.flush(to: connection.fd)
            switch flushed {
            case .done:
                setWritable(connection, false)
                // A web connection whose last answer (or close frame) is out: our side is done
                // (FIN), its side is read and dropped until it closes.
                if connection.download != nil {
                    refillDownload(connection)
                } else if case .closing? = connection.web {
                    connection.tls?.shutdown()
                    Glibc.shutdown(connection.fd, Int32(SHUT_WR))
                }
            case .wouldBlock:
                if connection.output.count > sendQueueLimit {
                    dropSlowReader(connection)
                } else {
                    setWritable(connection, true)
                }
            case .failed(let code):
                markClosing(connection, discardOutput: true)
                departures.append((connection.id, code == EPIPE || code == ECONNRESET
                    ? "Connection reset by peer" : "Write error: \(TransportError.errnoText(code))"))
            }
        }
    }

    private func closeClosing() {
        while !toClose.isEmpty {
            let closing = toClose
            toClose.removeAll()
            for connection in closing {
                // Output held for a commit goes with the last words, up to the first echo whose
                // row is not stored yet (with a full disk it may never be: no echo claims it).
                for bytes in order.lastWords(of: connection.id, committed: committed.committed.load(ordering: .acquiring)) {
                    switch connection.web {
                    case .websocket(_, let subprotocol)?: connection.output.append(WebSocket.messages(bytes[...], as: subprotocol))
                    case .closing?, .http?: break
                    case nil: connection.output.append(bytes)
                    }
                }
                // A WebSocket ends with its close frame, after its last words.
                if case .websocket? = connection.web {
                    connection.output.append(WebSocket.closeFrame(.normal))
                    connection.web = .closing(until: 0)
                }
                sendLastWords(connection)
                if checking.contains(connection.id) {
                    let id = connection.id
                    passwords.cancel(where: { $0.connection == id }, answer: .cancelled)
                }
                epoll.remove(connection.fd)
                Glibc.shutdown(connection.fd, Int32(SHUT_RDWR))
                close(connection.fd)
                connections.remove(connection.id.raw)
                order.forget(connection.id)
                webUncounted(connection)
                webEnded(connection)
            }
        }
    }

    /// What a peer sent that was never read is read and dropped before its socket closes (up to
    /// 64 KiB): closing with unread input sends a reset, and the peer's kernel then drops the
    /// last words still waiting to be read (seen as "connection reset" instead of "the host
    /// closed the room", under AddressSanitizer's slower loop).
    private func discardUnread(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var rounds = 0
        while rounds < 16 && recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 { rounds += 1 }
    }

    /// Last words (ERROR) go out if the socket takes them now, then close_notify on TLS; a
    /// stalled peer gets nothing more.
    private func sendLastWords(_ connection: Connection) {
        if let tls = connection.tls {
            guard tls.handshakeDone else { return }
            _ = connection.output.flush(to: tls)
            tls.shutdown()
        } else {
            _ = connection.output.flush(to: connection.fd)
        }
    }

    private func shutdown() {
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

    /// How many runs of join announcements were held back for a crowd (`HeldJoins`).
    public var heldAnnouncementRuns: Int { heldRuns.load(ordering: .relaxed) }
    func countHeldRun() { heldRuns.add(1, ordering: .relaxed) }
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
                writer = try HistoryWriter(path: history.path, synchronous: history.synchronous, committed: { _ in
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

/// Hands the account store to the store worker's thread, the one that uses it from then on.
private final class AccountsBox: @unchecked Sendable {
    let accounts: AccountStore
    init(_ accounts: AccountStore) { self.accounts = accounts }
}

/// Sockets of outgoing links, from their dialling threads to the loop.
private final class DialResults: Sendable {
    let list = Locked<[(LinkBlock, Result<Int32, TransportError>)]>([])
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
