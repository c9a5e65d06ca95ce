#if canImport(Glibc)
import Glibc
#endif
import ChatTransport
import IRCWire

/// Files through the host (`soju.im/FILEHOST`): /upload sends a file to the server's web port
/// and shares its link in the conversation; /download N fetches a shared one into the downloads
/// folder (the same rules as DCC: a safe name, never over an existing file, its SHA-256 said).
extension ChatClient {
    /// The server's upload URL for this connection, if it gives one we may use: never plain
    /// HTTP when the IRC connection is TLS (the FILEHOST spec).
    var fileHostURL: HTTPURL? {
        guard let value = state.isupport["soju.im/FILEHOST"], let url = HTTPURL(value) else { return nil }
        if connection?.certificate != nil && !url.secure { return nil }
        return url
    }

    /// Uploads `path` to the host and, once stored, says its link in `target` ("NAME (SIZE) URL").
    public func uploadFile(_ path: String, to target: String) {
        let conversation = state.target(target)
        guard let size = Files.regularFileSize(path).map(UInt64.init) else {
            note("Cannot upload \(path): no such file", in: conversation, name: target)
            return
        }
        guard state.isRegistered, let url = fileHostURL else {
            note(state.isRegistered ? "This server takes no uploads (it gives no soju.im/FILEHOST address)" : "Not connected: nothing was uploaded",
                 in: conversation, name: target)
            return
        }
        let name = SafeFileName.make(Paths.lastComponent(of: path))
        let info = transfers.add { id in
            var info = TransferInfo(id: id, direction: .sending, peer: target, offeredName: name, localPath: path, size: size,
                                    state: .connecting, offeredAt: WallClock.now())
            info.viaHost = true
            return info
        }
        emitTransferLine(info.id, "Uploading \(name) (\(Self.formatSize(size))) to the host for \(target) as transfer \(info.id)", in: target)
        let table = transfers, id = info.id, pin = connection?.certificate?.fingerprint, known = config.knownServersPath
        Threads.start(name: "chat-tui upload \(id)") { [weak self] in
            let (outcome, location) = HostTransfer.upload(id: id, url: url, pin: pin, knownServers: known, table: table)
            var final = outcome
            if case .done(_, let seconds) = outcome { final = .done(sha256: DCCWorker.checksum(path), seconds: seconds) }
            table.record(id, .ended(final, time: WallClock.now()))
            Task { await self?.uploadEnded(id, location: location) }
        }
    }

    func uploadEnded(_ id: Int, location: String?) {
        guard let info = transfers[id] else { return }
        switch info.state {
        case .done(let sha, _):
            emitTransferLine(id, "Uploaded \(info.offeredName) (\(Self.formatSize(info.size))); SHA-256 \(sha)", in: info.peer)
            if let location { send("\(info.offeredName) (\(Self.formatSize(info.size))) \(location)", to: info.peer) }
        default:
            transferEnded(id)
        }
    }

    /// Downloads shared file `number` (as "/download N" shows it) into the downloads folder.
    public func downloadShared(_ number: Int) {
        guard let file = state.sharedFiles.values.first(where: { $0.number == number }) else {
            note("No shared file \(number)", in: replyPlace)
            return
        }
        // From our own upload address's host: the same server, whatever name the sharer used.
        guard let base = fileHostURL, let url = HTTPURL(base.origin + file.path) else {
            note("This server gives no file address (soju.im/FILEHOST): \(file.name) cannot be fetched", in: replyPlace)
            return
        }
        do {
            try Files.createDirectories(config.downloadDirectory)
        } catch {
            note("Cannot create \(config.downloadDirectory): \(error)", in: replyPlace)
            return
        }
        let directory = config.downloadDirectory
        // The name is taken at once (NAME.part made with O_EXCL), so two downloads never share it.
        var unique = SafeFileName.unique(file.name) { Files.exists(directory + "/" + $0) }
        while true {
            let fd = open(directory + "/" + unique + ".part", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            if fd >= 0 { close(fd); break }
            guard errno == EEXIST else {
                note("Cannot write in \(directory): \(TransportError.errnoText(errno))", in: replyPlace)
                return
            }
            unique = SafeFileName.unique(file.name) { Files.exists(directory + "/" + $0) || $0 == unique }
        }
        let place = replyPlace
        let peer = place == .server ? "*" : state[place]?.name ?? "*"
        let info = transfers.add { id in
            var info = TransferInfo(id: id, direction: .receiving, peer: peer, offeredName: file.name, localPath: directory + "/" + unique,
                                    size: 0, state: .connecting, offeredAt: WallClock.now())
            info.viaHost = true
            return info
        }
        emitTransferLine(info.id, "Downloading \(file.name) from the host into \(directory) as transfer \(info.id)", in: peer)
        let table = transfers, id = info.id, pin = connection?.certificate?.fingerprint, known = config.knownServersPath
        Threads.start(name: "chat-tui download \(id)") { [weak self] in
            var outcome = HostTransfer.download(id: id, url: url, pin: pin, knownServers: known, table: table)
            if case .done(_, let seconds) = outcome, let done = table[id] { outcome = .done(sha256: DCCWorker.checksum(done.localPath), seconds: seconds) }
            table.record(id, .ended(outcome, time: WallClock.now()))
            Task { await self?.transferEnded(id) }
        }
    }

    /// A DCC offer nobody could take (unanswered, or the peer could not connect): the file can
    /// still go through the host, which both sides reach.
    func offerUploadInstead(_ info: TransferInfo) {
        guard info.direction == .sending, !info.viaHost, fileHostURL != nil else { return }
        unreachable = (info.localPath, info.peer)
        emitTransferLine(info.id, "\(info.peer) could not be reached peer to peer; /upload sends \(info.offeredName) through the host instead", in: info.peer)
    }

    /// `/upload` with no file: the last DCC offer that could not reach its peer.
    public func uploadUnreachable() -> Bool {
        guard let (path, nick) = unreachable else { return false }
        unreachable = nil
        uploadFile(path, to: nick)
        return true
    }
}
