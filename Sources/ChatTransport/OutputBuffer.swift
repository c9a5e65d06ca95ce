#if canImport(Glibc)
import Glibc
#endif

/// Bytes waiting to be written to one socket. Lines are appended as they are produced and
/// leave in as few calls as the kernel allows: one per loop turn when the socket keeps up.
///
/// Small lines are copied into one contiguous chunk of the buffer's own. A big array (a room's
/// gathered deliveries, the same for every member) is kept by reference, not copied: a
/// member's buffer that already holds something gets another chunk, and the chunks leave
/// together in one `sendmsg`. So holding output back (a crowd's join announcements) costs each
/// member a reference per chunk, not a copy of the bytes.
public struct OutputBuffer: Sendable {
    /// The chunk being written, from `start` on; the common case is this one alone.
    private var first: [UInt8] = []
    private var start = 0
    /// Chunks after `first`, in order, from `restHead` on.
    private var rest: [[UInt8]] = []
    private var restHead = 0
    private var total = 0
    /// The last chunk is our own (copied into), so a small line may be appended to it in place.
    private var ownsLast = false

    /// Lines at least this long are kept by reference when something is already waiting.
    public static let shareFrom = 1024
    /// At most this many chunks per `sendmsg`.
    static let gatherAtMost = 64

    public init() {}

    public var count: Int { total }
    /// Bytes written from this buffer so far, ever: with `count`, a place in the stream that
    /// outlives what is sent (a stretch that must wait is found by where it began).
    public private(set) var sent = 0
    public var isEmpty: Bool { total == 0 }
    /// Chunks waiting (for tests: big shared arrays are referenced, not copied).
    public var chunkCount: Int { total == 0 ? 0 : 1 + rest.count - restHead }

    public mutating func append(_ line: [UInt8]) {
        guard !line.isEmpty else { return }
        defer { total += line.count }
        // The first line is adopted, not copied: it is usually the only one this turn, and the
        // same bytes are every recipient's.
        if total == 0 {
            adopt(line, from: 0)
            return
        }
        if line.count >= Self.shareFrom {
            rest.append(line)
            ownsLast = false
            return
        }
        let alone = restHead == rest.count
        if ownsLast {
            if alone { first.append(contentsOf: line) } else { rest[rest.count - 1].append(contentsOf: line) }
            return
        }
        // A chunk of our own, with room for many small lines (a burst of arrivals appends
        // hundreds a turn; growing from one line's size reallocated again and again). A small
        // adopted line at the end is copied into it, so small lines stay contiguous.
        let last = alone ? first[start...] : rest[rest.count - 1][...]
        let absorb = last.count < Self.shareFrom
        var own: [UInt8] = []
        own.reserveCapacity(max(2048, 2 * ((absorb ? last.count : 0) + line.count)))
        if absorb { own.append(contentsOf: last) }
        own.append(contentsOf: line)
        if !absorb {
            rest.append(own)
        } else if alone {
            first = own
            start = 0
        } else {
            rest[rest.count - 1] = own
        }
        ownsLast = true
    }

    /// Appends `line[offset...]`: when nothing is waiting, the array itself is adopted from that
    /// offset (the tail of a crowd's held JOINs, shared by many members: no copy each); copied
    /// otherwise.
    public mutating func append(_ line: [UInt8], from offset: Int) {
        guard offset < line.count else { return }
        if total == 0 {
            adopt(line, from: offset)
            total = line.count - offset
        } else {
            append(offset == 0 ? line : Array(line[offset...]))
        }
    }

    /// An empty buffer takes `line` itself as the chunk it writes, from `offset` on.
    private mutating func adopt(_ line: [UInt8], from offset: Int) {
        first = line
        start = offset
        ownsLast = false
    }

    public enum FlushResult: Equatable, Sendable {
        /// Everything was written.
        case done
        /// The kernel's buffer is full; wait until the socket is writable.
        case wouldBlock
        case failed(errno: Int32)
    }

    /// Writes as much as the socket takes now.
    public mutating func flush(to fd: Int32) -> FlushResult { flush(to: fd, limit: .max) }

    /// Writes as much as the socket takes now of the first `limit` bytes: `.done` when those
    /// are written (the rest waits: what follows them may not go yet).
    public mutating func flush(to fd: Int32, limit: Int) -> FlushResult {
        var allowed = limit
        while total > 0 && allowed > 0 {
            let written = restHead == rest.count ? sendFirst(fd, at: allowed) : sendGathered(fd, at: allowed)
            if written > 0 {
                consume(written)
                allowed -= written
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
        if total > 0 {
            compact()
            return .done
        }
        // An idle connection holds no buffer at all: the next line is adopted, not copied (`append`).
        reset()
        return .done
    }

    private func sendFirst(_ fd: Int32, at most: Int) -> Int {
        first.withUnsafeBytes { raw in send(fd, raw.baseAddress! + start, min(raw.count - start, most), Int32(MSG_NOSIGNAL)) }
    }

    /// One `sendmsg` over the first chunks (each pinned by `withUnsafeBytes` while it runs), at
    /// most `most` bytes.
    private func sendGathered(_ fd: Int32, at most: Int) -> Int {
        var vectors: [iovec] = []
        vectors.reserveCapacity(min(chunkCount, Self.gatherAtMost))
        var room = most
        func gather(_ index: Int) -> Int {
            if index == rest.count || vectors.count == Self.gatherAtMost || room == 0 {
                return vectors.withUnsafeMutableBufferPointer { iov in
                    var message = msghdr()
                    message.msg_iov = iov.baseAddress
                    message.msg_iovlen = iov.count
                    return sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
                }
            }
            return rest[index].withUnsafeBytes { raw in
                let length = min(raw.count, room)
                room -= length
                vectors.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress!), iov_len: length))
                return gather(index + 1)
            }
        }
        return first.withUnsafeBytes { raw in
            let length = min(raw.count - start, room)
            room -= length
            vectors.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress! + start), iov_len: length))
            return gather(restHead)
        }
    }

    /// `written` bytes have left: chunks written whole are let go, a partial one is remembered.
    private mutating func consume(_ written: Int) {
        total -= written
        sent += written
        var left = written
        while left >= first.count - start && restHead < rest.count {
            left -= first.count - start
            first = rest[restHead]
            rest[restHead] = []
            restHead += 1
            start = 0
        }
        start += left
    }

    /// Writes as much as a TLS session takes now: a record per chunk (the session is always handed
    /// the unwritten rest of the first chunk, what SSL_write needs when it retries).
    public mutating func flush(to session: TLSSession) -> FlushResult { flush(to: session, limit: .max) }

    /// The first `limit` bytes, as `flush(to:limit:)` on a socket. (A limit only grows between
    /// calls, so a write SSL_write must retry is never handed fewer bytes.)
    public mutating func flush(to session: TLSSession, limit: Int) -> FlushResult {
        var allowed = limit
        while total > 0 && allowed > 0 {
            let written = first.withUnsafeBytes { raw in
                session.write(UnsafeRawBufferPointer(rebasing: raw[start..<(start + min(raw.count - start, allowed))]))
            }
            guard let written else { return .failed(errno: EPIPE) }
            if written == 0 {
                compact()
                return .wouldBlock
            }
            consume(written)
            allowed -= written
        }
        if total > 0 {
            compact()
            return .done
        }
        reset()
        return .done
    }

    /// Everything was written: an idle connection holds no buffer at all.
    private mutating func reset() {
        first = []
        start = 0
        rest = []
        restHead = 0
        total = 0
        ownsLast = false
    }

    /// A stalled socket: the chunks already written go, and so do the written bytes of a big
    /// chunk of our own.
    private mutating func compact() {
        if restHead > 0 {
            rest.removeFirst(restHead)
            restHead = 0
        }
        if ownsLast && rest.isEmpty && (start > 64 * 1024 || start > first.count / 2) {
            first.removeSubrange(0..<start)
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
