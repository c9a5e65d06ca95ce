/// Command pacing for one connection (fakelag): a burst, then a steady rate. A client that
/// sends faster is not disconnected: its lines wait in its queue, and past the queue's bound
/// the server stops reading its socket, so the kernel's flow control holds the rest back.
/// The clock is the caller's (the runtime's monotonic one, a test's own).
public struct Pacer: Sendable, Equatable {
    public let burst: Double
    public let rate: Double
    public private(set) var tokens: Double
    private var updated: Double

    public init(burst: Int, perSecond rate: Double, now: Double) {
        self.burst = Double(burst)
        self.rate = rate
        tokens = Double(burst)
        updated = now
    }

    private mutating func refill(_ now: Double) {
        if now > updated {
            tokens = min(burst, tokens + (now - updated) * rate)
            updated = now
        }
    }

    /// Takes what the line costs, if it is there.
    public mutating func take(_ cost: Int, now: Double) -> Bool {
        guard cost > 0 else { return true }
        refill(now)
        guard tokens >= Double(cost) else { return false }
        tokens -= Double(cost)
        return true
    }

    /// When a line of this cost will be allowed.
    public func readyAt(_ cost: Int) -> Double {
        tokens >= Double(cost) ? updated : updated + (Double(cost) - tokens) / rate
    }

    /// What a line costs: PONG nothing (keeping the connection alive is never delayed), a
    /// CHATHISTORY `historyCost` (a read of up to 100 stored lines: a client catching up on ten
    /// rooms still does it at once, one asking again and again is slowed to two a second), any
    /// other one, a line inside a draft/multiline batch too: each is a line delivered (to a
    /// client without multiline, a line of its own), so a batch of 24 costs 24, not 2, and lines
    /// tagged with a batch that already failed are paced like any other (they were free).
    public static func cost(of line: [UInt8]) -> Int {
        if line.starts(with: Array("PONG".utf8)) && (line.count == 4 || line[4] == UInt8(ascii: " ")) { return 0 }
        if Self.command(of: line, is: "CHATHISTORY") { return historyCost }
        return 1
    }

    public static let historyCost = 2

    /// Whether the line's command (after any tags and source, and the spaces after them) is `name`, in any case.
    static func command(of line: [UInt8], is name: StaticString) -> Bool {
        var start = 0
        func skipWord() -> Bool {
            guard let space = line[start...].firstIndex(of: UInt8(ascii: " ")) else { return false }
            start = space
            while start < line.count && line[start] == UInt8(ascii: " ") { start += 1 }
            return true
        }
        if line.first == UInt8(ascii: "@") && !skipWord() { return false }
        if start < line.count && line[start] == UInt8(ascii: ":") && !skipWord() { return false }
        let count = name.utf8CodeUnitCount
        guard line.count >= start + count else { return false }
        let letters = UnsafeBufferPointer(start: name.utf8Start, count: count)
        for (offset, letter) in letters.enumerated() where line[start + offset] | 0x20 != letter | 0x20 { return false }
        return line.count == start + count || line[start + count] == UInt8(ascii: " ")
    }
}
