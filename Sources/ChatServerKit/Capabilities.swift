/// The IRCv3 capabilities this server implements; only these are advertised.
public enum Capability: String, CaseIterable, Sendable {
    case awayNotify = "away-notify"
    case echoMessage = "echo-message"
    case messageTags = "message-tags"
    case multiPrefix = "multi-prefix"
    case serverTime = "server-time"

    var bit: UInt8 {
        switch self {
        case .awayNotify: return 1
        case .echoMessage: return 2
        case .messageTags: return 4
        case .multiPrefix: return 8
        case .serverTime: return 16
        }
    }
}

/// A set of capabilities in one byte, cheap to copy for every recipient of a fan-out.
public struct CapabilitySet: Sendable, Equatable {
    var bits: UInt8 = 0

    public init() {}

    public init(_ caps: [Capability]) {
        for cap in caps { insert(cap) }
    }

    public func contains(_ cap: Capability) -> Bool { bits & cap.bit != 0 }
    public mutating func insert(_ cap: Capability) { bits |= cap.bit }
    public mutating func remove(_ cap: Capability) { bits &= ~cap.bit }

    public var names: [String] { Capability.allCases.filter(contains).map(\.rawValue) }

    /// Which of the four forms of a relayed message this client gets: with or without the
    /// `time` tag, with or without client tags.
    var relayVariant: Int {
        (contains(.serverTime) ? 1 : 0) | (contains(.messageTags) ? 2 : 0)
    }
}
