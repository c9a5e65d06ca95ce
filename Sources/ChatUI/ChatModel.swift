import ChatClientKit
import IRCWire

/// One row of the sidebar.
public enum SidebarItem: Hashable, Sendable {
    /// A room, a direct conversation or the server window.
    case conversation(ConversationID)
    /// A member, listed under a room (the same person may be under several); choosing them
    /// makes them the recipient of a direct message.
    case user(String, room: ConversationID)
    /// A label over a group of rows (the direct conversations); the arrows pass over it.
    case heading(String)
    /// With several networks, the row over each network's rows: its name, its state, its
    /// unread count (the row's network says which); the arrows pass over it.
    case networkHeading
}

/// Something the model asks its shell to do.
public enum UICommand: Equatable, Sendable {
    case send(text: String, to: String)
    /// Text for the terminal's clipboard (OSC 52), where the terminal allows it.
    case copy(String)
    /// `+typing` to a conversation: `active`, `paused` or `done` (the client sends it only where
    /// the server takes message tags).
    case typing(String, to: String)
    /// The text-logs setting changed: every network's client starts or stops writing them.
    case textLogs(Bool)
    /// Mouse reporting on or off (the mouse setting, at start and when it changes).
    case mouseReporting(Bool)
    /// A desktop notification (a direct message or a highlight out of sight): the shell writes
    /// the terminal's sequence or runs the notify command, as the notify setting says.
    case notify(title: String, body: String)
    /// A message answering another (`/reply N TEXT`, `r` on a highlighted message).
    case reply(text: String, to: String, parent: String)
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
    /// Through the host's web port (soju.im/FILEHOST); an empty path: the last DCC offer nobody could take.
    case uploadFile(path: String, to: String)
    case downloadShared(Int)
    case acceptTransfer(Int?)
    case rejectTransfer(Int?)
    case cancelTransfer(Int)
    case listTransfers
    /// `/ignore MASK` (nil: list), `/unignore MASK`.
    case ignore(String?)
    case unignore(String)
    /// `/search WORDS`: the log is searched; the hits open a picker.
    /// `alsoSender`: lines said by the one word's nickname count too (/lastlog bob, as irssi's).
    case search([String], alsoSender: Bool = false)
    /// `/lastlog WORDS`: the log is searched, and the picker shows the hits in the conversation in view.
    case lastlog([String])
    /// Enter on a hit: its conversation gets the lines around it from the log.
    case showAround(SearchHit)
    /// Scrolled past a room's oldest line: ask the server's history for the lines before it.
    case fetchOlder(room: String, before: String)
    /// `/connect HOST[:PORT]`: a network for the shell to add (a network's own name is turned
    /// into `.on(network:, .reconnect)` by the model).
    case connect(String)
    /// `/disconnect NETWORK`: the model turns it into `.on(network:, .disconnect)`.
    case disconnectNetwork(String)
    /// `/network NAME` switches to it; `/network` lists the networks.
    case network(String?)
    /// A command for one network's client. Commands without it go to the network whose event
    /// made them, or for keys the one shown.
    indirect case on(network: Int, UICommand)
    /// The conversation on screen changed: the client puts news for the user (an invitation) there.
    case looking(ConversationID)
    /// `/cancel NICK`: give up on the direct messages held for this person.
    case cancelHeld(String)
    /// `/send-held NICK`: send what is held for this person to whoever has the nickname now.
    case sendHeld(String)
    /// `/set` (no name: list; no value: show one; `reset`: back to the default).
    case setting(name: String?, value: String?, reset: Bool)
    /// `/save`: the shell writes `settings` and `aliases` to the config file.
    case saveSettings
    /// `/reload`: the shell reads the config file and answers with `UIEvent.settingsLoaded`.
    case reloadSettings
    /// `/alias` (no name: list; no expansion: show one), `/unalias`.
    case alias(name: String?, expansion: String?)
    case unalias(String)
    /// The highlight settings changed: the client marks lines by these from now on.
    case highlights(Highlights)
    /// `/highlights`: the picker of lines that highlighted you, in every room and network.
    case showHighlights
    /// `/window`, `/buffer`: the words after it (the screen goes to a conversation).
    case window([String])
    /// `/scroll end|top`.
    case scroll(toEnd: Bool)
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
    /// An event of the first (or only) network's client.
    case client(ClientEvent)
    /// An event of network `index`'s client (`ChatModel.networks`).
    case fromNetwork(Int, ClientEvent)
    case resize(width: Int, height: Int)
    /// A second passed (for "reconnecting in N s").
    case tick(now: Double)
    /// The shell's answer to `UICommand.listFiles`: the entries of the directory `word` is in
    /// whose names start like its last part.
    case filesListed(word: String, entries: [FileEntry])
    /// The config file read again (`/reload`), or why it could not be.
    case settingsLoaded(Result<ConfigValues, SettingProblem>)
}

/// What the config file says of the screen's settings and aliases.
public struct ConfigValues: Equatable, Sendable {
    public var settings: Settings
    public var aliases: Aliases
    public init(settings: Settings, aliases: Aliases) {
        self.settings = settings
        self.aliases = aliases
    }
}

/// Everything the chat screen shows and remembers, as a value.
public struct ChatModel: Sendable {
    /// Each network's part of the screen (one `ChatClient` each); one network shows exactly as
    /// the client always did, several are grouped in the sidebar under their names.
    public var networks: [NetworkView]
    /// The network the screen shows: the selection is in it, Enter and commands go to it.
    public internal(set) var selectedNetwork = 0
    /// The network `update` is applying an event of (a client's event may come from a network
    /// not in view); the selected one otherwise. The per-network properties below are its.
    var focus = 0

    /// The screen's own view of the conversations, kept current by applying the client's
    /// events (`update(.client(event))`), never by fetching the client's state.
    public var state: ConversationBook {
        get { networks[focus].state }
        set { networks[focus].state = newValue }
        _modify { yield &networks[focus].state }
    }
    public var status: ConnectionStatus {
        get { networks[focus].status }
        set { networks[focus].status = newValue }
    }
    public var lag: Double? {
        get { networks[focus].lag }
        set { networks[focus].lag = newValue }
    }
    public var now: Double = 0
    /// When a reconnect is due, for the countdown.
    public var reconnectAt: Double? {
        get { networks[focus].reconnectAt }
        set { networks[focus].reconnectAt = newValue }
    }
    public var everRegistered: Bool {
        get { networks[focus].everRegistered }
        set { networks[focus].everRegistered = newValue }
    }
    /// The reason last written in the server window for not being connected (noted once each).
    public var notedStatusReason: String? {
        get { networks[focus].notedStatusReason }
        set { networks[focus].notedStatusReason = newValue }
    }
    public var selection: SidebarItem {
        get { networks[focus].selection }
        set {
            let old = networks[focus].selection
            networks[focus].selection = newValue
            if newValue != old && focus == selectedNetwork { selectedAt = now }
        }
    }
    /// When the selection last moved: a conversation is marked read once the selection has
    /// rested on it for a second (or you write to it), not while the arrows walk past it.
    public var selectedAt: Double = 0
    /// The room last viewed: where room commands (/topic, /kick) go from a person's row.
    public var currentRoom: String? {
        get { networks[focus].currentRoom }
        set { networks[focus].currentRoom = newValue }
    }
    public var editor = LineEditor()
    /// Rows scrolled up from the bottom, per conversation.
    public var scroll: [ConversationID: Int] {
        get { networks[focus].scroll }
        set { networks[focus].scroll = newValue }
        _modify { yield &networks[focus].scroll }
    }
    public var width: Int
    public var height: Int
    /// Seconds east of UTC for timestamps.
    public var utcOffset = 0
    /// Rows per line at a width, so that scrolling far back costs what it costs at the bottom.
    public let rowCache = RowCache()
    /// The settings (`Setting.all`): the flags and the config file's, then `/set`'s.
    public var settings = Settings()
    /// `/alias`: the user's own commands.
    public var aliases = Aliases()
    public var showSeconds: Bool {
        get { settings["timestamps"] == "HH:MM:SS" }
        set { settings.set("timestamps", newValue ? "HH:MM:SS" : "HH:MM") }
    }
    public var bellEnabled: Bool {
        get { settings.isOn("bell") }
        set { settings.set("bell", newValue ? "on" : "off") }
    }
    /// Lines of a paste waiting for a yes or no.
    public var pendingPaste: [String]?
    /// Pastes of more lines than this ask first.
    public var pasteConfirmThreshold: Int {
        get { settings.number("paste-lines") }
        set { settings.set("paste-lines", String(newValue)) }
    }
    /// Where each part of the screen goes now.
    public var layout: Layout { Layout(width: width, height: height, sidebar: settings.number("sidebar-width")) }
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
    /// Rooms the user asked to join (`/join`, the room picker), lowercased: joining one of them
    /// takes the view there; a room joined at start or by another device does not (unless the
    /// view is on the server window). Owner: the model; bound: 64 (older asks forgotten at once
    /// past it); end: the join, or the bound.
    var joinsAsked = Set<String>()
    /// `/list` asked for rooms; the picker opens when they arrive.
    public var awaitingRoomList: Bool {
        get { networks[focus].awaitingRoomList }
        set { networks[focus].awaitingRoomList = newValue }
    }
    /// A conversation a command asked to show before it exists (/query): shown once opened.
    public var pendingShow: ConversationID? {
        get { networks[focus].pendingShow }
        set { networks[focus].pendingShow = newValue }
    }
    /// The /list picker is open, with this row selected (Up/Down, Enter joins, Esc closes).
    public var roomPicker: Int?
    /// The /search picker: its query, its hits (newest first) and the row selected.
    public var searchPicker: (query: String, hits: [SearchHit], selected: Int)?
    /// With several networks: the network of each of the picker's hits, and a search still
    /// waiting for some networks' answers (their hits gathered so far).
    public var searchHitNetworks: [Int] = []
    public var searchWaiting: (query: String, pending: Set<Int>, hits: [(network: Int, hit: SearchHit)])?
    /// `/lastlog`: the search asked for is for this conversation only.
    public var lastlogIn: (id: ConversationID, name: String)?
    /// A search hit being opened: its conversation and line; the view scrolls to it as the lines
    /// around it arrive, until the next key.
    public var revealing: (id: ConversationID, time: Double, text: String)?
    /// The msgid older lines were last asked for, per conversation (asked once per oldest line).
    public var olderAsked: [ConversationID: String] {
        get { networks[focus].olderAsked }
        set { networks[focus].olderAsked = newValue }
        _modify { yield &networks[focus].olderAsked }
    }
    /// A TLS certificate nobody vouches for, waiting for the user's y or n (trust on first use),
    /// and the network whose client asked.
    public var pendingTrust: (server: String, fingerprint: String)?
    public var trustNetwork = 0
    /// Ctrl-C pressed on an empty line, or `/quit` typed by the host while others are in the
    /// room: waiting for y or n (the host is asked whether to close the room for them).
    public var confirmingQuit = false
    /// The reason the host's `/quit` gave, said if the answer is y.
    var quitReason: String?
    /// `d` on a highlighted message: waiting for y or n before it is deleted (its msgid, where,
    /// and how the question names it).
    public var confirmingDelete: (msgid: String, target: String, what: String)?
    /// The typing notice last sent: to whom, which, when; and when the input last changed.
    var typingSent: (target: String, state: String, at: Double)?
    var lastEditAt: Double = 0
    /// The sidebar scrolled by the wheel: its first row, while the selection is still this one.
    public var sidebarOffset: (top: Int, selection: SidebarRow)?
    /// Whether the terminal has the focus (focus reporting; assumed until it says otherwise).
    public var terminalFocused = true
    /// Where the first Alt-a of a run was pressed: with no news left, Alt-a goes back there.
    public var beforeActivityJump: SidebarRow?
    /// The order conversations are numbered in, kept across restarts (`WindowOrder`).
    public var windowOrder = WindowOrder()
    /// Conversations `/close`d whose client has not closed them yet (not numbered again meanwhile).
    var closingEntries: Set<String> = []
    /// The message cursor (Alt-Up): the msgid of the highlighted message in the conversation in view.
    public var messageCursor: String?
    /// Choosing an emoji for the highlighted message (`e` or `+`): digits pick one of the common ones.
    public var choosingReaction = false
    /// The message the next line answers (`r` on a highlighted message), and how the input says so.
    public var replyingTo: (msgid: String, nick: String, snippet: String)?
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
        networks = [NetworkView(name: "", key: "", state: state)]
        self.width = width
        self.height = height
    }

    // MARK: Derived

    /// The name Enter sends to: the selected room or person ("" for the server window).
    public var target: String {
        switch selection {
        case .conversation(.server), .heading, .networkHeading: return ""
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
        case .heading, .networkHeading: return .server
        }
    }

    /// Whether Enter would start a direct conversation that does not exist yet.
    public var sendsToNewConversation: Bool {
        if case .user(let nick, _) = selection { return state[.direct(state.key(for: nick))] == nil }
        return false
    }

    /// Sidebar rows in number order (WeeChat's buflist): the server window first, then rooms and
    /// direct conversations by number, each room followed by its members (so everyone in every
    /// room can be reached with the arrows); conversations without a number yet (rooms restored
    /// from the log and not joined) last.
    public var sidebar: [SidebarItem] {
        Self.sidebarItems(state, order: windowOrder, network: networks[focus].key, members: settings["sidebar-members"], currentRoom: currentRoom)
    }

    /// The rows of one network's conversations (`sidebar`): the server window, then the rooms
    /// and direct conversations by number (`WindowOrder`).
    /// `members`: the sidebar-members setting (all rooms' members, only `currentRoom`'s, or none).
    static func sidebarItems(_ state: ConversationBook, order: WindowOrder, network: String, members: String = "all",
                             currentRoom: String? = nil) -> [SidebarItem] {
        var items: [SidebarItem] = []
        let ranks = String(state.isupport.prefixes.map(\.symbol))
        let positions = order.positions
        func byNumber(_ list: [Conversation]) -> [Conversation] {
            // Not numbered yet: rooms we are in before the ones restored from the log.
            func key(_ item: (offset: Int, element: Conversation)) -> (Int, Int, Int) {
                let room = item.element
                let away = room.kind == .room && !room.isJoined && !room.awaitingRejoin ? 1 : 0
                return (positions[WindowOrder.entry(network: network, room.id)] ?? Int.max, away, item.offset)
            }
            return list.enumerated().sorted { key($0) < key($1) }.map(\.element)
        }
        items.append(.conversation(.server))
        // Every direct conversation has a row of its own (and so a number), told from a room's
        // members by its number; the people in our rooms are also reached through their rows there.
        for conversation in byNumber(state.orderedConversations.filter { $0.kind == .room || $0.kind == .direct }) {
            items.append(.conversation(conversation.id))
            guard conversation.kind == .room,
                  members == "all" || (members == "current" && currentRoom.map { state.key(for: $0) } == conversation.id.key) else { continue }
            for member in conversation.sortedMembers(rankOf: ranks) {
                items.append(.user(member.nick, room: conversation.id))
            }
        }
        return items
    }

    /// The terminal title's count: every network's lines for you.
    public var totalUnread: Int { networks.reduce(0) { $0 + $1.titleUnread } }

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
