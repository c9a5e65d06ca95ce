#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ChatLink
import ChatStore
import ChatWeb
import ChatTransport
import IRCWire

// Accepting: the listeners, TLS and web admission, handshake budgets, read and write interest.
extension ServerRuntime {
    // MARK: Accepting

    func acceptAll(_ listener: Int32, tls: TLSContext?, link: Bool = false, web: Bool = false) {
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
            if web {
                connection.makeWebSide()
                connection.offeredTLS = tls
            }
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
    func linkAdmissionProblem(host: String, tls: Bool) -> String? {
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
    func startWebTLS(_ connection: Connection) -> Bool {
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
    func handshakeSpent(_ key: String) -> Double {
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

    func setWritable(_ connection: Connection, _ writable: Bool) {
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

    func pauseListeners() {
        for fd in listeners { epoll.remove(fd) }
        listenersPausedUntil = Monotonic.now() + 0.1
    }

    func resumeListeners() {
        for (index, fd) in listeners.enumerated() { try? epoll.add(fd, token: Self.listenerToken(index)) }
        listenersPausedUntil = nil
    }
}
