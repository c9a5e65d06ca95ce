import ChatTransport
import ChatWeb
import IRCWire
#if canImport(Glibc)
import Glibc
#endif

/// The web port in the runtime: HTTP until a WebSocket upgrade at `/irc`, then the connection is
/// an IRC client like any other (the same registration, limits, pacing and history), its lines
/// one per WebSocket message. Browsers refuse the IRC ports (6665–6669, 6697), hence a port of its own.
extension ServerRuntime {
    enum WebMode {
        case http(HTTPRequestReader)
        case websocket(WebSocketReader, WebSocket.Subprotocol?)
        /// Our close frame is sent: what the client still sends is read and dropped until it
        /// closes (or the deadline passes), so the frame is not lost to a reset.
        case closing(until: Double)
    }

    /// Seconds an HTTP connection may take to send a request (a slow sender holds nothing longer).
    static let webRequestTimeout: Double = 10
    /// The least an upload's body must bring in each `webRequestTimeout`.
    static let uploadFloor = 64 * 1024
    /// Requests answered from one read (pipelining past it: answered and closed).
    static let requestsPerRead = 8

    /// Counts a new web connection against its address (as the state counts IRC clients per
    /// address): past the limit it is answered 429 and closed at once.
    func admitWebConnection(_ connection: Connection, host: String) {
        guard let limits = state.config.connectionLimits, !(limits.exemptLoopback && ServerState.isLoopback(host)) else { return }
        // A quarter of the descriptors at most for HTTP connections from everyone together: the
        // rest stay for IRC clients (the host's own screen among them), the store and links.
        guard webHTTPConnections < Self.httpConnectionLimit else {
            if Monotonic.now() - webBusyLoggedAt >= 60 {
                webBusyLoggedAt = Monotonic.now()
                logger("[\(connection.peer)] web: refused, \(webHTTPConnections) HTTP connections are open (a quarter of the descriptors)")
            }
            webAnswer(connection, .text(503, "the host is busy; try again in a moment", keepAlive: false), close: true)
            return
        }
        let key = ServerState.throttleKey(host)
        guard webPending[key, default: 0] < limits.perAddress else {
            logger("[\(connection.peer)] web: refused, \(limits.perAddress) web connections from \(key) are waiting already")
            webAnswer(connection, .text(429, "too many connections from your address", keepAlive: false), close: true)
            return
        }
        webPending[key, default: 0] += 1
        webHTTPConnections += 1
        connection.webKey = key
    }

    /// HTTP connections at most, from everyone: a quarter of the open-file limit.
    static let httpConnectionLimit: Int = {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        return max(64, Int(min(limit.rlim_cur, 1 << 20)) / 4)
    }()
    /// A burst of requests per address, then a rate: a page and its assets come at once; a loop
    /// of keep-alive connections is slowed (16 made 10,600 requests a second at 95 % CPU).
    static let requestBurst = 120
    static let requestsPerSecond = 30.0
    static let requestPacerLimit = 10_000

    /// Whether a request from this connection may be answered now (true for loopback, and with
    /// limits off); false: it is answered 429 and the connection closed.
    func requestAllowed(_ connection: Connection) -> Bool {
        guard let key = connection.webKey else { return true }
        let now = Monotonic.now()
        if webRequestPacers[key] == nil && webRequestPacers.count >= Self.requestPacerLimit {
            webRequestPacers = webRequestPacers.filter { $0.value.readyAt(Self.requestBurst) > now }
        }
        var pacer = webRequestPacers[key] ?? Pacer(burst: Self.requestBurst, perSecond: Self.requestsPerSecond, now: now)
        let allowed = pacer.take(1, now: now)
        webRequestPacers[key] = pacer
        return allowed
    }

    /// No longer an HTTP connection waiting (upgraded, or closed).
    func webUncounted(_ connection: Connection) {
        guard let key = connection.webKey else { return }
        connection.webKey = nil
        webHTTPConnections -= 1
        webPending[key, default: 1] -= 1
        if webPending[key] == 0 { webPending[key] = nil }
    }

    /// Bytes from a web connection, in whichever stage it is.
    func webRead(_ connection: Connection, _ bytes: [UInt8]) {
        switch connection.web {
        case .http(var reader)?:
            // Taken out while fed, so its buffer is not shared and appending does not copy it.
            connection.web = nil
            var result = reader.feed(bytes)
            connection.web = .http(reader)
            // Browsers do not pipeline: a few requests per read, and a client that sends more at
            // once is answered those and closed (each costs a move of what follows it).
            var answered = 0
            while !connection.closing {
                switch result {
                case .needMore:
                    return
                case .refused(let refusal):
                    logger("[\(connection.peer)] web: refused (\(refusal.status)): \(PlainText.visible(refusal.reason))")
                    webAnswer(connection, .text(refusal.status, refusal.reason, keepAlive: false), close: true)
                    return
                case .request(let request):
                    connection.webSince = Monotonic.now()
                    guard requestAllowed(connection) else {
                        webAnswer(connection, .text(429, "too many requests from your address; slow down", keepAlive: false), close: true)
                        return
                    }
                    if webRequest(connection, request) { return }
                    answered += 1
                case .head(let request, let length):
                    connection.webSince = Monotonic.now()
                    if webUploadStarts(connection, request, length: length) { return }
                case .body(let bytes, let last):
                    if webUploadBytes(connection, bytes, last: last) { return }
                    if last { answered += 1 }
                }
                guard case .http(var more)? = connection.web else { return }
                if answered >= Self.requestsPerRead {
                    if more.buffered > 0 { webAnswer(connection, .text(429, "too many requests at once", keepAlive: false), close: true) }
                    return
                }
                connection.web = nil
                result = more.feed([])
                connection.web = .http(more)
            }
        case .websocket(var reader, let subprotocol)?:
            connection.web = nil
            let events = reader.feed(bytes)
            connection.web = .websocket(reader, subprotocol)
            for event in events {
                switch event {
                case .message(let line):
                    // What the line framer does for a TCP client: a line past the cap is reported, not handled.
                    connection.queue.append(line.count > IRCLimits.frameBytes ? .overlong(discardedBytes: line.count) : .line(line))
                case .ping(let payload):
                    connection.output.append(WebSocket.frame(.pong, payload))
                    queueFlush(connection)
                case .pong:
                    break
                case .close:
                    // What it sent before goes to the state, and what the state answers goes out,
                    // then our close frame: `closeClosing` writes it after the last words.
                    drain(connection)
                    lost(connection, reason: "Connection closed")
                    return
                case .fail(let code, let words):
                    logger("[\(connection.peer)] web: \(PlainText.visible(words)); closing (\(code.rawValue))")
                    drain(connection)
                    connection.output.append(WebSocket.closeFrame(code, words))
                    connection.web = .closing(until: Monotonic.now() + 2)
                    queueFlush(connection)
                    return
                }
            }
            drain(connection)
        case .closing?, nil:
            break
        }
    }

    /// One HTTP request; true when the connection is no longer reading requests (upgraded or closing).
    private func webRequest(_ connection: Connection, _ request: HTTPRequest) -> Bool {
        guard let path = request.path else {
            webAnswer(connection, .text(400, "not a path this server serves", keepAlive: false), close: true)
            return true
        }
        if path == "/irc" {
            let allowed = state.config.webOrigins, name = state.config.name
            switch WebSocket.handshake(request, originAllowed: { origin in
                Self.sameOrigin(origin, host: request.header("host"), serverName: name, allowed: allowed) || allowed.contains(origin ?? "")
            }) {
            case .refused(let response):
                webAnswer(connection, response, close: true)
            case .accepted(let response, let subprotocol):
                connection.output.append(response.serialized())
                connection.web = .websocket(WebSocketReader(), subprotocol)
                queueFlush(connection)
                // Now an IRC client: the state counts it from here.
                webUncounted(connection)
                admitWebClient(connection, requestHost: request.header("host"))
            }
            return true
        }
        if path.hasPrefix("/upload"), request.method == "OPTIONS" {
            // soju.im/FILEHOST: the upload URL answers OPTIONS with what it takes.
            webAnswer(connection, HTTPResponse(status: 204, headers: [("Allow", "OPTIONS, POST"), ("Accept-Post", "*/*")]), close: !request.keepsAlive)
            return !request.keepsAlive
        }
        if path.hasPrefix("/upload") {
            // A POST with a body was streamed (`.head`); this one has none, or is not a POST.
            webAnswer(connection, .text(request.method == "POST" ? 411 : 405, request.method == "POST" ? "an upload needs a Content-Length and a body"
                                            : "uploads are POSTed here"), close: !request.keepsAlive)
            return !request.keepsAlive
        }
        guard request.method == "GET" || request.method == "HEAD" else {
            webAnswer(connection, HTTPResponse(status: 405, headers: [("Allow", "GET, HEAD"), ("Content-Type", "text/plain; charset=utf-8")],
                                               body: Array("only GET and HEAD here\n".utf8)), head: false, close: !request.keepsAlive)
            return !request.keepsAlive
        }
        let answer: HTTPResponse
        if path == "/info.json" {
            answer = HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")],
                                  body: Array(webInfo(secure: connection.tls != nil).utf8))
        } else if path.hasPrefix("/files/") {
            return webDownload(connection, request, path: path)
        } else if let asset = WebAssets.asset(at: path) {
            answer = WebAssets.response(asset, ifNoneMatch: request.header("if-none-match"))
        } else {
            answer = .text(404, "nothing at \(path)")
        }
        webAnswer(connection, answer, head: request.method == "HEAD", close: !request.keepsAlive)
        return !request.keepsAlive
    }

    /// What the page needs before it connects: the server's name and room, how far to trust
    /// this connection (TLS or not, and the certificate's fingerprint to compare), and whether
    /// it may offer to make an account.
    func webInfo(secure: Bool) -> String {
        let config = state.config
        func quoted(_ text: String?) -> String { text.map { JSONText.quoted($0) } ?? "null" }
        return "{\"name\":\(quoted(config.name)),\"network\":\(quoted(config.network)),\"room\":\(quoted(config.room)),"
            + "\"tls\":\(secure),\"fingerprint\":\(quoted(config.certificateFingerprint)),\"selfSigned\":\(config.certificateSelfSigned),"
            // Whether a visitor may make an account here (the page offers it then).
            + "\"registration\":\(state.hasAccounts && config.accountRegistration)}"
    }

    func webAnswer(_ connection: Connection, _ response: HTTPResponse, head: Bool = false, close: Bool) {
        connection.output.append(response.serialized(head: head))
        queueFlush(connection)
        // Closed after what the client still sends is drained, so the answer is not lost to a reset.
        if close { connection.web = .closing(until: Monotonic.now() + 2) }
    }

    /// The page's own origin: `http(s)://` and the Host the request was sent to, where that Host
    /// is an address, `localhost`, the server's name or a `--web-origin`'s host — never any
    /// other name, which a page elsewhere could point at this machine (DNS rebinding). No Origin
    /// at all is a program, not a page in a browser, and is let in.
    static func sameOrigin(_ origin: String?, host: String?, serverName: String, allowed: [String]) -> Bool {
        guard let origin else { return true }
        guard let host, origin == "http://" + host || origin == "https://" + host else { return false }
        let name = host.hasPrefix("[") ? String(host.dropFirst().prefix { $0 != "]" }) : String(host.prefix { $0 != ":" })
        let isAddress = name.contains(":") || (!name.isEmpty && name.allSatisfy { $0.isNumber || $0 == "." })
        let known = allowed.contains { $0.hasSuffix("://" + name) || $0.contains("://" + name + ":") }
        return isAddress || name == "localhost" || name.lowercased() == serverName.lowercased() || known
    }

    /// From the tick: web connections that have not finished a request in time are closed (an
    /// upload: that has sent nothing for as long; a download waits on the send queue's bound).
    func closeIdleWeb(now: Double) {
        for connection in connections.all where !connection.closing {
            switch connection.web {
            case .http? where connection.pendingLogin != nil || connection.uploadStoring != nil:
                // Its password, or its file, is on a worker (which answers every job): not a slow sender.
                break
            case .http? where connection.upload != nil && now - connection.webSince <= Self.webRequestTimeout:
                // An upload must keep moving: at least 64 KiB in every 10 s (6.4 KiB/s, which any
                // real link passes), or a trickle holds a slot for days (4.2 KB every 9 s passed
                // the old 4 KiB floor: a declared 100 MiB would have lasted 2.6 days).
                if now - connection.uploadWindow.since >= Self.webRequestTimeout {
                    if connection.uploadWindow.bytes < Self.uploadFloor, connection.upload != nil {
                        abortUpload(connection)
                        webAnswer(connection, .text(408, "the upload stalled (under \(Self.uploadFloor / 1024) KiB in \(Int(Self.webRequestTimeout)) s)", keepAlive: false), close: true)
                    }
                    connection.uploadWindow = (now, 0)
                }
            case .http? where connection.download == nil && now - connection.webSince > Self.webRequestTimeout:
                let stalled = connection.upload != nil
                abortUpload(connection)
                let words = stalled ? "the upload stalled (nothing in \(Int(Self.webRequestTimeout)) s, under \(Self.uploadFloor / 1024) KiB)"
                    : "no request in \(Int(Self.webRequestTimeout)) s"
                webAnswer(connection, .text(408, words, keepAlive: false), close: true)
            case .closing(let until)? where now > until || (connection.download != nil && now - connection.webSince > 60):
                lost(connection, reason: "WebSocket closed")
            default:
                break
            }
        }
    }
}

// MARK: Files through the host

extension ServerRuntime {
    /// A new web connection's request reader: POST bodies streamed when uploads are on.
    func webReader() -> HTTPRequestReader {
        var limits = HTTPRequestReader.Limits()
        limits.streamsPOST = fileHost != nil
        return HTTPRequestReader(limits: limits)
    }

    /// Where a connection uploads (soju.im/FILEHOST's URL without its path): the web port at the
    /// address (or Host) it reached us by, https when it came over TLS. Nil when there are no
    /// uploads, or when it came over TLS and the web port has no certificate (the spec forbids
    /// sending a TLS client to plain HTTP).
    func fileHostBase(secure: Bool, host: String?, withPort: Bool = false) -> String? {
        guard fileHost != nil, let port = control.webPort else { return nil }
        // Behind NAT or a proxy the address a client reached is not what others reach: the host says.
        if let url = state.config.webURL { return secure && url.hasPrefix("http://") ? nil : url }
        guard let host, !host.isEmpty else { return nil }
        // A Host header is the browser's: only the characters of a name, an address and a port.
        guard host.utf8.allSatisfy({ byte in
            let c = Character(Unicode.Scalar(byte))
            return byte < 0x80 && (c.isLetter || c.isNumber || ".-:[]".contains(c))
        }) else { return nil }
        if secure && !webHasTLS { return nil }
        return (secure ? "https://" : "http://") + host + (withPort ? "" : ":\(port)")
    }

    /// A POST's headers are read: an upload starts (its bytes follow), waits for its account's
    /// password to be checked, or is refused and the connection closed. True when the
    /// connection no longer reads requests (or, waiting for the check, is not read for now).
    func webUploadStarts(_ connection: Connection, _ request: HTTPRequest, length: Int) -> Bool {
        guard fileHost != nil else { return webRefuseUpload(connection, 405, "this server takes no uploads") }
        let path = request.path ?? ""
        if path == "/upload" {
            // An account's own upload URL: HTTP Basic, only over TLS (the password would travel in clear otherwise).
            guard let credentials = request.basicCredentials else {
                return webRefuseUpload(connection, 401, "log in with your account (HTTP Basic over HTTPS), or upload to the URL your IRC connection was given (soju.im/FILEHOST)")
            }
            guard connection.tls != nil else {
                return webRefuseUpload(connection, 403, "an account's password is taken only over HTTPS: use https:// on this port")
            }
            switch state.webLogin(connection.id, account: credentials.user, password: credentials.password,
                                  address: SocketAddress.hostOfPeer(connection.peer), now: WallClock.now()) {
            case .failure(let refusal):
                return webRefuseUpload(connection, refusal.status, refusal.reason)
            case .success(let check):
                connection.pendingLogin = (request, length)
                submitWebLogin(connection, check)
                return true
            }
        }
        guard path.hasPrefix("/upload/") else { return webRefuseUpload(connection, 404, "nothing to POST to here") }
        guard let uploader = state.uploader(token: String(path.dropFirst("/upload/".count))) else {
            return webRefuseUpload(connection, 403, "this upload link is not valid: it lasts as long as the IRC connection it was given to")
        }
        return webBeginUpload(connection, request, length: length, owner: uploader.owner, by: uploader.nick)
    }

    /// The password of an upload's account is checked: it goes on, or is refused (401).
    func webLoginChecked(_ connection: Connection, _ check: PasswordCheck, _ outcome: PasswordOutcome) {
        guard let (request, length) = connection.pendingLogin else { return }
        connection.pendingLogin = nil
        resumeReading(connection)
        guard !connection.closing, case .http? = connection.web else { return }
        connection.webSince = Monotonic.now()
        guard let owner = state.webLoginAnswered(check, outcome, address: SocketAddress.hostOfPeer(connection.peer)) else {
            _ = webRefuseUpload(connection, 401, "wrong account name or password")
            return
        }
        if webBeginUpload(connection, request, length: length, owner: owner, by: String(owner.dropFirst("account:".count))) { return }
        // The body bytes that came while the password was checked.
        webRead(connection, [])
    }

    func webRefuseUpload(_ connection: Connection, _ status: Int, _ words: String) -> Bool {
        logger("[\(connection.peer)] upload refused (\(status)): \(PlainText.visible(words))")
        var answer = HTTPResponse.text(status, words, keepAlive: false)
        if status == 401 { answer.headers.append(("WWW-Authenticate", "Basic realm=\"chat-tui uploads\", charset=\"UTF-8\"")) }
        webAnswer(connection, answer, close: true)
        return true
    }

    func webBeginUpload(_ connection: Connection, _ request: HTTPRequest, length: Int, owner: String, by name: String) -> Bool {
        guard let fileHost else { return true }
        // The address uploads are counted by ("": exempt, as loopback is from limits: a reverse
        // proxy on this machine brings everyone's uploads from 127.0.0.1).
        let peerHost = SocketAddress.hostOfPeer(connection.peer)
        let exempt = state.config.connectionLimits.map { $0.exemptLoopback && ServerState.isLoopback(peerHost) } ?? true
        let address = exempt ? "" : ServerState.throttleKey(peerHost)
        switch fileHost.begin(name: request.dispositionFileName, type: request.header("content-type"), length: length, owner: owner, address: address) {
        case .failure(let refusal):
            return webRefuseUpload(connection, refusal.status, refusal.reason)
        case .success(let upload):
            logger("[\(connection.peer)] upload by \(PlainText.visible(name)): \(PlainText.visible(upload.name)), \(FileHost.size(length))")
            connection.upload = (upload, request.keepsAlive, request.header("host"), connection.tls != nil)
            connection.webSince = Monotonic.now()
            connection.uploadWindow = (Monotonic.now(), 0)
            // curl asks before a body over 1 MiB, and waits a second for the answer otherwise.
            if request.header("expect")?.lowercased() == "100-continue" {
                connection.output.append(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
                queueFlush(connection)
            }
            return false
        }
    }

    /// Unwritten upload bytes past which a connection is not read until the worker catches up,
    /// and below which it is read again.
    static let uploadQueueBound = 1 << 20
    static let uploadQueueResume = 256 << 10

    /// An upload's bytes go to the upload worker; with its last, the worker stores the file and
    /// its outcome brings the answer (`uploadAnswered`): 201 with its URL.
    func webUploadBytes(_ connection: Connection, _ bytes: [UInt8], last: Bool) -> Bool {
        guard let uploads, let upload = connection.upload else { return false }
        connection.webSince = Monotonic.now()
        connection.uploadWindow.bytes += bytes.count
        if !bytes.isEmpty {
            connection.uploadQueued += bytes.count
            uploads.submit(.write(connection.id, upload.file, bytes))
            if connection.uploadQueued > Self.uploadQueueBound { setReadPaused(connection, true) }
        }
        guard last else { return false }
        connection.upload = nil
        connection.uploadStoring = upload
        uploads.submit(.store(connection.id, upload.file, now: WallClock.now()))
        // Nothing more is read until it is stored: a next request's answer must not overtake this one.
        setReadPaused(connection, true)
        return true
    }

    /// The upload worker's outcome: a write's bytes off the queue (a failure ends the upload,
    /// 507), or the file stored (201) or not (507). A stored file is kept whether or not its
    /// connection is still there to be told.
    func uploadAnswered(_ job: UploadJob, _ outcome: UploadOutcome) {
        switch (job, outcome) {
        case (.write(let id, let file, _), .written(let count, let failure)):
            guard let connection = connections[id.raw], !connection.closing else { return }
            connection.uploadQueued -= count
            if let failure, connection.upload?.file === file || connection.uploadStoring?.file === file {
                logger("[\(connection.peer)] uploads: \(failure)")
                abortUpload(connection)
                webAnswer(connection, .text(507, failure, keepAlive: false), close: true)
                return
            }
            if connection.upload?.file === file, connection.readPaused, connection.uploadQueued <= Self.uploadQueueResume {
                setReadPaused(connection, false)
                // What the reader held back when it stopped is read now.
                webRead(connection, [])
            }
        case (.store(let id, let file, _), .stored(let result)):
            fileHost?.stored(file, result)
            guard let connection = connections[id.raw], !connection.closing, let storing = connection.uploadStoring, storing.file === file else { return }
            connection.uploadStoring = nil
            if webStoredAnswer(connection, storing, result) { return }
            setReadPaused(connection, false)
            // A next request sent meanwhile (kept alive) is read now.
            webRead(connection, [])
        default:
            break
        }
    }

    /// An upload cut off (stalled, refused, or its connection gone): its slot given back now, its
    /// part deleted by the worker after the writes before it.
    func abortUpload(_ connection: Connection) {
        for file in [connection.upload?.file, connection.uploadStoring?.file].compactMap({ $0 }) {
            fileHost?.release(file)
            uploads?.submit(.discard(file))
        }
        connection.upload = nil
        connection.uploadStoring = nil
    }

    /// The answer to a stored upload (true: the connection closes after it).
    func webStoredAnswer(_ connection: Connection, _ upload: (file: FileHost.Upload, keepAlive: Bool, host: String?, secure: Bool),
                         _ result: Result<FileHost.Entry, FileHost.Refusal>) -> Bool {
        switch result {
        case .failure(let refusal):
            webAnswer(connection, .text(refusal.status, refusal.reason, keepAlive: false), close: true)
            return true
        case .success(let entry):
            let path = FileHost.urlPath(entry)
            let base = fileHostBase(secure: upload.secure, host: upload.host, withPort: true)
            let location = (base ?? "") + path
            logger("[\(connection.peer)] upload stored: \(entry.id) \(PlainText.visible(entry.name)), \(FileHost.size(entry.size)), SHA-256 \(entry.sha256)")
            let body = "{\"url\":\(JSONText.quoted(location)),\"name\":\(JSONText.quoted(entry.name)),\"size\":\(entry.size),\"sha256\":\"\(entry.sha256)\"}\n"
            webAnswer(connection, HTTPResponse(status: 201, headers: [("Location", location), ("Content-Type", "application/json"), ("Cache-Control", "no-store")]
                                                 + (upload.keepAlive ? [] : [("Connection", "close")]), body: Array(body.utf8)),
                      close: !upload.keepAlive)
            return !upload.keepAlive
        }
    }

    /// GET or HEAD of a stored file: as an attachment, never rendered, sent a chunk at a time as
    /// the connection drains (the file is never held in memory), the connection closed after it.
    func webDownload(_ connection: Connection, _ request: HTTPRequest, path: String) -> Bool {
        let id = String(path.dropFirst("/files/".count).prefix { $0 != "/" })
        guard let fileHost, FileHost.isID(id), let entry = fileHost.entries[id] else {
            webAnswer(connection, .text(404, "no such file (files are kept \(fileHost?.limits.days ?? 0) days)"), head: request.method == "HEAD", close: !request.keepsAlive)
            return !request.keepsAlive
        }
        let ascii = String(entry.name.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0 != "\"" && $0 != "\\" ? Character($0) : "_" })
        let headers: [(name: String, value: String)] = [
            ("Content-Type", entry.type), ("Content-Length", String(entry.size)),
            ("Content-Disposition", "attachment; filename=\"\(ascii)\"; filename*=UTF-8''\(URLText.percentEncoded(entry.name))"),
            ("ETag", "\"\(entry.sha256.prefix(32))\""), ("Cache-Control", "private, max-age=86400"),
            ("Content-Security-Policy", "default-src 'none'; sandbox"), ("Connection", "close"),
        ]
        if request.method == "HEAD" {
            webAnswer(connection, HTTPResponse(status: 200, headers: headers), head: true, close: true)
            return true
        }
        let fd = open(fileHost.path(of: id), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            webAnswer(connection, .text(500, "the file cannot be read", keepAlive: false), close: true)
            return true
        }
        connection.output.append(HTTPResponse(status: 200, headers: headers).serialized(head: true))
        connection.download = (fd, entry.size, false)
        // Nothing more is read from it as a request; it closes when the file is out.
        connection.web = .closing(until: .greatestFiniteMagnitude)
        refillDownload(connection)
        return true
    }

    /// The next chunk of a download, once the last one is out.
    func refillDownload(_ connection: Connection) {
        guard var download = connection.download else { return }
        // Under the send queue's bound, so a chunk that waits for the socket is not taken for a slow reader.
        let chunk = min(download.remaining, 256 * 1024, max(4096, sendQueueLimit / 2))
        var bytes = [UInt8](repeating: 0, count: chunk)
        let got = chunk == 0 ? 0 : bytes.withUnsafeMutableBytes { Glibc.read(download.fd, $0.baseAddress, chunk) }
        if got <= 0 && chunk > 0 {
            // The file shrank or failed under us: the client sees a short body and the close.
            logger("[\(connection.peer)] download cut short: \(got < 0 ? TransportError.errnoText(errno) : "the file ended early")")
            download.remaining = 0
        } else {
            if got < chunk { bytes.removeLast(chunk - got) }
            connection.output.append(bytes)
            download.remaining -= got
        }
        if download.remaining == 0 {
            close(download.fd)
            connection.download = nil
            connection.web = .closing(until: Monotonic.now() + 2)
            queueFlush(connection)
        } else {
            connection.download = download
            connection.webSince = Monotonic.now()
            // Writable next turn: one chunk per connection per turn, so a large file does not hold the loop.
            setWritableForDownload(connection)
        }
    }

    /// A web connection is closed: its upload's part is deleted, its download's file closed.
    func webEnded(_ connection: Connection) {
        // An upload being stored is kept (its answer has nobody to go to); one arriving is deleted.
        if connection.upload != nil {
            connection.uploadStoring = nil
            abortUpload(connection)
        }
        connection.uploadStoring = nil
        if let download = connection.download {
            close(download.fd)
            connection.download = nil
        }
    }
}
