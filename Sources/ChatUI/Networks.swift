import ChatClientKit

/// One network's part of the screen (one `ChatClient`): its conversations as its client's
/// events left them, its connection, and where the user was in it. `ChatModel`'s per-network
/// properties (`state`, `status`, `selection`, …) are those of the network it is working on.
public struct NetworkView: Sendable {
    /// What the sidebar and the commands call it (`/network NAME`).
    public var name: String
    /// `host:port`, as the local log and search hits key it.
    public var key: String
    public var state: ConversationBook
    public var status: ConnectionStatus = .connecting(host: "", port: 0, attempt: 1)
    public var lag: Double?
    /// When a reconnect is due, for the countdown.
    public var reconnectAt: Double?
    public var everRegistered = false
    public var notedStatusReason: String?
    /// Its row last picked (kept while another network is in view).
    public var selection: SidebarItem = .conversation(.server)
    public var currentRoom: String?
    /// Rows scrolled up from the bottom, per conversation; a conversation scrolled up keeps
    /// the lines fetched before its oldest while they are read (`Conversation.readingBack`).
    public var scroll: [ConversationID: Int] = [:] {
        didSet {
            for (id, rows) in scroll where rows > 0 && (oldValue[id] ?? 0) == 0 { state.setReadingBack(id, true) }
            for (id, rows) in oldValue where rows > 0 && (scroll[id] ?? 0) == 0 { state.setReadingBack(id, false) }
        }
    }
    public var olderAsked: [ConversationID: String] = [:]
    public var pendingShow: ConversationID?
    public var awaitingRoomList = false

    public init(name: String, key: String, state: ConversationBook) {
        self.name = name
        self.key = key
        self.state = state
    }

    /// Not connected: its rows are greyed and its heading says so.
    public var isDown: Bool {
        if case .registered = status { return false }
        return true
    }

    /// The heading's word for a network that is not connected.
    public var marker: String {
        switch status {
        case .registered: return ""
        case .connecting, .connected: return everRegistered ? "down" : "connecting"
        case .reconnecting: return "down"
        case .disconnected, .stopped: return "off"
        }
    }

    /// The unread lines of its rooms and direct conversations, and whether one of them names
    /// you or is a direct message (the heading's badge).
    public var unread: (count: Int, urgent: Bool) {
        var count = 0, urgent = false
        for conversation in state.orderedConversations where conversation.kind != .server && conversation.unread > 0 {
            count += conversation.unread
            if conversation.kind == .direct || conversation.mentioned { urgent = true }
        }
        return (count, urgent)
    }

    /// What the terminal title counts: lines for you (direct, or naming you).
    public var titleUnread: Int {
        state.orderedConversations.reduce(0) { $0 + (($1.kind == .direct || $1.mentioned) ? $1.unread : 0) }
    }

    /// One line for `/network` and the line mode's list: name, address, state.
    public static func describe(name: String, key: String, status: ConnectionStatus, shown: Bool) -> String {
        let state: String
        switch status {
        case .registered(let nick): state = "connected as \(nick)"
        case .connecting: state = "connecting"
        case .connected: state = "registering"
        case .reconnecting(_, let reason): state = "down: \(reason)"
        case .disconnected(let reason), .stopped(let reason): state = "off: \(reason)"
        }
        return (name == key ? name : "\(name) (\(key))") + ": \(state)" + (shown ? " (shown)" : "")
    }

    /// The network a word names: its name, or its `host:port` (case does not matter).
    public static func index(named word: String, names: [String], keys: [String]) -> Int? {
        let wanted = word.lowercased()
        return names.firstIndex { $0.lowercased() == wanted } ?? keys.firstIndex { $0.lowercased() == wanted }
    }
}

/// A sidebar row and the network it belongs to.
public struct SidebarRow: Hashable, Sendable {
    public var network: Int
    public var item: SidebarItem
    public init(network: Int, item: SidebarItem) {
        self.network = network
        self.item = item
    }
}

extension UICommand {
    /// The network this command is for: its own `.on`, else the one given (the event's).
    public func routed(defaultNetwork: Int) -> (network: Int, command: UICommand) {
        if case .on(let network, let command) = self { return (network, command) }
        return (defaultNetwork, self)
    }
}

extension ChatModel {
    public var hasSeveralNetworks: Bool { networks.count > 1 }

    /// A network the shell connected (`--host` again, a `[network]` section, `/connect`).
    @discardableResult
    public mutating func addNetwork(name: String, key: String, state: ConversationBook) -> Int {
        networks.append(NetworkView(name: name, key: key, state: state))
        return networks.count - 1
    }

    /// Shows network `index`, on the row last picked in it.
    public mutating func selectNetwork(_ index: Int) {
        guard networks.indices.contains(index), index != selectedNetwork else { return }
        selectedNetwork = index
        focus = index
        selectedAt = now
    }

    /// Runs `body` on network `index`'s properties (an event from a network not in view).
    mutating func inNetwork<T>(_ index: Int, _ body: (inout ChatModel) -> T) -> T {
        let saved = focus
        focus = index
        defer { focus = saved }
        return body(&self)
    }

    /// Every network's rows: with one, its rows as they always were; with several, each under
    /// a heading with its name.
    public var sidebarRows: [SidebarRow] {
        guard hasSeveralNetworks else { return sidebar.map { SidebarRow(network: focus, item: $0) } }
        var rows: [SidebarRow] = []
        for (index, network) in networks.enumerated() {
            rows.append(SidebarRow(network: index, item: .networkHeading))
            rows += Self.sidebarItems(network.state, order: windowOrder, network: network.key, members: settings["sidebar-members"],
                                      currentRoom: network.currentRoom).map { SidebarRow(network: index, item: $0) }
        }
        return rows
    }

    /// Rows the arrows stop at: not your own (you cannot pick yourself), not headings.
    func isSelectable(_ row: SidebarRow) -> Bool {
        switch row.item {
        case .user(let nick, _): return !networks[row.network].state.isMe(nick)
        case .heading, .networkHeading: return false
        case .conversation: return true
        }
    }

    /// `/network`, `/connect NAME`, `/disconnect NAME` and, with several networks, `/search`:
    /// what they mean for the networks (nil: not one of them).
    mutating func networkCommand(_ command: UICommand) -> [UICommand]? {
        let names = networks.map(\.name), keys = networks.map(\.key)
        switch command {
        case .network(nil):
            return networks.indices.map { index in
                .note(NetworkView.describe(name: networks[index].name, key: networks[index].key, status: networks[index].status,
                                           shown: index == selectedNetwork), conversation: viewedID, isError: false)
            }
        case .network(let word?):
            guard let index = NetworkView.index(named: word, names: names, keys: keys) else {
                return [.note("No network \(word): /network lists them", conversation: viewedID, isError: true)]
            }
            selectNetwork(index)
            reconcileSelection()
            return []
        case .connect(let word):
            // A network we have: connect it again; anything else is a new one for the shell.
            guard let index = NetworkView.index(named: word, names: names, keys: keys) else {
                return [.note("Connecting to \(word): a new network in the sidebar", conversation: viewedID, isError: false), command]
            }
            return [.note("Connecting to \(names[index]) again", conversation: viewedID, isError: false), .on(network: index, .reconnect)]
        case .disconnectNetwork(let word):
            guard let index = NetworkView.index(named: word, names: names, keys: keys) else {
                return [.note("No network \(word): /network lists them", conversation: viewedID, isError: true)]
            }
            return [.note("Disconnecting from \(names[index]) (/connect \(names[index]) to come back)", conversation: viewedID, isError: false),
                    .on(network: index, .disconnect)]
        case .search(let words, let alsoSender) where hasSeveralNetworks:
            // Every network's client is asked; the picker opens when all have answered.
            searchWaiting = (words.joined(separator: " "), Set(networks.indices), [])
            return networks.indices.map { .on(network: $0, .search(words, alsoSender: alsoSender)) }
        default:
            return nil
        }
    }

    /// One network's answer to a search asked of several; the picker opens with the last.
    mutating func gatherSearch(query: String, hits: [SearchHit]) -> [UICommand] {
        guard var waiting = searchWaiting, waiting.query == query, waiting.pending.contains(focus) else { return [] }
        waiting.pending.remove(focus)
        waiting.hits += hits.map { (focus, $0) }
        guard waiting.pending.isEmpty else {
            searchWaiting = waiting
            return []
        }
        searchWaiting = nil
        // The networks share one log, so each answers with the same lines: each is kept once,
        // under the network it was said on.
        var seen = Set<String>()
        var merged: [(network: Int, hit: SearchHit)] = []
        for (asked, hit) in waiting.hits {
            let said = "\(hit.network ?? "")\u{1}\(hit.conversation.key)\u{1}\(hit.line.time)\u{1}\(hit.line.sender ?? "")\u{1}\(hit.line.text)"
            guard seen.insert(said).inserted else { continue }
            merged.append((networks.firstIndex { $0.key == hit.network } ?? asked, hit))
        }
        merged.sort { $0.hit.line.time > $1.hit.line.time }
        guard !merged.isEmpty else {
            let here = inNetwork(selectedNetwork) { $0.viewedID }
            return [.on(network: selectedNetwork, .note("Nothing in your log has \(query)", conversation: here, isError: false))]
        }
        searchPicker = (query, merged.map(\.hit), 0)
        searchHitNetworks = merged.map(\.network)
        return []
    }
}
