import ChatStore
import IRCWire

/// An opaque number for one connection, given by the runtime.
public struct ConnectionID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let raw: UInt64
    public init(_ raw: UInt64) { self.raw = raw }
    public static func < (a: ConnectionID, b: ConnectionID) -> Bool { a.raw < b.raw }
    public var description: String { "#\(raw)" }
}

/// One person on the server, whatever connections they use. Today every user has exactly one
/// connection; the tables (nicknames, memberships, invitations, monitors) are keyed by this,
/// so a second connection of the same account later changes only `User.sessions`.
public struct UserID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let raw: UInt64
    public init(_ raw: UInt64) { self.raw = raw }
    public static func < (a: UserID, b: UserID) -> Bool { a.raw < b.raw }
    public var description: String { "u\(raw)" }
}

/// One message going to many connections, with each connection's form of it.
public struct Delivery: Sendable, Equatable {
    /// The message with the tags the server relays (`account`, `bot`, client tags).
    public let message: IRCMessage
    /// Its `time` and `msgid`, added per recipient by `Rendering`.
    public let stamp: Stamp
    /// Recipients grouped by the form they get.
    public let groups: [(variant: RenderVariant, connections: [ConnectionID])]
    /// Connections in `groups` that do not get it (a room's sender without echo-message, and
    /// the requester, whose copy goes with its reply; a user's every session when the user is
    /// excluded): a few, so the lists can be a room's own, handed over without copying.
    public var skipping: [ConnectionID] = []
    /// For a room's own lists: the room and their stamp (`FanOut.generation`).
    public var lists: (room: String, generation: UInt64)?
    /// PRIVMSG, NOTICE, TAGMSG, JOIN, PART, QUIT, KICK, NICK, TOPIC or MODE: what history keeps.
    public let storable: Bool
    /// The rows history stores, one per conversation it belongs to, made once by the state
    /// (empty: nowhere, as for a direct message with no account on either side).
    public var rows: [HistoryRow] = []
    /// The message serialised as it is (its own tags, no time or msgid), when history already
    /// made it for the row: the form of every recipient that adds nothing (`Rendering.render`).
    public var serialized: [UInt8]?

    public static func == (a: Delivery, b: Delivery) -> Bool {
        a.message == b.message && a.stamp == b.stamp && a.storable == b.storable && a.rows == b.rows
            && a.recipientsByVariant == b.recipientsByVariant
    }

    /// Who gets which form, in a fixed order (the lists' own order follows arrivals and departures).
    var recipientsByVariant: [RenderVariant: [ConnectionID]] {
        var result: [RenderVariant: [ConnectionID]] = [:]
        for group in groups {
            let kept = group.connections.filter { !skipping.contains($0) }
            if !kept.isEmpty { result[group.variant, default: []] += kept }
        }
        return result.mapValues { $0.sorted() }
    }

    public var recipients: [ConnectionID] { groups.flatMap(\.connections).filter { !skipping.contains($0) } }

    /// The message with `time` and `msgid` as tags, as history will store it.
    public var taggedMessage: IRCMessage { Rendering.tagged(message, stamp) }

    /// The commands history keeps (`draft/event-playback` covers the membership ones).
    static func isStorable(_ command: String) -> Bool {
        // A switch, not a Set: hashing the command cost more than comparing a few short strings.
        switch command {
        case "PRIVMSG", "NOTICE", "TAGMSG", "JOIN", "PART", "QUIT", "KICK", "NICK", "TOPIC", "MODE": return true
        default: return false
        }
    }
}

/// What the server state decided: lines to send, connections to close, lines to log.
/// The runtime applies these in order. The cases with big payloads are `indirect` (boxed): an
/// item is 41 bytes, not 136 (a `Delivery`'s size), so the list is moved and each item copied
/// and destroyed cheaply, the lines for one connection above all (a direct message's one item).
public struct Outbox: Sendable {
    public enum Item: Sendable, Equatable {
        /// Bytes already written for one connection (replies to a command).
        case send(ConnectionID, [UInt8])
        /// A relayed message; the runtime writes it once per variant.
        indirect case deliver(Delivery)
        /// Write what is queued for the connection, then close it; the state has already forgotten it.
        case close(ConnectionID)
        case log(String)
        /// Bytes for one connection that wait until history has committed this msgid (the
        /// sender's own copy of a stored message); what follows for it waits behind them.
        case sendAfterCommit(ConnectionID, [UInt8], UInt64)
        /// Bytes for one connection ahead of what waits there for a commit: the refusal of a
        /// message while history cannot store (the sender must hear of it now, not after the disk recovers).
        case sendAhead(ConnectionID, [UInt8])
        /// Changes to the saved rooms for the history writer, which stores them before the rows
        /// handed over after them (`ServerState.writeRoomRecords`; with history off they go to
        /// the store worker as `.store(.saveRooms)`).
        case saveRooms(RoomChanges)
        /// A PBKDF2 to run off the loop; the answer goes to `ServerState.passwordChecked`.
        indirect case checkPassword(PasswordCheck)
        /// A history read to make off the loop; the answer goes to `ServerState.historyAnswered`.
        indirect case readHistory(HistoryQuery)
        /// More of a long reply is to come: the runtime asks for it (`ServerState.continueReply`)
        /// once the connection has taken most of what it has.
        case continueReply(ConnectionID)
        /// Connect to a server we link with; the answer is `linkConnected` or `linkDialFailed`.
        indirect case dialLink(LinkBlock)
        /// Rows for history that no delivery carries (what a linked server said during a split).
        case storeRows([HistoryRow])
        /// A deleted message (REDACT): history forgets its row, after any rows handed over before.
        case forgetRow(target: String, msgid: Int64)
        /// A renamed room (RENAME): its rows and read markers move to the new name.
        case renameHistory(from: String, to: String)
        /// An account's read marker moved (held in memory already): for the history writer.
        case setMarker(account: String, target: String, time: Int64)
        /// Work for the store worker; the answer goes to `ServerState.storeAnswered`.
        indirect case store(StoreJob)
        /// A Web Push POST for the push workers (WebPush.swift); answered by `webPushAnswered`.
        indirect case webPush(PushJob)
    }

    public var items: [Item] = []

    public init() {}

    public var isEmpty: Bool { items.isEmpty }

    mutating func send(_ id: ConnectionID, _ message: IRCMessage) {
        items.append(.send(id, message.serialized()))
    }

    /// The lines sent to `id`, parsed back, for tests and logs.
    public func messages(to id: ConnectionID) -> [IRCMessage] {
        items.flatMap { item -> [IRCMessage] in
            switch item {
            case .send(let target, let bytes) where target == id:
                return Outbox.parse(bytes)
            case .sendAfterCommit(let target, let bytes, _) where target == id:
                return Outbox.parse(bytes)
            case .sendAhead(let target, let bytes) where target == id:
                return Outbox.parse(bytes)
            case .deliver(let delivery):
                guard !delivery.skipping.contains(id), let group = delivery.groups.first(where: { $0.connections.contains(id) }) else { return [] }
                return Outbox.parse(Rendering.render(delivery.message, delivery.stamp, group.variant, serialized: delivery.serialized))
            default:
                return []
            }
        }
    }

    /// One or more CR LF terminated lines.
    static func parse(_ bytes: [UInt8]) -> [IRCMessage] {
        var result: [IRCMessage] = []
        var start = 0
        var i = 0
        while i + 1 < bytes.count {
            if bytes[i] == 13 && bytes[i + 1] == 10 {
                if let message = try? IRCMessage(bytes: Array(bytes[start..<i])) { result.append(message) }
                start = i + 2
                i += 2
            } else {
                i += 1
            }
        }
        return result
    }

    public var deliveries: [Delivery] {
        items.compactMap { if case .deliver(let d) = $0 { return d } else { return nil } }
    }

    public var logs: [String] {
        items.compactMap { if case .log(let text) = $0 { return text } else { return nil } }
    }

    public var closed: [ConnectionID] {
        items.compactMap { if case .close(let id) = $0 { return id } else { return nil } }
    }
}

/// Changes to the saved rooms, in order.
public struct RoomChanges: Sendable, Equatable {
    public let list: [(key: String, change: RoomStore.Change)]

    public static func == (a: RoomChanges, b: RoomChanges) -> Bool {
        a.list.elementsEqual(b.list) { $0.key == $1.key && $0.change == $1.change }
    }
}
