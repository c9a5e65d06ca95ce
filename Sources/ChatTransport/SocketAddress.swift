#if canImport(Glibc)
import Glibc
#endif

/// Text forms of socket addresses, for logs and for hostnames shown to users.
public enum SocketAddress {
    /// `127.0.0.1` or `::1` for the address in `storage`; IPv4-mapped IPv6 addresses print as IPv4.
    public static func host(of storage: sockaddr_storage) -> String {
        var storage = storage
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    var addr = sin.pointee.sin_addr
                    inet_ntop(AF_INET, &addr, &buffer, socklen_t(buffer.count))
                    return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
                }
            }
        case AF_INET6:
            return withUnsafePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                    var addr = sin6.pointee.sin6_addr
                    inet_ntop(AF_INET6, &addr, &buffer, socklen_t(buffer.count))
                    let text = String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
                    return text.hasPrefix("::ffff:") && text.contains(".") ? String(text.dropFirst(7)) : text
                }
            }
        default:
            return "unknown"
        }
    }

    public static func port(of storage: sockaddr_storage) -> Int {
        var storage = storage
        let family = Int32(storage.ss_family)
        return withUnsafePointer(to: &storage) { pointer in
            switch family {
            case AF_INET:
                return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
            case AF_INET6:
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            default:
                return 0
            }
        }
    }

    /// `host:port`, with IPv6 hosts in brackets.
    public static func describe(_ storage: sockaddr_storage) -> String {
        let host = host(of: storage)
        return host.contains(":") ? "[\(host)]:\(port(of: storage))" : "\(host):\(port(of: storage))"
    }

    /// The host part of what `describe` wrote ("[::1]:5000" → "::1", "10.0.0.2:5000" → "10.0.0.2").
    public static func hostOfPeer(_ described: String) -> String {
        described.hasPrefix("[") ? String(described.dropFirst().prefix { $0 != "]" }) : String(described.prefix { $0 != ":" })
    }

    /// The address a connection arrived at (this machine's side), as a URL writes it: "[::1]" or "10.0.0.2".
    public static func localHost(of fd: Int32) -> String? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard result == 0 else { return nil }
        let host = host(of: storage)
        if host.hasPrefix("::ffff:"), host.contains(".") { return String(host.dropFirst(7)) }
        return host.contains(":") ? "[\(host)]" : host
    }

    public static func peer(of fd: Int32) -> sockaddr_storage? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        return result == 0 ? storage : nil
    }

    public static func local(of fd: Int32) -> sockaddr_storage? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return result == 0 ? storage : nil
    }
}
