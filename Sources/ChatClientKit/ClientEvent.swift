import IRCWire

/// Where the connection stands, as a status line shows it.
public enum ConnectionStatus: Sendable, Equatable {
    case connecting(host: String, port: Int, attempt: Int)
    /// The socket is open; registration is under way.
    case connected
    case registered(nick: String)
    case disconnected(reason: String)
    case reconnecting(inSeconds: Double, reason: String)
    /// Final: the user quit or disconnected, or the server refused us for good.
    case stopped(reason: String)
}

/// What a `ChatClient` tells its front end, in order. Each event carries the value that
/// changed, so a front end keeps its own view current by applying them to a
/// `ConversationBook` (as the client does to its own) and never asks for the whole state.
public enum ClientEvent: Sendable, Equatable {
    case status(ConnectionStatus)
    /// Our nickname was taken during registration; we try `trying` next.
    case nickInUse(String, trying: String)
    /// Our own nickname changed.
    case nickChanged(old: String, new: String)
    /// Someone else's nickname changed: their member rows and their direct conversation follow
    /// them to the new name (the lines saying so come as `.line` events after this one).
    case renamed(old: String, new: String)
    /// The server's ISUPPORT as it stands after a 005.
    case serverSupport(ISupport)
    /// We are marked away (306) or back (305).
    case away(Bool)
    /// A LIST finished: its rooms (at most 10,000).
    case roomList([ListedRoom])
    /// The answer to a search of the client's log (`/search`), newest first.
    /// `failure`: the search could not be made (no log kept, or reading it failed), in words.
    case searchResults(query: String, [SearchHit], failure: String? = nil)
    /// The server's answer to our SEARCH (soju.im/search): taken by the client, which merges it
    /// with its log's before the screen hears of either.
    case serverSearchResults(query: String, [SearchHit])
    /// A conversation appeared (a direct conversation, one the user opened).
    case opened(ConversationID, name: String)
    case closed(ConversationID)
    /// We are in a room: newly (`again` false: a front end goes there) or rejoined after a drop.
    case joined(ConversationID, name: String, again: Bool)
    /// We left a room (PART, KICK).
    case left(ConversationID)
    /// The connection dropped: rooms we were in wait to be rejoined, their members kept.
    case connectionLost
    /// A line for a conversation, inserted at its place by time (once per msgid).
    case line(ConversationID, ChatLine)
    /// A held line (`isPending`) was sent or given up: it goes (the sent copy follows as a line).
    case pendingDone(ConversationID, serial: UInt64)
    /// A room's whole member list (NAMES).
    case members(ConversationID, [Member])
    case memberJoined(ConversationID, Member)
    case memberLeft(ConversationID, nick: String)
    /// A member's prefixes or away state changed.
    case memberChanged(ConversationID, Member)
    case topic(ConversationID, String)
    /// A room's non-list modes, replaced whole.
    case modes(ConversationID, [Character: String])
    case markedRead(ConversationID)
    /// At start: what was unread when the client last ran (lines restored from the log after
    /// the position read then, `ReadPositions`): counted again, without a notification.
    case unreadRestored(ConversationID, count: Int, mentioned: Bool)
    /// Where the account had read up to (draft/read-marker): the screen draws a line there.
    case readMarker(ConversationID, Double)
    case cleared(ConversationID)
    /// A file transfer changed state or made progress.
    case transfer(TransferInfo)
    case error(String)
    /// Round-trip time of the last heartbeat, in seconds.
    case lag(Double)
    /// The server's TLS certificate is not trusted by the system and not known: the client
    /// stopped; `trustCertificate` remembers it and connects again.
    case unknownCertificate(server: String, fingerprint: String, problem: String)
    /// A message typed while offline could not be sent.
    case notSent(target: String, text: String, reason: String)
    /// Someone reacted to a message (`+draft/react`), or took the reaction back (`+draft/unreact`).
    case reaction(ConversationID, msgid: String, emoji: String, nick: String, added: Bool)
    /// A message was deleted (REDACT) by `by`.
    case redacted(ConversationID, msgid: String, by: String)
    /// Someone is typing (`active`), stopped for a moment (`paused`) or stopped (`done`: nil).
    case typing(ConversationID, nick: String, Typing?)
    /// A room was renamed (RENAME): the conversation moves, lines, members and unread state kept.
    case roomRenamed(ConversationID, to: ConversationID, name: String)
    /// A key of someone's metadata (draft/metadata-2: display-name, avatar, pronouns…), or its removal.
    case profile(nick: String, key: String, value: String?)
}

/// One line the log's search found.
public struct SearchHit: Sendable, Equatable {
    public let conversation: ConversationID
    public let name: String
    public let line: ChatLine
    /// The network (`host:port`) it was said on.
    public let network: String?

    public init(conversation: ConversationID, name: String, line: ChatLine, network: String? = nil) {
        self.conversation = conversation
        self.name = name
        self.line = line
        self.network = network
    }
}
