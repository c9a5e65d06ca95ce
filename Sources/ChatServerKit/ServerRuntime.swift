#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ChatLink
import ChatStore
import ChatWeb
import ChatTransport
import IRCWire

/// The shell around `ServerState`: owns the sockets, the epoll loop and the clock, feeds the
/// state events, and applies what it decides. One thread; one `send` per connection per loop turn.
final class ServerRuntime {
    final class Connection {
        let id: ConnectionID
        let fd: Int32
        let peer: String
        /// What only a web-port connection holds (HTTP, WebSocket, uploads and downloads): kept
        /// apart so an IRC connection does not carry its ~350 bytes. Owner: this connection;
        /// made at accept on the web port (or at first use); ends with it.
        final class WebSide {
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
            /// On the web port with a certificate: the context to speak TLS with, if the first byte asks for it.
            var offeredTLS: TLSContext?
        }
        private var webSide: WebSide?
        private var side: WebSide { madeOnce(&webSide, WebSide.init) }
        /// Marks it a web-port connection: its web state is made now, timed from now.
        func makeWebSide() { webSide = WebSide() }
        // The web side's fields, read through and written in place (no copy of a reader's buffer).
        var web: WebMode? { get { webSide?.web } _modify { yield &side.web } }
        var webSince: Double { get { webSide?.webSince ?? 0 } _modify { yield &side.webSince } }
        var upload: (file: FileHost.Upload, keepAlive: Bool, host: String?, secure: Bool)? { get { webSide?.upload } _modify { yield &side.upload } }
        var uploadWindow: (since: Double, bytes: Int) { get { webSide?.uploadWindow ?? (0, 0) } _modify { yield &side.uploadWindow } }
        var uploadQueued: Int { get { webSide?.uploadQueued ?? 0 } _modify { yield &side.uploadQueued } }
        var uploadStoring: (file: FileHost.Upload, keepAlive: Bool, host: String?, secure: Bool)? { get { webSide?.uploadStoring } _modify { yield &side.uploadStoring } }
        var pendingLogin: (request: HTTPRequest, length: Int)? { get { webSide?.pendingLogin } _modify { yield &side.pendingLogin } }
        var download: (fd: Int32, remaining: Int, keepAlive: Bool)? { get { webSide?.download } _modify { yield &side.download } }
        var webKey: String? { get { webSide?.webKey } _modify { yield &side.webKey } }
        var offeredTLS: TLSContext? { get { webSide?.offeredTLS } _modify { yield &side.offeredTLS } }
        var framer = LineFramer()
        var output = OutputBuffer()
        var waitingForWritable = false
        var queuedForFlush = false
        var closing = false
        /// Set on the TLS port, and on the web port once its first byte is a TLS handshake's;
        /// the handshake runs inside the loop, a step per readiness.
        var tls: TLSSession?
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
        /// Behind (RuntimeBackpressure.swift): since when its unsent output passed the mark; how
        /// much it had taken when it last took something; given up on until it catches up.
        var behindSince: Double?
        var progress: (sent: Int, at: Double) = (0, 0)
        var givenUp = false
        /// Its next line is a message to a reader behind: it waits in `heldSenders`.
        var heldBySlowReader = false
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
    let listeners: [Int32]
    /// Per listener: whether it is the link port (other servers connect there).
    let listenerIsLink: [Bool]
    /// Per listener: whether it is the web port (HTTP and WebSocket).
    let listenerIsWeb: [Bool]
    /// Outgoing links: the TLS context that presents our certificate, and the dials under way,
    /// answered by their threads through `dialled` and the wakeup.
    let linkClientTLS: TLSContext?
    let dialled = DialResults()
    /// Per listener: the TLS context when it is the TLS port (replaced on a reload).
    var listenerTLS: [TLSContext?]
    /// The TLS port, named to a client that speaks TLS to the plain one.
    let tlsPort: Int?
    let epoll: Epoll
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
    var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)
    var flushQueue: [Connection] = []
    /// What each connection gets, in which order and when (gathered runs, a crowd's held JOINs,
    /// echoes held for their commit): decided there, written here through `Sink`.
    var order: OutputOrder
    /// TLS connections whose session holds bytes already read from the socket: epoll will not
    /// say so, so they are read again next turn.
    var heldTLS: [Connection] = []
    var toClose: [Connection] = []
    /// Connections found dead this turn, told to the state together (`processDepartures`).
    var departures: [(ConnectionID, String)] = []
    var listenersPausedUntil: Double?
    /// TLS handshake CPU seconds per address key in the current minute, and when it began.
    var handshakeCPU: [String: Double] = [:]
    var handshakeMinute = Monotonic.now()
    var handshakeRefusalsLogged: Set<String> = []
    /// Addresses whose link-port refusal was logged this minute (one line each, not one a connection).
    var linkRefusalsLogged: Set<String> = []
    var ticks = 0
    var lastTrim = 0
    var eventsThisTick = 0
    /// Loop events since code pages were last dropped: past `burstEvents`, a quiet tick drops them again.
    var eventsSinceCodeTrim = 0
    static let burstEvents = 1000
    /// History reads paced per address, on top of each connection's pacing: sixteen connections
    /// from one address no longer read sixteen times as much (issue 43, item 9). A burst of 20,
    /// then 4 a second. Owner: the runtime; bound: 10,000 addresses (the full ones dropped first);
    /// end: full again.
    var historyPacers: [String: Pacer] = [:]
    let passwords: Worker<PasswordCheck, PasswordOutcome>
    /// Web Push POSTs (WebPush.swift): a few threads, so one slow push service does not hold up
    /// the rest; taken round the table. Empty when the server sends no pushes.
    let pushWorkers: [Worker<PushJob, PushDelivery>]
    var nextPushWorker = 0
    /// The store worker: the account database's reads and writes while the server runs (`StoreJob`).
    let store: Worker<StoreJob, StoreOutcome>?
    let accounts: AccountStore?
    var storeFinished = false
    /// History reads (CHATHISTORY, a room's last lines for a joiner) on a connection of their own.
    let historyReader: HistoryReader?
    /// Connections with a check at the worker (cancelled if they close first).
    var checking: Set<ConnectionID> = []
    /// Connections with lines waiting for their pacer (or for the state to take them).
    var paced: [Connection] = []
    /// Readers behind, with what a message must name to reach them; the union of those names;
    /// the senders waiting for them (RuntimeBackpressure.swift).
    var behind: [ConnectionID: Set<String>] = [:]
    var slowed: Set<String> = []
    var heldSenders: [Connection] = []
    /// Connections with a long reply to go on with once their output drains.
    var continuing: [Connection] = []
    /// History: the writer thread, and the connections with output waiting for its commits.
    let historyWriter: HistoryWriter?
    /// Rows made this loop turn, handed to the writer at its end (`handRowsToWriter`).
    var rowsThisTurn: [HistoryRow] = []
    let committed: HistoryHealth
    /// History's commits gate the output: `OutputOrder`'s commit gate says how far each
    /// connection's output may go (nothing written after a handover leaves before its commit).
    /// Below this much unsent output, a long reply's next step is made.
    static let continueBelow = 64 * 1024
    // Connections are numbered up from 1; the wakeup and the listeners take the top of the range.
    static let wakeupToken = UInt64.max
    static func listenerToken(_ index: Int) -> UInt64 { UInt64.max - 1 - UInt64(index) }

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
        if let settings = state.config.webPush, accounts != nil {
            let sender = PushSender()
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
                if !behind.isEmpty { checkStalledReaders(now: now) }
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
                eventsSinceCodeTrim += eventsThisTick
                if eventsThisTick < 50 && ticks - lastTrim >= 5 {
                    Memory.returnFreedMemory()
                    // The code that only ran at start-up stops counting (an empty server's RSS was
                    // two thirds code pages faulted in 64 KiB windows), and so does the code a burst
                    // ran (a crowd arriving faulted in 5 MiB: registration, joins, their replies):
                    // what runs next faults its pages back from the page cache, once.
                    if lastTrim == 0 || eventsSinceCodeTrim >= Self.burstEvents {
                        Memory.trimCodePages()
                        eventsSinceCodeTrim = 0
                    }
                    lastTrim = ticks
                }
                eventsThisTick = 0
            }
            flushAndClose()
        }
        shutdown()
    }

    func handle(_ event: Epoll.Event) {
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
}
