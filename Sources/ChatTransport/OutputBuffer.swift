#if canImport(Glibc)
import Glibc
#endif

/// Bytes waiting to be written to one socket. Lines are kept as the arrays they arrived in —
/// a line relayed to a thousand people is one array referenced a thousand times, never copied —
/// and leave in as few `sendmsg` calls as the kernel allows (one per loop turn when the socket
/// keeps up), gathered from up to 64 lines at a time.
public struct OutputBuffer: Sendable {
    private var chunks: [[UInt8]] = []
    /// Chunks before this index are gone.
    private var head = 0
    /// Bytes of `chunks[head]` already written.
    private var offset = 0
    public private(set) var count = 0

    public init() {}

    public var isEmpty: Bool { count == 0 }

    public mutating func append(_ line: [UInt8]) {
        guard !line.isEmpty else { return }
        chunks.append(line)
        count += line.count
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
        while count > 0 {
            let batch = min(64, chunks.count - head)
            let written: Int = withUnsafeTemporaryAllocation(of: iovec.self, capacity: batch) { vectors in
                // The arrays stay alive (and unmoved) for the duration of the call: `chunks` holds them.
                for i in 0..<batch {
                    let chunk = chunks[head + i]
                    let skip = i == 0 ? offset : 0
                    chunk.withUnsafeBytes { raw in
                        vectors[i] = iovec(iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress! + skip), iov_len: raw.count - skip)
                    }
                }
                var message = msghdr()
                message.msg_iov = vectors.baseAddress
                message.msg_iovlen = batch
                return sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
            }
            if written > 0 {
                consume(written)
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
        chunks = []
        head = 0
        offset = 0
        return .done
    }

    private mutating func consume(_ written: Int) {
        var left = written
        count -= written
        while left > 0 {
            let available = chunks[head].count - offset
            if left >= available {
                left -= available
                chunks[head] = []
                head += 1
                offset = 0
            } else {
                offset += left
                left = 0
            }
        }
    }

    private mutating func compact() {
        if head > 256 || head > chunks.count / 2 {
            chunks.removeSubrange(0..<head)
            head = 0
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

    /// One non-blocking `recv` into `buffer`.
    public static func once(_ fd: Int32, into buffer: inout [UInt8]) -> Result {
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 { return .data(count) }
            if count == 0 { return .endOfStream }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
            return .failed(errno: code)
        }
    }
}
