import IRCWire

/// The capabilities that change how one message is written for a recipient. A relayed message
/// is serialised once per variant present among its recipients, not once per recipient.
public struct RenderVariant: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// `server-time`: the `time` tag.
    static let time = RenderVariant(rawValue: 1)
    /// `message-tags`: `msgid`, `bot` and client (`+`) tags.
    static let tags = RenderVariant(rawValue: 2)
    /// `account-tag`.
    static let account = RenderVariant(rawValue: 4)
    /// `extended-join`: JOIN with account and real name.
    static let extendedJoin = RenderVariant(rawValue: 8)
    /// `batch` tags (replies only).
    static let batch = RenderVariant(rawValue: 16)
    /// The `label` tag (replies to the labelled command only).
    static let label = RenderVariant(rawValue: 32)

}

/// When a relayed event happened and its `msgid`, kept as numbers beside the message: they
/// become the `time` and `msgid` tags only for recipients that asked for them (and for history),
/// so a fan-out to clients without tags formats neither.
public struct Stamp: Sendable, Equatable {
    public let time: Double
    public let msgid: UInt64?

    public var timeTag: String { ServerTime.format(time) }
    public var msgidTag: String? { msgid.map(MessageIDs.text) }
}

enum Rendering {
    /// The message as a recipient of `variant` gets it, serialised with CR LF.
    static func render(_ message: IRCMessage, _ stamp: Stamp?, _ variant: RenderVariant) -> [UInt8] {
        let addTime = stamp != nil && variant.contains(.time)
        let addID = stamp?.msgid != nil && variant.contains(.tags)
        var needsCopy = addTime || addID
        if !needsCopy { for tag in message.tags where !keeps(tag.key, variant) { needsCopy = true; break } }
        let extendedJoin = message.command == "JOIN" && message.params.count == 3
        if extendedJoin && !variant.contains(.extendedJoin) { needsCopy = true }
        guard needsCopy else { return message.serialized() }
        var copy = message
        copy.tags.removeAll { !keeps($0.key, variant) }
        if let stamp {
            if addID, let id = stamp.msgidTag { copy.tags.insert(IRCTag("msgid", id), at: 0) }
            if addTime { copy.tags.insert(IRCTag("time", stamp.timeTag), at: 0) }
        }
        if extendedJoin && !variant.contains(.extendedJoin) { copy.params.removeLast(2) }
        return copy.serialized()
    }

    /// The message with its stamp as tags, as history stores it and tests read it.
    static func tagged(_ message: IRCMessage, _ stamp: Stamp) -> IRCMessage {
        var copy = message
        if let id = stamp.msgidTag { copy.tags.insert(IRCTag("msgid", id), at: 0) }
        copy.tags.insert(IRCTag("time", stamp.timeTag), at: 0)
        return copy
    }

    static func keeps(_ key: String, _ variant: RenderVariant) -> Bool {
        switch key {
        case "time": return variant.contains(.time)
        case "account": return variant.contains(.account)
        case "batch": return variant.contains(.batch)
        case "label": return variant.contains(.label)
        default: return variant.contains(.tags)
        }
    }
}
