import ChatStore
import ChatTransport
import IRCWire

/// One connection to one IRC server: registration, capabilities, heartbeat, reconnect, a queue
/// for messages typed while offline, and the `ClientState` that owns the conversations. Front
/// ends apply `events` (each carries its value) to a view of their own; they never touch the
/// socket and never pull the state.
public actor ChatClient {
    public nonisolated let events: ClientEvents
    private let continuation: AsyncStream<ClientEvent>.Continuation
    /// Events published and not yet taken by the front end (`ClientEvents`).
    nonisolated var backlog: EventBacklog { events.backlog }
    /// Events the front end may leave untaken before the connection is no longer read.
    public static let eventBound = 4096
    public internal(set) var state: ClientState
    public nonisolated let config: ClientConfig
    /// File transfers: their one owner, fed by the workers; each change is published as a
    /// `.transfer` event (the screen draws progress from those, not from this table).
    public nonisolated let transfers: FileTransfers

    var connection: LineConnection?
    /// The last DCC offer that could not reach its peer (its file and the peer): `/upload` alone sends it through the host.
    var unreachable: (path: String, nick: String)?
    private var runTask: Task<Void, Never>?
    /// A certificate the user trusted that could not be written to known-servers: trusted until the program ends.
    private var trustedThisRun: String?
    private var backoffTask: Task<Void, Never>?
    /// False once the user quits or disconnects, or the server refuses us for good.
    private var keepConnected = true
    private var fatalReason: String?
    /// Why the user stopped us (`you quit`), reported instead of the socket's view of it.
    private var userStopReason: String?
    private var lastReceived: Double = 0
    private var connectedAt: Double = 0
    private var pingSentAt: Double?

    public init(config: ClientConfig) {
        self.config = config
        // The client owns the facts; lines are kept by the views that show them.
        state = ClientState(config: config)
        let (stream, continuation) = AsyncStream.makeStream(of: ClientEvent.self, bufferingPolicy: .unbounded)
        let backlog = EventBacklog(bound: Self.eventBound)
        events = ClientEvents(stream: stream, backlog: backlog)
        self.continuation = continuation
        transfers = FileTransfers(publish: { backlog.added(); continuation.yield(.transfer($0)) })
        let opened = config.logPath.flatMap { try? ClientLog(path: $0) }
        log = opened
        logProblem = config.logPath != nil && opened == nil ? "the log \(config.logPath!) cannot be opened; lines are not kept" : nil
    }

    // A front end still reading the events learns the client is gone (its loop ends) rather
    // than waiting for ever on a stream nobody writes.
    deinit { continuation.finish() }

    // MARK: Lines not yet confirmed

    /// The connection dropped: lines not echoed are shown as held, with their text (the state
    /// keeps them: `ClientState.sent`).
    private func holdUnconfirmed() {
        perform(state.holdUnconfirmed(now: WallClock.now()))
    }

    // MARK: What was read, for the next start

    private lazy var readPositions = ReadPositions(text: config.readPositionsPath.flatMap { Files.readText($0) } ?? "")
    /// The file was there at start: a conversation it does not name was never read (all its
    /// restored lines are unread); without the file (a first start, or --no-logs before) nothing is.
    private lazy var readPositionsKnown = config.readPositionsPath.map { Files.exists($0) } ?? false

    /// A conversation read (here or on another device): up to now, kept in the file at once.
    private func keepRead(_ id: ConversationID) {
        guard let path = config.readPositionsPath, id != .server else { return }
        readPositions.read(id.description, at: WallClock.now())
        try? Files.createDirectories(Paths.directory(of: path), mode: 0o700)
        try? Files.writeAtomically(path, Array(readPositions.text.utf8), mode: 0o600)
    }

    // MARK: The rooms for the next start

    /// The rooms last written to `config.joinedRoomsPath` (at start, what it said).
    private lazy var keptRooms: [String] = config.rooms

    /// JOIN and PART (and a room renamed) change the rooms one is in: the file says so at once,
    /// so a crash or a closed terminal still rejoins them at the next start. A failed write
    /// only costs that; it is tried again at the next change.
    private func keepRooms() {
        keptRooms = state.wantedRooms
        guard let path = config.joinedRoomsPath else { return }
        try? Files.createDirectories(Paths.directory(of: path), mode: 0o700)
        try? Files.writeAtomically(path, Array(JoinedRooms.text(keptRooms).utf8), mode: 0o600)
    }

    // MARK: The local log

    /// Every line shown, kept per network and conversation (`ClientConfig.logPath`).
    private let log: ClientLog?
    private let logProblem: String?
    /// `host:port`: the network the log files lines under.
    public nonisolated var network: String { "\(config.host):\(config.port)" }
    private var restored = false

    /// Ends the lines restored from the local log in each conversation.
    public static let earlierMarker = "── earlier ──"

    /// Lines worth keeping: what people said and did (not the client's own notices).
    static let loggedKinds: Set<String> = ["message", "action", "notice", "join", "part", "quit", "kick", "nick", "topic", "mode"]

    private func logged(_ id: ConversationID, _ line: ChatLine) {
        // Held lines are not said yet: they are logged when they are (their echo).
        guard let log, id != .server, !line.isPending, Self.loggedKinds.contains(line.kind.logName) else { return }
        log.append([LoggedLine(network: network, conversation: id.key, name: state[id]?.name ?? id.key, time: line.time,
                               kind: line.kind.logName, sender: line.sender, text: line.text, msgid: line.msgid, own: line.isOwn)])
        // A log that cannot be written (a full disk) keeps its lines and tries again; the user
        // is told once when it starts failing and once when it is written again.
        let problem = log.writeProblem
        if (problem != nil) != toldLogProblem {
            toldLogProblem = problem != nil
            let text = problem ?? "the log is written again; nothing shown was lost"
            for event in state.show(ChatLine(time: line.time, kind: problem != nil ? .error : .info, text: text), in: .server).events { publish(event) }
        }
    }
    private var toldLogProblem = false

    /// The text-logs setting: plain files beside the log, for grep (nil: off).
    private lazy var textLog: TextLog? = config.textLogDirectory.map { TextLog(directory: $0, network: network) }

    /// `/set text-logs on|off`: from the next line on.
    public func setTextLogs(_ directory: String?) {
        textLog = directory.map { TextLog(directory: $0, network: network) }
    }

    private func textLogged(_ id: ConversationID, _ line: ChatLine) {
        guard textLog != nil else { return }
        let before = textLog!.problem
        textLog!.write(line, conversation: id == .server ? "server" : state[id]?.name ?? id.key, utcOffset: config.utcOffset)
        // Told once when it starts failing.
        if let problem = textLog!.problem, before == nil {
            for event in state.show(ChatLine(time: line.time, kind: .error, text: problem), in: .server).events { publish(event) }
        }
    }

    /// On start: each conversation of this network opens with its last lines from the log
    /// (as history: in their place by time, once per msgid, not news), read on the log's
    /// reader thread.
    private func restoreFromLog() async {
        guard !restored, let log else { return }
        restored = true
        let network = network
        guard case .success(let conversations) = await log.read({ log throws(Database.Failure) in try log.recent(network: network) }) else { return }
        for (_, name, lines) in conversations.reversed() {
            let id = state.id(for: name)
            // Closed with /close last time: it stays closed until it has news.
            if config.closedConversations.contains(id.description) { continue }
            for logged in lines {
                var line = logged.chatLine
                line.isHistory = true
                line.isOldNews = true
                // A mention is still one (the highlights view lists it), though not news.
                if !line.isOwn, line.kind == .message || line.kind == .action || line.kind == .notice {
                    line.isHighlight = IRCNames.isChannel(name) ? state.mentions(line.text) : true
                }
                // Straight to the views: these are in the log already.
                for event in state.show(line, in: id, name: name).events { publish(event) }
            }
            // The boundary: above it the local log, below it this session (an info line, never logged).
            if let last = lines.map(\.time).max() {
                state.seenUntil[id] = max(state.seenUntil[id] ?? 0, last)
                var marker = ChatLine(time: last + 0.0001, kind: .info, text: Self.earlierMarker)
                marker.isHistory = true
                marker.isOldNews = true
                for event in state.show(marker, in: id, name: name).events { publish(event) }
            }
            // Restored lines are not unread, but for those after where it was read last time
            // (a DM or a mention not read before quitting keeps its count and `!`).
            _ = readPositionsKnown   // (read before this start writes the file)
            let readUntil = readPositions.until[id.description] ?? (readPositionsKnown ? -Double.infinity : nil)
            let unread = readUntil.map { until in
                lines.filter { !$0.own && $0.time > until && ["message", "action", "notice"].contains($0.kind) }
            } ?? []
            if unread.isEmpty {
                publish(state.record(.markedRead(id)))
            } else {
                let mentioned = !IRCNames.isChannel(name) || unread.contains { state.mentions($0.text) }
                publish(state.record(.unreadRestored(id, count: unread.count, mentioned: mentioned)))
                if let readUntil, readUntil.isFinite { publish(state.record(.readMarker(id, readUntil))) }
            }
        }
        // Who wrote to us while the client was not running: asked at the first welcome
        // (logged in, where the server keeps history), from the newest line logged.
        if let newest = conversations.flatMap({ $0.2.map(\.time) }).max() {
            state.targetsSince = min(state.targetsSince ?? .infinity, newest - 10)
        }
    }

    /// Scrolling past the oldest line of a room: the lines before it, from the server's history.
    public func fetchOlder(_ room: String, before msgid: String) {
        perform(state.older(in: room, before: msgid))
    }

    /// Searches the log (on its reader thread): the hits arrive as `.searchResults`.
    /// `alsoSender`: with one word, the lines that nickname said count too (/lastlog).
    public func search(_ words: [String], alsoSender: Bool = false) async {
        let query = words.joined(separator: " ")
        // The server's history too, where it searches it (soju.im/search): asked first, merged below.
        let fromServer = await serverSearch(words)
        guard let log else {
            if let fromServer { emit(.searchResults(query: query, fromServer)); return }
            emit(.searchResults(query: query, [], failure: config.logPath == nil ? "no log is kept (--no-logs)" : logProblem ?? "the log cannot be opened"))
            return
        }
        let found: [LoggedLine]
        do {
            found = try await log.read({ log throws(Database.Failure) in try log.search(words, sender: alsoSender && words.count == 1 ? words[0] : nil) }).get()
        } catch {
            // Said as a failure, never as "nothing found".
            emit(.searchResults(query: query, [], failure: "reading the log failed: \(error)"))
            return
        }
        var hits = found.map { logged -> SearchHit in
            SearchHit(conversation: IRCNames.isChannel(logged.name) ? .room(logged.conversation) : .direct(logged.conversation),
                      name: logged.name, line: logged.chatLine, network: logged.network)
        }
        if let fromServer {
            // Each line once (by msgid, else by when, who and what), newest first.
            var seen = Set(hits.map { $0.line.msgid ?? "\($0.line.time) \($0.line.sender ?? "") \($0.line.text)" })
            for hit in fromServer where seen.insert(hit.line.msgid ?? "\(hit.line.time) \(hit.line.sender ?? "") \(hit.line.text)").inserted {
                hits.append(SearchHit(conversation: hit.conversation, name: hit.name, line: hit.line, network: network))
            }
            hits.sort { $0.line.time > $1.line.time }
        }
        emit(.searchResults(query: query, hits))
    }

    /// The server's hits for the words (nil: it does not search, or did not answer in 10 s).
    private var serverSearchWaiter: CheckedContinuation<[SearchHit]?, Never>?

    private func serverSearch(_ words: [String]) async -> [SearchHit]? {
        let asking = state.serverSearch(words)
        guard !asking.actions.isEmpty, connection != nil, serverSearchWaiter == nil else { return nil }
        return await withCheckedContinuation { waiter in
            serverSearchWaiter = waiter
            perform(asking)
            Task { [weak self] in
                try? await Task.sleep(for: .seconds(10))
                await self?.serverSearchAnswered(nil)
            }
        }
    }

    private func serverSearchAnswered(_ hits: [SearchHit]?) {
        serverSearchWaiter?.resume(returning: hits)
        serverSearchWaiter = nil
    }

    /// The lines around a search hit, put in their place in its conversation.
    public func showAround(_ hit: SearchHit) async {
        guard let log else { return }
        let network = hit.network ?? network, key = hit.conversation.key, time = hit.line.time
        guard case .success(let lines) = await log.read({ log throws(Database.Failure) in try log.around(network: network, conversation: key, time: time) }) else { return }
        for logged in lines {
            var line = logged.chatLine
            line.isHistory = true
            for event in state.show(line, in: hit.conversation, name: hit.name).events { publish(event) }
        }
        // A nickname from the log may be someone else's now: said before anything is typed here.
        if case .direct = hit.conversation {
            let warning = ChatLine(time: WallClock.now(), kind: .info,
                                   text: "These lines are from your log (\(ServerTime.format(time).prefix(10))): whoever has the nickname \(hit.name) now may be someone else, and what you type here goes to them")
            for event in state.show(warning, in: hit.conversation, name: hit.name).events { publish(event) }
        }
    }

    // MARK: Controls

    /// Connects, and keeps reconnecting until `quit` or `disconnect`.
    public func start() {
        guard runTask == nil else { return }
        if let logProblem { perform(state.show(ChatLine(time: WallClock.now(), kind: .error, text: logProblem), in: .server)) }
        keepConnected = true
        userStopReason = nil
        state.userStopping = false
        fatalReason = nil
        runTask = Task {
            await self.restoreFromLog()
            await self.run()
        }
    }

    /// Sends QUIT and stops reconnecting: the server answers with ERROR and closes, which ends
    /// the session (after two seconds without that answer, we close it ourselves).
    public func quit(reason: String = "Leaving") async {
        keepConnected = false
        userStopReason = "you quit"
        state.userStopping = true
        backoffTask?.cancel()
        // Still connecting: give up on it now rather than when the connect times out.
        if connection == nil { runTask?.cancel() }
        if let connection {
            try? connection.write(IRCMessage(command: "QUIT", params: [reason]))
            let unanswered = Task { [weak connection] in
                guard (try? await Task.sleep(for: .seconds(2))) != nil else { return }
                connection?.close(reason: "you quit")
            }
            await runTask?.value
            unanswered.cancel()
            connection.close(reason: "you quit")
        }
        await runTask?.value
        await flushLog()
    }

    /// Writes what is queued for the log, and returns when it is in (on the log's reader
    /// thread): a front end exits only after this, or the last lines shown may not be there.
    public func flushLog() async {
        _ = await log?.read { log in log.sync() }
    }

    /// Closes the connection without reconnecting; `start()` connects again.
    public func disconnect() async {
        keepConnected = false
        userStopReason = "disconnected by you"
        state.userStopping = true
        backoffTask?.cancel()
        if connection == nil { runTask?.cancel() }
        connection?.close(reason: "disconnected by you")
        await runTask?.value
    }

    /// Reconnects now: skips a pending backoff wait, or drops and re-establishes a live connection.
    public func reconnectNow() {
        if runTask == nil {
            start()
        } else if connection != nil {
            connection?.close(reason: "reconnecting at your request")
        } else {
            backoffTask?.cancel()
        }
    }

    /// Sends a message to a room or a person, split to fit the line limit; queued while offline.
    public func send(_ text: String, to target: String, isAction: Bool = false, replyTo: String? = nil) {
        perform(state.send(text, to: target, isAction: isAction, replyTo: replyTo, queueing: keepConnected, now: WallClock.now()))
    }

    /// `+typing=active|paused|done` to a room or a person, where the server takes message tags
    /// (never held: it means nothing later).
    public func sendTyping(_ typing: String, to target: String) {
        guard config.sendsTyping, state.isRegistered, state.capabilities.contains("message-tags"), !target.isEmpty else { return }
        perform(state.typing(typing, to: target, now: WallClock.now(), connected: connection != nil))
    }

    /// Sends a raw command (JOIN, NICK, TOPIC, WHOIS…), if connected; its replies are shown in
    /// `replyIn` (the conversation it was typed in) when given.
    public func sendCommand(_ message: IRCMessage, replyIn: ConversationID? = nil) {
        state.replyConversation = replyIn
        perform(state.command(message, connected: connection != nil))
    }

    /// The user has seen a conversation's lines.
    public func markRead(_ id: ConversationID) {
        perform(state.userRead(id, connected: connection != nil))
    }

    /// The `/ignore` list, as completed masks.
    public var ignoreMasks: [String] { state.ignoreMasks }

    /// The highlight words and pattern changed (`/set`, `/reload`).
    public func setHighlights(_ highlights: Highlights) { perform(state.setHighlights(highlights)) }

    /// Adds a mask (a bare nick means `nick!*@*`); returns the list, or nil when the mask is not valid.
    public func ignore(_ mask: String) -> [String]? { state.ignore(mask) }

    public func unignore(_ mask: String) -> [String] { state.unignore(mask) }

    public func clear(_ id: ConversationID) { emit(state.record(.cleared(id))) }

    /// Opens a direct conversation (or a room's window) by name, if it is not open.
    public func openConversation(_ name: String) {
        perform(state.open(name, now: WallClock.now()))
    }

    public func closeConversation(_ id: ConversationID) {
        guard id != .server, state[id] != nil else { return }
        perform(state.close(id))
    }

    /// Adds a client-side note (an error the user should see) to a conversation.
    /// `name`: how to spell a direct conversation this opens (the folded key otherwise).
    public func note(_ text: String, in conversation: ConversationID, isError: Bool = true, name: String? = nil) {
        let place = state[conversation] == nil && conversation.kind != .direct ? .server : conversation
        let line = ChatLine(time: WallClock.now(), kind: isError ? .error : .info, text: text)
        perform(state.show(line, in: place, name: name))
    }

    /// A note about a person or a room, by name, in the conversation with them.
    func note(_ text: String, in name: String, isError: Bool = true) {
        note(text, in: state.id(for: name), isError: isError, name: name)
    }

    /// Where answers to the user's last command go: the conversation it was typed in.
    var replyPlace: ConversationID { state.replyConversation ?? .server }

    /// The conversation the user types in, for answers that do not go to the server (file
    /// transfer commands, /ignore).
    public func replyIn(_ id: ConversationID) { state.replyConversation = id }

    // MARK: TLS trust

    private var clientTLS: TLSContext?

    private func tlsContext() throws(TransportError) -> TLSContext {
        if let clientTLS { return clientTLS }
        do {
            let context = try TLSContext.client(certificate: config.tlsClientCertificate, key: config.tlsClientKey)
            clientTLS = context
            return context
        } catch {
            throw .tls(host: config.host, port: config.port, reason: error.description)
        }
    }

    /// Why a certificate is refused, or nil when it is accepted: the pinned one, one the
    /// system trusts for this host name, or one the user trusted before (known-servers).
    func refusal(of certificate: PeerCertificate) -> String? {
        let server = "\(config.host):\(config.port)"
        if let pin = config.tlsFingerprint {
            return KnownServers.normalise(pin) == KnownServers.normalise(certificate.fingerprint) ? nil
                : "the certificate of \(server) is \(certificate.fingerprint), not the pinned \(pin)"
        }
        if certificate.problem == nil { return nil }
        let known = config.knownServersPath.flatMap { KnownServers.fingerprint(for: server, in: $0) } ?? trustedThisRun
        if let known {
            if KnownServers.normalise(known) == KnownServers.normalise(certificate.fingerprint) { return nil }
            return "the certificate of \(server) changed: it was \(known), now it is \(certificate.fingerprint); "
                + "if the server really has a new one, remove its line from \(config.knownServersPath ?? "known-servers")"
        }
        emit(.unknownCertificate(server: server, fingerprint: certificate.fingerprint, problem: certificate.problem ?? ""))
        return "the certificate of \(server) is not trusted (\(certificate.problem ?? "")); its SHA-256 is \(certificate.fingerprint): "
            + "pin it with --tls-fingerprint \(certificate.fingerprint)"
    }

    /// The user trusts this certificate: remembered in known-servers, and we connect again.
    public func trustCertificate(_ fingerprint: String) {
        trustedThisRun = fingerprint
        if let path = config.knownServersPath {
            do {
                try KnownServers.remember("\(config.host):\(config.port)", fingerprint, in: path)
            } catch {
                note("The certificate is trusted until you quit, but could not be saved in \(path) (\(error))", in: .server)
            }
        }
        start()
    }

    // MARK: The connection loop

    private func run() async {
        var attempt = 0
        var lastReason = ""
        var registeredOnce = false
        var unresolved = 0
        /// The host ended its server: said until we are back, whatever the next tries meet.
        var hostClosed: String?
        var saidStopped = false
        while keepConnected {
            attempt += 1
            emit(.status(.connecting(host: config.host, port: config.port, attempt: attempt)))
            do {
                let connection = try await LineConnection.open(host: config.host, port: config.port, timeout: config.connectTimeout,
                                                               tls: config.tls ? try tlsContext() : nil)
                guard keepConnected else { connection.close(reason: "stopped"); break }
                if let certificate = connection.certificate, let refusal = refusal(of: certificate) {
                    connection.close(reason: refusal)
                    fatalReason = refusal
                    lastReason = refusal
                    perform(state.connectionLost(reason: lastReason, now: WallClock.now()))
                    holdUnconfirmed()
                    keepConnected = false
                    emit(.status(.stopped(reason: refusal)))
                    break
                }
                let reason = await session(connection)
                connection.close(reason: reason.text)
                if state.isRegistered || reason.registered { attempt = 0; registeredOnce = true; hostClosed = nil }
                lastReason = reason.text
                if ConnectionEnd.isHostClosing(reason.text) { hostClosed = reason.text }
                unresolved = 0
                if !config.tls, !reason.registered, keepConnected, await speaksTLS(connection, closedWith: reason.text) {
                    fatalReason = ConnectionEnd.speaksTLS
                    lastReason = ConnectionEnd.speaksTLS
                }
            } catch {
                lastReason = error.description
                if config.tls, case TransportError.tls(_, _, let why) = error,
                   case .stop(let words)? = ConnectionEnd.afterTLSFailure(why, plainTextMarker: LineConnection.plainTextAnswer) {
                    fatalReason = words
                    lastReason = words
                }
                // A name that does not resolve is most likely mistyped: a few tries, then stop
                // and say so (a server we have been on may be in a DNS hiccup: keep trying it).
                if case TransportError.hostNotFound = error { unresolved += 1 } else { unresolved = 0 }
                if unresolved >= 3 && !registeredOnce {
                    fatalReason = "\(config.host) was not found after \(unresolved) tries (\(lastReason)); check the name"
                }
            }
            perform(state.connectionLost(reason: lastReason, now: WallClock.now(), byUser: userStopReason != nil))
            holdUnconfirmed()
            if let fatalReason {
                keepConnected = false
                emit(.status(.stopped(reason: fatalReason)))
                saidStopped = true
                break
            }
            guard keepConnected else {
                emit(.status(.stopped(reason: userStopReason ?? lastReason)))
                saidStopped = true
                break
            }
            let delay = config.reconnect.delay(attempt: max(1, attempt), random: Double.random(in: 0..<1))
            var shown = lastReason
            if case .retry(let words) = ConnectionEnd.retrying(after: hostClosed ?? lastReason) { shown = words }
            emit(.status(.disconnected(reason: shown)))
            emit(.status(.reconnecting(inSeconds: delay, reason: shown)))
            let wait = Task { _ = try? await Task.sleep(for: .seconds(delay)) }
            backoffTask = wait
            await wait.value
            backoffTask = nil
        }
        // Stopped during a backoff wait (or a refused certificate said it already): the status says so once.
        if !saidStopped && fatalReason == nil { emit(.status(.stopped(reason: userStopReason ?? lastReason))) }
        perform(state.failQueued(reason: "disconnected"))
        runTask = nil
        connection = nil
    }

    /// A plain-text connection that ended before registering: was the answer TLS? Its first
    /// bytes say so, or, when the server closed without a byte (an OpenSSL server sends no
    /// alert), one TLS handshake with the same port does.
    /// Only a close by the server is probed (not our own timeout).
    private func speaksTLS(_ connection: LineConnection, closedWith reason: String) async -> Bool {
        if connection.answeredWithTLS { return true }
        guard connection.receivedNothing, userStopReason == nil,
              reason == "connection closed by the server" || reason == "connection reset by the server",
              let context = try? tlsContext() else { return false }
        guard let probe = try? await LineConnection.open(host: config.host, port: config.port, timeout: min(config.connectTimeout, 5), tls: context) else {
            return false
        }
        probe.close(reason: "only a probe for TLS")
        return true
    }

    private struct SessionEnd {
        let text: String
        let registered: Bool
    }

    /// Registers and handles one connection until it closes; returns why it closed.
    private func session(_ connection: LineConnection) async -> SessionEnd {
        unreadableCount = 0
        self.connection = connection
        pingSentAt = nil
        let now = WallClock.now()
        connectedAt = now
        lastReceived = now
        emit(.status(.connected))
        perform(state.connectionStarted())

        let heartbeat = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(500))
                await self?.heartbeat(connection)
            }
        }
        defer { heartbeat.cancel() }

        for await input in connection.input {
            connection.taken()
            switch input {
            case .line(let bytes):
                lastReceived = WallClock.now()
                pingSentAt = nil
                let message: IRCMessage
                do { message = try IRCMessage(bytes: bytes) } catch {
                    unreadableLine(bytes, error)
                    continue
                }
                perform(state.receive(message, now: lastReceived))
                // A flood faster than the log can write waits here, not in memory: the
                // connection's bounded input fills and TCP slows the server.
                await log?.waitWhileBehind()
                // And a front end slower than the lines come: it catches up before more are read.
                await backlog.waitForRoom()
            case .overlong(let discarded):
                emit(.error("the server sent a line of \(discarded) bytes; it was discarded"))
            case .closed(let reason):
                return end(reason)
            }
        }
        return end("connection closed")
    }

    /// A line from the server that is not IRC: shown (made visible, cut short), not skipped in
    /// silence; past `unreadableShown` in one connection only counted, so a hostile server cannot
    /// fill the screen with them. A blank line is a keep-alive some servers send: nothing to say.
    private func unreadableLine(_ bytes: [UInt8], _ error: IRCParseError) {
        if error == .empty { return }
        unreadableCount += 1
        if unreadableCount <= Self.unreadableShown {
            let text = PlainText.visible(String(decoding: bytes.prefix(80), as: UTF8.self))
            emit(.error("the server sent a line that is not IRC (\(error)), skipped: \(text)"
                        + (unreadableCount == Self.unreadableShown ? " (further such lines are skipped without a word)" : "")))
        }
    }
    private var unreadableCount = 0
    static let unreadableShown = 5

    /// How a session ended, said once: the server's ERROR explains a close that follows it.
    /// Read before `connectionLost` forgets whether this connection was registered.
    private func end(_ reason: String) -> SessionEnd {
        connection = nil
        if let error = state.serverError, reason == "connection closed by the server" {
            return SessionEnd(text: "closed by the server: \(error)", registered: state.isRegistered)
        }
        return SessionEnd(text: reason, registered: state.isRegistered)
    }

    private func heartbeat(_ connection: LineConnection) {
        guard self.connection === connection else { return }
        let now = WallClock.now()
        if !state.isRegistered {
            if now - connectedAt > config.registrationTimeout {
                connection.close(reason: "registration timed out after \(Int(config.registrationTimeout)) s (the server never welcomed us)")
            }
            return
        }
        if let sent = pingSentAt {
            if now - sent > config.pingTimeout {
                connection.close(reason: "ping timeout: no answer from the server for \(Int(now - lastReceived)) s", abortive: true)
            }
        } else if now - lastReceived >= config.pingInterval {
            pingSentAt = now
            write(IRCMessage("PING", "chat-tui-lag-\(now)"), over: connection)
        }
    }

    /// The conversation the user is looking at: news for them (an invitation) goes there.
    public func looking(at id: ConversationID) { state.lookingAt = id }

    /// Gives up on the direct messages held for `nick` (not on the server when they were sent).
    /// `/send-held NICK`: what is held for NICK goes to whoever has the nickname now.
    public func sendHeld(for nick: String) {
        perform(state.userSentHeld(for: nick, now: WallClock.now()))
    }

    /// The direct messages still held for people not back (`ClientState.unsentHeld`).
    public var unsentHeld: [String] { state.unsentHeld }

    public func cancelHeld(for nick: String) {
        perform(state.userCancelledHeld(for: nick, now: WallClock.now()))
    }

    /// Publishes a change's events, then carries out its actions on this connection (none
    /// are carried out without one: the state holds what must wait).
    private func perform(_ reduction: Reduction) {
        for event in reduction.events { emit(event) }
        if state.wantedRooms != keptRooms { keepRooms() }
        guard !reduction.actions.isEmpty else { return }
        var failed = false
        for action in reduction.actions {
            switch action {
            case .send(let message):
                if let connection { write(message, over: connection) }
            case .sendLine(let message, let line):
                do {
                    guard !failed, let connection else { throw TransportError.closed }
                    try connection.write(message)
                } catch {
                    // The connection failed under us: this line and the rest wait for the next one.
                    failed = true
                    perform(state.writeFailed(line, now: WallClock.now()))
                }
            case .close(let reason):
                connection?.close(reason: reason)
            case .stop(let reason):
                fatalReason = reason
                connection?.close(reason: reason)
            case .dcc(let dcc, let nick, let host):
                handleDCC(dcc, from: nick, senderHost: host, now: WallClock.now())
            case .dccRejected(let nick, let text):
                dccRejected(by: nick, text: text)
            }
        }
    }

    func write(_ message: IRCMessage, over connection: LineConnection) {
        do {
            try connection.write(message)
        } catch {
            connection.close(reason: "write failed: \(error)")
        }
    }

    func emit(_ event: ClientEvent) {
        if case .serverSearchResults(_, let hits) = event {
            serverSearchAnswered(hits)
            return
        }
        if case .line(let id, let line) = event {
            logged(id, line)
            textLogged(id, line)
        }
        if case .markedRead(let id) = event { keepRead(id) }
        // A deleted message leaves the local log and its search index too.
        if case .redacted(let id, let msgid, _) = event, let log {
            log.append([LoggedLine(network: network, conversation: id.key, name: "", time: 0, kind: ClientLog.deletion, sender: nil,
                                   text: "", msgid: msgid, own: false)])
        }
        publish(event)
    }

    /// Every event goes out here (counted until the front end takes it).
    private func publish(_ event: ClientEvent) {
        backlog.added()
        continuation.yield(event)
    }
}

extension LoggedLine {
    /// The line as a conversation shows it.
    var chatLine: ChatLine {
        var line = ChatLine(time: time, kind: ChatLine.Kind(logName: kind), sender: sender, text: text, isOwn: own)
        line.msgid = msgid
        return line
    }
}
