import IRCWire

/// Everything a front end shows, as a value: conversations with their lines, members and
/// topics, kept current by folding in each message from the server. No I/O.
public struct ClientState: Sendable {
    /// Our nickname as the server knows it.
    public var nick: String
    public var isupport = ISupport()
    public var isRegistered = false
    /// We are marked away (306), until 305.
    public var isAway = false
    /// The last LIST's rooms (322 lines, complete at 323), for the /list picker.
    public private(set) var roomList: [ListedRoom] = []
    private var collectingList: [ListedRoom] = []
    /// Capabilities the server acknowledged.
    public var capabilities: Set<String> = []
    /// Folded name to conversation.
    public private(set) var conversations: [String: Conversation] = [:]
    /// Conversation keys in the order they were opened.
    public private(set) var order: [String] = []
    public var scrollbackLimit: Int
    /// `nick!user@host` as the server sees us, once known (for message splitting).
    public var ownSource: String?
    /// Where replies to the user's last query go (the conversation it was typed in), as irssi
    /// shows a /whois in the window where you asked. Nil: the server window.
    public var replyConversation: String?
    /// Numerics that answer a user's query or command.
    static let queryReplies: Set<String> = [
        "301", "311", "312", "313", "317", "318", "319", "330", "338", "378", "671", "352", "315",
        "324", "329", "367", "368", "341", "401", "402", "403", "404", "406", "421", "441", "442",
        "443", "461", "472", "479", "482", "502",
        // /nick refused, /away confirmed, /invite and /mode answers: where they were typed.
        "432", "433", "436", "437", "305", "306", "346", "347", "348", "349", "221", "354",
        "471", "473", "474", "475", "476", "478", "501", "525", "696",
    ]
    /// Conversations marked "connection lost", to be marked "connected again".
    private var droppedSince: Set<String> = []
    /// Names collected from 353 until 366 ends the list.
    private var pendingNames: [String: [String: Member]] = [:]

    public static let serverKey = "*"

    public init(nick: String, scrollbackLimit: Int = 10_000) {
        self.nick = nick
        self.scrollbackLimit = scrollbackLimit
        open(name: "server", kind: .server, key: Self.serverKey)
    }

    /// The server's CASEMAPPING, folded as our server folds it (non-ASCII letters by Unicode).
    public var casemapping: Casemapping { isupport.casemapping }

    public func key(for name: String) -> String { casemapping.fold(name) }

    public func isChannel(_ name: String) -> Bool { IRCNames.isChannel(name, types: isupport.channelTypes) }

    public func conversation(_ name: String) -> Conversation? { conversations[key(for: name)] }

    public var rooms: [Conversation] { order.compactMap { conversations[$0] }.filter { $0.kind == .room } }

    public var joinedRooms: [String] { rooms.filter(\.isJoined).map(\.name) }

    /// The conversations in the order they were opened.
    public var orderedConversations: [Conversation] { order.compactMap { conversations[$0] } }

    public func isMe(_ nick: String) -> Bool { key(for: nick) == key(for: self.nick) }

    // MARK: Changes a front end makes

    @discardableResult
    public mutating func open(name: String, kind: Conversation.Kind, key explicitKey: String? = nil) -> String {
        let key = explicitKey ?? self.key(for: name)
        if conversations[key] == nil {
            conversations[key] = Conversation(name: name, kind: kind, scrollbackLimit: scrollbackLimit)
            order.append(key)
        }
        return key
    }

    public mutating func close(_ name: String) {
        let key = key(for: name)
        guard key != Self.serverKey else { return }
        conversations.removeValue(forKey: key)
        order.removeAll { $0 == key }
    }

    public mutating func markRead(_ name: String) {
        conversations[key(for: name)]?.markRead()
    }

    public mutating func clear(_ name: String) {
        conversations[key(for: name)]?.clearLines()
    }

    /// Adds a line to a conversation (opening a direct one if needed) and returns the event for it.
    @discardableResult
    public mutating func add(_ line: ChatLine, to name: String) -> ClientEvent {
        let key: String
        if name == Self.serverKey || name == "server" {
            key = Self.serverKey
        } else if conversations[self.key(for: name)] != nil {
            key = self.key(for: name)
        } else {
            key = open(name: name, kind: isChannel(name) ? .room : .direct)
        }
        conversations[key]!.append(line)
        return .line(conversation: conversations[key]!.name, line)
    }

    /// A held line is about to be sent: it goes, and the sent one takes its place at the end.
    public mutating func removePending(_ text: String, in target: String) {
        let key = self.key(for: target)
        conversations[key]?.removePending(text)
    }

    /// Our own message, shown at once when the server will not echo it.
    public mutating func addOwn(text: String, to target: String, kind: ChatLine.Kind, now: Double) -> ClientEvent {
        add(ChatLine(time: now, kind: kind, sender: nick, text: text, isOwn: true), to: target)
    }

    /// The connection is gone: rooms stay (to be rejoined) with their member lists as they were,
    /// shown greyed until NAMES replaces them. When we had been registered, every room and
    /// direct conversation gets a line marking where the connection dropped.
    public mutating func connectionLost(reason: String = "", now: Double = 0) -> [ClientEvent] {
        let wasRegistered = isRegistered
        isRegistered = false
        capabilities = []
        pendingNames = [:]
        var events: [ClientEvent] = []
        for key in order {
            guard let kind = conversations[key]?.kind, kind != .server else { continue }
            if kind == .room {
                guard conversations[key]!.isJoined || conversations[key]!.awaitingRejoin else { continue }
                conversations[key]!.isJoined = false
                conversations[key]!.awaitingRejoin = true
            }
            if wasRegistered {
                let text = "── connection lost" + (reason.isEmpty ? "" : " (\(reason))") + "; what you type is held until it is back ──"
                conversations[key]!.append(ChatLine(time: now, kind: .info, text: text))
                events.append(.line(conversation: conversations[key]!.name, conversations[key]!.lines.last!))
                droppedSince.insert(key)
            }
        }
        return events
    }

    /// Registered again after a drop: the conversations marked then get a line saying so.
    public mutating func connectionBack(now: Double) -> [ClientEvent] {
        var events: [ClientEvent] = []
        for key in order where droppedSince.contains(key) {
            guard conversations[key] != nil else { continue }
            conversations[key]!.append(ChatLine(time: now, kind: .info, text: "── connected again ──"))
            events.append(.line(conversation: conversations[key]!.name, conversations[key]!.lines.last!))
        }
        droppedSince = []
        return events
    }

    // MARK: Folding server messages

    /// Applies one message from the server and returns what changed, for the front end.
    public mutating func apply(_ message: IRCMessage, now: Double) -> [ClientEvent] {
        let time = message.tag("time").flatMap(ServerTime.parse) ?? now
        let source = message.source.map(IRCSource.init(parsing:))
        let from = source?.nick ?? ""
        let p = message.params
        switch message.command {
        case "001":
            isRegistered = true
            if let first = p.first { nick = first }
            if let last = p.last?.split(separator: " ").last, last.contains("!"), last.contains("@") {
                ownSource = String(last)
            }
            return [add(ChatLine(time: time, kind: .info, text: p.last ?? ""), to: Self.serverKey)]
        case "005":
            isupport.apply(message)
            return []
        case "JOIN":
            guard let room = p.first else { return [] }
            if isMe(from) {
                if let source, source.user != nil, source.host != nil { ownSource = source.description }
                let key = open(name: room, kind: .room)
                conversations[key]!.name = room
                conversations[key]!.isJoined = true
                // A rejoin after a drop keeps the old list on screen until NAMES replaces it, and
                // is not news: it does not take the view there (only a room newly joined does).
                let rejoin = conversations[key]!.awaitingRejoin
                if !rejoin { conversations[key]!.members = [:] }
                conversations[key]!.awaitingRejoin = false
                if rejoin {
                    return [add(ChatLine(time: time, kind: .join, sender: from, text: "You joined \(room) again"), to: room),
                            .membersChanged(conversation: room)]
                }
                return [.conversationOpened(room), add(ChatLine(time: time, kind: .join, sender: from, text: "You joined \(room)"), to: room)]
            }
            let key = key(for: room)
            guard conversations[key] != nil else { return [] }
            conversations[key]!.members[self.key(for: from)] = Member(nick: from)
            return [add(ChatLine(time: time, kind: .join, sender: from, text: "\(from) joined \(room)"), to: room),
                    .membersChanged(conversation: room)]
        case "PART":
            guard let room = p.first, conversations[key(for: room)] != nil else { return [] }
            let reason = p.count > 1 && !p[1].isEmpty ? " (\(p[1]))" : ""
            if isMe(from) {
                conversations[key(for: room)]!.isJoined = false
                conversations[key(for: room)]!.awaitingRejoin = false
                conversations[key(for: room)]!.members = [:]
                return [add(ChatLine(time: time, kind: .part, sender: from, text: "You left \(room)\(reason)"), to: room),
                        .membersChanged(conversation: room)]
            }
            conversations[key(for: room)]!.members.removeValue(forKey: key(for: from))
            return [add(ChatLine(time: time, kind: .part, sender: from, text: "\(from) left \(room)\(reason)"), to: room),
                    .membersChanged(conversation: room)]
        case "KICK":
            guard p.count >= 2, conversations[key(for: p[0])] != nil else { return [] }
            let room = p[0], victim = p[1]
            let reason = p.count > 2 ? " (\(p[2]))" : ""
            if isMe(victim) {
                conversations[key(for: room)]!.isJoined = false
                conversations[key(for: room)]!.awaitingRejoin = false
                conversations[key(for: room)]!.members = [:]
            } else {
                conversations[key(for: room)]!.members.removeValue(forKey: key(for: victim))
            }
            let who = isMe(victim) ? "You were" : "\(victim) was"
            return [add(ChatLine(time: time, kind: .kick, sender: from, text: "\(who) kicked from \(room) by \(from)\(reason)"), to: room),
                    .membersChanged(conversation: room)]
        case "QUIT":
            let reason = p.first.map { " (\($0))" } ?? ""
            var events: [ClientEvent] = []
            for key in order {
                guard let conversation = conversations[key] else { continue }
                let inRoom = conversation.kind == .room && conversation.members[self.key(for: from)] != nil
                let isQuery = conversation.kind == .direct && key == self.key(for: from)
                guard inRoom || isQuery else { continue }
                conversations[key]!.members.removeValue(forKey: self.key(for: from))
                conversations[key]!.append(ChatLine(time: time, kind: .quit, sender: from, text: "\(from) quit\(reason)"))
                events.append(.line(conversation: conversation.name, conversations[key]!.lines.last!))
                if inRoom { events.append(.membersChanged(conversation: conversation.name)) }
            }
            return events
        case "NICK":
            guard let new = p.first else { return [] }
            var events: [ClientEvent] = []
            let oldKey = key(for: from)
            let wasMe = isMe(from)
            if wasMe {
                nick = new
                events.append(.nickChanged(old: from, new: new))
            } else {
                events.append(.renamed(old: from, new: new))
            }
            let text = wasMe ? "You are now known as \(new)" : "\(from) is now known as \(new)"
            let newKey = self.key(for: new)
            // Every conversation is changed in place: a copy of one (`var c = conversations[k]`)
            // and its write back copied the whole scrollback on each NICK (27 s of CPU for
            // 100,000 renames); now a rename costs a lookup per conversation and a line per
            // conversation the renamed person is in.
            for key in order {
                guard let kind = conversations[key]?.kind else { continue }
                let inRoom = kind == .room && conversations[key]?.members[oldKey] != nil
                let isQuery = kind == .direct && key == oldKey
                guard inRoom || isQuery || (wasMe && kind != .direct) else { continue }
                if var member = conversations[key]!.members.removeValue(forKey: oldKey) {
                    member.nick = new
                    conversations[key]!.members[newKey] = member
                }
                conversations[key]!.append(ChatLine(time: time, kind: .nick, sender: from, text: text))
                var name = conversations[key]!.name
                if isQuery && conversations[newKey] == nil {
                    // The direct conversation follows the person to their new name.
                    var moved = conversations.removeValue(forKey: key)!
                    moved.name = new
                    name = new
                    conversations[newKey] = moved
                    if let index = order.firstIndex(of: key) { order[index] = newKey }
                    events.append(.line(conversation: name, conversations[newKey]!.lines.last!))
                } else {
                    events.append(.line(conversation: name, conversations[key]!.lines.last!))
                }
                if inRoom { events.append(.membersChanged(conversation: name)) }
            }
            return events
        case "PRIVMSG", "NOTICE":
            guard p.count >= 2 else { return [] }
            return [privateOrRoomMessage(message.command, from: source, target: p[0], text: p[1], time: time)].compactMap { $0 }
        case "TOPIC":
            guard p.count >= 2, conversations[key(for: p[0])] != nil else { return [] }
            conversations[key(for: p[0])]!.topic = p[1]
            return [add(ChatLine(time: time, kind: .topic, sender: from, text: "\(from) set the topic: \(p[1])"), to: p[0]),
                    .topicChanged(conversation: p[0], topic: p[1])]
        case "332":
            guard p.count >= 3, conversations[key(for: p[1])] != nil else { return [] }
            conversations[key(for: p[1])]!.topic = p[2]
            return [add(ChatLine(time: time, kind: .topic, text: "Topic: \(p[2])"), to: p[1]),
                    .topicChanged(conversation: p[1], topic: p[2])]
        case "305", "306":
            isAway = message.command == "306"
            return [numericOrUnknown(message, time: time)]
        case "324":
            // <me> <room> <modestring> <arguments>...: the room's modes, replaced whole.
            if p.count >= 3, conversations[key(for: p[1])] != nil {
                conversations[key(for: p[1])]!.modes = [:]
                applyChannelModes(room: p[1], modes: p[2], arguments: Array(p.dropFirst(3)))
            }
            return [numericOrUnknown(message, time: time)]
        case "353":
            guard p.count >= 4 else { return [] }
            let roomKey = key(for: p[2])
            var names = pendingNames[roomKey] ?? [:]
            let symbols = Set(isupport.prefixes.map(\.symbol))
            for entry in p[3].split(separator: " ") {
                let prefixes = String(entry.prefix(while: { symbols.contains($0) }))
                // userhost-in-names writes nick!user@host.
                let name = String(entry.dropFirst(prefixes.count).prefix(while: { $0 != "!" }))
                guard !name.isEmpty else { continue }
                names[key(for: name)] = Member(nick: name, prefixes: prefixes)
            }
            pendingNames[roomKey] = names
            return []
        case "321":
            collectingList = []
            return []
        case "322":
            // <me> <room> <users> :<topic>
            guard p.count >= 3 else { return [] }
            if collectingList.count < 10_000 {
                collectingList.append(ListedRoom(name: p[1], users: Int(p[2]) ?? 0, topic: p.count > 3 ? p[3] : ""))
            }
            return []
        case "323":
            roomList = collectingList
            collectingList = []
            return [.roomListReady(count: roomList.count)]
        case "366":
            guard p.count >= 2 else { return [] }
            let roomKey = key(for: p[1])
            guard let names = pendingNames.removeValue(forKey: roomKey), conversations[roomKey] != nil else { return [] }
            conversations[roomKey]!.members = names
            return [.membersChanged(conversation: conversations[roomKey]!.name)]
        case "MODE":
            guard p.count >= 2, isChannel(p[0]), conversations[key(for: p[0])] != nil else { return [] }
            applyChannelModes(room: p[0], modes: p[1], arguments: Array(p.dropFirst(2)))
            let text = "\(from) set mode \(p.dropFirst().joined(separator: " "))"
            return [add(ChatLine(time: time, kind: .mode, sender: from, text: text), to: p[0]),
                    .membersChanged(conversation: p[0])]
        case "AWAY":
            return setAway(from, away: !(p.first ?? "").isEmpty)
        case "352":
            // WHO reply: <me> <channel> <user> <host> <server> <nick> <H|G>[*][@+] :<hops> <real name>
            guard p.count >= 7 else { return [] }
            return setAway(p[5], away: p[6].hasPrefix("G"))
        case "PONG", "PING", "CAP", "002", "003", "004", "251", "252", "253", "254", "255", "265", "266",
             "315", "329", "333", "375", "376", "396":
            return []
        case "ERROR":
            return [add(ChatLine(time: time, kind: .error, text: p.first ?? "closing"), to: Self.serverKey)]
        default:
            return [numericOrUnknown(message, time: time)]
        }
    }

    mutating func privateOrRoomMessage(_ command: String, from source: IRCSource?, target: String, text rawText: String, time: Double) -> ClientEvent? {
        let from = source?.nick ?? ""
        var text = rawText
        var kind: ChatLine.Kind = command == "NOTICE" ? .notice : .message
        if text.hasPrefix("\u{1}") {
            let body = text.dropFirst().prefix(while: { $0 != "\u{1}" })
            let verb = body.prefix(while: { $0 != " " }).uppercased()
            if verb == "ACTION" {
                kind = .action
                text = String(body.dropFirst(min(body.count, 7)))
            } else if command == "PRIVMSG" {
                return add(ChatLine(time: time, kind: .info, sender: from, text: "CTCP \(body) from \(from)"), to: from)
            } else {
                return add(ChatLine(time: time, kind: .notice, sender: from, text: "CTCP reply \(body)"), to: from)
            }
        }
        let own = isMe(from)
        // A server notice (no nick!user@host source) before or around registration goes to the server window.
        if source?.user == nil && !own && !isChannel(target) {
            return add(ChatLine(time: time, kind: .notice, sender: from, text: text), to: Self.serverKey)
        }
        let conversation: String
        if isChannel(target) {
            conversation = target
        } else if own {
            conversation = target
        } else {
            conversation = from
        }
        let highlight = !own && (!isChannel(target) || mentions(text))
        return add(ChatLine(time: time, kind: kind, sender: from, text: text, isOwn: own, isHighlight: highlight), to: conversation)
    }

    /// Whether `text` names us as a word.
    public func mentions(_ text: String) -> Bool {
        let me = key(for: nick)
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

    mutating func setAway(_ nick: String, away: Bool) -> [ClientEvent] {
        let memberKey = key(for: nick)
        var events: [ClientEvent] = []
        for key in order where conversations[key]?.members[memberKey] != nil {
            guard conversations[key]!.members[memberKey]!.isAway != away else { continue }
            conversations[key]!.members[memberKey]!.isAway = away
            events.append(.membersChanged(conversation: conversations[key]!.name))
        }
        return events
    }

    /// Applies a room's MODE (or 324) with the server's own mode syntax (IRCWire's `ModeSyntax`
    /// from CHANMODES and PREFIX): member statuses change prefixes, `k`/`l` and flags are kept,
    /// list changes (`+b`) are only shown.
    mutating func applyChannelModes(room: String, modes: String, arguments: [String]) {
        let roomKey = key(for: room)
        guard conversations[roomKey] != nil else { return }
        let syntax = ModeSyntax(isupport: isupport)
        let prefixModes = isupport.prefixes
        for change in syntax.parse(modes, arguments: arguments).changes {
            switch syntax.kinds[change.letter] {
            case .membership?:
                guard let target = change.argument, let rank = prefixModes.firstIndex(where: { $0.mode == change.letter }),
                      var member = conversations[roomKey]!.members[key(for: target)] else { continue }
                var set = Set(member.prefixes)
                if change.adding { set.insert(prefixModes[rank].symbol) } else { set.remove(prefixModes[rank].symbol) }
                member.prefixes = String(prefixModes.map(\.symbol).filter { set.contains($0) })
                conversations[roomKey]!.members[key(for: target)] = member
            case .list?:
                continue
            default:
                conversations[roomKey]!.modes[change.letter] = change.adding ? (change.argument ?? "") : nil
            }
        }
    }

    mutating func numericOrUnknown(_ message: IRCMessage, time: Double) -> ClientEvent {
        let p = message.params
        // Numerics: drop our own nick (the first parameter); errors go to the conversation they are about when it is open.
        guard message.numeric != nil || message.command.allSatisfy(\.isNumber) else {
            return add(ChatLine(time: time, kind: .info, text: message.line), to: Self.serverKey)
        }
        let rest = Array(p.dropFirst())
        let isError = (message.command.hasPrefix("4") || message.command.hasPrefix("5")) && message.command != "422"
        let text: String
        switch message.command {
        case "372", "375", "422", "251", "255":
            text = rest.last ?? ""
        case "301":
            text = rest.count >= 2 ? "\(rest[0]) is away: \(rest[1])" : rest.joined(separator: " ")
        case "311" where rest.count >= 5:
            text = "\(rest[0]) is \(rest[1])@\(rest[2]) (\(rest[4]))"
        case "312" where rest.count >= 3:
            text = "\(rest[0]) is on \(rest[1]) (\(rest[2]))"
        case "319" where rest.count >= 2:
            text = "\(rest[0]) is in \(rest[1])"
        case "317" where rest.count >= 3:
            text = "\(rest[0]) has been idle \(rest[1]) s"
        default:
            // `<subject> :<explanation>` reads best as "subject: explanation".
            text = rest.count >= 2 ? rest.dropLast().joined(separator: " ") + ": " + rest.last! : rest.joined(separator: " ")
        }
        // A reply to what the user typed goes where they typed it (a 433 for `/nick bob` is not
        // news for the conversation with bob); anything else to the conversation it names.
        var target = Self.serverKey
        if let asked = replyConversation, Self.queryReplies.contains(message.command), conversations[key(for: asked)] != nil {
            target = asked
        } else if let about = rest.first, conversations[key(for: about)] != nil, rest.count > 1 {
            target = about
        }
        return add(ChatLine(time: time, kind: isError ? .error : .info, text: text), to: target)
    }
}
