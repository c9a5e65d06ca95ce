/// An HTTP/1.1 answer: status, headers and body, written as bytes. Every answer carries the
/// security headers a page and its files need: nothing sniffed, no referrer sent away, framed
/// by nobody, and a Content-Security-Policy that allows only the page's own scripts and styles
/// and its own WebSocket.
public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func == (a: HTTPResponse, b: HTTPResponse) -> Bool {
        a.status == b.status && a.body == b.body && a.headers.elementsEqual(b.headers) { $0.name == $1.name && $0.value == $1.value }
    }

    public func header(_ name: String) -> String? {
        let key = name.lowercased()
        return headers.first { $0.name.lowercased() == key }?.value
    }

    public static let securityHeaders: [(name: String, value: String)] = [
        ("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; "
            + "manifest-src 'self'; worker-src 'self'; "
            + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("X-Frame-Options", "DENY"),
        ("Cross-Origin-Opener-Policy", "same-origin"),
    ]

    /// A plain-text answer with a short reason (errors, refusals).
    public static func text(_ status: Int, _ words: String, keepAlive: Bool = true) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")] + (keepAlive ? [] : [("Connection", "close")]),
                     body: Array((words + "\n").utf8))
    }

    /// The bytes to write; a HEAD's answer has the headers of the GET (its Content-Length) and no body.
    public func serialized(head: Bool = false) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
        var all = headers
        if !all.contains(where: { $0.name.lowercased() == "content-length" }) && status != 101 && status != 204 && status != 304 {
            all.append(("Content-Length", String(body.count)))
        }
        if status != 101 {
            for header in Self.securityHeaders where !all.contains(where: { $0.name.lowercased() == header.name.lowercased() }) {
                all.append(header)
            }
        }
        for (name, value) in all {
            // A value is written as one line whatever it holds (a file name in a header must not end the headers).
            let safe = String(value.unicodeScalars.filter { $0 != "\r" && $0 != "\n" }.map(Character.init))
            text += "\(name): \(safe)\r\n"
        }
        text += "\r\n"
        return Array(text.utf8) + (head ? [] : body)
    }

    public static func reason(_ status: Int) -> String {
        switch status {
        case 101: "Switching Protocols"
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 426: "Upgrade Required"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        default: "Status"
        }
    }
}
