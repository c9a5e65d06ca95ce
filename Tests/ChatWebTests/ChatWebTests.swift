import Testing
@testable import ChatWeb
import IRCWire

/// A client's frame: masked with `mask`, as RFC 6455 requires of clients.
func clientFrame(_ opcode: UInt8, _ payload: [UInt8], final: Bool = true, mask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]) -> [UInt8] {
    var bytes: [UInt8] = [(final ? 0x80 : 0) | opcode]
    switch payload.count {
    case ..<126: bytes.append(0x80 | UInt8(payload.count))
    case ..<65536: bytes += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
    default:
        bytes.append(0x80 | 127)
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: UInt64(payload.count) >> UInt64(shift))) }
    }
    return bytes + mask + payload.enumerated().map { $0.element ^ mask[$0.offset & 3] }
}

func request(_ lines: String...) -> [UInt8] { request(lines) }
func request(_ lines: [String]) -> [UInt8] { Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8) }

@Suite("HTTP requests, read with bounds")
struct HTTPRequestTests {
    @Test("a GET with headers, read in pieces of 1, 2 and 5 bytes; pipelined requests one after another")
    func pieces() {
        let bytes = request("GET /index.html?x=1 HTTP/1.1", "Host: chat.local", "Connection: keep-alive, Upgrade", "X-Empty:")
            + request("HEAD /app.js HTTP/1.1", "Host: chat.local")
        for size in [1, 2, 5] {
            var reader = HTTPRequestReader()
            var got: [HTTPRequest] = []
            var index = 0
            while index < bytes.count {
                var result = reader.feed(Array(bytes[index..<min(index + size, bytes.count)]))
                while case .request(let one) = result {
                    got.append(one)
                    result = reader.feed([])
                }
                index += size
            }
            #expect(got.map(\.method) == ["GET", "HEAD"] && got[0].path == "/index.html" && got[0].header("HOST") == "chat.local")
            #expect(got[0].tokens("connection") == ["keep-alive", "upgrade"] && got[0].header("x-empty") == "" && got[0].keepsAlive)
        }
    }

    @Test("a POST's body by its Content-Length; over the limit 413 before it is read; chunked 501")
    func bodies() {
        var reader = HTTPRequestReader()
        #expect(reader.feed(request("POST /upload HTTP/1.1", "Host: h", "Content-Length: 5") + Array("hel".utf8)) == .needMore)
        guard case .request(let post) = reader.feed(Array("lo".utf8)) else { Issue.record("no request"); return }
        #expect(post.body == Array("hello".utf8))
        var small = HTTPRequestReader()
        small.limits.body = 10
        #expect(small.feed(request("POST /u HTTP/1.1", "Host: h", "Content-Length: 11")) == .refused(HTTPRefusal(status: 413, reason: "the body is longer than 10 bytes")))
        var chunked = HTTPRequestReader()
        if case .refused(let refusal) = chunked.feed(request("POST /u HTTP/1.1", "Host: h", "Transfer-Encoding: chunked")) {
            #expect(refusal.status == 501)
        } else {
            Issue.record("chunked was taken")
        }
        var twice = HTTPRequestReader()
        if case .refused(let refusal) = twice.feed(request("POST /u HTTP/1.1", "Host: h", "Content-Length: 1", "Content-Length: 2")) {
            #expect(refusal.status == 400, "two lengths: smuggling")
        } else {
            Issue.record("two Content-Lengths were taken")
        }
    }

    @Test("bounds: a request line too long 414, headers too long or too many 431, not HTTP 400, HTTP/2 505, no Host 400, folded headers 400")
    func bounds() {
        func status(_ bytes: [UInt8]) -> Int? {
            var reader = HTTPRequestReader()
            if case .refused(let refusal) = reader.feed(bytes) { return refusal.status }
            return nil
        }
        #expect(status(Array(("GET /" + String(repeating: "a", count: 9000)).utf8)) == 414, "refused before the line ends")
        #expect(status(Array(("GET / HTTP/1.1\r\nHost: h\r\nX: " + String(repeating: "b", count: 30_000)).utf8)) == 431)
        #expect(status(request(["GET / HTTP/1.1", "Host: h"] + (0..<70).map { "X-\($0): y" })) == 431)
        #expect(status(request("NICK alice")) == 400)
        #expect(status(request("GET / HTTP/2.0", "Host: h")) == 505)
        #expect(status(request("GET / HTTP/1.1")) == 400)
        #expect(status(request("GET / HTTP/1.1", "Host: h", " folded")) == 400)
        #expect(status(request("GET / HTTP/1.1", "Host : h")) == 400)
        #expect(status(request("GET / HTTP/1.0")) == nil, "HTTP/1.0 needs no Host")
    }

    @Test("paths: decoded; .. segments, encoded slashes, NUL and bad escapes are not paths")
    func paths() {
        func path(_ target: String) -> String? { HTTPRequest(method: "GET", target: target, version: 11, headers: []).path }
        #expect(path("/files/report%20final.pdf?download=1") == "/files/report final.pdf")
        #expect(path("/files/%E6%8A%A5%E5%91%8A.pdf") == "/files/报告.pdf")
        #expect(path("/files/../server.db") == nil && path("/files/%2e%2e/server.db") == nil)
        #expect(path("/files/a%2Fb") == nil && path("/files/a%5Cb") == nil && path("/files/a%00") == nil)
        #expect(path("/files/%zz") == nil && path("/files/%FF") == nil && path("files") == nil && path("http://evil/") == nil)
    }
}

@Suite("HTTP answers")
struct HTTPResponseTests {
    @Test("status line, length, the security headers on every answer; HEAD has the headers without the body; a value cannot end the headers")
    func serialized() {
        let answer = HTTPResponse(status: 200, headers: [("Content-Type", "text/html"), ("Content-Disposition", "attachment; filename=\"a\r\nSet-Cookie: x\"")],
                                  body: Array("<p>hi</p>".utf8))
        let text = String(decoding: answer.serialized(), as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n") && text.hasSuffix("\r\n\r\n<p>hi</p>"))
        #expect(text.contains("\r\nContent-Length: 9\r\n") && text.contains("\r\nX-Content-Type-Options: nosniff\r\n"))
        #expect(text.contains("Content-Security-Policy: default-src 'none'; script-src 'self'") && text.contains("Referrer-Policy: no-referrer"))
        #expect(!text.contains("\r\nSet-Cookie"), "the CR LF inside a value is dropped")
        let head = String(decoding: answer.serialized(head: true), as: UTF8.self)
        #expect(head.hasSuffix("\r\n\r\n") && head.contains("Content-Length: 9"))
    }
}

@Suite("WebSocket: the handshake and frames")
struct WebSocketTests {
    func upgrade(_ extra: String...) -> HTTPRequest {
        var reader = HTTPRequestReader()
        let lines = ["GET /chat HTTP/1.1", "Host: chat.local", "Upgrade: websocket", "Connection: Upgrade",
                     "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"] + extra
        guard case .request(let one) = reader.feed(Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)) else { fatalError("not read") }
        return one
    }

    @Test("RFC 6455's own example key gives its accept value; the client's first subprotocol we speak is chosen; none is the legacy case")
    func handshake() {
        #expect(WebSocket.acceptValue(for: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        guard case .accepted(let response, let chosen) = WebSocket.handshake(upgrade("Sec-WebSocket-Protocol: chat, text.ircv3.net, binary.ircv3.net"), originAllowed: { _ in true }) else {
            Issue.record("refused")
            return
        }
        #expect(chosen == .text && response.status == 101 && response.header("Sec-WebSocket-Protocol") == "text.ircv3.net")
        #expect(response.header("Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        if case .accepted(_, let binary) = WebSocket.handshake(upgrade("Sec-WebSocket-Protocol: binary.ircv3.net"), originAllowed: { _ in true }) {
            #expect(binary == .binary)
        } else {
            Issue.record("binary refused")
        }
        if case .accepted(let plain, let none) = WebSocket.handshake(upgrade(), originAllowed: { _ in true }) {
            #expect(none == nil && plain.header("Sec-WebSocket-Protocol") == nil)
        }
    }

    @Test("refusals: another origin 403, no upgrade 426, another version 426, a bad key 400")
    func refusals() {
        func status(_ request: HTTPRequest, origin: Bool = true) -> Int? {
            if case .refused(let response) = WebSocket.handshake(request, originAllowed: { _ in origin }) { return response.status }
            return nil
        }
        #expect(status(upgrade("Origin: https://evil.example"), origin: false) == 403)
        var noUpgrade = upgrade()
        noUpgrade.headers.removeAll { $0.name == "upgrade" }
        #expect(status(noUpgrade) == 426)
        var version = upgrade()
        version.headers = version.headers.map { $0.name == "sec-websocket-version" ? ($0.name, "8") : $0 }
        #expect(status(version) == 426)
        var key = upgrade()
        key.headers = key.headers.map { $0.name == "sec-websocket-key" ? ($0.name, "c2hvcnQ=") : $0 }
        #expect(status(key) == 400)
    }

    @Test("frames: a masked message, fragments joined, ping and pong between fragments, close; read 1, 2 and 5 bytes at a time")
    func frames() {
        let bytes = clientFrame(1, Array("PRIVMSG #lobby :hi\r\n".utf8))
            + clientFrame(2, Array("NICK ".utf8), final: false) + clientFrame(9, Array("p".utf8)) + clientFrame(0, Array("bob".utf8))
            + clientFrame(10, []) + clientFrame(8, [0x03, 0xE8])
        for size in [1, 2, 5] {
            var reader = WebSocketReader()
            var events: [WebSocketReader.Event] = []
            var index = 0
            while index < bytes.count {
                events += reader.feed(Array(bytes[index..<min(index + size, bytes.count)]))
                index += size
            }
            #expect(events == [.message(Array("PRIVMSG #lobby :hi".utf8)), .ping(Array("p".utf8)), .message(Array("NICK bob".utf8)), .pong, .close(1000)])
        }
    }

    @Test("refused: an unmasked frame 1002, reserved bits 1002, a 1 MiB frame 1009 before its payload, fragments past the limit 1009, text not UTF-8 1007, a control frame fragmented 1002, a continuation of nothing 1002")
    func protocolErrors() {
        func first(_ bytes: [UInt8]) -> WebSocketReader.Event? { var reader = WebSocketReader(); return reader.feed(bytes).first }
        func code(_ event: WebSocketReader.Event?) -> WebSocket.CloseCode? { if case .fail(let code, _)? = event { return code } else { return nil } }
        #expect(code(first([0x81, 0x02] + Array("hi".utf8))) == .protocolError)
        #expect(code(first(clientFrame(0x41, Array("hi".utf8)))) == .protocolError)
        // A 1 MiB frame: refused from its header alone (nothing of it is buffered).
        #expect(code(first([0x82, 0x80 | 127, 0, 0, 0, 0, 0, 0x10, 0, 0, 1, 2, 3, 4])) == .tooBig)
        var reader = WebSocketReader(maxMessage: 100)
        let growing = reader.feed(clientFrame(1, Array(repeating: 65, count: 60), final: false) + clientFrame(0, Array(repeating: 65, count: 60)))
        #expect(code(growing.first) == .tooBig)
        #expect(code(first(clientFrame(1, [0x61, 0xFF]))) == .invalidData)
        #expect(first(clientFrame(2, [0x61, 0xFF])) == .message([0x61, 0xFF]), "binary carries any bytes")
        #expect(code(first(clientFrame(9, [], final: false))) == .protocolError)
        #expect(code(first(clientFrame(0, Array("x".utf8)))) == .protocolError)
        // A close frame's body: one byte, a reserved code, a reason that is not UTF-8.
        #expect(code(first(clientFrame(8, [0x03]))) == .protocolError)
        #expect(code(first(clientFrame(8, [0x03, 0xED]))) == .protocolError, "1005 is never sent")
        #expect(code(first(clientFrame(8, [0x03, 0xE8, 0xFF]))) == .invalidData)
        #expect(first(clientFrame(8, [0x0F, 0xA0] + Array("bye".utf8))) == .close(4000), "an application's code")
        #expect(first(clientFrame(8, [])) == .close(nil))
        // After a failure nothing more is read.
        var failed = WebSocketReader()
        _ = failed.feed([0x81, 0x02, 0x68, 0x69])
        #expect(failed.feed(clientFrame(1, Array("after".utf8))).isEmpty)
    }

    @Test("server frames: unmasked, the three length forms; a text message never carries bytes that are not UTF-8; a close frame's reason cut at a character")
    func serverFrames() {
        #expect(WebSocket.frame(.text, Array("hi".utf8)) == [0x81, 0x02, 0x68, 0x69])
        #expect(Array(WebSocket.frame(.binary, Array(repeating: 0, count: 300)).prefix(4)) == [0x82, 126, 0x01, 0x2C])
        #expect(Array(WebSocket.frame(.binary, Array(repeating: 0, count: 70_000)).prefix(10)) == [0x82, 127, 0, 0, 0, 0, 0, 0x01, 0x11, 0x70])
        #expect(WebSocket.message([0x61, 0xFF], as: .text) == [0x81, 0x04, 0x61, 0xEF, 0xBF, 0xBD])
        #expect(WebSocket.message([0x61, 0xFF], as: .binary) == [0x82, 0x02, 0x61, 0xFF])
        #expect(WebSocket.message(Array("ok".utf8), as: nil).first == 0x81, "no subprotocol: text, as legacy clients expect")
        let close = WebSocket.closeFrame(.tooBig, String(repeating: "é", count: 100))
        #expect(close.count <= 127 && close[2] == 0x03 && close[3] == 0xF1 && String(validating: close[4...], as: UTF8.self) != nil)
    }
}
