/// The source of a message, `nick!user@host` or a server name.
public struct IRCSource: Hashable, Sendable {
    public var nick: String
    public var user: String?
    public var host: String?

    public init(nick: String, user: String? = nil, host: String? = nil) {
        self.nick = nick
        self.user = user
        self.host = host
    }

    public init(parsing raw: String) {
        var rest = Substring(raw)
        if let at = rest.firstIndex(of: "@") {
            host = String(rest[rest.index(after: at)...])
            rest = rest[..<at]
        }
        if let bang = rest.firstIndex(of: "!") {
            user = String(rest[rest.index(after: bang)...])
            rest = rest[..<bang]
        }
        nick = String(rest)
    }

    public var description: String {
        var text = nick
        if let user { text += "!" + user }
        if let host { text += "@" + host }
        return text
    }
}
