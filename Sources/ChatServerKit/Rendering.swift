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
    /// `serialized`: `message.serialized()`, when it was made already (for history's row).
    static func render(_ message: IRCMessage, _ stamp: Stamp?, _ variant: RenderVariant, serialized: [UInt8]? = nil) -> [UInt8] {
        let addTime = stamp != nil && variant.contains(.time)
        let addID = stamp?.msgid != nil && variant.contains(.tags)
        var needsCopy = addTime || addID
        if !needsCopy { for tag in message.tags where !keeps(tag.key, variant) { needsCopy = true; break } }
        let extendedJoin = message.command == "JOIN" && message.params.count == 3
        if extendedJoin && !variant.contains(.extendedJoin) { needsCopy = true }
        guard needsCopy else { return serialized ?? message.serialized() }
        var copy = message
        copy.tags = tags(message.tags, stamp, variant)
        if extendedJoin && !variant.contains(.extendedJoin) { copy.params.removeLast(2) }
        return copy.serialized()
    }

    /// `:source COMMAND target :`, what every such line starts with (after its tags).
    static func directHeader(_ command: String, source: String, target: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(source.utf8.count + command.utf8.count + target.utf8.count + 5)
        out.append(UInt8(ascii: ":"))
        out.append(contentsOf: source.utf8)
        out.append(UInt8(ascii: " "))
        out.append(contentsOf: command.utf8)
        out.append(UInt8(ascii: " "))
        out.append(contentsOf: target.utf8)
        out.append(UInt8(ascii: " "))
        out.append(UInt8(ascii: ":"))
        return out
    }

    /// A PRIVMSG or NOTICE to one person written straight from the sender's text bytes, byte
    /// for byte what `render` writes for `IRCMessage(tags:source:command:params: [target, text])`
    /// (test `DirectLaneTests.directMatchesRender`): the time and msgid tags the variant asks for,
    /// the tags it keeps, the body cut to 512 bytes at a character boundary. The caller makes sure
    /// the text holds no CR, LF or NUL (`PlainTextLine` refuses them; `render` would make them
    /// spaces) and `header` is `directHeader`'s for a nick.
    static func direct(header: [UInt8], text: ArraySlice<UInt8>, tags: [IRCTag], _ stamp: Stamp, _ variant: RenderVariant) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(header.count + text.count + (variant.isEmpty && tags.isEmpty ? 2 : 96))
        if !variant.isEmpty || !tags.isEmpty { IRCMessage.appendTags(self.tags(tags, stamp, variant), to: &out) }
        let bodyStart = out.count
        out.append(contentsOf: header)
        out.append(contentsOf: text)
        IRCMessage.endLine(&out, bodyStart: bodyStart)
        return out
    }

    /// The tags a recipient of `variant` gets: the stamp's `time` and `msgid` if it asked for
    /// them, first, then those of `tags` it keeps (one rule for `render` and `direct`).
    static func tags(_ tags: [IRCTag], _ stamp: Stamp?, _ variant: RenderVariant) -> [IRCTag] {
        var kept: [IRCTag] = []
        if let stamp {
            if variant.contains(.time) { kept.append(IRCTag("time", stamp.timeTag)) }
            if variant.contains(.tags), let id = stamp.msgidTag { kept.append(IRCTag("msgid", id)) }
        }
        for tag in tags where keeps(tag.key, variant) { kept.append(tag) }
        return kept
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
