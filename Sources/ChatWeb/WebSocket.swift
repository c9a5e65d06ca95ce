import ChatTransport
import IRCWire

/// IRC over WebSocket (RFC 6455 and the IRCv3 WebSocket spec): the opening handshake, and
/// frames read and written as pure values. Each message is one IRC line without its CR LF.
public enum WebSocket {
    /// The subprotocols, in the server's order of support (both: the spec asks for binary, text is what browsers like).
    public enum Subprotocol: String, Sendable, Equatable, CaseIterable {
        case binary = "binary.ircv3.net"
        case text = "text.ircv3.net"
    }

    /// RFC 6455's GUID, appended to the client's key for the accept value.
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// `Sec-WebSocket-Accept` for a client's `Sec-WebSocket-Key`.
    public static func acceptValue(for key: String) -> String {
        Base64.encode(Crypto.sha1(Array((key + guid).utf8)))
    }

    /// What an upgrade request was answered with: the 101 to write and the subprotocol agreed
    /// (nil: none, a legacy client: text out, either kind in), or a refusal.
    public enum Handshake: Sendable, Equatable {
        case accepted(HTTPResponse, Subprotocol?)
        case refused(HTTPResponse)
    }

    /// Checks an upgrade request: GET, `Upgrade: websocket`, `Connection: Upgrade`, version 13, a
    /// 16-byte key, and an Origin the caller allows (a page elsewhere must not drive a visitor's
    /// browser into the room). The client's first supported subprotocol is chosen.
    public static func handshake(_ request: HTTPRequest, originAllowed: (String?) -> Bool) -> Handshake {
        func refuse(_ status: Int, _ words: String, _ extra: [(name: String, value: String)] = []) -> Handshake {
            var response = HTTPResponse.text(status, words, keepAlive: false)
            response.headers += extra
            return .refused(response)
        }
        guard request.method == "GET" else { return refuse(405, "a WebSocket opens with GET") }
        guard request.tokens("upgrade").contains("websocket"), request.tokens("connection").contains("upgrade") else {
            return refuse(426, "this address speaks WebSocket (Upgrade: websocket)", [("Upgrade", "websocket")])
        }
        guard request.header("sec-websocket-version") == "13" else {
            return refuse(426, "WebSocket version 13 only", [("Sec-WebSocket-Version", "13")])
        }
        guard let key = request.header("sec-websocket-key"), Base64.decode(key)?.count == 16 else {
            return refuse(400, "the Sec-WebSocket-Key is not 16 bytes of base64")
        }
        guard originAllowed(request.header("origin")) else { return refuse(403, "this page's origin may not open the chat") }
        let offered = request.tokens("sec-websocket-protocol")
        let chosen = offered.lazy.compactMap { Subprotocol(rawValue: $0) }.first
        var headers: [(name: String, value: String)] = [("Upgrade", "websocket"), ("Connection", "Upgrade"),
                                                        ("Sec-WebSocket-Accept", acceptValue(for: key))]
        if let chosen { headers.append(("Sec-WebSocket-Protocol", chosen.rawValue)) }
        return .accepted(HTTPResponse(status: 101, headers: headers), chosen)
    }

    /// Frame opcodes.
    public enum Opcode: UInt8, Sendable {
        case continuation = 0, text = 1, binary = 2, close = 8, ping = 9, pong = 10
    }

    /// Close codes used here.
    public enum CloseCode: UInt16, Sendable {
        case normal = 1000, goingAway = 1001, protocolError = 1002, unsupportedData = 1003
        case invalidData = 1007, policy = 1008, tooBig = 1009, internalError = 1011
    }

    /// A server frame (never masked).
    public static func frame(_ opcode: Opcode, _ payload: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = [0x80 | opcode.rawValue]
        switch payload.count {
        case ..<126:
            bytes.append(UInt8(payload.count))
        case ..<65536:
            bytes.append(126)
            bytes += [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default:
            bytes.append(127)
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: UInt64(payload.count) >> UInt64(shift))) }
        }
        return bytes + payload
    }

    /// A close frame with its code and a short reason (cut to fit a control frame, at a character).
    public static func closeFrame(_ code: CloseCode, _ reason: String = "") -> [UInt8] {
        let words = Array(UTF8Boundary.prefix(reason, maxBytes: 123).utf8)
        return frame(.close, [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)] + words)
    }

    /// IRC lines as the server writes them (each ending in CR LF, several at once) as one
    /// message each.
    public static func messages(_ bytes: ArraySlice<UInt8>, as subprotocol: Subprotocol?) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 8)
        var start = bytes.startIndex
        var index = start
        while index < bytes.endIndex {
            if bytes[index] == 10 {
                var end = index
                if end > start && bytes[end - 1] == 13 { end -= 1 }
                if end > start { out += message(Array(bytes[start..<end]), as: subprotocol) }
                start = index + 1
            }
            index += 1
        }
        if start < bytes.endIndex { out += message(Array(bytes[start...]), as: subprotocol) }
        return out
    }

    /// An IRC line (without CR LF) as a message of the agreed kind. A text message never carries
    /// bytes that are not UTF-8 (the browser would drop the connection): they become U+FFFD.
    public static func message(_ line: [UInt8], as subprotocol: Subprotocol?) -> [UInt8] {
        if subprotocol == .binary { return frame(.binary, line) }
        let text = UTF8Validation.isValid(line) ? line : Array(String(decoding: line, as: UTF8.self).utf8)
        return frame(.text, text)
    }
}

/// Reads a client's frames as they arrive: unmasks them, joins fragments into messages, answers
/// what the protocol requires, and refuses what it forbids with the close code RFC 6455 names
/// (unmasked or reserved-bit frames 1002, a text message that is not UTF-8 1007, a message past
/// the limit 1009: the frame's declared length is checked before its payload is buffered).
public struct WebSocketReader: Sendable {
    public enum Event: Sendable, Equatable {
        /// A whole message: an IRC line (a trailing CR LF, which clients must not send, is dropped).
        case message([UInt8])
        case ping([UInt8])
        case pong
        /// The client closed (its code, if any); answer with a close frame and end the connection.
        case close(UInt16?)
        /// The client broke the protocol: send this close code, then end the connection.
        case fail(WebSocket.CloseCode, String)
    }

    /// The largest message taken (tags 8191 + the line 512, with room to spare).
    public var maxMessage: Int
    private var buffer: [UInt8] = []
    private var fragments: [UInt8] = []
    private var fragmentKind: WebSocket.Opcode?
    private var failed = false

    public init(maxMessage: Int = 16 * 1024) {
        self.maxMessage = maxMessage
    }

    /// Bytes held while a frame is incomplete (never past one frame's header and `maxMessage`).
    public var buffered: Int { buffer.count + fragments.count }

    /// Takes bytes; returns the events they complete, in order. After `.fail` or `.close`
    /// nothing more is read.
    public mutating func feed(_ bytes: [UInt8]) -> [Event] {
        guard !failed else { return [] }
        buffer += bytes
        var events: [Event] = []
        var offset = 0
        // What was read goes (after a failure the buffer is empty already).
        defer { if offset <= buffer.count { buffer.removeFirst(offset) } }
        while !failed {
            let available = buffer.count - offset
            guard available >= 2 else { break }
            let first = buffer[offset], second = buffer[offset + 1]
            let final = first & 0x80 != 0
            guard first & 0x70 == 0 else { return events + [fail(.protocolError, "reserved bits set")] }
            guard let opcode = WebSocket.Opcode(rawValue: first & 0x0F) else { return events + [fail(.protocolError, "unknown opcode")] }
            guard second & 0x80 != 0 else { return events + [fail(.protocolError, "a client's frame must be masked")] }
            var length = Int(second & 0x7F)
            var header = 2
            if length == 126 {
                guard available >= 4 else { break }
                length = Int(buffer[offset + 2]) << 8 | Int(buffer[offset + 3])
                header = 4
            } else if length == 127 {
                guard available >= 10 else { break }
                var value: UInt64 = 0
                for index in 0..<8 { value = value << 8 | UInt64(buffer[offset + 2 + index]) }
                guard value <= UInt64(Int32.max) else { return events + [fail(.tooBig, "a frame of \(value) bytes")] }
                length = Int(value)
                header = 10
            }
            let isControl = opcode.rawValue >= 8
            if isControl && (length > 125 || !final) { return events + [fail(.protocolError, "a control frame over 125 bytes or fragmented")] }
            if !isControl && fragments.count + length > maxMessage {
                return events + [fail(.tooBig, "a message over \(maxMessage) bytes")]
            }
            guard available >= header + 4 + length else { break }
            let mask = Array(buffer[(offset + header)..<(offset + header + 4)])
            var payload = Array(buffer[(offset + header + 4)..<(offset + header + 4 + length)])
            for index in payload.indices { payload[index] ^= mask[index & 3] }
            offset += header + 4 + length
            switch opcode {
            case .ping:
                events.append(.ping(payload))
            case .pong:
                events.append(.pong)
            case .close:
                // A close's body: nothing, or a code RFC 6455 lets a peer send and a UTF-8 reason.
                if payload.count == 1 { return events + [fail(.protocolError, "a close frame of one byte")] }
                let code = payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : nil
                if let code, !Self.isSendable(code) { return events + [fail(.protocolError, "close code \(code)")] }
                if payload.count > 2, !UTF8Validation.isValid(Array(payload[2...])) { return events + [fail(.invalidData, "a close reason that is not UTF-8")] }
                failed = true
                events.append(.close(code))
                return events
            case .text, .binary:
                guard fragmentKind == nil else { return events + [fail(.protocolError, "a new message inside a fragmented one")] }
                if final {
                    guard let event = finish(opcode, payload) else { return events + [fail(.invalidData, "a text message that is not UTF-8")] }
                    events.append(event)
                } else {
                    fragmentKind = opcode
                    fragments = payload
                }
            case .continuation:
                guard let kind = fragmentKind else { return events + [fail(.protocolError, "a continuation with nothing to continue")] }
                fragments += payload
                if final {
                    let whole = fragments
                    fragments = []
                    fragmentKind = nil
                    guard let event = finish(kind, whole) else { return events + [fail(.invalidData, "a text message that is not UTF-8")] }
                    events.append(event)
                }
            }
        }
        return events
    }

    /// Close codes a peer may send: 1000–1003, 1007–1011 and 3000–4999 (1004–1006 and 1015 are
    /// reserved, never sent; the rest of 1000–2999 is for future standards).
    static func isSendable(_ code: UInt16) -> Bool {
        (1000...1003).contains(code) || (1007...1011).contains(code) || (3000...4999).contains(code)
    }

    private mutating func fail(_ code: WebSocket.CloseCode, _ words: String) -> Event {
        failed = true
        buffer = []
        fragments = []
        return .fail(code, words)
    }

    private func finish(_ kind: WebSocket.Opcode, _ payload: [UInt8]) -> Event? {
        if kind == .text && !UTF8Validation.isValid(payload) { return nil }
        var line = payload
        while let last = line.last, last == 10 || last == 13 { line.removeLast() }
        return .message(line)
    }
}
