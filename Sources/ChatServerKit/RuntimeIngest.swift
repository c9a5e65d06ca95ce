#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ChatLink
import ChatStore
import ChatWeb
import ChatTransport
import IRCWire

// Ingest: reading connections, framing and draining their lines into the state, pacing, departures.
extension ServerRuntime {
    // MARK: Reading

    func read(_ connection: Connection, evenIfPaused: Bool = false) {
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
            // A message to a reader behind waits (RuntimeBackpressure.swift).
            if holdsForSlowReader(connection) { break }
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
    func drainLink(_ connection: Connection) {
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

    /// When a paced connection's next line may go: its own pacer, and for a history read its
    /// address's too.
    func readyAt(_ connection: Connection) -> Double {
        let own = connection.pacer?.readyAt(connection.waitingCost) ?? 0
        guard connection.waitingCost == Pacer.historyCost, let key = connection.historyKey, let address = historyPacers[key] else { return own }
        return max(own, address.readyAt(1))
    }

    static func newHistoryPacer(_ now: Double) -> Pacer { Pacer(burst: 20, perSecond: 4, now: now) }
    func rememberHistoryPacer(_ key: String, _ pacer: Pacer, now: Double) {
        if historyPacers[key] == nil && historyPacers.count >= 10_000 {
            historyPacers = historyPacers.filter { $0.value.readyAt(20) > now }
        }
        historyPacers[key] = pacer
    }

    /// Connections whose pacer may allow their next line by now.
    func drainPaced() {
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
    func continueReplies() {
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
    func processDepartures() {
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
}
