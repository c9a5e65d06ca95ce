#if canImport(Glibc)
import Glibc
#endif
import CSystem

/// Small wrappers over the socket calls, each failing with a `TransportError`.
public enum Sockets {
    public static func setNonBlocking(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL, 0)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
    }

    public static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var value = value
        _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Small interactive lines should leave at once, not wait for Nagle's algorithm.
    public static func setNoDelay(_ fd: Int32) {
        setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
    }

    /// A write to a peer that has gone must return EPIPE, not kill the process.
    public static func ignoreSIGPIPE() {
        signal(SIGPIPE, SIG_IGN)
    }

    /// Raises the soft open-file limit to the hard limit, so connections are bounded by the system only.
    @discardableResult
    public static func raiseOpenFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return -1 }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return Int(limit.rlim_cur)
    }

    /// Opens non-blocking listening sockets for `bind` (nil: every IPv6 and IPv4 address) on `port`
    /// (0: a free port, the same for both families).
    public static func listen(bind: String?, port: Int, backlog: Int32 = 1024) throws(TransportError) -> [Int32] {
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var candidates: [(family: Int32, address: sockaddr_storage, length: socklen_t)] = []
        if let bind {
            var list: UnsafeMutablePointer<addrinfo>?
            let status = getaddrinfo(bind, String(port), &hints, &list)
            guard status == 0, let first = list else {
                throw .hostNotFound(host: bind, reason: String(cString: gai_strerror(status)))
            }
            defer { freeaddrinfo(first) }
            var entry: UnsafeMutablePointer<addrinfo>? = first
            while let info = entry {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { raw in
                    raw.copyMemory(from: UnsafeRawBufferPointer(start: info.pointee.ai_addr, count: Int(info.pointee.ai_addrlen)))
                }
                candidates.append((info.pointee.ai_family, storage, info.pointee.ai_addrlen))
                entry = info.pointee.ai_next
            }
        } else {
            var any6 = sockaddr_in6()
            any6.sin6_family = sa_family_t(AF_INET6)
            any6.sin6_addr = in6addr_any
            any6.sin6_port = UInt16(port).bigEndian
            var any4 = sockaddr_in()
            any4.sin_family = sa_family_t(AF_INET)
            any4.sin_addr.s_addr = INADDR_ANY
            any4.sin_port = UInt16(port).bigEndian
            candidates.append((AF_INET6, storage(of: any6), socklen_t(MemoryLayout<sockaddr_in6>.size)))
            candidates.append((AF_INET, storage(of: any4), socklen_t(MemoryLayout<sockaddr_in>.size)))
        }

        var fds: [Int32] = []
        var chosenPort = port
        var lastError: TransportError = .addressInUse(address: bind ?? "*", port: port)
        for var candidate in candidates {
            if chosenPort != 0 { setPort(&candidate.address, chosenPort) }
            let fd = socket(candidate.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { lastError = .lastError("socket"); continue }
            setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
            // Without V6ONLY the IPv6 socket would take the IPv4 port too and the IPv4 bind would fail.
            if candidate.family == AF_INET6 { setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1) }
            let bound = withUnsafePointer(to: &candidate.address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, candidate.length) }
            }
            if bound != 0 {
                let code = errno
                close(fd)
                if code == EADDRINUSE {
                    lastError = .addressInUse(address: bind ?? "*", port: chosenPort)
                } else if code == EAFNOSUPPORT || code == EADDRNOTAVAIL {
                    // A machine without IPv6 still serves IPv4.
                    lastError = .system(call: "bind", errno: code)
                    continue
                } else {
                    lastError = .system(call: "bind", errno: code)
                }
                if code == EADDRINUSE { for open in fds { close(open) }; throw lastError }
                continue
            }
            guard Glibc.listen(fd, backlog) == 0 else { lastError = .lastError("listen"); close(fd); continue }
            setNonBlocking(fd)
            if chosenPort == 0, let local = SocketAddress.local(of: fd) { chosenPort = SocketAddress.port(of: local) }
            fds.append(fd)
        }
        if fds.isEmpty { throw lastError }
        return fds
    }

    public static func boundPort(_ fd: Int32) -> Int {
        SocketAddress.local(of: fd).map(SocketAddress.port(of:)) ?? 0
    }

    static func storage<T>(of address: T) -> sockaddr_storage {
        var storage = sockaddr_storage()
        var address = address
        withUnsafeMutableBytes(of: &storage) { target in
            withUnsafeBytes(of: &address) { target.copyMemory(from: $0) }
        }
        return storage
    }

    static func setPort(_ storage: inout sockaddr_storage, _ port: Int) {
        let family = Int32(storage.ss_family)
        withUnsafeMutablePointer(to: &storage) { pointer in
            if family == AF_INET {
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port = UInt16(port).bigEndian }
            } else if family == AF_INET6 {
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_port = UInt16(port).bigEndian }
            }
        }
    }

    /// Resolves `host` and connects to the first address that answers, IPv6 and IPv4 alike,
    /// giving up on each after `timeout` seconds in all. Returns a blocking socket.
    /// `cancel`: a descriptor that becomes readable when the caller gives up (`.cancelled`).
    /// The socket returned is blocking unless `nonBlocking`.
    public static func connect(host: String, port: Int, timeout: Double, cancel: Int32 = -1, nonBlocking: Bool = false) throws(TransportError) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            let reason = status == EAI_SYSTEM ? TransportError.errnoText(errno) : String(cString: gai_strerror(status))
            throw .hostNotFound(host: host, reason: reason)
        }
        defer { freeaddrinfo(first) }
        let deadline = Monotonic.now() + timeout
        var failure: TransportError = .unreachable(host: host, port: port, reason: "no address")
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let remaining = deadline - Monotonic.now()
            if remaining <= 0 { throw .timedOut(host: host, port: port, seconds: timeout) }
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), info.pointee.ai_protocol)
            guard fd >= 0 else { failure = .lastError("socket"); continue }
            setNonBlocking(fd)
            var code: Int32 = 0
            if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) != 0 {
                code = errno
                if code == EINPROGRESS {
                    var pfds = [pollfd(fd: fd, events: Int16(POLLOUT), revents: 0), pollfd(fd: cancel, events: Int16(POLLIN), revents: 0)]
                    var ready: Int32
                    repeat {
                        ready = poll(&pfds, cancel >= 0 ? 2 : 1, Int32(max(1, (deadline - Monotonic.now()) * 1000)))
                    } while ready < 0 && errno == EINTR
                    if cancel >= 0 && pfds[1].revents != 0 {
                        close(fd)
                        throw .cancelled
                    }
                    if ready == 0 {
                        close(fd)
                        failure = .timedOut(host: host, port: port, seconds: timeout)
                        continue
                    }
                    var soError: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &length)
                    code = soError
                }
            }
            if code == 0 {
                if !nonBlocking {
                    let flags = fcntl(fd, F_GETFL, 0)
                    _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)
                }
                setNoDelay(fd)
                return fd
            }
            close(fd)
            switch code {
            case ECONNREFUSED: failure = .connectionRefused(host: host, port: port)
            case ETIMEDOUT: failure = .timedOut(host: host, port: port, seconds: timeout)
            default: failure = .unreachable(host: host, port: port, reason: TransportError.errnoText(code))
            }
        }
        throw failure
    }
}

/// Seconds on a clock that never jumps.
public enum Monotonic {
    public static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

/// CPU seconds the calling thread has used (what a TLS handshake costs the loop).
public enum ThreadCPU {
    public static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

/// Seconds since 1970 on the wall clock, for `server-time` and logs.
public enum WallClock {
    public static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
