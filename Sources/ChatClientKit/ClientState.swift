import IRCWire

/// The client's reading of the server: it turns each message into value-carrying
/// `ClientEvent`s and applies them to its own `ConversationBook`, the one owner of
/// conversations, members and unread counts. No I/O.
public struct ClientState: Sendable {
    /// What the events built so far: the client's own view (with lines, as a screen keeps them: `init(config:)`).
    public private(set) var book: ConversationBook
    /// This connection's registration (CAP, SASL, nickname retries): registered is its phase,
    /// the one place that fact is held.
    public internal(set) var registration: Registration
    public var isRegistered: Bool { registration.phase == .registered }
    /// How each connection registers (its nickname is the one we last had).
    public var registrationSettings: Registration.Settings
    /// Rooms to be in: the configured ones plus any the user joined; kept across reconnects.
    public internal(set) var wantedRooms: [String] = []
    /// `OPER name password` sent after each welcome.
    public var operLogin: (name: String, password: String)?
    /// Messages typed while offline, shown as held, sent after the next welcome.
    public internal(set) var queue: [SentLines.Line] = []
    public var offlineQueueLimit = 500
    /// Direct messages sent from the offline queue, by folded nickname: a 401 for one of them
    /// (the person has not reconnected yet) holds it for them (`HeldDirect`).
    var flushedDirect: [String: [(text: String, isAction: Bool)]] = [:]
    /// The text of the server's ERROR on this connection, the best explanation of a close after it.
    public internal(set) var serverError: String?
    /// The user is ending the connection (/quit, /disconnect): the ERROR that answers is news, not an error.
    public var userStopping = false
    /// The `/ignore` list, as completed masks.
    public internal(set) var ignoreMasks: [String] = []
    /// Highlights (the highlights and highlight-regex settings): words (whole, any case) and a
    /// pattern that mark a line like a mention of our nickname.
    public internal(set) var highlights = Highlights()
    private var collectingList: [ListedRoom] = []
    /// Capabilities the server acknowledged.
    public var capabilities: Set<String> = []
    /// `nick!user@host` as the server sees us, once known (for message splitting).
    public var ownSource: String?
    /// Where replies to the user's last query go (the conversation it was typed in), as irssi
    /// shows a /whois in the window where you asked. Nil: the server window.
    public var replyConversation: ConversationID?
    /// Typing notices sent, to tell their refusals from our lines' (`TypingOut`).
    var typingOut = TypingOut()
    /// The conversation on the user's screen (`ChatClient.looking`), where news for them goes.
    public var lookingAt: ConversationID?
    /// Numerics that answer a user's query or command.
    static let queryReplies: Set<String> = [
        "301", "311", "312", "313", "317", "318", "319", "330", "338", "378", "671", "352", "315",
        "324", "329", "367", "368", "341", "401", "402", "403", "404", "406", "421", "441", "442",
        "443", "461", "472", "479", "482", "502",
        // /nick refused, /away confirmed, /invite and /mode answers: where they were typed.
        "432", "433", "436", "437", "305", "306", "346", "347", "348", "349", "221", "354",
        "471", "473", "474", "475", "476", "478", "501", "525", "696",
        // /quote LUSERS, /mode NICK, /quote TIME.
        "251", "252", "253", "254", "255", "265", "266", "391",
    ]
    /// Conversations marked "connection lost", to be marked "connected again", with when.
    private var droppedSince: Set<ConversationID> = []
    private var droppedAt: [ConversationID: Double] = [:]
    /// The newest msgid seen in each conversation: after a drop, history is asked for what came after it.
    public private(set) var latestMsgid: [ConversationID: String] = [:]
    private var latestMsgidTime: [ConversationID: Double] = [:]
    /// When we joined each room (not a rejoin after a drop): a room whose lines we had not
    /// seen any of when the connection dropped reads from there, not its last lines only.
    private var joinedAt: [ConversationID: Double] = [:]
    /// The time of the newest line of each conversation (what MARKREAD marks as read).
    public private(set) var latestTime: [ConversationID: Double] = [:]
    /// The newest server time seen (`time` tags): where a drop's `CHATHISTORY TARGETS` starts.
    var newestServerTime: Double?
    /// From when to ask which direct conversations had lines (`CHATHISTORY TARGETS`) at the next
    /// welcome, logged in: a person who wrote to us while we were away, in a conversation we do
    /// not have open (its first line lost in the cut, or the client was not running), is found.
    /// Kept until the answer has come (a drop before it asks again from the same time).
    public var targetsSince: Double?
    /// The newest line of each conversation this client had shown before it started (restored
    /// from the local log): what a room's history on joining brings after it was missed, so it
    /// is news (unread, a mention `!`), not old news. Owner: the client; bound: the
    /// conversations restored; end: the process.
    public var seenUntil: [ConversationID: Double] = [:]
    /// The msgids of the last CTCP request to ourselves answered, and of our last answer shown
    /// (each arrives twice with echo-message).
    var lastSelfCTCP: String?
    var lastSelfCTCPReply: String?
    /// Direct conversations whose history this connection has asked for (not asked twice when
    /// TARGETS names them too).
    var askedDirect: Set<ConversationID> = []
    /// What history was asked for per room (`CHATHISTORY`), and the batches open now.
    public enum HistoryRequest: Sendable, Equatable {
        /// The last lines, on joining: old news, so nothing in them rings or counts as a mention.
        case latest
        /// What was said while the connection was down, since this time (and how many lines
        /// earlier pages of it brought).
        case gap(since: Double, before: Int = 0)
        /// Older lines, asked for by scrolling past the oldest one.
        case older
    }
    public var historyRequests: [ConversationID: HistoryRequest] = [:]
    private var openBatches: [String: (type: String, target: ConversationID?, lines: Int, all: Int, last: String?)] = [:]
    /// draft/multiline batches being received: the opening line (its tags and target) and the text so far.
    /// Our multiline batches, numbered for their references.
    var nextBatch = 0
    /// METADATA SYNCs to send (after a subscription is confirmed).
    var syncRequests: [IRCMessage] = []
    var multilineBatches: [String: (opening: IRCMessage, command: String?, text: String, lines: Int)] = [:]
    /// Our SEARCH (soju.im/search): the words asked, and the answer's batch as it comes (at most
    /// 200 lines kept; it ends with the batch or the connection).
    var searchAsked: String?
    var searchBatches: [String: [SearchHit]] = [:]
    /// Rooms whose history batch just ended (the client then resends what it lacked).
    var finishedHistory: [ConversationID] = []

    /// A gap longer than a page: the next page's request, for the client to send.
    var gapContinuations: [IRCMessage] = []
    /// A page of history: 100 lines, or fewer where the server says it gives fewer (CHATHISTORY=N).
    /// Files shared through the host, by their path, numbered for `/download N` (the newest 1,000).
    public internal(set) var sharedFiles: [String: SharedFile] = [:]
    var nextSharedFile = 1

    mutating func sharedFile(in text: String) -> SharedFile? {
        let filehost = isupport["soju.im/FILEHOST"].flatMap(HTTPURL.init)
        guard let parsed = SharedFile.parse(text, number: nextSharedFile, filehost: filehost) else { return nil }
        if let known = sharedFiles[parsed.path] { return known }
        sharedFiles[parsed.path] = parsed
        nextSharedFile += 1
        if sharedFiles.count > 1000, let oldest = sharedFiles.values.min(by: { $0.number < $1.number }) { sharedFiles[oldest.path] = nil }
        return parsed
    }

    var gapPage: Int { min(100, isupport["CHATHISTORY"].flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil } ?? 100) }

    /// Between 001 and the end of the MOTD: the server's greeting, whose user counts are not shown.
    var welcomeBurst = false
    /// Names collected from 353 until 366 ends the list.
    private var pendingNames: [ConversationID: [String: Member]] = [:]
    /// Events produced by the message being applied.
    var produced: [ClientEvent] = []

    /// Direct conversations kept open (`ClientConfig.directConversationLimit`).
    public let directLimit: Int
    /// The server window has said once that direct conversations are being closed.
    private var toldOfDirectLimit = false
    /// Each open direct conversation: when it last had a line (a count, not a clock) and
    /// whether we wrote in it, to choose which to close past the limit.
    private var directActivity: [ConversationID: (last: UInt64, ours: Bool)] = [:]
    private var activityClock: UInt64 = 0

    /// Our lines not echoed yet (echo-message): held at a drop, sent again unless history has
    /// them, and gone for good when the server refuses them.
    public internal(set) var sent = SentLines()
    /// Numbers our held lines, so the one sent is the one that leaves the screen.
    var lastSerial: UInt64 = 0
    /// The server said it keeps no read markers for us (`FAIL MARKREAD ACCOUNT_REQUIRED`): none
    /// are sent on this connection.
    var markersRefused = false
    /// The server window has said once why read markers are not kept.
    var toldOfMarkers = false
    /// The server keeps our account present while none of our devices is connected
    /// (`PERSISTENCE STATUS … ON`): said once in the server window per connection.
    public internal(set) var serverKeepsPresence = false
    /// Direct messages waiting for their person to come back (MONITOR).
    public internal(set) var held = HeldDirect()
    /// What quitting now leaves unsent: the direct messages held for people not back yet, as
    /// "to NICK: TEXT", by nickname (the screen says them on the terminal once it is closed).
    public var unsentHeld: [String] {
        held.waiting.values.sorted { $0.nick < $1.nick }.flatMap { waiting in waiting.lines.map { "to \(waiting.nick): \($0.text)" } }
    }
    /// Who was logged in to which account, as the server said: held lines are bound to it.
    public internal(set) var accountsSeen = AccountsSeen()
    /// What the actor is to do besides publishing, for the change being made (`reduction`).
    var actions: [ClientAction] = []

    public init(nick: String, scrollbackLimit: Int = 4_096, keepsLines: Bool = true, keepsOnlyKeys: Bool = false, numbersMessages: Bool = true,
                directLimit: Int = 200, registration settings: Registration.Settings? = nil) {
        book = ConversationBook(nick: nick, scrollbackLimit: scrollbackLimit, keepsLines: keepsLines, keepsOnlyKeys: keepsOnlyKeys,
                                numbersMessages: numbersMessages)
        self.directLimit = directLimit
        registrationSettings = settings ?? Registration.Settings(nick: nick, userName: nick, realName: nick, wantedCapabilities: [])
        registration = Registration(registrationSettings)
    }

    /// Goes on reading from a book (tests fold server lines into a screen's view this way).
    public init(continuing book: ConversationBook, registered: Bool) {
        self.book = book
        directLimit = 200
        registrationSettings = Registration.Settings(nick: book.nick, userName: book.nick, realName: book.nick, wantedCapabilities: [])
        registration = Registration(registrationSettings)
        if registered { registration.assumeRegistered() }
    }

    // Reading, through the book.
    public var nick: String { book.nick }
    public var isupport: ISupport { book.isupport }
    public var isAway: Bool { book.isAway }
    public var roomList: [ListedRoom] { book.roomList }
    public var casemapping: Casemapping { book.casemapping }
    public func key(for name: String) -> String { book.key(for: name) }
    public func isChannel(_ name: String) -> Bool { book.isChannel(name) }
    public func isMe(_ nick: String) -> Bool { book.isMe(nick) }
    public func id(for name: String) -> ConversationID { book.id(for: name) }
    public func conversation(_ name: String) -> Conversation? { book.conversation(name) }
    public subscript(id: ConversationID) -> Conversation? { book[id] }
    public var rooms: [Conversation] { book.rooms }
    public var joinedRooms: [String] { book.joinedRooms }
    public var orderedConversations: [Conversation] { book.orderedConversations }

    // MARK: Changes

    /// Applies an event to the book and returns it, to be published.
    @discardableResult
    mutating func record(_ event: ClientEvent) -> ClientEvent {
        book.apply(event)
        return event
    }

    /// Applies events and collects them for the message being handled.
    mutating func emit(_ event: ClientEvent) {
        produced.append(record(event))
    }

    /// A line for the conversation a name (a room, a person) or id names, opening a direct
    /// conversation when it is new.
    @discardableResult
    mutating func line(_ line: ChatLine, to id: ConversationID, name: String? = nil) -> [ClientEvent] {
        var events: [ClientEvent] = []
        var line = line
        // A file shared through the host: "bob shared report.pdf (1.2 MiB) — /download 3".
        // (Over bytes: String.contains(String) went through a generic search, 25,000
        // instructions a line.)
        if line.kind == .message, Self.holdsFilesPath(line.text), let file = sharedFile(in: line.text) {
            line.kind = .action
            line.text = "shared \(file.name)" + (file.size.map { " (\($0))" } ?? "") + " — /download \(file.number)"
        }
        if book[id] == nil { events += opening(id, name: name ?? line.sender ?? id.key, time: line.time) }
        // The newest only: older lines (fetched by scrolling, around a search hit) do not move it back.
        if let msgid = line.msgid, line.time >= (latestMsgidTime[id] ?? 0) {
            latestMsgid[id] = msgid
            latestMsgidTime[id] = line.time
        }
        if line.kind == .message || line.kind == .action || line.kind == .notice { latestTime[id] = max(latestTime[id] ?? 0, line.time) }
        if id.kind == .direct { active(id, ours: line.isOwn) }
        events.append(record(.line(id, line)))
        return events
    }

    private mutating func active(_ id: ConversationID, ours: Bool = false) {
        activityClock += 1
        directActivity[id] = (activityClock, ours || (directActivity[id]?.ours ?? false))
    }

    /// With more direct conversations open than the limit, the one to close (never `keeping`):
    /// the least recently active one we never wrote in, else the least recently active one.
    func directConversationToClose(keeping: ConversationID) -> ConversationID? {
        guard directActivity.count > directLimit else { return nil }
        var stranger: (id: ConversationID, last: UInt64)?, any: (id: ConversationID, last: UInt64)?
        for (id, activity) in directActivity where id != keeping {
            if activity.last < any?.last ?? .max { any = (id, activity.last) }
            if !activity.ours, activity.last < stranger?.last ?? .max { stranger = (id, activity.last) }
        }
        return (stranger ?? any)?.id
    }

    /// A line shown in a conversation that did not come from the server (a note of the
    /// client's, a line restored from the log), opening a direct conversation when it is new.
    public mutating func show(_ line: ChatLine, in id: ConversationID, name: String? = nil) -> Reduction {
        Reduction(events: self.line(line, to: id, name: name))
    }

    /// Opens a conversation the user asked for (/query), if it is not open.
    public mutating func open(_ name: String, now: Double) -> Reduction {
        let id = id(for: name)
        return Reduction(events: book[id] == nil ? opening(id, name: name, time: now) : [])
    }

    /// Opens a conversation; a direct one past the limit closes the least recently active
    /// (a stranger's first), said once in the server window.
    private mutating func opening(_ id: ConversationID, name: String, time: Double) -> [ClientEvent] {
        var events = [record(.opened(id, name: name))]
        guard id.kind == .direct else { return events }
        active(id)
        while let old = directConversationToClose(keeping: id) {
            events.append(closing(old))
            if !toldOfDirectLimit {
                toldOfDirectLimit = true
                let text = "More than \(directLimit) direct conversations: the least recently active are closed "
                    + "(those you never wrote in first); what was said in them stays in the log, /search finds it"
                events += self.line(ChatLine(time: time, kind: .info, text: text), to: .server)
            }
        }
        return events
    }

    /// The user closed a conversation (/close).
    public mutating func close(_ id: ConversationID) -> Reduction {
        Reduction(events: [closing(id)])
    }

    /// Closes a conversation and forgets what was kept about it.
    mutating func closing(_ id: ConversationID) -> ClientEvent {
        latestMsgid[id] = nil
        latestMsgidTime[id] = nil
        latestTime[id] = nil
        joinedAt[id] = nil
        droppedAt[id] = nil
        droppedSince.remove(id)
        historyRequests[id] = nil
        pendingNames[id] = nil
        directActivity[id] = nil
        return record(.closed(id))
    }

    /// A direct conversation moved to a new nickname, or a room renamed: what is kept about it moves too.
    private mutating func moveFacts(from old: ConversationID, to new: ConversationID) {
        if let value = joinedAt.removeValue(forKey: old) { joinedAt[new] = value }
        if let value = latestMsgid.removeValue(forKey: old) { latestMsgid[new] = value }
        if let value = latestMsgidTime.removeValue(forKey: old) { latestMsgidTime[new] = value }
        if let value = latestTime.removeValue(forKey: old) { latestTime[new] = value }
        if let value = droppedAt.removeValue(forKey: old) { droppedAt[new] = value }
        if droppedSince.remove(old) != nil { droppedSince.insert(new) }
        if let value = historyRequests.removeValue(forKey: old) { historyRequests[new] = value }
        if let value = directActivity.removeValue(forKey: old) { directActivity[new] = value }
    }

    mutating func say(_ line: ChatLine, to id: ConversationID, name: String? = nil) {
        produced += self.line(line, to: id, name: name)
    }

    /// The conversation a name goes to: the server window for `*`, else a room or a person.
    public func target(_ name: String) -> ConversationID { name == "*" ? .server : id(for: name) }

    /// The connection is gone: rooms stay (to be rejoined) with their member lists as they were,
    /// shown greyed until NAMES replaces them. When we had been registered, every room and
    /// direct conversation gets a line marking where the connection dropped, unless the user
    /// ended it (`byUser`: /quit, /disconnect): nothing dropped then, and nothing is held.
    public mutating func connectionLost(reason: String = "", now: Double = 0, byUser: Bool = false) -> Reduction {
        let wasRegistered = isRegistered
        registration = Registration(registrationSettings)
        capabilities = []
        pendingNames = [:]
        markersRefused = false
        typingOut = TypingOut()
        held.monitored = []
        actions = []
        produced = []
        let marked = book.order.filter { id in
            guard let conversation = book[id], id != .server else { return false }
            return id.kind == .direct || conversation.isJoined || conversation.awaitingRejoin
        }
        emit(.connectionLost)
        // Requests and batches of the old connection are gone with it.
        historyRequests = [:]
        askedDirect = []
        openBatches = [:]
        searchAsked = nil
        searchBatches = [:]
        multilineBatches = [:]
        syncRequests = []
        finishedHistory = []
        gapContinuations = []
        if wasRegistered && !byUser {
            let text = "── connection lost" + (reason.isEmpty ? "" : ": \(reason)") + " — what you type is held until it is back ──"
            // Just before the millisecond of the drop: server times have milliseconds, and what
            // was said in that millisecond was said after we lost it.
            let at = (now * 1000).rounded(.down) / 1000 - 0.0002
            // The server's clock where we have it (ours may differ from it), a little earlier:
            // TARGETS only finds conversations, each read from its own newest line on.
            targetsSince = min(targetsSince ?? .infinity, (newestServerTime ?? at) - 10)
            for id in marked {
                say(ChatLine(time: at, kind: .info, text: text), to: id)
                droppedSince.insert(id)
                droppedAt[id] = at
            }
        }
        return reduction()
    }

    /// Registered again after a drop: the conversations marked then get a line saying so.
    mutating func connectionBack(now: Double) -> [ClientEvent] {
        let start = produced.count
        // With history the gap is filled when each room is joined again (`CHATHISTORY AFTER`);
        // without, nobody can say what was missed.
        let text = capabilities.contains("draft/chathistory")
            ? "── connected again ──" : "── connected again: what was said meanwhile is unknown (this server keeps no history) ──"
        for id in book.order where droppedSince.contains(id) {
            say(ChatLine(time: now, kind: .info, text: text), to: id)
        }
        droppedSince = []
        return Array(produced[start...])
    }

    /// What to ask history for on joining a room: what came after our newest line when we
    /// were there before the drop, else the last lines.
    /// `onlyAfterDrop`: nothing when there is no gap to fill (a direct conversation has no LATEST on joining).
    /// A conversation with a held line of ours always reads history first: the server may have
    /// stored it before the drop.
    mutating func historyRequest(for id: ConversationID, room: String, limit: Int = 50, onlyAfterDrop: Bool = false) -> IRCMessage? {
        guard capabilities.contains("draft/chathistory"), capabilities.contains("batch") else { return nil }
        let book = self.book
        let held = sent.oldestHeld { book.id(for: $0.target) == id }
        // From before our oldest unconfirmed line, if any (`SentLines.Line.seenBefore`): lines
        // shown already come again and are not shown twice (one per msgid), nor counted.
        if let since = droppedAt[id], let latest = latestMsgid[id], held == nil || held?.seenBefore != nil {
            droppedAt[id] = nil
            historyRequests[id] = .gap(since: since)
            return IRCMessage("CHATHISTORY", "AFTER", room, "msgid=" + (held?.seenBefore ?? latest), String(gapPage))
        }
        // Joined, then dropped before any line reached us (a stalled connection): from our
        // join on, not the last 50 (chaos soak: a busy room's first lines never shown).
        if let since = droppedAt[id], latestMsgid[id] == nil, held == nil, let from = joinedAt[id] {
            droppedAt[id] = nil
            historyRequests[id] = .gap(since: since)
            return IRCMessage("CHATHISTORY", "AFTER", room, "timestamp=" + ServerTime.format(from), String(gapPage))
        }
        // Nothing was shown before the held line (its conversation's first): the latest lines
        // hold it if the server stored it (chaos soak: a direct message stored twice).
        if onlyAfterDrop && held == nil { return nil }
        droppedAt[id] = nil
        historyRequests[id] = .latest
        return IRCMessage("CHATHISTORY", "LATEST", room, "*", String(limit))
    }

    /// The question asked at a welcome after a drop (or a start with a log), logged in and
    /// where the server keeps history: which direct conversations had lines since then.
    mutating func targetsRequest(now: Double) -> IRCMessage? {
        guard let since = targetsSince, registrationSettings.sasl != nil,
              capabilities.contains("draft/chathistory"), capabilities.contains("batch") else { return nil }
        return IRCMessage("CHATHISTORY", "TARGETS", "timestamp=" + ServerTime.format(since),
                          "timestamp=" + ServerTime.format(max(now, newestServerTime ?? now) + 86_400), "100")
    }

    // CHATHISTORY TARGETS <name> <time> (in a draft/chathistory-targets batch): a person with
    // lines since the drop whose conversation this connection has not read yet is read now —
    // from its newest line shown when that is from before the drop, else (new to us, or opened
    // since) from the drop's time (as a gap: news).
    mutating func historyTarget(_ c: MessageContext) {
        guard c.p.count >= 3, c.p[0] == "TARGETS" else { return }
        let name = c.p[1]
        guard !isChannel(name), !isMe(name) else { return }
        let id = id(for: name)
        guard !askedDirect.contains(id), historyRequests[id] == nil else { return }
        let request: IRCMessage
        // Read on from our newest line there only when it is from before the drop. A newer one
        // (chaos soak, seed 42: a line typed to them while the connection was down, sent at the
        // welcome, its echo before this answer) has their lines of the outage behind it: those
        // are read from the drop's time, as for a conversation new to us (a line shown already
        // is not shown twice, nor counted).
        if book[id] != nil, latestMsgid[id] != nil, let newest = latestMsgidTime[id], newest <= targetsSince ?? c.time {
            if droppedAt[id] == nil { droppedAt[id] = newest }
            guard let read = historyRequest(for: id, room: name) else { return }
            request = read
        } else {
            // New to us, or our newest line is from after the drop: what they said since the
            // drop is what we missed (counted, news).
            let since = targetsSince ?? c.time
            historyRequests[id] = .gap(since: since)
            request = IRCMessage("CHATHISTORY", "AFTER", name, "timestamp=" + ServerTime.format(since), String(gapPage))
        }
        askedDirect.insert(id)
        actions.append(.send(request))
    }

    func isGap(_ request: HistoryRequest?) -> Bool {
        if case .gap? = request { return true }
        return false
    }

    /// Older lines of a room, before the oldest one shown (scrolling up past it): asked once
    /// at a time, where the server keeps history.
    public mutating func older(in room: String, before msgid: String) -> Reduction {
        let id = id(for: room)
        guard capabilities.contains("draft/chathistory"), capabilities.contains("batch"), historyRequests[id] == nil else { return Reduction() }
        historyRequests[id] = .older
        return Reduction(actions: [.send(IRCMessage("CHATHISTORY", "BEFORE", room, "msgid=" + msgid, "100"))])
    }

    /// `/search` on a server that searches its history (soju.im/search): SEARCH for the words.
    public mutating func serverSearch(_ words: [String]) -> Reduction {
        produced = []
        actions = []
        guard capabilities.contains("soju.im/search"), capabilities.contains("batch"), searchAsked == nil, !words.isEmpty else { return reduction() }
        let query = words.joined(separator: " ")
        searchAsked = query
        let escaped = query.replacing("\\", with: "\\\\").replacing(";", with: "\\:").replacing(" ", with: "\\s")
        actions.append(.send(IRCMessage("SEARCH", "text=" + escaped + ";limit=100")))
        return reduction()
    }

    // BATCH +ref type [params] | BATCH -ref
    mutating func batch(_ c: MessageContext) {
        guard let reference = c.p.first, reference.count > 1 else { return }
        let name = String(reference.dropFirst())
        if reference.hasPrefix("+") {
            let type = c.p.count > 1 ? c.p[1] : ""
            // A multiline message: its lines are collected and shown as one message when it closes.
            if type == "draft/multiline", c.p.count > 2, multilineBatches.count < 16 {
                multilineBatches[name] = (c.message, nil, "", 0)
                return
            }
            if type == "soju.im/search", searchBatches.count < 4 {
                searchBatches[name] = []
                return
            }
            let target = type == "chathistory" && c.p.count > 2 ? id(for: c.p[2]) : nil
            openBatches[name] = (type, target, 0, 0, nil)
            return
        }
        if let hits = searchBatches.removeValue(forKey: name) {
            emit(.serverSearchResults(query: searchAsked ?? "", hits.reversed()))
            searchAsked = nil
            return
        }
        if let multiline = multilineBatches.removeValue(forKey: name) {
            finishMultiline(multiline.opening, command: multiline.command ?? "PRIVMSG", text: multiline.text, now: c.time)
            return
        }
        guard let batch = openBatches.removeValue(forKey: name) else { return }
        // TARGETS answered: asked again only after another drop.
        if batch.type == "draft/chathistory-targets" { targetsSince = nil }
        guard batch.type == "chathistory", let id = batch.target else { return }
        finishedHistory.append(id)
        // The end of a gap's history: a line right after the "connection lost" one says how much was missed.
        let request = historyRequests.removeValue(forKey: id)
        // A full page of a gap: more may follow; ask for the next page before saying how many.
        // The next page goes on from this page's last line (a gap read from before our unconfirmed
        // lines starts behind the newest line shown, so the newest is not where to go on from).
        if case .gap(let since, let before)? = request, batch.all >= gapPage, let name = book[id]?.name, let msgid = batch.last ?? latestMsgid[id] {
            historyRequests[id] = .gap(since: since, before: before + batch.lines)
            finishedHistory.removeAll { $0 == id }
            gapContinuations.append(IRCMessage("CHATHISTORY", "AFTER", name, "msgid=" + msgid, String(gapPage)))
            return
        }
        if case .gap(let since, let before)? = request {
            let total = before + batch.lines
            let text = total == 0 ? "── nothing was said here while you were away ──"
                : "── \(total) message\(total == 1 ? "" : "s") you missed while away follow\(total == 1 ? "s" : "") ──"
            // Lines missed follow the marker, right after the drop; "nothing was said" reads
            // last, after "connected again" (before it, it read as said before reconnecting).
            let at = total == 0 ? max(since, book[id]?.lines.last?.time ?? since) + 0.0001 : since + 0.0001
            var marker = ChatLine(time: at, kind: .info, text: text)
            marker.isHistory = true
            say(marker, to: id)
        }
    }

    // MARK: Folding server messages

    /// Applies one message from the server and returns what changed, for a view that only
    /// folds lines (tests, the screen's fixtures): `receive`'s events, its actions not performed.
    mutating func apply(_ message: IRCMessage, now: Double) -> [ClientEvent] {
        receive(message, now: now).events
    }

    /// What a handler needs of one message, parsed once.
    struct MessageContext {
        let message: IRCMessage
        let time: Double
        let source: IRCSource?
        /// The sender's nickname ("" for none).
        let from: String
        let msgid: String?
        var p: [String] { message.params }

        init(message: IRCMessage, now: Double) {
            self.message = message
            time = message.tag("time").flatMap(ServerTime.parse) ?? now
            source = message.source.map(IRCSource.init(parsing:))
            from = source?.nick ?? ""
            msgid = message.tag("msgid")
        }
    }

    typealias Handler = @Sendable (inout ClientState, MessageContext) -> Void

    /// The client's message table: what each command means for the conversations. Commands
    /// that are only protocol bookkeeping (PING, CAP, registration) are the registration
    /// machine's and the connection's; numerics without an entry become a line.
    static let handlers: [String: Handler] = [
        "001": { $0.welcome($1) },
        "005": { state, c in
            var isupport = state.isupport
            isupport.apply(c.message)
            state.emit(.serverSupport(isupport))
            // Lines held for people from before a reconnect: watched on this connection too.
            state.watchHeld()
        },
        "730": { $0.monitorOnline($1) },
        "731": { $0.monitorOffline($1) },
        // The end of the MOTD (or no MOTD) ends the welcome: user counts after it are answers.
        "376": { state, _ in state.welcomeBurst = false },
        "422": { state, c in state.welcomeBurst = false; state.numericOrUnknown(c) },
        "JOIN": { $0.joined($1) },
        "PART": { $0.parted($1) },
        "KICK": { $0.kicked($1) },
        "QUIT": { $0.quit($1) },
        "NICK": { $0.nickChanged($1) },
        "PRIVMSG": { $0.privateOrRoomMessage($1) },
        "NOTICE": { $0.privateOrRoomMessage($1) },
        "TOPIC": { $0.topicChanged($1) },
        "332": { $0.topicReply($1) },
        // 331 <me> <room> :No topic is set.
        "331": { state, c in
            if c.p.count >= 2, case let id = ConversationID.room(state.key(for: c.p[1])), state.book[id]?.topic.isEmpty == false {
                state.emit(.topic(id, ""))
            }
            state.numericOrUnknown(c)
        },
        "305": { state, c in state.emit(.away(false)); state.numericOrUnknown(c) },
        "306": { state, c in state.emit(.away(true)); state.numericOrUnknown(c) },
        "324": { $0.modeReply($1) },
        "353": { $0.namesReply($1) },
        "366": { $0.namesEnd($1) },
        "321": { state, _ in state.collectingList = [] },
        "322": { $0.listReply($1) },
        "323": { state, _ in state.emit(.roomList(state.collectingList)); state.collectingList = [] },
        "MODE": { $0.modeChanged($1) },
        "AWAY": { state, c in state.setAway(c.from, away: !(c.p.first ?? "").isEmpty) },
        // WHO reply: <me> <channel> <user> <host> <server> <nick> <H|G>[*][@+] :<hops> <real name>
        "352": { state, c in if c.p.count >= 7 { state.setAway(c.p[5], away: c.p[6].hasPrefix("G")) } },
        "BATCH": { $0.batch($1) },
        "CHATHISTORY": { $0.historyTarget($1) },
        // MARKREAD <target> timestamp=…: read up to there, in this or another window of the account.
        "MARKREAD": { state, c in
            guard c.p.count >= 2, c.p[1].hasPrefix("timestamp="), let time = ServerTime.parse(String(c.p[1].dropFirst(10))) else { return }
            let id = state.id(for: c.p[0])
            guard let conversation = state.book[id] else { return }
            state.emit(.readMarker(id, time))
            guard conversation.unread > 0 || conversation.mentioned, time >= (state.latestTime[id] ?? 0) - 0.001 else { return }
            state.emit(.markedRead(id))
        },
        "ERROR": { state, c in state.say(ChatLine(time: c.time, kind: .error, text: c.p.first ?? "closing"), to: .server) },
        // PERSISTENCE STATUS <ours> <applied>: whether the server keeps us present while away.
        "PERSISTENCE": { state, c in
            guard c.p.count >= 3, c.p[0] == "STATUS" else { return }
            let keeps = c.p[2] == "ON"
            if keeps != state.serverKeepsPresence {
                state.say(ChatLine(time: c.time, kind: .info, text: keeps
                    ? "The server keeps you in your rooms, away, while none of your devices is connected; what is said meanwhile waits for you"
                    : "The server lets you leave your rooms when your last device disconnects"), to: .server)
            }
            state.serverKeepsPresence = keeps
        },
        "INVITE": { $0.invited($1) },
        "TAGMSG": { $0.tagMessage($1) },
        // 770: subscribed; the rooms we are in already (the server's own JOIN came first) are synced.
        "770": { state, _ in
            for room in state.book.rooms where room.isJoined { state.syncRequests.append(IRCMessage("METADATA", room.name, "SYNC")) }
        },
        "REDACT": { $0.redact($1) },
        "RENAME": { $0.roomRenamed($1) },
        "METADATA": { state, c in if c.p.count >= 3 { state.profile(c.p[0], key: c.p[1], value: c.p.count > 3 ? c.p[3] : nil) } },
        // 761 <me> <target> <key> <visibility> [:<value>]: our own SET's answer, a GET's or a LIST's.
        "761": { state, c in if c.p.count >= 4 { state.profile(c.p[1], key: c.p[2], value: c.p.count > 4 ? c.p[4] : nil) } },
        "341": { $0.inviting($1) },
        "FAIL": { $0.standardReply($1) },
        "WARN": { $0.standardReply($1) },
        "NOTE": { $0.standardReply($1) },
        // <me> <target> :<reason>: a line we sent was refused (or, when none is waiting, an answer to a command).
        "404": { $0.refusedOrNumeric($1) },
        "442": { $0.refusedOrNumeric($1) },
        "477": { $0.refusedOrNumeric($1) },
        "482": { $0.refusedOrNumeric($1) },
        "486": { $0.refusedOrNumeric($1) },
        "489": { $0.refusedOrNumeric($1) },
        "531": { $0.refusedOrNumeric($1) },
    ]

    /// Commands and numerics that change nothing a front end shows.
    static let silent: Set<String> = [
        "PONG", "PING", "CAP", "AUTHENTICATE", "002", "003", "004", "315", "329", "333", "375", "396",
        // MONITOR's other answers: offline (what is held stays held), the list and its end.
        "732", "733",
        // Tags only (typing), labeled-response's empty answer, and changes to people's
        // accounts, hosts and real names: nothing a conversation shows.
        "ACK", "ACCOUNT", "CHGHOST", "SETNAME",
        // Metadata subscriptions' answers.
        "771", "772", "766",
    ]

    mutating func welcome(_ c: MessageContext) {
        welcomeBurst = true
        emit(.status(.registered(nick: c.p.first ?? nick)))
        if let last = c.p.last?.split(separator: " ").last, last.contains("!"), last.contains("@") {
            ownSource = String(last)
        }
        say(ChatLine(time: c.time, kind: .info, text: c.p.last ?? ""), to: .server)
    }

    // JOIN <room>
    mutating func joined(_ c: MessageContext) {
        guard let room = c.p.first else { return }
        let id = ConversationID.room(key(for: room))
        if isMe(c.from) {
            if let source = c.source, source.user != nil, source.host != nil { ownSource = source.description }
            // A rejoin after a drop keeps the old list on screen until NAMES replaces it, and
            // is not news: it does not take the view there (only a room newly joined does).
            let again = book[id]?.awaitingRejoin ?? false
            if !again { joinedAt[id] = c.time }
            emit(.joined(id, name: room, again: again))
            // The server sends the topic (332) after our JOIN if there is one: a topic kept from
            // before (the room gone with a restarted server) must not stay in the header.
            if book[id]?.topic.isEmpty == false { emit(.topic(id, "")) }
            say(ChatLine(time: c.time, kind: .join, sender: c.from, text: again ? "You joined \(room) again" : "You joined \(room)"), to: id)
            return
        }
        guard book[id] != nil else { return }
        emit(.memberJoined(id, Member(nick: c.from)))
        say(ChatLine(time: c.time, kind: .join, sender: c.from, text: "\(c.from) joined \(room)"), to: id)
    }

    // PART <room> [<reason>]
    mutating func parted(_ c: MessageContext) {
        guard let room = c.p.first, case let id = ConversationID.room(key(for: room)), book[id] != nil else { return }
        let reason = c.p.count > 1 && !c.p[1].isEmpty ? " (\(c.p[1]))" : ""
        if isMe(c.from) {
            emit(.left(id))
            say(ChatLine(time: c.time, kind: .part, sender: c.from, text: "You left \(room)\(reason)"), to: id)
        } else {
            emit(.memberLeft(id, nick: c.from))
            say(ChatLine(time: c.time, kind: .part, sender: c.from, text: "\(c.from) left \(room)\(reason)"), to: id)
        }
    }

    // KICK <room> <victim> [<reason>]
    mutating func kicked(_ c: MessageContext) {
        guard c.p.count >= 2, case let id = ConversationID.room(key(for: c.p[0])), book[id] != nil else { return }
        let room = c.p[0], victim = c.p[1]
        let reason = c.p.count > 2 ? " (\(c.p[2]))" : ""
        emit(isMe(victim) ? .left(id) : .memberLeft(id, nick: victim))
        let who = isMe(victim) ? "You were" : "\(victim) was"
        say(ChatLine(time: c.time, kind: .kick, sender: c.from, text: "\(who) kicked from \(room) by \(c.from)\(reason)"), to: id)
    }

    // QUIT [<reason>]
    mutating func quit(_ c: MessageContext) {
        // An empty reason (some servers send "Quit: " for one) says nothing.
        let reason = c.p.first.flatMap { $0.isEmpty || $0 == "Quit: " || $0 == "Quit:" ? nil : " (\($0))" } ?? ""
        // Two server names: a netsplit, said as one (irssi and WeeChat read the reason alike).
        let text = c.p.first.flatMap(Self.netsplit).map { "\(c.from) left in a netsplit (\($0.0) ⇄ \($0.1))" } ?? "\(c.from) quit\(reason)"
        let memberKey = key(for: c.from)
        for id in book.order {
            let inRoom = id.kind == .room && book[id]?.members[memberKey] != nil
            guard inRoom || id == .direct(memberKey) else { continue }
            if inRoom { emit(.memberLeft(id, nick: c.from)) }
            say(ChatLine(time: c.time, kind: .quit, sender: c.from, text: text), to: id)
        }
    }

    /// The two servers a netsplit QUIT names (`hub.example.org leaf.example.org`): two words
    /// with a dot inside each, different, nothing else (irssi's test, less its TLD check).
    static func netsplit(_ reason: String) -> (String, String)? {
        let words = reason.split(separator: " ", omittingEmptySubsequences: false)
        guard words.count == 2, words[0] != words[1] else { return nil }
        for word in words {
            guard let dot = word.firstIndex(of: "."), dot != word.startIndex, word.index(after: dot) != word.endIndex,
                  !word.hasSuffix("."), !word.contains(where: { ":/*!@\u{1b}".contains($0) }) else { return nil }
        }
        return (String(words[0]), String(words[1]))
    }

    // NICK <new>
    mutating func nickChanged(_ c: MessageContext) {
        guard let new = c.p.first else { return }
        let oldKey = key(for: c.from)
        let wasMe = isMe(c.from)
        // Where the line saying so goes: the rooms the person is in and the conversation with
        // them (every room and conversation, when it is us), found before the rename.
        let shared = book.order.filter { id in
            switch id {
            case .room: return wasMe || book[id]?.members[oldKey] != nil
            case .direct(let key): return key == oldKey
            case .server: return wasMe
            }
        }
        emit(wasMe ? .nickChanged(old: c.from, new: new) : .renamed(old: c.from, new: new))
        let from = ConversationID.direct(oldKey), to = ConversationID.direct(key(for: new))
        if from != to, book[from] == nil, book[to] != nil { moveFacts(from: from, to: to) }
        let text = wasMe ? "You are now known as \(new)" : "\(c.from) is now known as \(new)"
        for id in shared {
            var place = id
            if case .direct = id, book[id] == nil { place = .direct(key(for: new)) }
            say(ChatLine(time: c.time, kind: .nick, sender: c.from, text: text), to: place, name: new)
        }
    }

    // TOPIC <room> <topic>
    mutating func topicChanged(_ c: MessageContext) {
        guard c.p.count >= 2, case let id = ConversationID.room(key(for: c.p[0])), book[id] != nil else { return }
        emit(.topic(id, c.p[1]))
        say(ChatLine(time: c.time, kind: .topic, sender: c.from, text: "\(c.from) set the topic: \(c.p[1])"), to: id)
    }

    // 332 <me> <room> <topic>
    mutating func topicReply(_ c: MessageContext) {
        guard c.p.count >= 3, case let id = ConversationID.room(key(for: c.p[1])), book[id] != nil else { return }
        emit(.topic(id, c.p[2]))
        say(ChatLine(time: c.time, kind: .topic, text: "Topic: \(c.p[2])"), to: id)
    }

    // 324 <me> <room> <modestring> <arguments>...: the room's modes, replaced whole.
    mutating func modeReply(_ c: MessageContext) {
        if c.p.count >= 3, case let id = ConversationID.room(key(for: c.p[1])), book[id] != nil {
            applyChannelModes(id, modes: c.p[2], arguments: Array(c.p.dropFirst(3)), replacing: true)
        }
        numericOrUnknown(c)
    }

    // MODE <room> <modestring> <arguments>...
    mutating func modeChanged(_ c: MessageContext) {
        guard c.p.count >= 2, isChannel(c.p[0]), case let id = ConversationID.room(key(for: c.p[0])), book[id] != nil else { return }
        applyChannelModes(id, modes: c.p[1], arguments: Array(c.p.dropFirst(2)), replacing: false)
        say(ChatLine(time: c.time, kind: .mode, sender: c.from, text: "\(c.from) set mode \(c.p.dropFirst().joined(separator: " "))"), to: id)
    }

    // 353 <me> <symbol> <room> :<names>
    mutating func namesReply(_ c: MessageContext) {
        guard c.p.count >= 4 else { return }
        let id = ConversationID.room(key(for: c.p[2]))
        var names = pendingNames[id] ?? [:]
        let symbols = Set(isupport.prefixes.map(\.symbol))
        for entry in c.p[3].split(separator: " ") {
            let prefixes = String(entry.prefix(while: { symbols.contains($0) }))
            // userhost-in-names writes nick!user@host.
            let name = String(entry.dropFirst(prefixes.count).prefix(while: { $0 != "!" }))
            guard !name.isEmpty else { continue }
            names[key(for: name)] = Member(nick: name, prefixes: prefixes)
        }
        pendingNames[id] = names
    }

    // 366 <me> <room> :End of /NAMES list
    mutating func namesEnd(_ c: MessageContext) {
        guard c.p.count >= 2 else { return }
        let id = ConversationID.room(key(for: c.p[1]))
        guard let names = pendingNames.removeValue(forKey: id), book[id] != nil else { return }
        emit(.members(id, names.values.sorted { $0.nick < $1.nick }))
    }

    // 322 <me> <room> <users> :<topic>
    mutating func listReply(_ c: MessageContext) {
        guard c.p.count >= 3, collectingList.count < 10_000 else { return }
        collectingList.append(ListedRoom(name: c.p[1], users: Int(c.p[2]) ?? 0, topic: c.p.count > 3 ? c.p[3] : ""))
    }

    // PRIVMSG|NOTICE <target> <text>
    mutating func privateOrRoomMessage(_ c: MessageContext) {
        guard c.p.count >= 2 else { return }
        // A line of a multiline message: kept until the batch closes (a blank line is a line;
        // a concat line continues the one before it).
        if let reference = c.message.tag("batch"), var batch = multilineBatches[reference] {
            guard batch.text.utf8.count < 64 * 1024, batch.lines < 1000 else { return }
            let concat = c.message.tag("draft/multiline-concat") != nil
            batch.text += (batch.lines == 0 || concat ? "" : "\n") + c.p[1]
            batch.lines += 1
            batch.command = batch.command ?? c.message.command
            multilineBatches[reference] = batch
            return
        }
        let command = c.message.command, target = c.p[0], from = c.from
        // A line of our SEARCH's answer: a hit, not a line said now.
        if let reference = c.message.tag("batch"), searchBatches[reference] != nil {
            guard searchBatches[reference]!.count < 200 else { return }
            var text = c.p[1]
            if text.hasPrefix("\u{1}ACTION ") { text = "* \(from) " + text.dropFirst(8).prefix { $0 != "\u{1}" } }
            var line = ChatLine(time: c.time, kind: command == "NOTICE" ? .notice : .message, sender: from, text: text, isOwn: isMe(from))
            line.msgid = c.msgid
            let id = isChannel(target) ? id(for: target) : id(for: isMe(from) ? target : from)
            searchBatches[reference]!.append(SearchHit(conversation: id, name: isChannel(target) ? target : (isMe(from) ? target : from), line: line))
            return
        }
        var text = c.p[1]
        var kind: ChatLine.Kind = command == "NOTICE" ? .notice : .message
        if text.hasPrefix("\u{1}") {
            let body = text.dropFirst().prefix(while: { $0 != "\u{1}" })
            let verb = body.prefix(while: { $0 != " " }).uppercased()
            if verb == "ACTION" {
                kind = .action
                text = String(body.dropFirst(min(body.count, 7)))
            } else {
                var reply = "CTCP \(verb) reply from \(from): " + body.dropFirst(verb.count).drop { $0 == " " }
                // Our /ctcp PING sent the time in milliseconds: the answer gives the round trip.
                if verb == "PING", let sent = Double(body.dropFirst(5)), sent > 1e12 {
                    // Milliseconds under a second (a LAN's round trip), tenths of seconds above.
                    let ms = max(0, Int((c.time * 1000 - sent).rounded()))
                    reply = "CTCP PING reply from \(from): " + (ms < 1000 ? "\(ms) ms" : "\(ms / 1000).\(ms % 1000 / 100) s")
                }
                // Our own request echoed back (echo-message): the screen said where it was typed.
                // (Our answer to our own request is shown: `/ctcp ME PING`.)
                if isMe(from) && !(command == "NOTICE" && isMe(target)) { return }
                // Our answer to ourselves comes twice too (echo and delivery): shown once.
                if isMe(from), let msgid = c.msgid {
                    guard msgid != lastSelfCTCPReply else { return }
                    lastSelfCTCPReply = msgid
                }
                // A request to us is answered by the client: a line in the server window (as
                // irssi shows them), not a conversation opened with whoever probes us. An answer
                // to our /ctcp goes where it was asked; neither is news for you (no `!`, no notification).
                if command == "PRIVMSG" {
                    say(ChatLine(time: c.time, kind: .info, sender: from, text: "CTCP \(body) from \(from)"), to: .server)
                } else {
                    let asked = replyConversation.flatMap { book[$0] != nil ? $0 : nil }
                    say(ChatLine(time: c.time, kind: .info, sender: from, text: reply), to: asked ?? .direct(key(for: from)), name: asked == nil ? from : nil)
                }
                return
            }
        }
        let own = isMe(from)
        var line = ChatLine(time: c.time, kind: kind, sender: from, text: text, isOwn: own,
                            isHighlight: !own && (!isChannel(target) || mentions(text)))
        line.msgid = c.msgid
        line.replyTo = c.message.tag("+draft/reply") ?? c.message.tag("+reply")
        // Our line came back: the typing notices before it went through.
        if own, c.message.tag("batch") == nil { typingOut.delivered(to: key(for: target)) }
        // Whoever speaks has stopped typing.
        if !own, c.message.tag("batch") == nil {
            let where_ = isChannel(target) ? id(for: target) : id(for: from)
            if book[where_]?.typing[key(for: from)] != nil { emit(.typing(where_, nick: from, nil)) }
        }
        // A line of history: counted for its batch; the last lines shown on joining are old news.
        if let reference = c.message.tag("batch"), let batch = openBatches[reference], batch.type == "chathistory" {
            // Counted for the "N you missed" marker: what others said, not our own lines, nor
            // lines shown already (a gap read from before our unconfirmed lines repeats some).
            if !own, !(batch.target.flatMap { book[$0] }?.contains(msgid: c.msgid) ?? false) { openBatches[reference]!.lines += 1 }
            openBatches[reference]!.all += 1
            if let msgid = c.msgid { openBatches[reference]!.last = msgid }
            line.isHistory = true
            if let id = batch.target, !isGap(historyRequests[id]) {
                // Said after what we last saw (the read marker, or the newest line we had shown):
                // missed while away, so news; older lines on joining are old news.
                let seen = book[id]?.readMarker ?? seenUntil[id]
                if own || seen.map({ c.time <= $0 }) ?? true {
                    line.isHighlight = false
                    line.isOldNews = true
                }
            }
        }
        // A server notice (no nick!user@host source) before or around registration goes to the server window.
        if c.source?.user == nil && !own && !isChannel(target) {
            line.isHighlight = false
            say(line, to: .server)
            return
        }
        // A service's answer (ChanServ's to /register, NickServ's…) is shown where the user asked,
        // as irssi and WeeChat show it in the active window, not as a new direct conversation.
        // (In a conversation with the service when the user talks to it there: /msg ChanServ.)
        if command == "NOTICE" && !own && !isChannel(target) && Self.serviceNicks.contains(key(for: from)) && book[id(for: from)] == nil {
            line.isHighlight = false
            say(line, to: replyConversation ?? .server)
            return
        }
        // Anyone else's private notice opens no conversation either (irssi shows it in the active
        // window): it is shown in the conversation on screen, or in the one with them if there is one.
        if command == "NOTICE" && !own && !isChannel(target) && book[id(for: from)] == nil {
            // Shown where one looks, so not a highlight of that room (nor listed by /highlights as said there).
            line.isHighlight = false
            say(line, to: lookingAt.flatMap { book[$0] != nil ? $0 : nil } ?? .server)
            return
        }
        let name = isChannel(target) || own ? target : from
        say(line, to: id(for: name), name: name)
    }

    /// The services' nicknames every network uses (folded).
    static let serviceNicks: Set<String> = ["chanserv", "nickserv", "memoserv", "operserv", "hostserv", "botserv"]

    /// Whether `text` names us as a word.
    /// Whether `text` holds `/files/` (the host's shared files' paths).
    static func holdsFilesPath(_ text: String) -> Bool {
        let needle = Array("/files/".utf8)
        func search(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
            guard bytes.count >= needle.count else { return false }
            return (0...(bytes.count - needle.count)).contains { start in
                bytes[start] == needle[0] && bytes[start..<start + needle.count].elementsEqual(needle)
            }
        }
        return text.utf8.withContiguousStorageIfAvailable(search) ?? Array(text.utf8).withUnsafeBufferPointer(search)
    }

    public func mentions(_ text: String) -> Bool {
        mentionsNick(text) || highlights.matches(text)
    }

    func mentionsNick(_ text: String) -> Bool {
        let me = key(for: nick)
        // Most lines do not hold the nickname at all: found out over bytes.
        guard book.casemapping.mayHold(me, in: text) else { return false }
        var word = ""
        for character in text + " " {
            if character.isLetter || character.isNumber || IRCNames.nickSpecials.contains(character) {
                word.append(character)
            } else {
                if !word.isEmpty && key(for: word) == me { return true }
                word = ""
            }
        }
        return false
    }

    mutating func setAway(_ nick: String, away: Bool) {
        let memberKey = key(for: nick)
        for id in book.order {
            guard var member = book[id]?.members[memberKey], member.isAway != away else { continue }
            member.isAway = away
            emit(.memberChanged(id, member))
        }
    }

    /// Applies a room's MODE (or 324) with the server's own mode syntax (IRCWire's `ModeSyntax`
    /// from CHANMODES and PREFIX): member statuses change prefixes, `k`/`l` and flags are kept,
    /// list changes (`+b`) are only shown.
    mutating func applyChannelModes(_ id: ConversationID, modes: String, arguments: [String], replacing: Bool) {
        guard let room = book[id] else { return }
        let syntax = ModeSyntax(isupport: isupport)
        let prefixModes = isupport.prefixes
        var flags = replacing ? [:] : room.modes
        for change in syntax.parse(modes, arguments: arguments).changes {
            switch syntax.kinds[change.letter] {
            case .membership?:
                guard let target = change.argument, let rank = prefixModes.firstIndex(where: { $0.mode == change.letter }),
                      var member = book[id]?.members[key(for: target)] else { continue }
                var set = Set(member.prefixes)
                if change.adding { set.insert(prefixModes[rank].symbol) } else { set.remove(prefixModes[rank].symbol) }
                member.prefixes = String(prefixModes.map(\.symbol).filter { set.contains($0) })
                emit(.memberChanged(id, member))
            case .list?:
                continue
            default:
                flags[change.letter] = change.adding ? (change.argument ?? "") : nil
            }
        }
        if flags != room.modes { emit(.modes(id, flags)) }
    }

    mutating func numericOrUnknown(_ c: MessageContext) {
        let message = c.message, p = c.p
        // Numerics: drop our own nick (the first parameter); errors go to the conversation they are about when it is open.
        guard message.numeric != nil || message.command.allSatisfy(\.isNumber) else {
            // A command this client does not know: its words, not the raw line.
            let text = p.last.map { "the server says: \($0) (\(message.command))" } ?? "the server sent \(message.command)"
            say(ChatLine(time: c.time, kind: .info, text: text), to: .server)
            return
        }
        // The user counts of the welcome: noise then; an answer to /quote LUSERS after it.
        if welcomeBurst, ["251", "252", "253", "254", "255", "265", "266"].contains(message.command) { return }
        let rest = Array(p.dropFirst())
        // A room that refuses us for good (banned, no such room, a name it does not take) is no
        // longer one to join again at the next start or reconnect; full or invite-only may change.
        if ["403", "474", "476", "479"].contains(message.command), let room = rest.first,
           book[id(for: room)]?.isJoined != true {
            let refused = key(for: room), mapping = casemapping
            wantedRooms.removeAll { mapping.fold($0) == refused }
        }
        let isError = (message.command.hasPrefix("4") || message.command.hasPrefix("5")) && message.command != "422"
        let text: String
        switch message.command {
        case "372", "375", "422", "251", "255", "265", "266":
            text = rest.last ?? ""
        case let code where ["252", "253", "254"].contains(code) && rest.count >= 2:
            text = "\(rest[0]) \(rest[1])"
        case "221":
            text = "Your modes: \(rest.first ?? "none")"
        case "391" where rest.count >= 2:
            text = "Time on \(rest[0]): \(rest.last!)"
        case "301":
            text = rest.count >= 2 ? "\(rest[0]) is away: \(rest[1])" : rest.joined(separator: " ")
        case "760" where rest.count >= 4:
            // WHOIS: a key of their metadata (draft/metadata-2): "bob's pronouns: he/him".
            text = "\(rest[0])'s \(rest[1]): \(rest[3])"
        case "311" where rest.count >= 5:
            text = "\(rest[0]) is \(rest[1])@\(rest[2]) (\(rest[4]))"
        case "312" where rest.count >= 3:
            text = "\(rest[0]) is on \(rest[1]) (\(rest[2]))"
        case "319" where rest.count >= 2:
            text = "\(rest[0]) is in \(rest[1])"
        case "317" where rest.count >= 3:
            text = "\(rest[0]) has been idle \(rest[1]) s"
        case "367" where rest.count >= 2, "346" where rest.count >= 2, "348" where rest.count >= 2:
            // A ban (invite, exception) list entry: "#room mask set by alice on 2026-12-05 18:21 UTC".
            var entry = "\(rest[0]) \(rest[1])"
            if rest.count >= 3 { entry += " set by \(rest[2])" }
            if rest.count >= 4, let seconds = Double(rest[3]) { entry += " on " + String(ServerTime.format(seconds).prefix(16).map { $0 == "T" ? " " : $0 }) + " UTC" }
            text = entry
        default:
            // `<subject> :<explanation>` reads best as "subject: explanation".
            text = rest.count >= 2 ? rest.dropLast().joined(separator: " ") + ": " + rest.last! : rest.joined(separator: " ")
        }
        // A reply to what the user typed goes where they typed it (a 433 for `/nick bob` is not
        // news for the conversation with bob); anything else to the conversation it names.
        var place = ConversationID.server
        if let asked = replyConversation, Self.queryReplies.contains(message.command), book[asked] != nil {
            place = asked
        } else if let about = rest.first, rest.count > 1, book[id(for: about)] != nil {
            place = id(for: about)
        }
        say(ChatLine(time: c.time, kind: isError ? .error : .info, text: text), to: place)
    }

    // MARK: Modern messaging

    /// A multiline message closed: one message, with its lines joined by newlines, handled as
    /// any PRIVMSG or NOTICE with the batch's tags (its msgid, time, the history batch it is in).
    mutating func finishMultiline(_ opening: IRCMessage, command: String, text: String, now: Double) {
        guard opening.params.count > 2, !text.isEmpty else { return }
        let message = IRCMessage(tags: opening.tags, source: opening.source, command: command, params: [opening.params[2], text])
        let context = MessageContext(message: message, now: now)
        if command == "PRIVMSG" { confirmEcho(context) }
        privateOrRoomMessage(context)
    }

    /// The conversation a tagged message or a deletion belongs to: the room, or the person
    /// (the other side when it is ours).
    func conversationOf(target: String, from: String) -> ConversationID {
        isChannel(target) ? id(for: target) : id(for: isMe(from) ? target : from)
    }

    // TAGMSG <target>: typing (+typing), reactions (+draft/react, +draft/unreact with +draft/reply).
    mutating func tagMessage(_ c: MessageContext) {
        guard let target = c.p.first, !c.from.isEmpty else { return }
        let id = conversationOf(target: target, from: c.from)
        if let state = c.message.tag("+typing"), !isMe(c.from), c.message.tag("batch") == nil {
            let now: Typing? = state == "active" || state == "paused" ? Typing(nick: c.from, paused: state == "paused", time: c.time) : nil
            // Said again only when it changes (an `active` comes every 3 seconds while typing).
            let before = book[id]?.typing[key(for: c.from)]
            if before?.paused != now?.paused || (before == nil) != (now == nil) || (now != nil && !(before?.current(at: c.time) ?? false)) {
                emit(.typing(id, nick: c.from, now))
            }
        }
        guard let parent = c.message.tag("+draft/reply") ?? c.message.tag("+reply") else { return }
        // An emoji is a few characters with nothing invisible or controlling in them.
        func valid(_ emoji: String) -> Bool { !emoji.isEmpty && emoji.count <= 4 && emoji.unicodeScalars.allSatisfy { $0.value >= 0x20 && !(0x7F...0x9F).contains($0.value) } }
        if let emoji = c.message.tag("+draft/react"), valid(emoji) {
            emit(.reaction(id, msgid: parent, emoji: emoji, nick: c.from, added: true))
        } else if let emoji = c.message.tag("+draft/unreact"), valid(emoji) {
            emit(.reaction(id, msgid: parent, emoji: emoji, nick: c.from, added: false))
        }
    }

    // REDACT <target> <msgid> [:<reason>]
    mutating func redact(_ c: MessageContext) {
        guard c.p.count >= 2, !c.from.isEmpty else { return }
        emit(.redacted(conversationOf(target: c.p[0], from: c.from), msgid: c.p[1], by: c.from))
    }

    // RENAME <old> <new> :<reason>
    mutating func roomRenamed(_ c: MessageContext) {
        guard c.p.count >= 2 else { return }
        let old = id(for: c.p[0]), new = id(for: c.p[1])
        guard book[old] != nil else { return }
        if old != new { moveFacts(from: old, to: new) }
        // Rejoined after a reconnect under its new name.
        if let index = wantedRooms.firstIndex(where: { key(for: $0) == key(for: c.p[0]) }) { wantedRooms[index] = c.p[1] }
        emit(.roomRenamed(old, to: new, name: c.p[1]))
        let reason = c.p.count > 2 && !c.p[2].isEmpty ? ": \(c.p[2])" : ""
        say(ChatLine(time: c.time, kind: .info, text: "\(c.from) renamed the room \(c.p[0]) to \(c.p[1])\(reason)"), to: new)
    }

    /// draft/metadata-2: a person's key set or removed (a room's keys are not shown).
    mutating func profile(_ target: String, key: String, value: String?) {
        guard !isChannel(target), target != "*", key.utf8.count <= 64 else { return }
        let who = isMe(target) ? nick : target
        guard book.profiles[self.key(for: who)]?[key] != value else { return }
        emit(.profile(nick: who, key: key, value: value.map { String($0.prefix(300)) }))
    }
}
