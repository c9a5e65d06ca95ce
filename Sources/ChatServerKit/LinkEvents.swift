import ChatLink
import ChatTransport
import IRCWire

/// What other servers tell us once linked: each line changes our state as the same event from
/// a local user would, is delivered to our users in client form, and goes on to the other
/// links (the spanning tree: never back where it came from).
extension ServerState {
    mutating func networkEvent(_ message: IRCMessage, from link: LinkSession, now: Double) {
        let origin = link.connection
        switch message.command {
        case "PING":
            // `:<from> PING <to>`: ours to answer, or passed towards <to>.
            let target = message.params.last ?? sid
            if target == sid || casemapping.equal(target, config.name) {
                // InspIRCd's form: `:<us> PONG <them>`.
                sendLink(link, IRCMessage(source: sid, command: "PONG", params: [message.source ?? link.server?.sid ?? ""]))
            } else if let server = net.servers[target], let next = net.links[server.route], next.connection != origin {
                sendLink(next, message)
            }
            return
        case "PONG":
            if let target = message.params.last, target != sid, let server = net.servers[target], let next = net.links[server.route], next.connection != origin {
                sendLink(next, message)
            }
            return
        case "ERROR":
            log("link \(link.name): ERROR: \(message.params.first ?? "")")
            dropLink(link, reason: message.params.first ?? "ERROR", now: now, tellPeer: false)
            return
        case "PRIVMSG", "NOTICE", "TAGMSG":
            remoteMessage(message, from: link, now: now)
            return
        case "BURST":
            return
        case "HISTORYROW", "HISTORYEND":
            // Between two chat-tui servers only, and never passed on.
            splitHistoryLine(message, from: link)
            return
        case "ENDBURST":
            if message.source == link.server?.sid {
                log("link \(link.name): burst received (\(link.server.map { $0.users.count } ?? 0) users)")
                offerSplitHistory(link)
            }
        case "SERVER":
            // A server we cannot take (its SID is in use) drops the link: nothing to pass on.
            guard remoteServer(message, from: link, now: now) else { return }
        case "SQUIT":
            if let target = message.params.first, let server = net.servers[target] {
                split(server, reason: message.params.count > 1 ? message.params[1] : "", now: now, origin: origin)
            }
            return
        case "UID": remoteUID(message, from: link, now: now)
        case "FJOIN": remoteFJOIN(message, from: link, now: now)
        case "IJOIN": remoteIJOIN(message, now: now)
        case "PART":
            if let user = remoteSource(message), let name = message.params.first, let (key, channel) = channel(named: name),
               roomBook.membership.isMember(user.id, of: key) {
                var params = [channel.name]
                if message.params.count > 1, !message.params[1].isEmpty { params.append(message.params[1]) }
                deliver(IRCMessage(tags: accountTags(user), source: user.prefix, command: "PART", params: params), toRoom: key, now: now)
                removeMember(user.id, from: key)
            }
        case "QUIT":
            if let user = remoteSource(message) { removeRemoteUser(user, reason: message.params.first ?? "", now: now) }
        case "KILL":
            remoteKill(message, from: link, now: now)
            return
        case "NICK": remoteNick(message, now: now)
        case "SAVE": remoteSave(message, from: link, now: now)
        case "KICK": remoteKick(message, now: now)
        case "FMODE": remoteFMODE(message, now: now)
        case "MODE": remoteUserMode(message)
        case "FTOPIC", "TOPIC": remoteTopic(message, now: now)
        case "AWAY":
            if let user = remoteSource(message) {
                let text = message.params.count > 1 ? message.params[1] : ""
                user.away = text.isEmpty ? nil : text
                let away = IRCMessage(tags: accountTags(user), source: user.prefix, command: "AWAY", params: text.isEmpty ? [] : [text])
                deliver(away, to: roomBook.membership.neighbours(of: user.id), now: now, onlyWith: .awayNotify)
                notifyMonitors(online: user, now: now, extendedOnly: .awayNotify, message: away)
            }
        case "METADATA":
            remoteMetadata(message, now: now)
        case "OPERTYPE":
            if let user = remoteSource(message) { people.setMode(of: user, "o", true) }
        case "FNAME":
            if let user = remoteSource(message), let name = message.params.first {
                user.realname = name
                let setname = IRCMessage(tags: accountTags(user), source: user.prefix, command: "SETNAME", params: [name])
                deliver(setname, to: roomBook.membership.neighbours(of: user.id), now: now, onlyWith: .setname)
            }
        case "FHOST":
            if let user = remoteSource(message), let host = message.params.first { remoteHostChange(user, host: host, now: now) }
        case "INVITE": remoteInvite(message, now: now)
        default:
            // SINFO, ENCAP, OPERQUIT and what modules add: nothing for us, but the others may need it.
            break
        }
        broadcast(message, except: origin)
    }

    /// The local or remote user a line comes from.
    func remoteSource(_ message: IRCMessage) -> User? { message.source.flatMap { user(uuid: $0) } }

    /// `:<parent> SERVER <name> [* <hops>] <sid> [properties] :<description>`: a server beyond the link.
    @discardableResult
    mutating func remoteServer(_ message: IRCMessage, from link: LinkSession, now: Double) -> Bool {
        let p = message.params
        guard p.count >= 3, let sidIndex = p[1..<(p.count - 1)].firstIndex(where: LinkIDs.isValidSID) else { return true }
        let newSID = p[sidIndex]
        guard net.servers[newSID] == nil, newSID != sid else {
            log("link \(link.name): introduced \(p[0]) [\(newSID)], whose SID is taken; dropping the link")
            dropLink(link, reason: "SID \(newSID) is already on the network", now: now)
            return false
        }
        let parent = message.source.flatMap { net.servers[$0] }
        net.servers[newSID] = RemoteServer(sid: newSID, name: p[0], description: p[p.count - 1], hops: (parent?.hops ?? 0) + 1,
                                       route: link.connection, parent: parent?.sid ?? link.server?.sid)
        log("link \(link.name): server \(p[0]) [\(newSID)] is on the network behind it")
        return true
    }

    mutating func remoteUID(_ message: IRCMessage, from link: LinkSession, now: Double) {
        guard let uid = UIDLine(message), user(uuid: uid.uuid) == nil,
              let server = net.servers[LinkIDs.sid(of: uid.uuid)], server.route == link.connection else { return }
        let user = User(id: UserID(people.nextUserID), host: uid.displayedHost, address: uid.ip, now: Double(uid.signon))
        people.nextUserID += 1
        user.uuid = uid.uuid
        user.remote = server
        user.username = uid.ident
        user.realname = uid.realname
        user.nickTS = uid.nickTS
        people.users[user.id] = user
        net.usersByUUID[uid.uuid] = user
        server.users.insert(user.id)
        net.remoteUserCount += 1
        for letter in uid.modeLetters where UserModes.mode(letter) != nil { people.setMode(of: user, letter, true) }
        var nick = uid.nick
        if let existing = people.nicks[casemapping.fold(nick)], existing !== user {
            if existing.remote != nil {
                saveRemote(existing, now: now)
            } else {
                nick = collide(existing, with: user, theirTS: uid.nickTS, theirIdentity: "\(uid.ident)@\(uid.ip)", via: link, now: now) ? user.uuid : nick
            }
        }
        claimNick(nick, keys: NameKeys.of(nick, casemapping), for: user)
        notifyMonitors(online: user, now: now)
    }

    /// Two users on one nickname (InspIRCd's rule, `NickCollision`): ours gives it up by taking
    /// its UUID as its name (told to everyone), theirs by a `SAVE` to the link. True when theirs must.
    mutating func collide(_ existing: User, with incoming: User, theirTS: Int, theirIdentity: String, via link: LinkSession, now: Double) -> Bool {
        guard existing.isOnline else {
            // Someone still registering here: the name goes to the network's user.
            if let nick = existing.nick, let session = existing.sessions.first {
                releaseNick(nick, of: existing, wasOnline: false)
                existing.nick = nil
                sendNow(session, numeric(session, .nicknameInUse, nick, "Nickname is now in use on the network"))
            }
            return false
        }
        let decision = NickCollision.decide(oursTS: existing.nickTS, oursIdentity: "\(existing.username ?? "")@\(existing.address)",
                                            theirsTS: theirTS, theirsIdentity: theirIdentity)
        log("nick collision on \(existing.replyName): \(decision)")
        if decision != .renameTheirs { forceNick(existing, to: existing.uuid, now: now) }
        if decision != .renameOurs {
            sendLink(link, IRCMessage(source: sid, command: "SAVE", params: [incoming.uuid, String(theirTS)]))
            return true
        }
        return false
    }

    /// A nickname changed by the network (a collision's SAVE): told to the user, its rooms and the links.
    mutating func forceNick(_ user: User, to nick: String, now: Double) {
        let oldPrefix = user.prefix
        if let old = user.nick { releaseNick(old, of: user, wasOnline: true) }
        claimNick(nick, keys: NameKeys.of(nick, casemapping), for: user)
        // A saved nickname (its UUID) has the timestamp 100, as InspIRCd gives it.
        user.nickTS = 100
        let change = IRCMessage(tags: accountTags(user), source: oldPrefix, command: "NICK", params: [nick])
        deliver(change, to: [user.id] + roomBook.membership.neighbours(of: user.id), now: now, history: roomEntries(of: user))
        notifyMonitors(online: user, now: now)
        if user.remote == nil {
            broadcast(IRCMessage(source: user.uuid, command: "NICK", params: [nick, String(user.nickTS)]), except: nil)
        }
    }

    /// Two of the network's users on one nickname, which the network should never say (found by
    /// the link fuzzer): the one who held it gives it up for its UUID, here and (by a SAVE) on
    /// the network, so that no nickname is ever held twice here.
    mutating func saveRemote(_ user: User, now: Double) {
        log("nick collision between two of the network's users on \(user.replyName): the earlier one takes its UUID")
        if let route = user.remote?.route, let link = net.links[route] {
            sendLink(link, IRCMessage(source: sid, command: "SAVE", params: [user.uuid, String(user.nickTS)]))
        }
        forceNick(user, to: user.uuid, now: now)
    }

    /// `:<uuid> NICK <new> <ts>`.
    mutating func remoteNick(_ message: IRCMessage, now: Double) {
        guard let user = remoteSource(message), let nick = message.params.first, user.nick != nick else { return }
        if let existing = people.nicks[casemapping.fold(nick)], existing !== user, existing.remote != nil {
            saveRemote(existing, now: now)
        } else if let existing = people.nicks[casemapping.fold(nick)], existing !== user, existing.remote == nil, let link = user.remote.flatMap({ net.links[$0.route] }) {
            let ts = Int(message.params.count > 1 ? message.params[1] : "") ?? Int(now)
            if collide(existing, with: user, theirTS: ts, theirIdentity: "\(user.username ?? "")@\(user.address)", via: link, now: now) {
                return
            }
        }
        let oldPrefix = user.prefix
        if let old = user.nick {
            rememberDeparture(user, nick: old, now: now)
            releaseNick(old, of: user, wasOnline: true)
        }
        claimNick(nick, keys: NameKeys.of(nick, casemapping), for: user)
        user.nickTS = Int(message.params.count > 1 ? message.params[1] : "") ?? Int(now)
        let change = IRCMessage(tags: accountTags(user), source: oldPrefix, command: "NICK", params: [nick])
        deliver(change, to: roomBook.membership.neighbours(of: user.id), now: now, history: roomEntries(of: user))
        notifyMonitors(online: user, now: now)
    }

    /// `:<sid> SAVE <uuid> <ts>`: the user must give up its nickname; ours is renamed to its UUID.
    mutating func remoteSave(_ message: IRCMessage, from link: LinkSession, now: Double) {
        guard let target = message.params.first, let user = user(uuid: target), user.remote == nil else { return }
        forceNick(user, to: user.uuid, now: now)
    }

    /// `:<sid> FJOIN <room> <ts> +<modes> [params] :<status>,<uuid>[:<id>] …`, with InspIRCd's timestamp rules.
    mutating func remoteFJOIN(_ message: IRCMessage, from link: LinkSession, now: Double) {
        guard let line = FJOINLine(message) else { return }
        let key = casemapping.fold(line.room)
        let joining = line.members.compactMap { member in user(uuid: member.uuid).flatMap { $0.remote != nil ? ($0, member.status) : nil } }
        // No room is made for nobody: an FJOIN naming no user the network introduced would leave
        // an empty room behind for good (found by the link fuzzer: LinkFuzzTests).
        guard roomBook.channels[key] != nil || !joining.isEmpty else { return }
        var decision = RoomMerge.takeTheirs
        let setter = clientSource(message.source)
        if let channel = roomBook.channels[key] {
            decision = RoomMerge.decide(ours: Int(channel.createdAt), theirs: line.timestamp)
            if decision == .takeTheirs { loseRoomTimestamp(key, to: Double(line.timestamp), setter: setter, now: now) }
        } else {
            roomBook.channels[key] = Channel(name: line.room, createdAt: Double(line.timestamp))
            roomBook.channels[key]!.flags = FlagModes([])
            roomBook.sortedChannelKeys.insert(key)
            for skeleton in NameKeys.of(line.room, casemapping) where roomBook.channelSkeletons[skeleton] == nil { roomBook.channelSkeletons[skeleton] = key }
        }
        if decision != .keepOurs {
            applyRemoteModes(key, line.modes, setter: setter, merging: decision == .merge, now: now)
        }
        for (user, given) in joining {
            let status = decision == .keepOurs ? "" : given
            remoteJoin(user, key: key, op: status.contains("o"), voice: status.contains("v"), setter: setter, now: now)
        }
    }

    /// `:<uuid> IJOIN <room> <membership-id> [<ts> <status>]`: a join to a room the network has.
    mutating func remoteIJOIN(_ message: IRCMessage, now: Double) {
        guard let user = remoteSource(message), user.remote != nil, let name = message.params.first else { return }
        let key = casemapping.fold(name)
        if roomBook.channels[key] == nil {
            let ts = message.params.count > 2 ? Double(message.params[2]) ?? now : now
            roomBook.channels[key] = Channel(name: name, createdAt: ts)
            roomBook.sortedChannelKeys.insert(key)
        }
        var status = ""
        if message.params.count > 3, let ts = Int(message.params[2]), ts <= Int(roomBook.channels[key]!.createdAt) { status = message.params[3] }
        remoteJoin(user, key: key, op: status.contains("o"), voice: status.contains("v"), setter: user.remote?.name ?? config.name, now: now)
    }

    /// A remote member comes into a room: JOIN (and its away text) to our members there, and its
    /// status as a MODE from the server that told us (as InspIRCd shows a burst's statuses).
    mutating func remoteJoin(_ user: User, key: String, op: Bool, voice: Bool, setter: String, now: Double) {
        guard let channel = roomBook.channels[key] else { return }
        if roomBook.membership.isMember(user.id, of: key) {
            if op { roomBook.membership.setStatus(user.id, in: key, "o", true) }
            if voice { roomBook.membership.setStatus(user.id, in: key, "v", true) }
            return
        }
        roomBook.membership.add(user.id, to: key, MemberStatus(user: user, op: op, voice: voice))
        roomBook.forgetInvitation(user.id, to: key)
        announceJoin(user, key: key, name: channel.name, now: now)
        let statusChanges = (op ? [ModeChange(adding: true, letter: "o", argument: user.replyName)] : [])
            + (voice ? [ModeChange(adding: true, letter: "v", argument: user.replyName)] : [])
        if !statusChanges.isEmpty {
            deliver(IRCMessage(source: setter, command: "MODE", params: [channel.name] + ModeSyntax.format(statusChanges)), toRoom: key, now: now)
        }
    }

    /// Their room is older: ours loses its modes and our members their status (told as a MODE
    /// from the server), and takes their timestamp.
    mutating func loseRoomTimestamp(_ key: String, to timestamp: Double, setter: String, now: Double) {
        guard let old = roomBook.channels[key] else { return }
        var removed: [ModeChange] = []
        for letter in old.flags.letters { removed.append(ModeChange(adding: false, letter: letter)) }
        if old.key != nil { removed.append(ModeChange(adding: false, letter: "k", argument: "*")) }
        if old.limit != nil { removed.append(ModeChange(adding: false, letter: "l")) }
        for letter in ["b", "e", "I"] as [Character] {
            for entry in old.lists[letter] { removed.append(ModeChange(adding: false, letter: letter, argument: entry.mask)) }
        }
        for (id, status) in roomBook.membership.members[key] ?? [:] {
            if status.op { roomBook.membership.setStatus(id, in: key, "o", false); removed.append(ModeChange(adding: false, letter: "o", argument: status.user.replyName)) }
            if status.voice { roomBook.membership.setStatus(id, in: key, "v", false); removed.append(ModeChange(adding: false, letter: "v", argument: status.user.replyName)) }
        }
        var channel = Channel(name: old.name, createdAt: timestamp)
        channel.flags = FlagModes([])
        channel.topic = old.topic
        channel.topicSetBy = old.topicSetBy
        channel.topicSetAt = old.topicSetAt
        channel.invited = old.invited
        roomBook.channels[key] = channel
        log("room \(old.name): the network's is older (\(Int(timestamp)) < \(Int(old.createdAt))); its modes win")
        for chunk in stride(from: 0, to: removed.count, by: 12) {
            let part = Array(removed[chunk..<min(chunk + 12, removed.count)])
            deliver(IRCMessage(source: config.name, command: "MODE", params: [old.name] + ModeSyntax.format(part)), toRoom: key, now: now)
        }
    }

    /// Modes from a link (FJOIN, FMODE): applied without the checks a user's MODE gets, told
    /// to our members. `merging`: a tie, where a parameter both sides set takes `RoomMerge.mergeParameter`.
    mutating func applyRemoteModes(_ key: String, _ words: [String], setter: String, merging: Bool = false, now: Double) {
        guard let letters = words.first, roomBook.channels[key] != nil else { return }
        let arguments = Array(words.dropFirst()).map { argument -> String in
            // Membership modes name users by UUID between servers.
            LinkIDs.isValidUUID(argument) ? (user(uuid: argument)?.replyName ?? argument) : argument
        }
        let parsed = ModeSyntax.server.parse(letters, arguments: arguments)
        var applied: [ModeChange] = []
        for var change in parsed.changes {
            guard let mode = ChannelModes.mode(change.letter) else { continue }
            if merging, change.adding, let argument = change.argument {
                if mode.letter == "k", let ours = roomBook.channels[key]!.key { change = ModeChange(adding: true, letter: "k", argument: RoomMerge.mergeParameter("k", ours: ours, theirs: argument)) }
                if mode.letter == "l", let ours = roomBook.channels[key]!.limit { change = ModeChange(adding: true, letter: "l", argument: RoomMerge.mergeParameter("l", ours: String(ours), theirs: argument)) }
            }
            if let done = applyChannelMode(change, mode, key: key, setter: setter, now: now, replyTo: nil) { applied.append(done) }
        }
        guard !applied.isEmpty, let channel = roomBook.channels[key] else { return }
        for chunk in stride(from: 0, to: applied.count, by: 12) {
            let part = Array(applied[chunk..<min(chunk + 12, applied.count)])
            deliver(IRCMessage(source: setter, command: "MODE", params: [channel.name] + ModeSyntax.format(part)), toRoom: key, now: now)
        }
        roomChanged(key, now: now)
    }

    /// `:<source> FMODE <room> <ts> <modes> [params]`: applied unless our room is older.
    mutating func remoteFMODE(_ message: IRCMessage, now: Double) {
        let p = message.params
        guard p.count >= 3, let (key, channel) = channel(named: p[0]), let ts = Int(p[1]) else { return }
        if ts > Int(channel.createdAt) { return }
        applyRemoteModes(key, Array(p[2...]), setter: clientSource(message.source), now: now)
    }

    /// `:<uuid> MODE <uuid> +i-w`: a remote user's own modes.
    mutating func remoteUserMode(_ message: IRCMessage) {
        guard message.params.count >= 2, let user = message.params.first.flatMap({ user(uuid: $0) }), user.remote != nil else { return }
        var adding = true
        for letter in message.params[1] {
            if letter == "+" { adding = true } else if letter == "-" { adding = false } else if UserModes.mode(letter) != nil { people.setMode(of: user, letter, adding) }
        }
    }

    /// `:<source> FTOPIC <room> <room-ts> <topic-ts> [<setter>] :<topic>` (a burst's, or a
    /// change), or `:<uuid> TOPIC <room> :<topic>`.
    mutating func remoteTopic(_ message: IRCMessage, now: Double) {
        let p = message.params
        guard p.count >= 2, let (key, channel) = channel(named: p[0]) else { return }
        let topic = p[p.count - 1]
        var setAt = now
        var setBy = clientSource(message.source)
        if message.command == "FTOPIC", p.count >= 4 {
            if let roomTS = Int(p[1]), roomTS > Int(channel.createdAt) { return }
            setAt = Double(p[2]) ?? now
            if p.count >= 5 { setBy = p[3] }
            // A burst's older topic does not replace a newer one here.
            if p.count >= 5, !channel.topic.isEmpty, setAt <= channel.topicSetAt { return }
        }
        guard topic != channel.topic else { return }
        roomBook.channels[key]!.topic = topic
        roomBook.channels[key]!.topicSetBy = setBy
        roomBook.channels[key]!.topicSetAt = setAt
        deliver(IRCMessage(source: clientSource(message.source), command: "TOPIC", params: [channel.name, topic]), toRoom: key, now: now)
        roomChanged(key, now: now)
    }

    /// `:<uuid> KICK <room> <uuid> [<membership-id>] :<reason>` (InspIRCd 3 adds the kicked
    /// membership's id; we send it without, which InspIRCd takes too).
    mutating func remoteKick(_ message: IRCMessage, now: Double) {
        let p = message.params
        guard p.count >= 2, let (key, channel) = channel(named: p[0]), let target = user(uuid: p[1]),
              roomBook.membership.isMember(target.id, of: key) else { return }
        let reason = p.count > 2 ? p[p.count - 1] : target.replyName
        deliver(IRCMessage(source: clientSource(message.source), command: "KICK", params: [channel.name, target.replyName, reason]),
                toRoom: key, now: now)
        removeMember(target.id, from: key)
    }

    /// `:<source> KILL <uuid> :<reason>`: one of ours is closed; a remote one leaves, and the kill goes on.
    mutating func remoteKill(_ message: IRCMessage, from link: LinkSession, now: Double) {
        guard let target = message.params.first.flatMap({ user(uuid: $0) }) else { return }
        let reason = "Killed (\(clientSource(message.source).split(separator: "!").first.map(String.init) ?? "") (\(message.params.count > 1 ? message.params[1] : "")))"
        if let session = target.sessions.first {
            log(session, "killed from the network: \(reason)")
            broadcast(IRCMessage(source: target.uuid, command: "QUIT", params: [reason]), except: nil)
            closeLink(session, reason: reason, now: now)
            return
        }
        broadcast(message, except: link.connection)
        removeRemoteUser(target, reason: reason, now: now)
    }

    /// `:<sid> METADATA <uuid> accountname :<account>` (account-notify, account-tag, WHOIS 330).
    mutating func remoteMetadata(_ message: IRCMessage, now: Double) {
        let p = message.params
        guard p.count >= 2, p[1] == "accountname", let user = user(uuid: p[0]), user.remote != nil else { return }
        let account = p.count > 2 && !p[2].isEmpty ? p[2] : nil
        guard user.account != account else { return }
        user.account = account
        accountChanged(user, now: now)
    }

    /// `:<uuid> FHOST <host>`: the displayed host changed (CHGHOST to those who asked for it).
    mutating func remoteHostChange(_ user: User, host: String, now: Double) {
        let old = user.prefix
        user.host = host
        roomBook.membership.identityChanged(user.id)
        let change = IRCMessage(source: old, command: "CHGHOST", params: [user.username ?? "unknown", host])
        deliver(change, to: roomBook.membership.neighbours(of: user.id), now: now, onlyWith: .chghost)
    }

    /// `:<uuid> INVITE <uuid> <room> <room-ts> [<expiry>]`: to our invitee, who may then join.
    mutating func remoteInvite(_ message: IRCMessage, now: Double) {
        let p = message.params
        guard let from = remoteSource(message), p.count >= 2, let target = user(uuid: p[0]),
              let (key, channel) = channel(named: p[1]) else { return }
        if roomBook.channels[key]!.invited.insert(target.id).inserted { roomBook.invitations[target.id, default: []].insert(key) }
        if target.remote == nil {
            deliver(IRCMessage(source: from.prefix, command: "INVITE", params: [target.replyName, channel.name]), toUsers: [target], now: now)
        }
    }

    /// A PRIVMSG, NOTICE or TAGMSG from a remote user (or server) to a room or a person, with
    /// its msgid and time kept when a chat-tui node minted them, so every node stores it alike.
    mutating func remoteMessage(_ message: IRCMessage, from link: LinkSession, now: Double) {
        guard message.params.count >= 1 else { return }
        let sender = remoteSource(message)
        if message.command == "PRIVMSG" { sender?.lastSpoke = now }
        let source = sender?.prefix ?? clientSource(message.source)
        var tags = sender.map(accountTags) ?? []
        for tag in message.tags where tag.isClientOnly { tags.append(tag) }
        let stamp = carriedStamp(message, now: now)
        let rest = Array(message.params.dropFirst())
        let target = message.params[0]
        let onlyTagged: Capability? = message.command == "TAGMSG" ? .messageTags : nil
        // A status message (`@#room`) goes to the room here (STATUSMSG is not ours yet).
        let roomName = String(target.drop(while: { $0 == "@" || $0 == "+" }))
        if IRCNames.isChannel(roomName) {
            guard let (key, channel) = channel(named: roomName) else { return }
            let relayed = IRCMessage(tags: tags, source: source, command: message.command, params: [channel.name] + rest)
            deliver(relayed, toRoom: key, except: sender?.id, now: now, onlyWith: onlyTagged, stamp: stamp)
            relayToLinks(message, room: key, except: link.connection)
        } else if let recipient = user(uuid: target) {
            if recipient.remote != nil {
                route(message, to: recipient)
                return
            }
            let relayed = IRCMessage(tags: tags, source: source, command: message.command, params: [recipient.replyName] + rest)
            let entry = sender.flatMap { directEntry($0, recipient) }
            deliver(relayed, toUsers: [recipient], now: now, onlyWith: onlyTagged, stamp: stamp, history: entry.map { [$0] } ?? [])
        }
    }

    /// The stamp a message arrived with: its `time`, and its `msgid` when it is one of ours
    /// (a chat-tui node's; InspIRCd's have another form, and get one of ours here).
    mutating func carriedStamp(_ message: IRCMessage, now: Double) -> Stamp {
        let time = message.tag("time").flatMap(ServerTime.parse) ?? now
        if let text = message.tag("msgid"), let id = MessageIDs.value(text) { return Stamp(time: time, msgid: id) }
        return stamp(message.command, now: time)
    }
}
