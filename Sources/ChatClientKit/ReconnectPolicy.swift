/// Exponential backoff with jitter: 1 s, 2 s, 4 s … up to 60 s, each spread by ±20 %
/// so that many clients dropped together do not come back together.
public struct ReconnectPolicy: Sendable, Equatable {
    public var initial: Double = 1
    public var maximum: Double = 60
    public var jitter: Double = 0.2

    public init(initial: Double = 1, maximum: Double = 60, jitter: Double = 0.2) {
        self.initial = initial
        self.maximum = maximum
        self.jitter = jitter
    }

    /// The wait before attempt `attempt` (1 for the first retry); `random` is in 0..<1.
    public func delay(attempt: Int, random: Double) -> Double {
        let exponent = Double(max(0, min(attempt - 1, 30)))
        var base = initial
        for _ in 0..<Int(exponent) {
            base *= 2
            if base >= maximum { break }
        }
        base = min(base, maximum)
        return base * (1 - jitter + 2 * jitter * random)
    }
}
