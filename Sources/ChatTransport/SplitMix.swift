/// SplitMix64 (Steele, Lea and Flood): a small seeded generator, so a fuzz run, the state fuzzer
/// or a soak can be replayed from the seed it prints. Not for secrets (`Crypto.randomBytes`).
public struct SplitMix: RandomNumberGenerator, Sendable {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// One of `items`, which must not be empty.
    public mutating func pick<T>(_ items: [T]) -> T { items[Int(next() % UInt64(items.count))] }

    /// True `percent` times in a hundred.
    public mutating func chance(_ percent: UInt64) -> Bool { next() % 100 < percent }
}
