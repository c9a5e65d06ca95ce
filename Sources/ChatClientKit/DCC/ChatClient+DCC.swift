#if canImport(Glibc)
import Glibc
#endif
import ChatTransport
import IRCWire

/// DCC SEND: offering, accepting, resuming, rejecting and cancelling file transfers.
extension ChatClient {
    // MARK: Sending

    /// Offers `path` to `nick`. Active: we listen and they connect. Passive: they listen.
    public func sendFile(_ path: String, to nick: String, passive: Bool = false) {
        let now = WallClock.now()
        guard let size = Files.regularFileSize(path).map(UInt64.init) else {
            note("Cannot send \(path): no such file", in: nick)
            return
        }
        guard let connection, state.isRegistered else {
            note("Not connected: the file was not offered", in: nick)
            return
        }
        guard !state.isMe(nick) else {
            note("That is you: pick someone else to send a file to", in: nick)
            return
        }
        let name = SafeFileName.make(Paths.lastComponent(of: path))
        let address = config.dccAddress ?? connection.localHost
        var info = transfers.add { id in
            TransferInfo(id: id, direction: .sending, peer: nick, offeredName: name, localPath: path, size: size,
                         state: .offered, passive: passive, token: passive ? String(id) + String(Int.random(in: 1000...9999)) : nil,
                         offeredAt: now)
        }
        var listener: Int32 = -1
        if !passive {
            do {
                let (fd, port) = try DCCWorker.listen(ports: config.dccPorts, bind: nil)
                listener = fd
                info = transfers.record(info.id, .listening(port: port))!
            } catch {
                transfers.record(info.id, .ended(.failed("no port to listen on: \(error)"), time: WallClock.now()))
                note("Cannot offer \(name): no free port to listen on (\(error))", in: nick)
                return
            }
        }
        let offer = DCCMessage.send(fileName: name, address: address, port: info.port, size: size, token: info.token)
        write(IRCMessage("PRIVMSG", nick, offer.ctcp), over: connection)
        emitTransferLine(info.id, "Offered \(name) (\(Self.formatSize(size))) to \(nick)" + (passive ? " (passive)" : "")
                         + " as transfer \(info.id); waiting for them to accept", in: nick)
        if !passive {
            let id = info.id
            let table = transfers
            let deadline = Monotonic.now() + config.dccOfferTimeout
            let listening = listener
            runWorker(id) {
                guard let socket = DCCWorker.acceptOne(listening, id: id, table: table, deadline: deadline) else {
                    return table[id]?.cancelRequested == true ? (table[id]?.state == .rejected ? .rejected : .cancelled) : .expired
                }
                return DCCWorker.send(id: id, socket: socket, table: table)
            }
        } else {
            // A passive offer waits for the receiver's SEND with our token; expire it on time.
            scheduleExpiry(info.id)
        }
    }

    /// After the offer timeout, an offer still waiting is expired. The wait does not keep the
    /// client: one that is gone (a test's, a closed network's) has nothing left to expire.
    func scheduleExpiry(_ id: Int) {
        let timeout = config.dccOfferTimeout
        Task { [weak self] in
            try? await Task.sleep(for: .seconds(timeout))
            await self?.expireIfWaiting(id)
        }
    }

    func expireIfWaiting(_ id: Int) {
        guard let info = transfers[id], info.state == .offered || info.state == .pending || info.state == .resuming else { return }
        transfers.record(id, .ended(.expired, time: WallClock.now()))
        emitTransferLine(id, "Transfer \(id) (\(info.offeredName)) expired: nobody accepted it", in: info.peer)
        if let ended = transfers[id] { offerUploadInstead(ended) }
    }

    // MARK: Receiving

    func handleDCC(_ dcc: DCCMessage, from nick: String, senderHost: String? = nil, now: Double) {
        switch dcc {
        case .send(let name, let address, let port, let size, let token):
            // An offer naming a system port (SSH on 22, a mail server…) would have /accept
            // connect there and save what the service says as a file: refused outright.
            if port > 0 && port < 1024 {
                note("\(nick) offered \(PlainText.visible(name)) at \(address) port \(port): refused, an offer names a port above 1023 (that one belongs to a system service)", in: nick)
                return
            }
            // The answer to our passive offer: they listen, we connect and send.
            if let token, let ours = transfers.first(where: { $0.direction == .sending && $0.passive && $0.token == token && $0.state == .offered }) {
                transfers.record(ours.id, .connectTo(address: address, port: port))
                let id = ours.id, table = transfers
                runWorker(id) {
                    guard let socket = try? Sockets.connect(host: address, port: port, timeout: 10) else {
                        return .failed("cannot connect to \(address) port \(port)")
                    }
                    return DCCWorker.send(id: id, socket: socket, table: table)
                }
                return
            }
            incomingOffer(name: name, address: address, port: port, size: size, token: token, from: nick, senderHost: senderHost, now: now)
        case .resume(_, let port, let position, let token):
            guard let ours = transfers.first(where: { t in
                t.direction == .sending && t.state == .offered && t.peer.lowercased() == nick.lowercased()
                    && (t.passive ? t.token == token : t.port == port)
            }), position < ours.size else { return }
            transfers.record(ours.id, .resumeFrom(position))
            if let connection {
                let accept = DCCMessage.accept(fileName: ours.offeredName, port: port, position: position, token: token)
                write(IRCMessage("PRIVMSG", nick, accept.ctcp), over: connection)
            }
            emitTransferLine(ours.id, "\(nick) resumes \(ours.offeredName) from \(Self.formatSize(position))", in: nick)
        case .accept(_, let port, let position, let token):
            guard let ours = transfers.first(where: { t in
                t.direction == .receiving && t.state == .resuming && t.peer.lowercased() == nick.lowercased()
                    && (t.passive ? t.token == token : t.port == port)
            }) else { return }
            transfers.record(ours.id, .resumeFrom(position))
            startReceiving(ours.id)
        }
    }

    func incomingOffer(name offered: String, address: String, port: Int, size: UInt64, token: String?, from nick: String,
                       senderHost: String? = nil, now: Double) {
        let name = SafeFileName.make(offered)
        let info = transfers.add { id in
            TransferInfo(id: id, direction: .receiving, peer: nick, offeredName: offered, localPath: config.downloadDirectory + "/" + name,
                         size: size, state: .pending, passive: port == 0, token: token, address: address, port: port, offeredAt: now)
        }
        if size > config.dccMaxSize {
            transfers.record(info.id, .ended(.rejected, time: now))
            sendReject(info)
            emitTransferLine(info.id, "\(nick) offered \(name) (\(Self.formatSize(size))): refused, larger than the limit of \(Self.formatSize(config.dccMaxSize))", in: nick)
            return
        }
        let shownName = name == offered ? name : "\(name) (offered as \(PlainText.visible(offered)))"
        let warning = port == 0 ? nil : OfferAddress.warning(offered: address, sender: senderHost, nick: nick)
        emitTransferLine(info.id, "\(nick) offers \(shownName), \(Self.formatSize(size)): /accept \(info.id) or /reject \(info.id)"
                            + (warning.map { " — careful: " + $0 } ?? ""), in: nick, needsAnswer: true)
        if config.dccAutoAcceptFrom.contains(where: { state.key(for: $0) == state.key(for: nick) }) {
            acceptTransfer(info.id)
        } else {
            scheduleExpiry(info.id)
        }
    }

    /// Takes an offer (the newest pending one when `id` is nil), resuming a partial file when there is one.
    public func acceptTransfer(_ id: Int? = nil) {
        guard let info = id.flatMap({ transfers[$0] }) ?? transfers.snapshot().last(where: { $0.state == .pending }) else {
            note(id.map { "No transfer \($0)" } ?? "No file offer is waiting", in: replyPlace)
            return
        }
        guard info.direction == .receiving, info.state == .pending else {
            note("Transfer \(info.id) is not waiting to be accepted", in: info.peer)
            return
        }
        do {
            try Files.createDirectories(config.downloadDirectory)
        } catch {
            note("Cannot create \(config.downloadDirectory): \(error)", in: info.peer)
            return
        }
        let name = Paths.lastComponent(of: info.localPath)
        let directory = config.downloadDirectory
        let exists: (String) -> Bool = { Files.exists(directory + "/" + $0) }
        let part = directory + "/" + name + ".part"
        let partSize = Files.regularFileSize(part).map(UInt64.init)
        if let partSize, partSize > 0, partSize < info.size, !exists(name) {
            // A previous attempt left NAME.part: ask the sender to continue from there.
            let position = partSize
            transfers.record(info.id, .resumeAsked(from: position))
            if let connection {
                let resume = DCCMessage.resume(fileName: info.offeredName, port: info.port, position: position, token: info.token)
                write(IRCMessage("PRIVMSG", info.peer, resume.ctcp), over: connection)
            }
            emitTransferLine(info.id, "Resuming \(name) from \(Self.formatSize(position))", in: info.peer)
            return
        }
        let unique = SafeFileName.unique(name, exists: exists)
        transfers.record(info.id, .savingTo(directory + "/" + unique))
        emitTransferLine(info.id, "Receiving \(unique) from \(info.peer) into \(directory)", in: info.peer)
        startReceiving(info.id)
    }

    func startReceiving(_ id: Int) {
        guard let info = transfers[id] else { return }
        let table = transfers
        transfers.record(id, .connecting)
        if info.passive {
            // They cannot reach us the usual way round: we listen and tell them where.
            let listener: (fd: Int32, port: Int)
            do {
                listener = try DCCWorker.listen(ports: config.dccPorts, bind: nil)
            } catch {
                transfers.record(id, .ended(.failed("no port to listen on"), time: WallClock.now()))
                note("Cannot receive: no free port to listen on (\(error))", in: info.peer)
                return
            }
            guard let connection else { close(listener.fd); return }
            let address = config.dccAddress ?? connection.localHost
            let reply = DCCMessage.send(fileName: info.offeredName, address: address, port: listener.port, size: info.size, token: info.token)
            write(IRCMessage("PRIVMSG", info.peer, reply.ctcp), over: connection)
            let deadline = Monotonic.now() + config.dccOfferTimeout
            runWorker(id) {
                guard let socket = DCCWorker.acceptOne(listener.fd, id: id, table: table, deadline: deadline) else {
                    return table[id]?.cancelRequested == true ? .cancelled : .expired
                }
                return DCCWorker.receive(id: id, socket: socket, table: table)
            }
        } else {
            runWorker(id) {
                guard let socket = try? Sockets.connect(host: info.address, port: info.port, timeout: 10) else {
                    return .failed("cannot connect to \(info.address) port \(info.port)")
                }
                return DCCWorker.receive(id: id, socket: socket, table: table)
            }
        }
    }

    /// Refuses an offer (the newest pending one when `id` is nil) and tells the sender.
    public func rejectTransfer(_ id: Int? = nil) {
        guard let info = id.flatMap({ transfers[$0] }) ?? transfers.snapshot().last(where: { $0.state == .pending }),
              info.direction == .receiving, info.state == .pending else {
            note("No such offer waiting", in: replyPlace)
            return
        }
        transfers.record(info.id, .ended(.rejected, time: WallClock.now()))
        sendReject(info)
        emitTransferLine(info.id, "Rejected \(info.offeredName) from \(info.peer)", in: info.peer)
    }

    func sendReject(_ info: TransferInfo) {
        guard let connection else { return }
        write(IRCMessage("NOTICE", info.peer, CTCP.make("DCC", "REJECT SEND \(DCCMessage.quote(info.offeredName))")), over: connection)
    }

    func dccRejected(by nick: String, text: String) {
        guard let ours = transfers.first(where: { $0.direction == .sending && $0.state == .offered && $0.peer.lowercased() == nick.lowercased() }) else { return }
        transfers.record(ours.id, .ended(.rejected, time: WallClock.now()))
        emitTransferLine(ours.id, "\(nick) rejected \(ours.offeredName)", in: nick)
    }

    /// Stops a transfer; its port closes and a partial download stays as NAME.part.
    public func cancelTransfer(_ id: Int) {
        guard let info = transfers[id], !info.state.isFinished else {
            note("No running transfer \(id)", in: replyPlace)
            return
        }
        transfers.record(id, .cancelRequested)
        if info.state == .pending || (info.passive && info.state == .offered) || info.state == .resuming {
            transfers.record(id, .ended(.cancelled, time: WallClock.now()))
            emitTransferLine(id, "Cancelled \(info.offeredName)", in: info.peer)
        }
    }

    /// A line per transfer in the server window.
    public func listTransfers() {
        let all = transfers.snapshot()
        if all.isEmpty { note("No transfers", in: replyPlace, isError: false); return }
        for info in all {
            let arrow = info.direction == .sending ? "to" : "from"
            note("#\(info.id) \(info.offeredName) \(arrow) \(info.peer): \(Self.describe(info.state)), \(Self.formatSize(info.transferred))/\(Self.formatSize(info.size))",
                 in: replyPlace, isError: false)
        }
    }

    // MARK: Workers and reporting

    /// Runs `work` on its own thread and reports the outcome here. A worker does not keep the
    /// client: the transfer's table is all it needs, and a client that is gone hears nothing.
    func runWorker(_ id: Int, _ work: @escaping @Sendable () -> TransferInfo.State) {
        let table = transfers
        Threads.start(name: "chat-tui dcc \(id)") { [weak self] in
            var outcome = work()
            if case .done(_, let seconds) = outcome, let info = table[id] {
                outcome = .done(sha256: DCCWorker.checksum(info.localPath), seconds: seconds)
            }
            let final = outcome
            table.record(id, .ended(final, time: WallClock.now()))
            Task { await self?.transferEnded(id) }
        }
    }

    func transferEnded(_ id: Int) {
        guard let info = transfers[id] else { return }
        let name = Paths.lastComponent(of: info.localPath)
        let text: String
        switch info.state {
        case .done(let sha, let seconds):
            let rate = seconds > 0 ? " at \(Self.formatSize(UInt64(Double(info.size - info.startOffset) / seconds)))/s" : ""
            text = info.viaHost && info.direction == .receiving
                ? "Downloaded \(name) (\(Self.formatSize(info.size))) from the host in \(seconds.fixed(1)) s\(rate), saved as \(info.localPath); SHA-256 \(sha)"
                : info.direction == .sending
                ? "Sent \(name) (\(Self.formatSize(info.size))) to \(info.peer) in \(seconds.fixed(1)) s\(rate); SHA-256 \(sha)"
                : "Received \(name) (\(Self.formatSize(info.size))) from \(info.peer) in \(seconds.fixed(1)) s\(rate), saved as \(info.localPath); SHA-256 \(sha)"
        case .failed(let reason): text = "Transfer of \(info.offeredName) failed: \(reason)"
        case .expired: text = "Offer of \(info.offeredName) expired: nobody accepted it; its port is closed"
        case .rejected: text = "\(info.offeredName) was rejected"
        case .cancelled: text = "Transfer of \(info.offeredName) cancelled" + (info.direction == .receiving ? "; the partial file stays as \(name).part" : "")
        default: return
        }
        emitTransferLine(id, text, in: info.peer)
        if info.state == .expired || (info.direction == .sending && { if case .failed = info.state { true } else { false } }()) {
            offerUploadInstead(info)
        }
    }

    /// `needsAnswer`: an offer waiting for /accept, which counts as unread and rings like a message.
    func emitTransferLine(_ id: Int, _ text: String, in conversation: String, needsAnswer: Bool = false) {
        let line = ChatLine(time: WallClock.now(), kind: .transfer(id), text: text, isHighlight: needsAnswer)
        for event in state.line(line, to: state.id(for: conversation), name: conversation) { emit(event) }
    }

    static func describe(_ state: TransferInfo.State) -> String {
        switch state {
        case .offered: return "offered"
        case .pending: return "waiting for /accept"
        case .resuming: return "resuming"
        case .connecting: return "connecting"
        case .active: return "in progress"
        case .done: return "done"
        case .failed(let reason): return "failed: \(reason)"
        case .rejected: return "rejected"
        case .expired: return "expired"
        case .cancelled: return "cancelled"
        }
    }

    public static func formatSize(_ bytes: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 { value /= 1024; unit += 1 }
        return unit == 0 ? "\(bytes) B" : value.fixed(1) + " " + units[unit]
    }
}
