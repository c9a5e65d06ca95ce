#if canImport(Glibc)
import Glibc
#endif

/// This machine's addresses others can reach: IPv4 and global IPv6, loopback and link-local left out.
enum LocalAddresses {
    static func all() -> [String] {
        var first: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&first) == 0 else { return [] }
        defer { freeifaddrs(first) }
        var v4: [String] = [], v6: [String] = []
        var cursor = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            guard let address = entry.pointee.ifa_addr, (entry.pointee.ifa_flags & UInt32(IFF_UP)) != 0,
                  (entry.pointee.ifa_flags & UInt32(IFF_LOOPBACK)) == 0 else { continue }
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            let family = Int32(address.pointee.sa_family)
            guard family == AF_INET || family == AF_INET6 else { continue }
            let length = socklen_t(family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
            guard getnameinfo(address, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else { continue }
            let text = String(decoding: host.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if family == AF_INET { v4.append(text) } else if !text.lowercased().hasPrefix("fe80") { v6.append(text) }
        }
        return v4 + v6
    }
}
