/// One IRCv3 message tag: `key` or `key=value`, with the value unescaped.
public struct IRCTag: Hashable, Sendable {
    public var key: String
    /// The unescaped value; empty when the tag had none.
    public var value: String

    public init(_ key: String, _ value: String = "") {
        self.key = key
        self.value = value
    }

    /// Client-only tags start with `+` and are relayed between clients that negotiated `message-tags`.
    public var isClientOnly: Bool { key.hasPrefix("+") }
}

/// One IRC line as a value: tags, optional source, command and parameters.
public struct IRCMessage: Hashable, Sendable {
    public var tags: [IRCTag]
    public var source: String?
    /// Upper-cased verb (`PRIVMSG`) or three-digit numeric (`001`).
    public var command: String
    public var params: [String]

    public init(tags: [IRCTag] = [], source: String? = nil, command: String, params: [String] = []) {
        self.tags = tags
        self.source = source
        self.command = command
        self.params = params
    }

    public init(_ command: String, _ params: String...) {
        self.init(command: command, params: params)
    }

    /// The value of the first tag named `key`, or nil.
    public func tag(_ key: String) -> String? {
        tags.first(where: { $0.key == key })?.value
    }

    /// Parameter `index`, or nil when there are fewer.
    public func param(_ index: Int) -> String? {
        index < params.count ? params[index] : nil
    }
}

/// Limits from the modern IRC client protocol and the message-tags specification.
public enum IRCLimits {
    /// The part of a line after the tags, including CR LF.
    public static let lineBytes = 512
    /// The tags section, including the leading `@` and the trailing space.
    public static let tagBytes = 8191
    /// The most a framer must hold for one line (both parts plus the line ending).
    public static let frameBytes = lineBytes + tagBytes
}
