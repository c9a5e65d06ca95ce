import IRCWire

/// One HTTP/1.1 request as the web port reads it: its method, target, version, headers (names
/// folded to lower case, in order) and body.
public struct HTTPRequest: Sendable, Equatable {
    public var method: String
    public var target: String
    /// 10 for HTTP/1.0, 11 for HTTP/1.1.
    public var version: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8] = []

    public static func == (a: HTTPRequest, b: HTTPRequest) -> Bool {
        a.method == b.method && a.target == b.target && a.version == b.version && a.body == b.body
            && a.headers.elementsEqual(b.headers) { $0.name == $1.name && $0.value == $1.value }
    }

    /// The first value of a header (names are compared in lower case).
    public func header(_ name: String) -> String? {
        let key = name.lowercased()
        return headers.first { $0.name == key }?.value
    }

    /// A comma-separated header's tokens, lower-cased (`Connection: keep-alive, Upgrade`).
    public func tokens(_ name: String) -> [String] {
        let key = name.lowercased()
        return headers.filter { $0.name == key }.flatMap { $0.value.split(separator: ",") }
            .map { $0.trimmingSpaces().lowercased() }.filter { !$0.isEmpty }
    }

    /// The connection stays open after the answer: HTTP/1.1 unless `Connection: close`, HTTP/1.0 only with keep-alive.
    public var keepsAlive: Bool {
        let connection = tokens("connection")
        return version >= 11 ? !connection.contains("close") : connection.contains("keep-alive")
    }

    /// The path without its query, `%`-decoded; nil when it is not a clean absolute path
    /// (a `..` segment, an encoded slash or NUL, invalid UTF-8): such a request is refused,
    /// never mapped to a file.
    public var path: String? {
        let raw = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        // Raw control bytes (a NUL among them) are no part of a URL (found by the http fuzz target).
        guard raw.hasPrefix("/"), !raw.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }), let decoded = HTTPRequest.percentDecoded(raw) else { return nil }
        for segment in decoded.split(separator: "/", omittingEmptySubsequences: false) where segment == ".." || segment == "." {
            return nil
        }
        return decoded
    }

    /// The file name a `Content-Disposition` gives (`filename*=UTF-8''…` before `filename="…"`), as sent.
    public var dispositionFileName: String? {
        guard let value = header("content-disposition") else { return nil }
        var plain: String?
        for part in value.split(separator: ";").map({ $0.trimmingSpaces() }) {
            guard let equals = part.firstIndex(of: "=") else { continue }
            let key = part[..<equals].lowercased().trimmingSpaces(), raw = String(part[part.index(after: equals)...]).trimmingSpaces()
            if key == "filename*" {
                // RFC 8187: charset'language'percent-encoded; only UTF-8 is read.
                let pieces = raw.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
                if pieces.count == 3, pieces[0].lowercased() == "utf-8", let name = Self.percentDecoded(String(pieces[2]), allowSlashes: true) { return name }
            } else if key == "filename" {
                plain = raw.count >= 2 && raw.hasPrefix("\"") && raw.hasSuffix("\"") ? String(raw.dropFirst().dropLast()) : raw
            }
        }
        return plain
    }

    /// HTTP Basic credentials (`Authorization: Basic base64(user:password)`), if sent and well formed.
    public var basicCredentials: (user: String, password: String)? {
        guard let value = header("authorization"), value.count > 6, value.prefix(6).lowercased() == "basic " else { return nil }
        guard let bytes = Base64.decode(value.dropFirst(6).trimmingSpaces()), let text = String(validating: bytes, as: UTF8.self),
              let colon = text.firstIndex(of: ":") else { return nil }
        return (String(text[..<colon]), String(text[text.index(after: colon)...]))
    }

    /// An encoded slash, backslash or NUL would let a name stand for a path (a NUL is refused in
    /// a file name too).
    static func percentDecoded(_ text: String, allowSlashes: Bool = false) -> String? {
        URLText.percentDecoded(text) { $0 == 0 || (!allowSlashes && ($0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "\\"))) }
    }
}

/// Why a request was refused, as the status to answer with and words for the log.
public struct HTTPRefusal: Error, Sendable, Equatable {
    public let status: Int
    public let reason: String
}

/// Reads requests from bytes as they arrive, with everything bounded: the request line, the
/// headers (their total and their count) and the body. A request that passes a bound is
/// refused at once with its status (414, 431, 413), never buffered to the end; a line that is
/// not HTTP gets 400. Pipelined requests are read one after another.
public struct HTTPRequestReader: Sendable {
    public struct Limits: Sendable {
        public var requestLine = 8 * 1024
        public var headerBytes = 16 * 1024
        public var headerCount = 64
        /// The largest body taken whole, in `.request`.
        public var body = 64 * 1024
        /// POST bodies are not held: `.head` hands the request over when its headers are read,
        /// then `.body` its bytes as they arrive (an upload is written to disk, never kept in
        /// memory). Their size is the caller's to check, from `.head`'s length.
        public var streamsPOST = false

        public init() {}
    }

    public enum Result: Sendable, Equatable {
        case needMore
        case request(HTTPRequest)
        case refused(HTTPRefusal)
        /// A streamed request's headers: its body (`length` bytes) follows in `.body` results.
        case head(HTTPRequest, length: Int)
        /// Bytes of a streamed body; `last` with its final ones.
        case body([UInt8], last: Bool)
    }

    public var limits: Limits
    private var buffer: [UInt8] = []
    /// How far the buffer has been searched for the end of the headers (a header sent a byte at
    /// a time is scanned once, not once per byte), and where its first line ended.
    private var scanned = 0
    private var firstLineEnd: Int?
    /// The request whose headers are read, waiting for this many bytes of body.
    private var waiting: (request: HTTPRequest, length: Int)?
    /// Bytes of a streamed body still to come.
    public private(set) var streaming = 0

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Bytes held and not yet part of a request.
    public var buffered: Int { buffer.count }

    /// Takes bytes; returns the next complete request, a refusal, or that more is needed. Call
    /// again with no bytes after a request: pipelined ones may be waiting in the buffer.
    public mutating func feed(_ bytes: [UInt8]) -> Result {
        buffer += bytes
        if streaming > 0 {
            guard !buffer.isEmpty else { return .needMore }
            let take = min(streaming, buffer.count)
            let chunk: [UInt8]
            if take == buffer.count { chunk = buffer; buffer = [] } else { chunk = Array(buffer[..<take]); buffer.removeFirst(take) }
            streaming -= take
            return .body(chunk, last: streaming == 0)
        }
        if let (request, length) = waiting {
            guard buffer.count >= length else { return .needMore }
            var complete = request
            complete.body = Array(buffer[..<length])
            buffer.removeFirst(length)
            waiting = nil
            return .request(complete)
        }
        // The end of the headers, looked for only as far as the limits allow, from where the
        // last search stopped.
        let limit = limits.requestLine + limits.headerBytes
        if firstLineEnd == nil, let lf = buffer[min(scanned, buffer.count)...].firstIndex(of: 10) { firstLineEnd = lf }
        guard let end = Self.headerEnd(buffer, from: max(0, scanned - 3), within: limit) else {
            scanned = buffer.count
            if let firstLine = firstLineEnd ?? (buffer.count > limits.requestLine ? buffer.count : nil), firstLine > limits.requestLine {
                return .refused(HTTPRefusal(status: 414, reason: "the request line is longer than \(limits.requestLine) bytes"))
            }
            if buffer.count > limit { return .refused(HTTPRefusal(status: 431, reason: "the headers are longer than \(limits.headerBytes) bytes")) }
            return .needMore
        }
        let head = Array(buffer[..<end.start])
        buffer.removeFirst(end.after)
        scanned = 0
        firstLineEnd = nil
        switch parseHead(head) {
        case .failure(let refusal):
            return .refused(refusal)
        case .success(let request):
            if request.header("transfer-encoding") != nil {
                return .refused(HTTPRefusal(status: 501, reason: "chunked bodies are not taken; send a Content-Length"))
            }
            let lengths = request.headers.filter { $0.name == "content-length" }.map(\.value)
            guard lengths.count <= 1, let length = lengths.first.map({ Int($0) }) ?? 0, length >= 0 else {
                return .refused(HTTPRefusal(status: 400, reason: "the Content-Length is not one number"))
            }
            if limits.streamsPOST, request.method == "POST", length > 0 {
                streaming = length
                return .head(request, length: length)
            }
            if length > limits.body { return .refused(HTTPRefusal(status: 413, reason: "the body is longer than \(limits.body) bytes")) }
            if length == 0 { return .request(request) }
            waiting = (request, length)
            return feed([])
        }
    }

    /// Where the headers end (`CRLF CRLF`, or a bare `LF LF`) and where the body starts.
    static func headerEnd(_ bytes: [UInt8], from start: Int = 0, within limit: Int) -> (start: Int, after: Int)? {
        var index = start
        let last = min(bytes.count, limit + 4)
        while index < last {
            if bytes[index] == 10 {
                if index + 1 < bytes.count, bytes[index + 1] == 10 { return (index, index + 2) }
                if index + 2 < bytes.count, bytes[index + 1] == 13, bytes[index + 2] == 10 { return (index, index + 3) }
            }
            index += 1
        }
        return nil
    }

    func parseHead(_ head: [UInt8]) -> Swift.Result<HTTPRequest, HTTPRefusal> {
        guard let text = String(validating: head, as: UTF8.self) else {
            return .failure(HTTPRefusal(status: 400, reason: "the request is not UTF-8"))
        }
        // By scalars: "\r\n" is one Character, so a split on the Character "\n" would find none.
        var lines = text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            String(String.UnicodeScalarView(line.last == "\r" ? line.dropLast() : line[...]))
        }
        let requestLine = lines.removeFirst()
        guard requestLine.utf8.count <= limits.requestLine else {
            return .failure(HTTPRefusal(status: 414, reason: "the request line is longer than \(limits.requestLine) bytes"))
        }
        let parts = requestLine.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy({ $0.isUppercase && $0.isASCII }), !parts[1].isEmpty else {
            return .failure(HTTPRefusal(status: 400, reason: "not an HTTP request line"))
        }
        let version: Int
        switch parts[2] {
        case "HTTP/1.1": version = 11
        case "HTTP/1.0": version = 10
        default: return .failure(HTTPRefusal(status: 505, reason: "only HTTP/1.0 and 1.1 are spoken here"))
        }
        guard lines.count <= limits.headerCount else {
            return .failure(HTTPRefusal(status: 431, reason: "more than \(limits.headerCount) headers"))
        }
        var headers: [(name: String, value: String)] = []
        for line in lines {
            // No folded (obsolete) continuation lines, no spaces before the colon: both hide smuggling.
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex, let first = line.first, first != " ", first != "\t" else {
                return .failure(HTTPRefusal(status: 400, reason: "a header line is not NAME: VALUE"))
            }
            let name = line[..<colon]
            guard name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_".contains($0)) }) else {
                return .failure(HTTPRefusal(status: 400, reason: "a header name is not a token"))
            }
            headers.append((name.lowercased(), String(line[line.index(after: colon)...]).trimmingSpaces()))
        }
        if version == 11 && !headers.contains(where: { $0.name == "host" }) {
            return .failure(HTTPRefusal(status: 400, reason: "HTTP/1.1 needs a Host header"))
        }
        return .success(HTTPRequest(method: String(parts[0]), target: String(parts[1]), version: version, headers: headers))
    }
}

extension StringProtocol {
    /// Without spaces and tabs at either end.
    func trimmingSpaces() -> String {
        let start = firstIndex { $0 != " " && $0 != "\t" } ?? endIndex
        let end = lastIndex { $0 != " " && $0 != "\t" }.map { index(after: $0) } ?? start
        return start < end ? String(self[start..<end]) : ""
    }
}
