#if canImport(Glibc)
import Glibc
#endif
import ChatTransport
import IRCWire

/// The blocking half of DCC: moves the bytes of one transfer on its own thread, reporting
/// progress into the shared table. Acknowledgements are 4-byte big-endian counts of the file
/// position received (modulo 2³²), as every DCC client sends them.
enum DCCWorker {
    static let chunk = 64 * 1024
    /// No byte moved for this long: the transfer has stalled.
    static let stallTimeout: Double = 60

    /// Opens a listening socket on a port from `ports` (nil: any free port).
    static func listen(ports: ClosedRange<Int>?, bind: String?) throws(TransportError) -> (fd: Int32, port: Int) {
        for port in ports.map(Array.init) ?? [0] {
            if let fds = try? Sockets.listen(bind: bind ?? "0.0.0.0", port: port, backlog: 1), let fd = fds.first {
                for extra in fds.dropFirst() { close(extra) }
                return (fd, Sockets.boundPort(fd))
            }
        }
        throw .addressInUse(address: bind ?? "*", port: ports?.lowerBound ?? 0)
    }

    /// Waits for one connection on `listener` until `deadline`, or until the transfer is cancelled.
    static func acceptOne(_ listener: Int32, id: Int, table: FileTransfers, deadline: Double) -> Int32? {
        defer { close(listener) }
        while Monotonic.now() < deadline {
            if table[id]?.cancelRequested ?? true { return nil }
            var pfd = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, 200) > 0, let (fd, _) = try? Accept.next(listener) {
                let flags = fcntl(fd, F_GETFL, 0)
                _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)
                return fd
            }
        }
        return nil
    }

    static func setTimeouts(_ fd: Int32) {
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Streams the file from the table's start offset and waits for the last acknowledgement.
    static func send(id: Int, socket fd: Int32, table: FileTransfers) -> TransferInfo.State {
        defer { close(fd) }
        guard let info = table[id] else { return .cancelled }
        setTimeouts(fd)
        let file = open(info.localPath, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return .failed("cannot read \(info.localPath): \(TransportError.errnoText(errno))") }
        defer { close(file) }
        var position = info.startOffset
        if position > 0 && lseek(file, off_t(position), SEEK_SET) < 0 {
            return .failed("cannot resume at \(position): \(TransportError.errnoText(errno))")
        }
        let started = Monotonic.now()
        table.record(id, .started(position: position, time: WallClock.now()))
        var buffer = [UInt8](repeating: 0, count: chunk)
        var acked: UInt32 = 0
        var lastProgress = Monotonic.now()
        func readAcks(wait: Bool) -> Bool {
            var ack = [UInt8](repeating: 0, count: 4096)
            let n = recv(fd, &ack, ack.count, wait ? 0 : Int32(MSG_DONTWAIT))
            if n == 0 { return false }
            if n >= 4 {
                let tail = Array(ack[(n - n % 4 - 4)..<(n - n % 4)])
                acked = UInt32(tail[0]) << 24 | UInt32(tail[1]) << 16 | UInt32(tail[2]) << 8 | UInt32(tail[3])
            }
            return true
        }
        while true {
            if table[id]?.cancelRequested ?? true { return .cancelled }
            let count = read(file, &buffer, chunk)
            if count < 0 { return .failed("read error: \(TransportError.errnoText(errno))") }
            if count == 0 { break }
            var sent = 0
            while sent < count {
                let n = buffer.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL)) }
                if n > 0 { sent += n; lastProgress = Monotonic.now(); continue }
                let code = errno
                if n < 0 && (code == EAGAIN || code == EWOULDBLOCK || code == EINTR) {
                    if table[id]?.cancelRequested ?? true { return .cancelled }
                    if Monotonic.now() - lastProgress > stallTimeout { return .failed("stalled: the receiver took nothing for \(Int(stallTimeout)) s") }
                    _ = readAcks(wait: false)
                    continue
                }
                return .failed("the receiver closed the connection at \(position + UInt64(sent)) of \(info.size) bytes")
            }
            position += UInt64(count)
            table.record(id, .progress(position))
            _ = readAcks(wait: false)
        }
        // Everything is written: wait for the receiver to acknowledge the end (or hang up).
        let expected = UInt32(truncatingIfNeeded: info.size)
        let deadline = Monotonic.now() + 30
        while acked != expected && Monotonic.now() < deadline {
            if table[id]?.cancelRequested ?? true { return .cancelled }
            if !readAcks(wait: true) { break }
        }
        return .done(sha256: "", seconds: Monotonic.now() - started)
    }

    /// Receives into `NAME.part` from the table's start offset; renames it when complete.
    static func receive(id: Int, socket fd: Int32, table: FileTransfers) -> TransferInfo.State {
        defer { close(fd) }
        guard let info = table[id] else { return .cancelled }
        setTimeouts(fd)
        let partPath = info.localPath + ".part"
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (info.startOffset > 0 ? O_APPEND : O_TRUNC)
        let file = open(partPath, flags, 0o644)
        guard file >= 0 else { return .failed("cannot write \(partPath): \(TransportError.errnoText(errno))") }
        var position = info.startOffset
        let started = Monotonic.now()
        table.record(id, .started(position: position, time: WallClock.now()))
        var buffer = [UInt8](repeating: 0, count: chunk)
        var lastProgress = Monotonic.now()
        var failure: String?
        while position < info.size {
            if table[id]?.cancelRequested ?? true { close(file); return .cancelled }
            let wanted = Int(min(UInt64(chunk), info.size - position))
            let n = recv(fd, &buffer, wanted, 0)
            if n > 0 {
                var written = 0
                while written < n {
                    let w = buffer.withUnsafeBytes { write(file, $0.baseAddress! + written, n - written) }
                    if w <= 0 { failure = "cannot write \(partPath): \(TransportError.errnoText(errno))"; break }
                    written += w
                }
                if failure != nil { break }
                position += UInt64(n)
                lastProgress = Monotonic.now()
                var ack = UInt32(truncatingIfNeeded: position).bigEndian
                _ = Glibc.send(fd, &ack, 4, Int32(MSG_NOSIGNAL))
                table.record(id, .progress(position))
                continue
            }
            let code = errno
            if n < 0 && (code == EAGAIN || code == EWOULDBLOCK || code == EINTR) {
                if Monotonic.now() - lastProgress > stallTimeout { failure = "stalled: nothing arrived for \(Int(stallTimeout)) s"; break }
                continue
            }
            failure = "the sender closed the connection at \(position) of \(info.size) bytes"
            break
        }
        close(file)
        if let failure {
            return .failed("\(failure); the partial file is kept as \(partPath)")
        }
        // Never overwrite: if the final name appeared meanwhile, pick the next free one.
        let directory = Paths.directory(of: info.localPath)
        var finalPath = info.localPath
        if Files.exists(finalPath) {
            let name = SafeFileName.unique(Paths.lastComponent(of: finalPath)) {
                Files.exists(directory + "/" + $0)
            }
            finalPath = directory + "/" + name
            table.record(id, .savingTo(finalPath))
        }
        guard rename(partPath, finalPath) == 0 else {
            return .failed("cannot rename \(partPath): \(TransportError.errnoText(errno))")
        }
        return .done(sha256: "", seconds: Monotonic.now() - started)
    }

    /// SHA-256 of a file, for the user to compare with the sender's.
    static func checksum(_ path: String) -> String {
        let file = open(path, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return "" }
        defer { close(file) }
        var hasher = SHA256Hasher()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = read(file, &buffer, buffer.count)
            if n <= 0 { break }
            buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
        return Crypto.hex(hasher.finalize())
    }
}
