#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ChatLink
import ChatStore
import ChatWeb
import ChatTransport
import IRCWire

// Output: applying the state's decisions through `OutputOrder`, writing, flushing through the commit gate, closing.
extension ServerRuntime {
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
                    if historyWriter != nil, !delivery.rows.isEmpty {
                        rowsThisTurn += delivery.rows
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
                    // Once the rows handed over before it are committed (`OutputOrder.read`).
                    order.read(query, &sink)
                case .saveRooms(let changes):
                    handRowsToWriter()
                    historyWriter?.append(roomChanges: changes.list)
                case .dialLink(let block):
                    dial(block)
                case .storeRows(let rows):
                    if historyWriter != nil, !rows.isEmpty {
                        rowsThisTurn += rows
                        handOver(rows)
                    }
                case .setMarker(let account, let target, let time):
                    handRowsToWriter()
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
                    // After the rows before it: a deletion must find the row it names.
                    handRowsToWriter()
                    historyWriter?.forget(target: target, msgid: msgid)
                case .renameHistory(let old, let new):
                    handRowsToWriter()
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
    struct Sink: OutputSink {
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

        func read(_ query: HistoryQuery) { runtime.historyReader?.submit(query) }
    }

    func isOpen(_ id: ConnectionID) -> Bool {
        guard let connection = connections[id.raw] else { return false }
        return !connection.closing
    }

    func write(_ bytes: [UInt8], from: Int, to id: ConnectionID) -> Int? {
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
        // A reader the kernel refuses that passes the mark is behind: its rooms' next lines wait.
        if connection.waitingForWritable, connection.behindSince == nil, connection.output.count > behindMark {
            checkBehind(connection, refused: true)
        }
        let limit = connection.waitingForWritable ? readerBound(connection) : sendQueueLimit * 4
        if connection.output.count > limit {
            dropSlowReader(connection)
        } else {
            queueFlush(connection)
        }
        return start
    }

    /// Output held for commits that have happened now goes out, in order.
    func releaseCommitted() {
        var sink = Sink(runtime: self)
        order.released(&sink)
    }

    /// The rows this loop turn made, to the writer in one hand-off at the end of the turn (or
    /// before anything else for the writer, which must come after them): a burst read in one
    /// turn (a paced room's senders at the same instant) is one commit, not one a message; the
    /// writer, woken by the first row, committed each alone on a one-core server. Owner: the
    /// runtime; bound: one turn's rows; end: the end of the turn.
    func handRowsToWriter() {
        guard !rowsThisTurn.isEmpty else { return }
        historyWriter?.append(rowsThisTurn)
        rowsThisTurn.removeAll(keepingCapacity: true)
    }

    func handOver(_ rows: [HistoryRow]) {
        for row in rows { order.handOver(row.msgid) }
    }

    /// How many of a connection's unsent bytes may go now (`OutputOrder`'s commit gate).
    func sendable(_ connection: Connection) -> Int {
        guard order.isGated(connection.id) else { return .max }
        return order.sendable(connection.id, sent: connection.output.sent, committed: committed.committed.load(ordering: .acquiring),
                       unbounded: connection.output.count > sendQueueLimit || committed.failing.load(ordering: .acquiring))
    }

    /// A reader this far behind is stalled; drop it rather than hold memory for it.
    func dropSlowReader(_ connection: Connection) {
        guard !connection.closing else { return }
        markClosing(connection, discardOutput: true)
        departures.append((connection.id, "SendQ exceeded"))
        control.countSlowReaderDropped()
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
        caughtUp(connection)
    }

    func flushAndClose() {
        handRowsToWriter()
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

    func flushQueued() {
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
                        checkBehind(connection, refused: true)
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
                if connection.behindSince != nil || connection.givenUp { checkBehind(connection, refused: false) }
                // A web connection whose last answer (or close frame) is out: our side is done
                // (FIN), its side is read and dropped until it closes.
                if connection.download != nil {
                    refillDownload(connection)
                } else if case .closing? = connection.web {
                    connection.tls?.shutdown()
                    Glibc.shutdown(connection.fd, Int32(SHUT_WR))
                }
            case .wouldBlock:
                checkBehind(connection, refused: true)
                if connection.output.count > readerBound(connection) {
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

    func closeClosing() {
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
    func discardUnread(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var rounds = 0
        while rounds < 16 && recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 { rounds += 1 }
    }

    /// Last words (ERROR) go out if the socket takes them now, then close_notify on TLS; a
    /// stalled peer gets nothing more.
    func sendLastWords(_ connection: Connection) {
        if let tls = connection.tls {
            guard tls.handshakeDone else { return }
            _ = connection.output.flush(to: tls)
            tls.shutdown()
        } else {
            _ = connection.output.flush(to: connection.fd)
        }
    }
}
