/// Which conversation: the server window, a room or a direct conversation, keyed by the name
/// folded under the server's casemapping. A person called `server` and the server window are
/// different conversations; so are `#Lobby` and `#lobby`'s display names and their one key.
public enum ConversationID: Hashable, Sendable, CustomStringConvertible {
    case server
    case room(String)
    case direct(String)

    public var kind: Conversation.Kind {
        switch self {
        case .server: return .server
        case .room: return .room
        case .direct: return .direct
        }
    }

    /// The folded name (empty for the server window).
    public var key: String {
        switch self {
        case .server: return ""
        case .room(let key), .direct(let key): return key
        }
    }

    public var description: String {
        switch self {
        case .server: return "(server)"
        case .room(let key): return key
        case .direct(let key): return "@" + key
        }
    }
}
