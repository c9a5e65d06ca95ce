import COpenSSL
import CSystem
#if canImport(Glibc)
import Glibc
#endif

/// A Web Push endpoint: an `https` URL (no user, no fragment), as a browser's subscription gives it.
public struct PushEndpoint: Sendable, Equatable {
    public let url: String
    public let host: String
    public let port: Int
    public let path: String

    /// Nil for anything but a plain https URL of at most 2,048 bytes without spaces or controls.
    public init?(_ url: String) {
        guard url.utf8.count <= 2048, url.hasPrefix("https://"),
              !url.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F || $0 == "#" }) else { return nil }
        let rest = url.dropFirst("https://".count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        guard !authority.isEmpty, !authority.contains("@") else { return nil }
        var host = String(authority), port = 443
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let number = Int(after.dropFirst()), (1...65535).contains(number) else { return nil }
                port = number
            }
        } else if let colon = authority.lastIndex(of: ":") {
            guard let number = Int(authority[authority.index(after: colon)...]), (1...65535).contains(number) else { return nil }
            host = String(authority[..<colon])
            port = number
        }
        guard !host.isEmpty else { return nil }
        self.url = url
        self.host = host.lowercased()
        self.port = port
        let path = rest.dropFirst(authority.count)
        self.path = path.isEmpty ? "/" : (path.hasPrefix("?") ? "/" + path : String(path))
    }

    /// `https://host[:port]`: the VAPID token's audience.
    public var origin: String {
        let shown = host.contains(":") ? "[" + host + "]" : host
        return "https://" + shown + (port == 443 ? "" : ":\(port)")
    }
}

/// What a push service said to one POST.
public enum PushDelivery: Sendable, Equatable {
    /// 2xx: taken.
    case delivered(status: Int)
    /// 404 or 410: the subscription is gone; forget it.
    case gone(status: Int)
    /// Another status (429, 5xx, 400…): kept, tried again with the next message.
    case refused(status: Int)
    /// No answer: the address refused, unreachable, TLS not trusted, timed out.
    case failed(String)
}

/// POSTs to Web Push endpoints, one blocking request at a time per calling thread (the server's
/// push workers call it off the loop). The certificate is checked against the system's trust
/// store; the address connected to must be a public one unless `allowPrivate` (tests), so a
/// subscription cannot make the server reach into its own network.
public final class PushSender: Sendable {
    /// The TLS context, made by the first push (reading the system's trust store takes some
    /// 230 million instructions and a few MiB: a server nobody subscribed to never pays it).
    /// Owner: this sender; one; ends with it. Made once, then only read (SSL_new takes it from
    /// any thread); a failure to make it is tried again by the next push.
    private let context = Locked<OpaquePointer?>(nil)

    public init() {}

    deinit { context.withLock { if let made = $0 { SSL_CTX_free(made) } } }

    private func madeContext() -> OpaquePointer? {
        context.withLock { made in
            if made == nil { made = chat_https_context() }
            return made
        }
    }

    public func post(_ endpoint: PushEndpoint, headers: [(String, String)], body: [UInt8], allowPrivate: Bool, timeout: Double = 10) -> PushDelivery {
        guard let context = madeContext() else { return .failed("no TLS context (the system's trust store could not be read)") }
        let fd: Int32
        do {
            fd = try Sockets.connect(host: endpoint.host, port: endpoint.port, timeout: timeout)
        } catch {
            return .failed(error.description)
        }
        defer { close(fd) }
        if !allowPrivate, let peer = SocketAddress.peer(of: fd), !NetworkAddress.isPublic(peer) {
            return .failed("\(SocketAddress.host(of: peer)) is a private, loopback or link-local address")
        }
        var limit = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        let hostHeader = endpoint.origin.dropFirst("https://".count)
        var head = "POST \(endpoint.path) HTTP/1.1\r\nHost: \(hostHeader)\r\nContent-Length: \(body.count)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let request = Array((head + "\r\n").utf8) + body
        var answer = [CChar](repeating: 0, count: 4096)
        var error = [CChar](repeating: 0, count: 256)
        let isAddress = NetworkAddress.isLiteral(endpoint.host) ? Int32(1) : 0
        let got = chat_https_exchange(context, fd, endpoint.host, isAddress, request, request.count, &answer, answer.count, &error, error.count)
        func text(_ chars: [CChar]) -> String { String(decoding: chars.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        guard got > 0 else { return .failed(text(error)) }
        let text = text(answer)
        // `HTTP/1.1 201 Created`
        let words = text.prefix { $0 != "\r" && $0 != "\n" }.split(separator: " ")
        guard words.count >= 2, words[0].hasPrefix("HTTP/"), let status = Int(words[1]) else { return .failed("not an HTTP answer") }
        switch status {
        case 200..<300: return .delivered(status: status)
        case 404, 410: return .gone(status: status)
        default: return .refused(status: status)
        }
    }
}

/// Which addresses are the public Internet.
public enum NetworkAddress {
    /// False for loopback, private (RFC 1918, unique local), link-local, shared (100.64/10),
    /// unspecified, multicast and reserved addresses, IPv4-mapped ones judged as IPv4.
    public static func isPublic(_ storage: sockaddr_storage) -> Bool {
        var storage = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            let raw = withUnsafeBytes(of: &storage) { $0.load(fromByteOffset: MemoryLayout<sockaddr_in>.offset(of: \.sin_addr)!, as: UInt32.self) }
            return isPublicIPv4(UInt32(bigEndian: raw))
        case AF_INET6:
            let bytes = withUnsafeBytes(of: &storage) { raw in
                Array(raw[MemoryLayout<sockaddr_in6>.offset(of: \.sin6_addr)!..<(MemoryLayout<sockaddr_in6>.offset(of: \.sin6_addr)! + 16)])
            }
            return isPublicIPv6(bytes)
        default:
            return false
        }
    }

    static func isPublicIPv4(_ a: UInt32) -> Bool {
        func within(_ base: UInt32, _ bits: UInt32) -> Bool { a >> (32 - bits) == base >> (32 - bits) }
        let closed: [(UInt32, UInt32)] = [
            (0x0000_0000, 8), (0x0A00_0000, 8), (0x6440_0000, 10), (0x7F00_0000, 8), (0xA9FE_0000, 16),
            (0xAC10_0000, 12), (0xC000_0000, 24), (0xC0A8_0000, 16), (0xC612_0000, 15), (0xE000_0000, 3),
        ]
        return !closed.contains { within($0.0, $0.1) }
    }

    static func isPublicIPv6(_ b: [UInt8]) -> Bool {
        guard b.count == 16 else { return false }
        if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xFF && b[11] == 0xFF {
            return isPublicIPv4(UInt32(b[12]) << 24 | UInt32(b[13]) << 16 | UInt32(b[14]) << 8 | UInt32(b[15]))
        }
        if b[0..<15].allSatisfy({ $0 == 0 }) { return false }        // :: and ::1
        if b[0] & 0xFE == 0xFC { return false }                      // fc00::/7, unique local
        if b[0] == 0xFE && b[1] & 0xC0 == 0x80 { return false }      // fe80::/10, link-local
        if b[0] == 0xFF { return false }                             // multicast
        return true
    }

    /// Whether `host` is written as an address (IPv4 dotted or IPv6), not a name.
    public static func isLiteral(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}
