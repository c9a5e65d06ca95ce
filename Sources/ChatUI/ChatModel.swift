import ChatClientKit
import IRCWire

/// One row of the sidebar.
public enum SidebarItem: Equatable, Sendable {
    /// A room, a direct conversation or the server window, by display name.
    case conversation(String)
    /// A member, listed under a room (the same person may be under several); choosing them
    /// makes them the recipient of a direct message.
    case user(String, room: String)
}

/// Something the model asks its shell to do.
public enum UICommand: Equatable, Sendable {
    case send(text: String, to: String)
    case action(text: String, to: String)
    case irc(IRCMessage)
    /// A line for the user in a conversation (errors from the screen itself).
    case note(String, conversation: String, isError: Bool)
    case markRead(String)
    case clear(String)
    case open(String)
    case close(String)
    case disconnect
    case reconnect
    case quit(reason: String)
    case bell
    case redraw
    case sendFile(path: String, to: String, passive: Bool)
    case acceptTransfer(Int?)
    case rejectTransfer(Int?)
    case cancelTransfer(Int)
    case listTransfers
    /// `/ignore MASK` (nil: list), `/unignore MASK`.
    case ignore(String?)
    case unignore(String)
}

public enum UIEvent: Equatable, Sendable {
    case key(Key)
    case client(ClientEvent)
    case resize(width: Int, height: Int)
    /// A second passed (for "reconnecting in N s").
    case tick(now: Double)
}

/// Everything the chat screen shows and remembers, as a value.
public struct ChatModel: Sendable {
    /// The client's state as last fetched from the `ChatClient`.
    public var state: ClientState
    public var status: ConnectionStatus = .connecting(host: "", port: 0, attempt: 1)
    public var lag: Double?
    public var now: Double = 0
    /// When a reconnect is due, for the countdown.
    public var reconnectAt: Double?
    public var everRegistered = false
    public var selection: SidebarItem = .conversation("server") { didSet { if selection != oldValue { selectedAt = now } } }
    /// When the selection last moved: a conversation is marked read once the selection has
    /// rested on it for a second (or you write to it), not while the arrows walk past it.
    public var selectedAt: Double = 0
    /// The room last viewed: where room commands (/topic, /kick) go from a person's row.
    public var currentRoom: String?
    public var editor = LineEditor()
    /// Rows scrolled up from the bottom, per conversation key.
    public var scroll: [String: Int] = [:]
    public var width: Int
    public var height: Int
    /// Seconds east of UTC for timestamps.
    public var utcOffset = 0
    public var showSeconds = false
    public var bellEnabled = true
    /// Lines of a paste waiting for a yes or no.
    public var pendingPaste: [String]?
    /// Pastes of more lines than this ask first.
    public var pasteConfirmThreshold = 3
    public var lastTitle = ""
    /// On the host's own screen (`--serve`): how others join, shown in the server window and in
    /// /help; and Ctrl-C asks before closing a room others are in.
    public var hostHint: [String] = []
    public var isHost: Bool { !hostHint.isEmpty }
    public var isAway: Bool { state.isAway }
    /// The hint is repeated in the first room the host lands in, where they will look.
    public var hostHintShownInRoom = false
    /// `/list` asked for rooms; the picker opens when they arrive.
    public var awaitingRoomList = false
    /// The /list picker is open, with this row selected (Up/Down, Enter joins, Esc closes).
    public var roomPicker: Int?
    /// Ctrl-C pressed on the host's screen with people in the room: waiting for y or n.
    public var confirmingQuit = false
    /// The people in our rooms besides us.
    public var othersOnline: Int {
        var seen = Set<String>()
        for room in state.rooms where room.isJoined {
            for key in room.members.keys where !state.isMe(room.members[key]!.nick) { seen.insert(key) }
        }
        return seen.count
    }
    /// File transfers as last read from the client, for their progress lines.
    public var transfers: [Int: TransferInfo] = [:]

    public init(state: ClientState, width: Int, height: Int) {
        self.state = state
        self.width = width
        self.height = height
    }

    // MARK: Derived

    /// The conversation Enter sends to and the message pane shows.
    public var target: String {
        switch selection {
        case .conversation(let name): return name
        case .user(let nick, _): return nick
        }
    }

    /// The pane shows the selected conversation; for a person you have no conversation with
    /// yet, the room they are listed under (the conversation is made when you write).
    public var viewedConversation: Conversation? {
        switch selection {
        case .conversation("server"): return state.conversation(ClientState.serverKey)
        case .conversation(let name): return state.conversation(name)
        case .user(let nick, let room): return state.conversation(nick) ?? state.conversation(room)
        }
    }

    public var viewedKey: String {
        switch selection {
        case .conversation("server"): return ClientState.serverKey
        case .conversation(let name): return state.key(for: name)
        case .user(let nick, let room): return state.key(for: state.conversation(nick) != nil ? nick : room)
        }
    }

    /// Whether Enter would start a direct conversation that does not exist yet.
    public var sendsToNewConversation: Bool {
        if case .user(let nick, _) = selection { return state.conversation(nick) == nil }
        return false
    }

    /// Sidebar rows in order: each room followed by its members (so everyone in every room can
    /// be reached with the arrows), then direct conversations with people in no room of ours,
    /// then the server window.
    public var sidebar: [SidebarItem] {
        var items: [SidebarItem] = []
        var listed = Set<String>()
        let ranks = String(state.isupport.prefixes.map(\.symbol))
        for room in state.rooms {
            items.append(.conversation(room.name))
            for member in room.sortedMembers(rankOf: ranks) {
                items.append(.user(member.nick, room: room.name))
                listed.insert(state.key(for: member.nick))
            }
        }
        for conversation in state.orderedConversations where conversation.kind == .direct {
            if !listed.contains(state.key(for: conversation.name)) { items.append(.conversation(conversation.name)) }
        }
        items.append(.conversation("server"))
        return items
    }

    /// Rows the arrows stop at: not your own (you cannot pick yourself).
    func isSelectable(_ item: SidebarItem) -> Bool {
        if case .user(let nick, _) = item { return !state.isMe(nick) }
        return true
    }

    public var totalUnread: Int {
        state.orderedConversations.reduce(0) { $0 + (($1.kind == .direct || $1.mentioned) ? $1.unread : 0) }
    }

    /// Names for Tab completion: the current room's members and open direct conversations.
    public var completionNames: [String] {
        var names = currentRoom.flatMap { state.conversation($0) }.map { $0.members.values.map(\.nick) } ?? []
        names += state.orderedConversations.filter { $0.kind == .direct }.map(\.name)
        names += state.rooms.map(\.name)
        return Array(Set(names)).filter { !state.isMe($0) }
    }

    /// Keeps the selection valid after the state changed (a user left, a room was parted).
    public mutating func reconcileSelection() {
        if currentRoom == nil || state.conversation(currentRoom!)?.kind != .room {
            currentRoom = state.joinedRooms.first ?? state.rooms.first?.name
        }
        let items = sidebar
        if items.contains(selection) { return }
        if case .conversation(let name) = selection, state.conversation(name)?.kind == .direct,
           let row = items.first(where: { if case .user(let n, _) = $0 { return state.key(for: n) == state.key(for: name) } else { return false } }) {
            // A direct conversation with someone in one of our rooms is reached through their row.
            selection = row
            return
        }
        if case .user(let nick, _) = selection {
            // Still in another room of ours: follow them there.
            if let other = items.first(where: { if case .user(let n, _) = $0 { return state.key(for: n) == state.key(for: nick) } else { return false } }) {
                selection = other
                return
            }
            // They left: keep talking to them in the direct conversation if there is one.
            if state.conversation(nick) != nil { selection = .conversation(state.conversation(nick)!.name); return }
        }
        if case .conversation(let name) = selection, name == "server" { return }
        selection = currentRoom.map { .conversation($0) } ?? .conversation("server")
    }
}
