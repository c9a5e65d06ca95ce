import IRCWire

/// Conversations, their members, topics, unread counts and file transfers, as a value that
/// changes only by applying `ClientEvent`s. The client keeps one as the owner of these facts;
/// a screen keeps its own by applying the same events, with the same scrollback, so the two
/// deduplicate alike (by msgid, among the lines kept) and cannot drift, and the screen never
/// pulls the client's state. (`keepsLines: false` is for a view that prints and forgets,
/// `--lines`: it counts every line it is given.)
public struct ConversationBook: Sendable {
    /// Our nickname as the server knows it.
    public private(set) var nick: String
    public private(set) var isupport = ISupport()
    public private(set) var isAway = false
    public private(set) var conversations: [ConversationID: Conversation] = [:]
    /// In the order they were opened.
    public private(set) var order: [ConversationID] = []
    /// The last LIST's rooms, for the /list picker.
    public private(set) var roomList: [ListedRoom] = []
    public private(set) var transfers: [Int: TransferInfo] = [:]
    /// People's metadata (draft/metadata-2), by folded nickname: `display-name`, `avatar`, `pronouns`…
    public private(set) var profiles: [String: [String: String]] = [:]
    /// Short numbers for messages with a msgid, in the order they arrived (`[12]` in the line
    /// mode; `/reply 12`, `/react 12`, `/delete 12` name a message by it). The newest 10,000.
    public private(set) var references: [Int: (conversation: ConversationID, msgid: String)] = [:]
    public private(set) var referenceOf: [String: Int] = [:]
    private var lastReference = 0
    static let referencesKept = 10_000
    public let scrollbackLimit: Int
    public let keepsLines: Bool
    /// Lines kept as keys only (`Conversation.keepsOnlyKeys`): the client's own book.
    public let keepsOnlyKeys: Bool
    /// Whether messages get their short numbers: a front end's book names messages by them;
    /// the client's own book never does, and keeps no 10,000 of them (1.2 MB in a flood).
    public let numbersMessages: Bool

    public init(nick: String, scrollbackLimit: Int = 4_096, keepsLines: Bool = true, keepsOnlyKeys: Bool = false, numbersMessages: Bool = true) {
        self.nick = nick
        self.scrollbackLimit = scrollbackLimit
        self.keepsLines = keepsLines
        self.keepsOnlyKeys = keepsOnlyKeys
        self.numbersMessages = numbersMessages
        insertConversation(.server, name: "server")
    }

    // MARK: Reading

    public var casemapping: Casemapping { isupport.casemapping }
    public func key(for name: String) -> String { casemapping.fold(name) }
    public func isChannel(_ name: String) -> Bool { IRCNames.isChannel(name, types: isupport.channelTypes) }
    public func isMe(_ nick: String) -> Bool { key(for: nick) == key(for: self.nick) }

    /// The conversation a name (a room or a nickname) would be.
    public func id(for name: String) -> ConversationID {
        isChannel(name) ? .room(key(for: name)) : .direct(key(for: name))
    }

    public subscript(id: ConversationID) -> Conversation? { conversations[id] }

    /// The room or direct conversation with this name, if open.
    public func conversation(_ name: String) -> Conversation? { conversations[id(for: name)] }

    public var orderedConversations: [Conversation] { order.compactMap { conversations[$0] } }
    public var rooms: [Conversation] { orderedConversations.filter { $0.kind == .room } }
    public var joinedRooms: [String] { rooms.filter(\.isJoined).map(\.name) }

    /// Someone's display name (draft/metadata-2), if they set one.
    public func displayName(of nick: String) -> String? { profiles[key(for: nick)]?["display-name"] }

    // MARK: Applying

    public mutating func apply(_ event: ClientEvent) {
        switch event {
        case .status(.registered(let nick)), .nickInUse(_, let nick):
            self.nick = nick
        case .nickChanged(let old, let new):
            nick = new
            rename(old, to: new)
        case .serverSupport(let isupport):
            self.isupport = isupport
        case .away(let away):
            isAway = away
        case .roomList(let rooms):
            roomList = rooms
        case .opened(let id, let name):
            insertConversation(id, name: name)
        case .closed(let id):
            guard id != .server, conversations.removeValue(forKey: id) != nil else { return }
            // Once in the order; past the limit on direct conversations, usually near its start.
            if let index = order.firstIndex(of: id) { order.remove(at: index) }
        case .joined(let id, let name, let again):
            insertConversation(id, name: name)
            conversations[id]!.name = name
            conversations[id]!.isJoined = true
            conversations[id]!.awaitingRejoin = false
            // A rejoin keeps the old list on screen until NAMES replaces it.
            if !again { conversations[id]!.members = [:] }
        case .left(let id):
            conversations[id]?.isJoined = false
            conversations[id]?.awaitingRejoin = false
            conversations[id]?.members = [:]
        case .connectionLost:
            for id in order where id.kind == .room {
                guard let room = conversations[id], room.isJoined || room.awaitingRejoin else { continue }
                conversations[id]!.isJoined = false
                conversations[id]!.awaitingRejoin = true
            }
        case .line(let id, var line):
            if conversations[id] == nil { insertConversation(id, name: line.sender ?? id.key) }
            // The screen's book (lines kept) marks what the smart filter folds.
            if id.kind == .room && keepsLines && !keepsOnlyKeys { conversations[id]!.noteSpeaker(&line, key: key(for:), isMe: isMe) }
            if conversations[id]!.insert(line), numbersMessages, let msgid = line.msgid, referenceOf[msgid] == nil,
               line.kind == .message || line.kind == .action || line.kind == .notice {
                lastReference += 1
                references[lastReference] = (id, msgid)
                referenceOf[msgid] = lastReference
                if let old = references.removeValue(forKey: lastReference - Self.referencesKept) { referenceOf[old.msgid] = nil }
            }
        case .pendingDone(let id, let serial):
            conversations[id]?.removePending(serial: serial)
        case .members(let id, let members):
            guard conversations[id] != nil else { return }
            let keyed = Dictionary(members.map { (key(for: $0.nick), $0) }, uniquingKeysWith: { _, last in last })
            conversations[id]!.members = keyed
        case .memberJoined(let id, let member), .memberChanged(let id, let member):
            let memberKey = key(for: member.nick)
            conversations[id]?.members[memberKey] = member
        case .memberLeft(let id, let nick):
            let memberKey = key(for: nick)
            conversations[id]?.members[memberKey] = nil
        case .renamed(let old, let new):
            rename(old, to: new)
        case .topic(let id, let topic):
            conversations[id]?.topic = topic
        case .modes(let id, let modes):
            conversations[id]?.modes = modes
        case .markedRead(let id):
            conversations[id]?.markRead()
        case .unreadRestored(let id, let count, let mentioned):
            conversations[id]?.unread = count
            conversations[id]?.mentioned = mentioned
        case .readMarker(let id, let time):
            conversations[id]?.readMarker = time
        case .cleared(let id):
            conversations[id]?.clearLines()
        case .transfer(let info):
            transfers[info.id] = info
        case .reaction(let id, let msgid, let emoji, let nick, let added):
            let mapping = casemapping
            conversations[id]?.react(to: msgid, emoji: emoji, nick: nick, added: added) { mapping.fold($0) }
        case .redacted(let id, let msgid, let by):
            conversations[id]?.redact(msgid, by: by)
        case .typing(let id, let nick, let typing):
            let who = key(for: nick)
            // Bounded: a crowd's typing beyond 50 at once is not kept (those who stopped go first).
            if typing != nil, (conversations[id]?.typing.count ?? 0) >= 50 { conversations[id]?.typing = [:] }
            conversations[id]?.typing[who] = typing
        case .roomRenamed(let old, let new, let name):
            guard old != new || conversations[old]?.name != name, var moved = conversations.removeValue(forKey: old) else { return }
            // A conversation already under the new name (a room of that name we had left) gives way.
            if old != new, conversations.removeValue(forKey: new) != nil { order.removeAll { $0 == new } }
            moved.id = new
            moved.name = name
            conversations[new] = moved
            if let index = order.firstIndex(of: old) { order[index] = new }
            for (number, reference) in references where reference.conversation == old { references[number] = (new, reference.msgid) }
        case .profile(let nick, let key, let value):
            let who = self.key(for: nick)
            // Bounded: past 10,000 people, the profiles are started again (they come back with the people's next change or a JOIN).
            if profiles[who] == nil, value != nil, profiles.count >= 10_000 { profiles = [:] }
            profiles[who, default: [:]][key] = value
            if profiles[who]?.isEmpty == true { profiles[who] = nil }
        case .status, .error, .lag, .notSent, .unknownCertificate, .searchResults, .serverSearchResults:
            break
        }
    }

    /// The screen is scrolled up in this conversation (or back at its bottom): see `Conversation.readingBack`.
    public mutating func setReadingBack(_ id: ConversationID, _ reading: Bool) {
        conversations[id]?.readingBack = reading
    }

    mutating func insertConversation(_ id: ConversationID, name: String) {
        guard conversations[id] == nil else { return }
        conversations[id] = Conversation(id: id, name: name, scrollbackLimit: scrollbackLimit, keepsLines: keepsLines, keepsOnlyKeys: keepsOnlyKeys)
        order.append(id)
    }

    /// Someone changed nickname: their rows in every room, and the direct conversation with them
    /// (unless one with the new name is already open). Each conversation is changed in place, so
    /// a rename costs a lookup per conversation, never a copy of a scrollback.
    mutating func rename(_ old: String, to new: String) {
        let oldKey = key(for: old), newKey = key(for: new)
        for id in order where id.kind == .room {
            if var member = conversations[id]!.members.removeValue(forKey: oldKey) {
                member.nick = new
                conversations[id]!.members[newKey] = member
            }
        }
        if oldKey != newKey, let profile = profiles.removeValue(forKey: oldKey) { profiles[newKey] = profile }
        let from = ConversationID.direct(oldKey), to = ConversationID.direct(newKey)
        guard from != to, conversations[to] == nil, var moved = conversations.removeValue(forKey: from) else {
            // Only the spelling changed (or a conversation with the new name is already open).
            if from == to { conversations[from]?.name = new }
            return
        }
        moved.id = to
        moved.name = new
        conversations[to] = moved
        if let index = order.firstIndex(of: from) { order[index] = to }
    }
}
