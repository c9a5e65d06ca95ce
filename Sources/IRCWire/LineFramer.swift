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
        var index = bytes.startIndex
        while index != bytes.endIndex {
            guard let newline = bytes[index...].firstIndex(of: 10) else {
                take(bytes[index...])
                return
            }
            take(bytes[index..<newline])
            if discarding {
                emit(.overlong(discardedBytes: discarded))
                discarding = false
                discarded = 0
            } else {
                if buffer.last == 13 { buffer.removeLast() }
                emit(.line(buffer))
            }
            buffer.removeAll(keepingCapacity: buffer.capacity <= 1024)
            index = bytes.index(after: newline)
        }
    }

    private mutating func take(_ part: some Collection<UInt8>) {
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
