import IRCWire

/// The accounts people were seen logged in to, as the server said (account-tag on their
/// messages, extended-join, account-notify's ACCOUNT, WHOX): what binds a held direct message
/// to a person rather than to a nickname (`HeldDirect`). Owner: `ClientState`; bound: `limit`
/// nicknames (past it the map starts again: someone not seen since is unknown, and lines held
/// for them ask the user before going: safe); end: with the client.
public struct AccountsSeen: Sendable {
    /// By folded nickname: the account, or "" when seen logged in to none.
    private var byNick: [String: String] = [:]
    static let limit = 4096

    /// The account `key` was last seen logged in to; nil when seen with none, or never seen.
    public func account(of key: String) -> String? {
        byNick[key].flatMap { $0.isEmpty ? nil : $0 }
    }

    mutating func saw(_ key: String, account: String?) {
        let value = account ?? ""
        if byNick[key] == value { return }
        if byNick[key] == nil && byNick.count >= Self.limit { byNick.removeAll(keepingCapacity: true) }
        byNick[key] = value
    }

    mutating func renamed(_ old: String, to new: String) {
        guard old != new else { return }
        if let account = byNick.removeValue(forKey: old) { byNick[new] = account } else { byNick[new] = nil }
    }

    /// Account names compare without case, as servers fold them.
    static func same(_ a: String, _ b: String) -> Bool { a.lowercased() == b.lowercased() }
}

extension ClientState {
    /// What a message says of its sender's account. Only where the server tells (account-tag
    /// negotiated): a message without the tag then means no account.
    mutating func noteAccount(_ message: IRCMessage, _ context: MessageContext) {
        guard let source = context.source, source.user != nil, !context.from.isEmpty else { return }
        let key = key(for: context.from)
        switch message.command {
        case "ACCOUNT":
            accountsSeen.saw(key, account: message.params.first.flatMap { $0 == "*" ? nil : $0 })
        case "JOIN" where message.params.count >= 3:
            accountsSeen.saw(key, account: message.params[1] == "*" ? nil : message.params[1])
        case "NICK":
            if let new = message.params.first { accountsSeen.renamed(key, to: self.key(for: new)) }
        case "PRIVMSG", "NOTICE", "TAGMSG", "JOIN", "AWAY":
            if capabilities.contains("account-tag") { accountsSeen.saw(key, account: message.tag("account")) }
        default:
            break
        }
    }

    /// `/send-held NICK`: the user decides the lines held for NICK go to whoever has it now.
    public mutating func userSentHeld(for nick: String, now: Double) -> Reduction {
        produced = []
        actions = []
        let key = key(for: nick)
        guard held.waiting[key] != nil else {
            say(ChatLine(time: now, kind: .info, text: "Nothing is held for \(nick)"), to: replyConversation.flatMap { book[$0] != nil ? $0 : nil } ?? .server)
            return reduction()
        }
        guard isRegistered else {
            say(ChatLine(time: now, kind: .info, text: "Not connected: what is held for \(nick) stays held"), to: id(for: nick), name: nick)
            return reduction()
        }
        sendHeldNow(key, now: now)
        return reduction()
    }
}
