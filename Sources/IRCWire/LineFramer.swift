#if canImport(Glibc)
import Glibc
#endif

/// What a framer hands out: a complete line (without CR LF), or notice that a line was too long.
public enum FramedLine: Equatable, Sendable {
    case line([UInt8])
    /// A line passed the cap; its bytes up to the next LF are discarded.
    case overlong(discardedBytes: Int)
}

/// Splits a byte stream into lines on LF (a CR before it is dropped), in any chunking,
/// holding at most `maxLineBytes` of one line before reporting it as over-long.
public struct LineFramer: Sendable {
    public let maxLineBytes: Int
    private var buffer: [UInt8] = []
    private var discarding = false
    private var discarded = 0

    public init(maxLineBytes: Int = IRCLimits.frameBytes) {
        self.maxLineBytes = maxLineBytes
    }

    /// Bytes held of an unfinished line.
    public var pendingBytes: Int { buffer.count }

    /// Adds bytes and returns every line they complete, in order.
    public mutating func feed(_ bytes: some Collection<UInt8>) -> [FramedLine] {
        var lines: [FramedLine] = []
        feed(bytes) { lines.append($0) }
        return lines
    }

    /// Adds bytes and calls `emit` for every line they complete, in order.
    public mutating func feed(_ bytes: some Collection<UInt8>, _ emit: (FramedLine) -> Void) {
        if let done: Void = bytes.withContiguousStorageIfAvailable({ feed(buffer: $0, emit) }) { return done }
        Array(bytes).withUnsafeBufferPointer { feed(buffer: $0, emit) }
    }

    /// The concrete path every caller ends up on: no generic dispatch per byte, memchr for LF.
    public mutating func feed(buffer bytes: UnsafeBufferPointer<UInt8>, _ emit: (FramedLine) -> Void) {
        guard let base = bytes.baseAddress else { return }
        var index = 0
        let end = bytes.count
        while index < end {
            guard let found = memchr(base + index, 10, end - index) else {
                take(UnsafeBufferPointer(start: base + index, count: end - index))
                return
            }
            let newline = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            if buffer.isEmpty && !discarding && newline - index <= maxLineBytes + 1 {
                // The whole line came in this read (nearly always): an array of its own size,
                // straight from the bytes read; the framer holds nothing between lines.
                var length = newline - index
                if length > 0 && base[index + length - 1] == 13 { length -= 1 }
                emit(.line(Array(UnsafeBufferPointer(start: base + index, count: length))))
                index = newline + 1
                continue
            }
            take(UnsafeBufferPointer(start: base + index, count: newline - index))
            if discarding {
                emit(.overlong(discardedBytes: discarded))
                discarding = false
                discarded = 0
            } else {
                if buffer.last == 13 { buffer.removeLast() }
                emit(.line(buffer))
            }
            buffer = []
            index = newline + 1
        }
    }

    private mutating func take(_ part: UnsafeBufferPointer<UInt8>) {
        if discarding {
            discarded += part.count
            return
        }
        // One byte of slack for the CR that may precede the LF.
        if buffer.count + part.count > maxLineBytes + 1 {
            discarding = true
            discarded = buffer.count + part.count
            buffer = []
            return
        }
        buffer.append(contentsOf: part)
    }
}
