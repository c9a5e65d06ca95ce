#if canImport(Glibc)
import Glibc
#endif
import ChatTransport
import IRCWire

/// A file a message shares through the host (`soju.im/FILEHOST`): "NAME (SIZE) URL", with the
/// URL's path `/files/ID/NAME` on the server's web port. Numbered in the order seen, for `/download N`.
public struct SharedFile: Sendable, Equatable {
    public let number: Int
    public let name: String
    /// As the message said it ("1.2 MiB"), or nil.
    public let size: String?
    /// The file's path on the host (`/files/ID/NAME`): fetched from our own FILEHOST address,
    /// whatever host name the sharer's link used.
    public let path: String

    /// The shared file in a message's text, when the text is exactly what an upload says
    /// ("NAME (SIZE) URL", URL `/files/ID/NAME` on the web port `filehost` names): the name
    /// shown is the URL's (the host made it safe), never the sender's other words. Anything
    /// else, a link to another host's files among them, stays the message it was.
    static func parse(_ text: String, number: Int, filehost: HTTPURL?) -> SharedFile? {
        guard let filehost else { return nil }
        let words = text.split(separator: " ", omittingEmptySubsequences: false)
        // Either scheme: the web port speaks HTTP and HTTPS on one port, so a link made by an
        // https page or a TLS client is the same file for a plain-text client, and the reverse
        // (it is fetched from this client's own address for the host, `downloadShared`).
        guard words.count >= 4, let link = words.last, let url = HTTPURL(String(link)), url.port == filehost.port else { return nil }
        let segments = url.path.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count == 4, segments[1] == "files", segments[2].utf8.count == 24,
              segments[2].utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else { return nil }
        let unit = words[words.count - 2], amount = words[words.count - 3]
        guard amount.hasPrefix("("), unit.hasSuffix(")"), ["B)", "KiB)", "MiB)", "GiB)", "TiB)"].contains(unit),
              Double(amount.dropFirst()) != nil else { return nil }
        guard let decoded = URLText.percentDecoded(String(segments[3])) else { return nil }
        let name = SafeFileName.make(decoded)
        // The words before the size must be the name the link carries (what an upload says).
        guard SafeFileName.make(words.dropLast(3).joined(separator: " ")) == name else { return nil }
        return SharedFile(number: number, name: name, size: amount.dropFirst() + " " + unit.dropLast(), path: url.path)
    }
}

/// An http(s) URL taken apart (only what uploads and downloads need).
public struct HTTPURL: Sendable, Equatable {
    public let secure: Bool
    public let host: String
    public let port: Int
    public let path: String

    public init?(_ text: String) {
        let rest: Substring
        if text.hasPrefix("https://") { secure = true; rest = text.dropFirst(8) } else if text.hasPrefix("http://") { secure = false; rest = text.dropFirst(7) } else { return nil }
        let authority = rest.prefix { $0 != "/" }
        let path = String(rest.dropFirst(authority.count))
        var host = String(authority), port = secure ? 443 : 80
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let after = host[host.index(after: close)...]
            if after.hasPrefix(":") { guard let p = Int(after.dropFirst()) else { return nil }; port = p }
            host = String(host[host.index(after: host.startIndex)..<close])
        } else if let colon = host.lastIndex(of: ":") {
            guard let p = Int(host[host.index(after: colon)...]) else { return nil }
            port = p
            host = String(host[..<colon])
        }
        guard !host.isEmpty, (1...65535).contains(port), !host.contains("@"), path.isEmpty || path.hasPrefix("/"),
              !path.contains(" ") else { return nil }
        self.host = host
        self.port = port
        self.path = path.isEmpty ? "/" : path
    }

    /// `scheme://host:port`, as a Host header and a base for paths.
    public var origin: String { (secure ? "https://" : "http://") + (host.contains(":") ? "[\(host)]" : host) + ":\(port)" }
    var hostHeader: String { (host.contains(":") ? "[\(host)]" : host) + ":\(port)" }
}

/// The blocking half of files through the host: one upload or download on its own thread,
/// over HTTP or HTTPS to the server's web port, reporting progress into the transfers table.
/// Over HTTPS the certificate must be the one the IRC connection trusted (the same server's),
/// one the system's trust store accepts, or the one remembered for that web address in
/// known-servers, beside the IRC pins; the first seen there is remembered (trust on first use),
/// and a different one later is refused, as a changed IRC certificate is.
enum HostTransfer {
    /// A connection to the web port: a socket, with TLS when the URL is https.
    final class Channel {
        let fd: Int32
        let tls: TLSSession?

        init(_ url: HTTPURL, pin: String?, knownServers: String?) throws(TransportError) {
            fd = try Sockets.connect(host: url.host, port: url.port, timeout: 10)
            DCCWorker.setTimeouts(fd)
            guard url.secure else { tls = nil; return }
            guard let context = try? TLSContext.client() else { close(fd); throw .unavailable("TLS is not available") }
            let session = TLSSession(context: context, fd: fd, server: false, hostName: url.host)
            tls = session
            var tries = 0
            while true {
                switch session.handshake() {
                case .done:
                    let seen = session.peerFingerprint.map(TLSCertificates.format)
                    if let pin, seen?.uppercased() == pin.uppercased() { return }
                    if session.verificationProblem == nil { return }
                    if let path = knownServers, let seen {
                        let origin = url.hostHeader
                        if let known = KnownServers.fingerprint(for: origin, in: path) {
                            if KnownServers.normalise(known) == KnownServers.normalise(seen) { return }
                            close(fd)
                            throw .unavailable("the web port's certificate changed: it was \(known), now it is \(seen); if the host really has a new one, remove the line \(origin) from \(path)")
                        }
                        if (try? KnownServers.remember(origin, seen, in: path)) != nil { return }
                    }
                    close(fd)
                    throw .unavailable("the web port's certificate (\(seen ?? "none")) is not the server's")
                case .wantRead, .wantWrite:
                    tries += 1
                    if tries > 50 { close(fd); throw .unavailable("the TLS handshake timed out") }
                case .failed(let reason):
                    close(fd)
                    throw .unavailable("TLS: \(reason)")
                }
            }
        }

        deinit { close(fd) }

        func send(_ bytes: [UInt8]) -> Bool {
            var offset = 0
            var stalls = 0
            while offset < bytes.count {
                let wrote: Int
                if let tls {
                    guard let n = bytes.withUnsafeBytes({ tls.write(UnsafeRawBufferPointer(rebasing: $0[offset...])) }) else { return false }
                    wrote = n
                } else {
                    wrote = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
                    if wrote < 0 && errno != EAGAIN && errno != EINTR { return false }
                }
                if wrote <= 0 {
                    stalls += 1
                    // 200 ms timeouts: a minute without progress is a dead peer.
                    if stalls > Int(DCCWorker.stallTimeout / 0.2) { return false }
                    continue
                }
                stalls = 0
                offset += wrote
            }
            return true
        }

        /// Bytes read (0: the end), or nil after a minute of silence or an error.
        func receive(_ buffer: inout [UInt8]) -> Int? {
            var stalls = 0
            while true {
                let result = tls.map { $0.read(into: &buffer) } ?? SocketRead.once(fd, into: &buffer)
                switch result {
                case .data(let count): return count
                case .endOfStream: return 0
                case .wouldBlock:
                    stalls += 1
                    if stalls > Int(DCCWorker.stallTimeout / 0.2) { return nil }
                case .failed: return nil
                }
            }
        }
    }

    struct Response {
        var status = 0
        var headers: [String: String] = [:]
        var body: [UInt8] = []
    }

    /// Reads an answer's status and headers; the body's first bytes (those read with them) in `body`.
    static func readHead(_ channel: Channel) -> Response? {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var held: [UInt8] = []
        while true {
            if let end = findHeaderEnd(held) {
                guard let text = String(validating: held[..<end], as: UTF8.self) else { return nil }
                var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
                let statusLine = lines.removeFirst().split(separator: " ")
                guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
                var response = Response(status: status)
                for line in lines {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    response.headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmedOfWhitespace()
                }
                response.body = Array(held[(end + 4)...])
                return response
            }
            guard held.count < 64 * 1024, let got = channel.receive(&buffer), got > 0 else { return nil }
            held += buffer[..<got]
        }
    }

    static func findHeaderEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }

    /// The rest of a short answer (an upload's JSON, an error's words), at most 64 KiB.
    static func readBody(_ channel: Channel, _ response: inout Response) {
        let length = response.headers["content-length"].flatMap(Int.init) ?? 64 * 1024
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while response.body.count < min(length, 64 * 1024), let got = channel.receive(&buffer), got > 0 {
            response.body += buffer[..<got]
        }
    }


    /// POSTs the file to the upload URL; the outcome and, when it is stored, the file's URL.
    static func upload(id: Int, url: HTTPURL, pin: String?, knownServers: String?, table: FileTransfers) -> (TransferInfo.State, String?) {
        guard let info = table[id] else { return (.cancelled, nil) }
        let file = open(info.localPath, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return (.failed("cannot read \(info.localPath): \(TransportError.errnoText(errno))"), nil) }
        defer { close(file) }
        let channel: Channel
        do { channel = try Channel(url, pin: pin, knownServers: knownServers) } catch { return (.failed("cannot reach the host's web port: \(error)"), nil) }
        let head = "POST \(url.path) HTTP/1.1\r\nHost: \(url.hostHeader)\r\nContent-Type: application/octet-stream\r\n"
            + "Content-Disposition: attachment; filename*=UTF-8''\(URLText.percentEncoded(info.offeredName))\r\n"
            + "Content-Length: \(info.size)\r\nConnection: close\r\n\r\n"
        guard channel.send(Array(head.utf8)) else { return (.failed("the host closed the connection"), nil) }
        table.record(id, .started(position: 0, time: WallClock.now()))
        let started = Monotonic.now()
        var buffer = [UInt8](repeating: 0, count: DCCWorker.chunk)
        var sent: UInt64 = 0
        while sent < info.size {
            if table[id]?.cancelRequested ?? true { return (.cancelled, nil) }
            let count = read(file, &buffer, Int(min(UInt64(buffer.count), info.size - sent)))
            if count < 0 { return (.failed("read error: \(TransportError.errnoText(errno))"), nil) }
            if count == 0 { break }
            // A refusal comes before the body is read (413, 507): the send then fails; its answer says why.
            guard channel.send(Array(buffer[..<count])) else { break }
            sent += UInt64(count)
            table.record(id, .progress(sent))
        }
        guard var response = readHead(channel) else { return (.failed("the host did not answer"), nil) }
        readBody(channel, &response)
        guard response.status == 201, let location = response.headers["location"] else {
            let words = String(decoding: response.body.prefix(300), as: UTF8.self).trimmedOfWhitespace()
            return (.failed("the host refused it (\(response.status)\(words.isEmpty ? "" : ": " + words))"), nil)
        }
        return (.done(sha256: "", seconds: Monotonic.now() - started), location)
    }

    /// GETs a hosted file into `info.localPath` (written as NAME.part, renamed when whole).
    static func download(id: Int, url: HTTPURL, pin: String?, knownServers: String?, table: FileTransfers) -> TransferInfo.State {
        guard let info = table[id] else { return .cancelled }
        let channel: Channel
        do { channel = try Channel(url, pin: pin, knownServers: knownServers) } catch { return .failed("cannot reach the host's web port: \(error)") }
        let head = "GET \(url.path) HTTP/1.1\r\nHost: \(url.hostHeader)\r\nConnection: close\r\n\r\n"
        guard channel.send(Array(head.utf8)), var response = readHead(channel) else { return .failed("the host did not answer") }
        guard response.status == 200, let length = response.headers["content-length"].flatMap(UInt64.init) else {
            readBody(channel, &response)
            let words = String(decoding: response.body.prefix(300), as: UTF8.self).trimmedOfWhitespace()
            return .failed("the host answered \(response.status)\(words.isEmpty ? "" : ": " + words)")
        }
        table.record(id, .sized(length))
        // NAME.part was made (empty, O_EXCL) when the name was picked: ours alone.
        let part = info.localPath + ".part"
        let file = open(part, O_WRONLY | O_CLOEXEC)
        guard file >= 0 else { return .failed("cannot write \(part): \(TransportError.errnoText(errno))") }
        table.record(id, .started(position: 0, time: WallClock.now()))
        let started = Monotonic.now()
        var received: UInt64 = 0
        func write(_ bytes: ArraySlice<UInt8>) -> Bool {
            let keep = bytes.prefix(Int(min(UInt64(bytes.count), length - received)))
            var offset = keep.startIndex
            while offset < keep.endIndex {
                let wrote = keep.withUnsafeBytes { Glibc.write(file, $0.baseAddress! + (offset - keep.startIndex), keep.endIndex - offset) }
                if wrote < 0 { if errno == EINTR { continue }; return false }
                offset += wrote
            }
            received += UInt64(keep.count)
            table.record(id, .progress(received))
            return true
        }
        var ok = write(response.body[...])
        var buffer = [UInt8](repeating: 0, count: DCCWorker.chunk)
        while ok && received < length {
            if table[id]?.cancelRequested ?? true { close(file); return .cancelled }
            guard let got = channel.receive(&buffer), got > 0 else { break }
            ok = write(buffer[..<got])
        }
        let synced = fsync(file) == 0
        close(file)
        guard ok, synced else { return .failed("cannot write \(part): \(TransportError.errnoText(errno))") }
        guard received == length else { return .failed("the connection ended after \(received) of \(length) bytes; the partial file stays as \(part)") }
        // Never over a file that appeared meanwhile: link fails if the name is taken, and the
        // next free name is used.
        var final = info.localPath
        while link(part, final) != 0 {
            guard errno == EEXIST else { return .failed("cannot save \(final): \(TransportError.errnoText(errno))") }
            let directory = Paths.directory(of: info.localPath)
            final = directory + "/" + SafeFileName.unique(Paths.lastComponent(of: info.localPath)) { Files.exists(directory + "/" + $0) }
        }
        unlink(part)
        if final != info.localPath { table.record(id, .savingTo(final)) }
        return .done(sha256: "", seconds: Monotonic.now() - started)
    }
}
