import IRCWire

/// An opaque number for one connection, given by the runtime.
public struct ConnectionID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let raw: UInt64
    public init(_ raw: UInt64) { self.raw = raw }
    public static func < (a: ConnectionID, b: ConnectionID) -> Bool { a.raw < b.raw }
    public var description: String { "#\(raw)" }
}

/// What the server state decided: lines to send, connections to close, lines to log.
/// The runtime applies these in order.
public struct Outbox: Sendable {
    public enum Item: Sendable, Equatable {
        case send(ConnectionID, [UInt8])
        /// The same bytes to many connections: a relayed message, serialised once.
        case sendMany([ConnectionID], [UInt8])
        /// Write what is queued for the connection, then close it; the state has already forgotten it.
        case close(ConnectionID)
        case log(String)
    }

    public var items: [Item] = []

    public init() {}

    public var isEmpty: Bool { items.isEmpty }

    mutating func send(_ id: ConnectionID, _ message: IRCMessage) {
        items.append(.send(id, message.serialized()))
    }

    mutating func send(_ id: ConnectionID, bytes: [UInt8]) {
        items.append(.send(id, bytes))
    }

    /// The lines sent to `id`, parsed back, for tests and logs.
    public func messages(to id: ConnectionID) -> [IRCMessage] {
        items.compactMap { item in
            switch item {
            case .send(let target, let bytes) where target == id:
                return try? IRCMessage(bytes: bytes.dropLast(2))
            case .sendMany(let targets, let bytes) where targets.contains(id):
                return try? IRCMessage(bytes: bytes.dropLast(2))
            default:
                return nil
            }
        }
    }

    public var logs: [String] {
        items.compactMap { if case .log(let text) = $0 { return text } else { return nil } }
    }

    public var closed: [ConnectionID] {
        items.compactMap { if case .close(let id) = $0 { return id } else { return nil } }
    }
}
