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

/// What a `ChatClient` tells its front end, in order.
public enum ClientEvent: Sendable, Equatable {
    case status(ConnectionStatus)
    /// Our nickname was taken during registration; we try `trying` next.
    case nickInUse(String, trying: String)
    /// Our own nickname changed.
    case nickChanged(old: String, new: String)
    /// Someone else's nickname changed: a view of them follows them to the new name.
    case renamed(old: String, new: String)
    /// A LIST finished: `ClientState.roomList` holds its rooms.
    case roomListReady(count: Int)
    /// A line was added to a conversation (its display name).
    case line(conversation: String, ChatLine)
    case membersChanged(conversation: String)
    case topicChanged(conversation: String, topic: String)
    /// A conversation appeared (a room we joined, a new direct conversation).
    case conversationOpened(String)
    case error(String)
    /// Round-trip time of the last heartbeat, in seconds.
    case lag(Double)
    /// A message typed while offline could not be sent.
    case notSent(target: String, text: String, reason: String)
}
