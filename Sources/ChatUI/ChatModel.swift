import ChatClientKit
import IRCWire

/// One row of the sidebar.
public enum SidebarItem: Equatable, Sendable {
    /// A room, a direct conversation or the server window.
    case conversation(ConversationID)
    /// A member, listed under a room (the same person may be under several); choosing them
    /// makes them the recipient of a direct message.
    case user(String, room: ConversationID)
    /// A label over a group of rows (the direct conversations); the arrows pass over it.
    case heading(String)
}

/// Something the model asks its shell to do.
public enum UICommand: Equatable, Sendable {
    case send(text: String, to: String)
    case action(text: String, to: String)
    case irc(IRCMessage)
    /// A line for the user in a conversation (errors from the screen itself).
    case note(String, conversation: ConversationID, isError: Bool)
    case markRead(ConversationID)
    case clear(ConversationID)
    /// Open a direct conversation with this person.
    case open(String)
    case close(ConversationID)
    /// Go to a conversation (the screen moves its selection; the line mode writes there next).
    case show(ConversationID)
    /// A LIST is asked for: the screen opens its picker when the rooms arrive.
    case awaitRoomList
    /// The user trusts this server certificate (remember it, connect again).
    case trustCertificate(String)
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
    /// `/search WORDS`: the log is searched; the hits open a picker.
    case search([String])
    /// Enter on a hit: its conversation gets the lines around it from the log.
    case showAround(SearchHit)
    /// Scrolled past a room's oldest line: ask the server's history for the lines before it.
    case fetchOlder(room: String, before: String)
    /// Tab after `/send NICK`: list the directory `word` (a path being typed) is in; the shell
    /// answers with `UIEvent.filesListed`, so `update` never reads the disk.
    case listFiles(word: String)
}

/// A name in a directory listed for path completion.
public struct FileEntry: Equatable, Sendable {
    public var name: String
    public var isDirectory: Bool
    public init(name: String, isDirectory: Bool) {
        self.name = name
        self.isDirectory = isDirectory
    }
}

public enum UIEvent: Equatable, Sendable {
    case key(Key)
    case client(ClientEvent)
    case resize(width: Int, height: Int)
    /// A second passed (for "reconnecting in N s").
    case tick(now: Double)
    /// The shell's answer to `UICommand.listFiles`: the entries of the directory `word` is in
    /// whose names start like its last part.
    case filesListed(word: String, entries: [FileEntry])
}

/// Everything the chat screen shows and remembers, as a value.
public struct ChatModel: Sendable {
    /// The screen's own view of the conversations, kept current by applying the client's
    /// events (`update(.client(event))`), never by fetching the client's state.
    public var state: ConversationBook
    public var status: ConnectionStatus = .connecting(host: "", port: 0, attempt: 1)
    public var lag: Double?
    public var now: Double = 0
    /// When a reconnect is due, for the countdown.
    public var reconnectAt: Double?
    public var everRegistered = false
    /// The reason last written in the server window for not being connected (noted once each).
    public var notedStatusReason: String?
    public var selection: SidebarItem = .conversation(.server) { didSet { if selection != oldValue { selectedAt = now } } }
    /// When the selection last moved: a conversation is marked read once the selection has
    /// rested on it for a second (or you write to it), not while the arrows walk past it.
    public var selectedAt: Double = 0
    /// The room last viewed: where room commands (/topic, /kick) go from a person's row.
    public var currentRoom: String?
    public var editor = LineEditor()
    /// Rows scrolled up from the bottom, per conversation.
    public var scroll: [ConversationID: Int] = [:]
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
    /// The hint in the order the pane shows it: the TLS part (its fingerprints wrap over many
    /// rows) first, the plain-port lines (`chat-tui --host …`, irssi's `/connect …`) last, so on a
    /// small screen (60×15) it is the fingerprints that scroll away, not how to join.
    public var hostHintInPane: [String] {
        guard let tls = hostHint.firstIndex(where: { !$0.hasPrefix(" ") && $0.contains("TLS") }), tls > 0 else { return hostHint }
        return Array(hostHint[tls...] + hostHint[..<tls])
    }
    public var isAway: Bool { state.isAway }
    /// The hint is repeated in the first room the host lands in, where they will look.
    public var hostHintShownInRoom = false
    /// `/list` asked for rooms; the picker opens when they arrive.
    public var awaitingRoomList = false
    /// A conversation a command asked to show before it exists (/query): shown once opened.
    public var pendingShow: ConversationID?
    /// The /list picker is open, with this row selected (Up/Down, Enter joins, Esc closes).
    public var roomPicker: Int?
    /// The /search picker: its query, its hits (newest first) and the row selected.
    public var searchPicker: (query: String, hits: [SearchHit], selected: Int)?
    /// A search hit being opened: its conversation and line; the view scrolls to it as the lines
    /// around it arrive, until the next key.
    public var revealing: (id: ConversationID, time: Double, text: String)?
    /// The msgid older lines were last asked for, per conversation (asked once per oldest line).
    public var olderAsked: [ConversationID: String] = [:]
    /// A TLS certificate nobody vouches for, waiting for the user's y or n (trust on first use).
    public var pendingTrust: (server: String, fingerprint: String)?
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
    /// File transfers as the client's events left them, for their progress lines.
    public var transfers: [Int: TransferInfo] { state.transfers }

    public init(state: ConversationBook, width: Int, height: Int) {
        self.state = state
        self.width = width
        self.height = height
    }

    // MARK: Derived

    /// The name Enter sends to: the selected room or person ("" for the server window).
    public var target: String {
        switch selection {
        case .conversation(.server), .heading: return ""
        case .conversation(let id): return state[id]?.name ?? id.key
        case .user(let nick, _): return nick
        }
    }

    /// The pane shows the selected conversation; for a person you have no conversation with
    /// yet, the room they are listed under (the conversation is made when you write).
    public var viewedConversation: Conversation? { state[viewedID] }

    public var viewedID: ConversationID {
        switch selection {
        case .conversation(let id): return id
        case .user(let nick, let room): return state[.direct(state.key(for: nick))] != nil ? .direct(state.key(for: nick)) : room
        case .heading: return .server
        }
    }

    /// Whether Enter would start a direct conversation that does not exist yet.
    public var sendsToNewConversation: Bool {
        if case .user(let nick, _) = selection { return state[.direct(state.key(for: nick))] == nil }
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
            items.append(.conversation(room.id))
            for member in room.sortedMembers(rankOf: ranks) {
                items.append(.user(member.nick, room: room.id))
                listed.insert(state.key(for: member.nick))
            }
        }
        // Direct conversations with people in none of our rooms, under a heading so they do
        // not read as members of the last room.
        let directs = state.orderedConversations.filter { $0.kind == .direct && !listed.contains($0.id.key) }
        if !directs.isEmpty { items.append(.heading("direct")) }
        for conversation in directs { items.append(.conversation(conversation.id)) }
        items.append(.conversation(.server))
        return items
    }

    /// Rows the arrows stop at: not your own (you cannot pick yourself).
    func isSelectable(_ item: SidebarItem) -> Bool {
        switch item {
        case .user(let nick, _): return !state.isMe(nick)
        case .heading: return false
        case .conversation: return true
        }
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
        func row(of key: String) -> SidebarItem? {
            items.first { if case .user(let n, _) = $0 { return state.key(for: n) == key } else { return false } }
        }
        if case .conversation(.direct(let key)) = selection, state[.direct(key)] != nil, let row = row(of: key) {
            // A direct conversation with someone in one of our rooms is reached through their row.
            selection = row
            return
        }
        if case .user(let nick, _) = selection {
            let key = state.key(for: nick)
            // Still in another room of ours: follow them there.
            if let other = row(of: key) {
                selection = other
                return
            }
            // They left: keep talking to them in the direct conversation if there is one.
            if state[.direct(key)] != nil { selection = .conversation(.direct(key)); return }
        }
        selection = .conversation(currentRoom.map { state.id(for: $0) } ?? .server)
    }
}
