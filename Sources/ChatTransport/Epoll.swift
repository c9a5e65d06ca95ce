#if canImport(Glibc)
import Glibc
#endif
import CSystem

/// A thin owner of one epoll instance. Level-triggered: a socket with data left unread
/// is reported again on the next wait, which keeps one busy peer from starving the rest.
public final class Epoll {
    public struct Event {
        public let token: UInt64
        public let readable: Bool
        public let writable: Bool
        /// Error or hang-up: the socket should be read to its end and then closed.
        public let failed: Bool
    }

    public let fd: Int32
    private var masks = [UInt32](repeating: 0, count: 256)
    private var tokens = [UInt64](repeating: 0, count: 256)

    public init() throws(TransportError) {
        fd = csystem_epoll_create()
        guard fd >= 0 else { throw .lastError("epoll_create1") }
    }

    deinit { close(fd) }

    public func add(_ socket: Int32, token: UInt64, writable: Bool = false) throws(TransportError) {
        guard csystem_epoll_ctl(fd, csystem_EPOLL_CTL_ADD(), socket, mask(writable: writable), token) == 0 else {
            throw .lastError("epoll_ctl")
        }
    }

    public func modify(_ socket: Int32, token: UInt64, readable: Bool = true, writable: Bool) {
        _ = csystem_epoll_ctl(fd, csystem_EPOLL_CTL_MOD(), socket, mask(readable: readable, writable: writable), token)
    }

    public func remove(_ socket: Int32) {
        _ = csystem_epoll_ctl(fd, csystem_EPOLL_CTL_DEL(), socket, 0, 0)
    }

    private func mask(readable: Bool = true, writable: Bool) -> UInt32 {
        // A paused reader is not told of a half-close either (it would be told again every wait).
        var mask: UInt32 = 0
        if readable { mask |= csystem_EPOLLIN() | csystem_EPOLLRDHUP() }
        if writable { mask |= csystem_EPOLLOUT() }
        return mask
    }

    /// Waits up to `timeoutMilliseconds` (-1: forever) and returns what is ready.
    public func wait(timeoutMilliseconds: Int32) -> [Event] {
        let count = csystem_epoll_wait(fd, &masks, &tokens, Int32(masks.count), timeoutMilliseconds)
        guard count > 0 else { return [] }
        let errorMask = csystem_EPOLLERR() | csystem_EPOLLHUP() | csystem_EPOLLRDHUP()
        return (0..<Int(count)).map { i in
            Event(token: tokens[i],
                  readable: masks[i] & csystem_EPOLLIN() != 0,
                  writable: masks[i] & csystem_EPOLLOUT() != 0,
                  failed: masks[i] & errorMask != 0)
        }
    }
}

/// An eventfd that wakes an epoll loop from another thread.
public final class Wakeup: @unchecked Sendable {
    // Only the file descriptor is shared, and eventfd reads and writes are atomic in the kernel.
    public let fd: Int32

    public init() throws(TransportError) {
        fd = csystem_eventfd()
        guard fd >= 0 else { throw .lastError("eventfd") }
    }

    deinit { close(fd) }

    public func signal() {
        var one: UInt64 = 1
        _ = write(fd, &one, 8)
    }

    public func drain() {
        var value: UInt64 = 0
        _ = read(fd, &value, 8)
    }
}

public enum Accept {
    /// Accepts one pending connection as a non-blocking socket, or nil when none is waiting.
    /// Throws for errors other than "nothing to accept" (EMFILE when out of descriptors).
    public static func next(_ listener: Int32) throws(TransportError) -> (fd: Int32, peer: sockaddr_storage)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let fd = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { csystem_accept4(listener, $0, &length) }
        }
        if fd >= 0 { return (fd, storage) }
        let code = errno
        if code == EAGAIN || code == EWOULDBLOCK || code == EINTR || code == ECONNABORTED { return nil }
        throw .system(call: "accept4", errno: code)
    }
}
