import ChatTransport
import ChatWeb
import IRCWire

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
    /// Requests answered from one read (pipelining past it: answered and closed).
    static let requestsPerRead = 8

    /// Counts a new web connection against its address (as the state counts IRC clients per
    /// address): past the limit it is answered 429 and closed at once.
    func admitWebConnection(_ connection: Connection, host: String) {
        guard let limits = state.config.connectionLimits, !(limits.exemptLoopback && ServerState.isLoopback(host)) else { return }
        let key = ServerState.throttleKey(host)
        guard webPending[key, default: 0] < limits.perAddress else {
            logger("[\(connection.peer)] web: refused, \(limits.perAddress) web connections from \(key) are waiting already")
            webAnswer(connection, .text(429, "too many connections from your address", keepAlive: false), close: true)
            return
        }
        webPending[key, default: 0] += 1
        connection.webKey = key
    }

    /// No longer an HTTP connection waiting (upgraded, or closed).
    func webUncounted(_ connection: Connection) {
        guard let key = connection.webKey else { return }
        connection.webKey = nil
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
                    if webRequest(connection, request) { return }
                }
                answered += 1
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
                admitWebClient(connection)
            }
            return true
        }
        guard request.method == "GET" || request.method == "HEAD" else {
            webAnswer(connection, HTTPResponse(status: 405, headers: [("Allow", "GET, HEAD"), ("Content-Type", "text/plain; charset=utf-8")],
                                               body: Array("only GET and HEAD here\n".utf8)), head: false, close: !request.keepsAlive)
            return !request.keepsAlive
        }
        let answer: HTTPResponse
        if path == "/" {
            answer = HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; charset=utf-8"), ("Cache-Control", "no-store")],
                                  body: Array("chat-tui \(state.config.name): IRC over WebSocket at /irc (subprotocols binary.ircv3.net and text.ircv3.net).\n".utf8))
        } else {
            answer = .text(404, "nothing at \(path)")
        }
        webAnswer(connection, answer, head: request.method == "HEAD", close: !request.keepsAlive)
        return !request.keepsAlive
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

    /// From the tick: web connections that have not finished a request in time are closed.
    func closeIdleWeb(now: Double) {
        for connection in connections.all where !connection.closing {
            switch connection.web {
            case .http? where now - connection.openedAt > Self.webRequestTimeout:
                webAnswer(connection, .text(408, "no request in \(Int(Self.webRequestTimeout)) s", keepAlive: false), close: true)
            case .closing(let until)? where now > until:
                lost(connection, reason: "WebSocket closed")
            default:
                break
            }
        }
    }
}
