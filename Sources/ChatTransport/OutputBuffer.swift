#if canImport(Glibc)
import Glibc
#endif

/// Bytes waiting to be written to one socket. Lines are appended as they are produced and
/// leave in as few `send` calls as the kernel allows: one per loop turn when the socket keeps up.
public struct OutputBuffer: Sendable {
    private var bytes: [UInt8] = []
    private var start = 0
    /// `bytes` is a line adopted as it was given (shared with other buffers): copied before it grows.
    private var adopted = false

    public init() {}

    public var count: Int { bytes.count - start }
    public var isEmpty: Bool { start == bytes.count }

    public mutating func append(_ line: [UInt8]) {
        // The first line is adopted, not copied: it is usually the only one this turn, and the
        // same bytes are every recipient's.
        if bytes.isEmpty { bytes = line; start = 0; adopted = true; return }
        if adopted || bytes.count + line.count > bytes.capacity {
            // A second line: room for many (a burst of arrivals appends hundreds per turn,
            // and growing from one line's size reallocated again and again), without what was sent.
            var grown: [UInt8] = []
            grown.reserveCapacity(max(2048, 2 * (bytes.count - start + line.count)))
            grown.append(contentsOf: bytes[start...])
            bytes = grown
            start = 0
            adopted = false
        }
        bytes.append(contentsOf: line)
    }

    public enum FlushResult: Equatable, Sendable {
        /// Everything was written.
        case done
        /// The kernel's buffer is full; wait until the socket is writable.
        case wouldBlock
        case failed(errno: Int32)
    }

    /// Writes as much as the socket takes now.
    public mutating func flush(to fd: Int32) -> FlushResult {
        while start < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                send(fd, raw.baseAddress! + start, raw.count - start, Int32(MSG_NOSIGNAL))
            }
            if written > 0 {
                start += written
                continue
            }
            let code = errno
            if written < 0 && code == EINTR { continue }
            if written < 0 && (code == EAGAIN || code == EWOULDBLOCK) {
                compact()
                return .wouldBlock
            }
            return .failed(errno: written == 0 ? EPIPE : code)
        }
        // An idle connection holds no buffer at all: the next line is adopted, not copied (`append`).
        reset()
        return .done
    }

    /// Writes as much as a TLS session takes now.
    public mutating func flush(to session: TLSSession) -> FlushResult {
        while start < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                session.write(UnsafeRawBufferPointer(rebasing: raw[start...]))
            }
            guard let written else { return .failed(errno: EPIPE) }
            if written == 0 {
                compact()
                return .wouldBlock
            }
            start += written
        }
        reset()
        return .done
    }

    /// Everything was written: an idle connection holds no buffer at all.
    private mutating func reset() {
        bytes = []
        start = 0
        adopted = false
    }

    private mutating func compact() {
        if start > 64 * 1024 || start > bytes.count / 2 {
            bytes.removeSubrange(0..<start)
            start = 0
        }
    }
}

public enum SocketRead {
    public enum Result {
        case data(Int)
        case wouldBlock
        case endOfStream
        case failed(errno: Int32)
    }

    /// One non-blocking `recv` into `buffer` (at most `limit` bytes).
    public static func once(_ fd: Int32, into buffer: inout [UInt8], limit: Int = .max) -> Result {
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, min($0.count, limit), 0) }
            if count > 0 { return .data(count) }
            if count == 0 { return .endOfStream }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
            return .failed(errno: code)
        }
    }
}
