import IRCWire

extension ServerState {
    // JOIN <channel>{,<channel>} [<key>{,<key>}] | JOIN 0
    mutating func handleJoin(_ request: Request) {
        let session = request.session
        if request.params[0] == "0" {
            for key in roomBook.membership.rooms(of: request.user.id).sorted() {
                part(request.user, key: key, reason: "Left all rooms", now: request.now)
            }
            return
        }
        let names = request.params[0].split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        let keys = request.params.count > 1 ? request.params[1].split(separator: ",", omittingEmptySubsequences: false).map(String.init) : []
        for (index, name) in names.enumerated() {
            join(session, channelName: name, key: index < keys.count ? keys[index] : nil, now: request.now)
        }
    }

    /// Joins one room after the one admission check (ban, key, limit, invitation).
    mutating func join(_ session: Session, channelName name: String, key given: String?, now: Double) {
        let user = session.user
        if let problem = IRCNames.channelProblem(name, maxBytes: config.channelLength) ?? NameSafety.channelProblem(name) {
            reply(session, .badChanName, name, problem)
            return
        }
        let key = casemapping.fold(name)
        if roomBook.membership.isMember(user.id, of: key) { return }
        if roomBook.membership.rooms(of: user.id).count >= config.channelLimit {
            reply(session, .tooManyChannels, name, "You have joined too many channels")
            return
        }
        // A room renamed away from this name: pointed at the new one (draft/channel-rename).
        if roomBook.channels[key] == nil, let renamed = renamedTo(key) {
            if session.caps.contains(.channelRename) {
                standardReply(session, "FAIL", command: "JOIN", code: "CHANNEL_RENAMED", context: [name, renamed], always: true,
                              "The room has been renamed")
            } else {
                reply(session, .linkChannel, name, renamed, "The room has been renamed")
                join(session, channelName: renamed, key: given, now: now)
            }
            return
        }
        let isNew = roomBook.channels[key] == nil
        var op = false
        if isNew {
            let lookalikeKeys = NameKeys.of(name, casemapping)
            for skeleton in lookalikeKeys {
                if let existing = roomBook.channelSkeletons[skeleton], existing != key, let other = roomBook.channels[existing] {
                    reply(session, .badChanName, name, "Room name looks too much like \(other.name)")
                    return
                }
            }
            // A name with a saved record is that room again, under its rules (RoomPersistence).
            guard let made = roomToMake(key, name: name, for: session, key: given, now: now) else { return }
            roomBook.channels[key] = made.channel
            op = made.op
            roomBook.sortedChannelKeys.insert(key)
            for skeleton in lookalikeKeys { roomBook.channelSkeletons[skeleton] = key }
        } else if let refusal = admissionProblem(user, roomBook.channels[key]!, key: given) {
            reply(session, refusal.numeric, roomBook.channels[key]!.name, refusal.reason)
            return
        } else {
            // The accounts a saved room keeps as its operators get +o back.
            op = isSavedOperator(user, key: key)
            roomUsed(key, now: now)
        }
        if user.isOperator, let passed = admissionProblem(user, roomBook.channels[key]!, key: given, operatorPasses: false) {
            log(session, "IRC operator \(user.replyName) joined \(roomBook.channels[key]!.name) past its rules (\(passed.reason))")
        }
        // The first member of a new room runs it (a registered room: its founder and access accounts).
        let status = MemberStatus(user: user, op: op)
        roomBook.membership.add(user.id, to: key, status)
        presenceMayChange(user)
        roomBook.forgetInvitation(user.id, to: key)
        linkJoin(user, key: key)
        let channel = roomBook.channels[key]!
        announceJoin(user, key: key, name: channel.name, now: now)
        // A registered room's founder or access account joining a room with people in it: they
        // see the op it is given (the JOIN alone does not say so), from ChanServ.
        if op && !isNew {
            let change = ModeChange(adding: true, letter: "o", argument: user.replyName)
            deliver(IRCMessage(source: chanServPrefix, command: "MODE", params: [channel.name] + ModeSyntax.format([change])), toRoom: key, now: now)
            linkModes(source: sid, key: key, [change])
        }
        if !channel.topic.isEmpty { sendTopic(session, channel) }
        markerOnJoin(session, key: key, name: channel.name)
        if !session.caps.contains(.noImplicitNames) { sendNames(session, key: key, channel) }
        replayOnJoin(session, key: key, name: channel.name)
        metadataOnJoin(session, key: key, name: channel.name)
        // The user's other sessions saw the JOIN (the room's lists hold them): the room's state too.
        for other in user.sessions where other !== session && other.registered {
            if !channel.topic.isEmpty { sendTopic(other, channel) }
            markerOnJoin(other, key: key, name: channel.name)
            if !other.caps.contains(.noImplicitNames) { sendNames(other, key: key, channel) }
        }
    }

    /// A new member's JOIN to the room (extended-join's form where asked for) and, to those with
    /// away-notify, its away text.
    mutating func announceJoin(_ user: User, key: String, name: String, now: Double) {
        let join = IRCMessage(tags: accountTags(user), source: user.prefix, command: "JOIN", params: [name, user.account ?? "*", user.realname])
        deliver(join, toRoom: key, now: now)
        if let away = user.away {
            deliver(IRCMessage(tags: accountTags(user), source: user.prefix, command: "AWAY", params: [away]), toRoom: key,
                    except: user.id, now: now, onlyWith: .awayNotify)
        }
    }

    struct Refusal {
        let numeric: Numeric
        let reason: String
    }

    /// The one admission check for JOIN: banned (474), wrong key (475), full (471), invite only (473).
    /// An invitation (only an operator of a +i room can give one) passes the key, the limit and
    /// +i, but not a ban, as in InspIRCd; an exception (+e) passes a ban; an invite exception
    /// (+I) passes +i. The accounts a saved room keeps as its operators are invited for good
    /// (or a `+i` room would be locked once empty: nobody would be in it to invite them).
    /// `operatorPasses`: an IRC operator gets in whatever the rules (the caller logs it).
    func admissionProblem(_ user: User, _ channel: Channel, key: String?, operatorPasses: Bool = true) -> Refusal? {
        // A registered room's founder and access accounts always get back in, past every rule.
        if user.account != nil && isSavedOperator(user, key: casemapping.fold(channel.name)) { return nil }
        if operatorPasses && user.isOperator { return nil }
        if isBanned(user, in: channel) {
            return Refusal(numeric: .bannedFromChan, reason: "Cannot join channel (+b)")
        }
        if channel.invited.contains(user.id) { return nil }
        if let required = channel.key, key != required {
            return Refusal(numeric: .badChannelKey, reason: "Cannot join channel (+k)")
        }
        if let limit = channel.limit, roomBook.membership.count(of: casemapping.fold(channel.name)) >= limit {
            return Refusal(numeric: .channelIsFull, reason: "Cannot join channel (+l)")
        }
        if channel.has("i") && !matchesList(user, channel, "I") {
            return Refusal(numeric: .inviteOnlyChan, reason: "Cannot join channel (+i)")
        }
        return nil
    }

    /// Whether an entry of the list matches `user`: a mask its nick!user@host, `$a:` its account;
    /// `$m:` entries (mutes) count only when `mutes` asks for them, and then only they.
    func matchesList(_ user: User, _ channel: Channel, _ letter: Character, mutes: Bool = false) -> Bool {
        let list = channel.lists[letter]
        guard !list.isEmpty else { return false }
        // The hostmask folded once; each mask was folded when it was set.
        let hostmask = Array(casemapping.fold(user.prefix).utf8)
        let dollar = UInt8(ascii: "$")
        return list.contains { entry in
            guard entry.folded.first == dollar, entry.folded.count > 3 else { return !mutes && IRCMask.globMatch(entry.folded, hostmask) }
            switch entry.folded[1] {
            case UInt8(ascii: "a"):
                guard !mutes, let account = user.account else { return false }
                return IRCMask.globMatch(Array(entry.folded[3...]), Array(casemapping.fold(account).utf8))
            case UInt8(ascii: "m"):
                return mutes && IRCMask.globMatch(Array(entry.folded[3...]), hostmask)
            default:
                return false
            }
        }
    }

    func isBanned(_ user: User, in channel: Channel) -> Bool {
        matchesList(user, channel, "b") && !matchesList(user, channel, "e")
    }

    func isMuted(_ user: User, in channel: Channel) -> Bool {
        matchesList(user, channel, "b", mutes: true) && !matchesList(user, channel, "e")
    }

    /// The one speak check: +n keeps outsiders out, +m keeps all but voiced and operators quiet,
    /// a ban keeps a member quiet unless voiced or operator. Nil when `user` may speak.
    func speakProblem(_ user: User, key: String, _ channel: Channel) -> String? {
        let status = roomBook.membership.status(of: user.id, in: key)
        if status == nil && channel.has(code: UInt8(ascii: "n")) { return "Cannot send to channel (you are not in it)" }
        let privileged = status.map { $0.op || $0.voice } ?? false
        if channel.has(code: UInt8(ascii: "m")) && !privileged { return "Cannot send to channel (+m)" }
        if !privileged && isBanned(user, in: channel) { return "Cannot send to channel (you are banned)" }
        if !privileged && isMuted(user, in: channel) { return "Cannot send to channel (you are muted)" }
        return nil
    }

    /// TARGMAX: true (and 407, unless `quiet`) when a command names more targets than it takes.
    mutating func exceedsTargetLimit(_ session: Session, _ command: String, _ names: [String], quiet: Bool = false) -> Bool {
        let limit = targetLimits[command] ?? Int.max
        guard names.count > limit else { return false }
        if !quiet { reply(session, .tooManyTargets, names.joined(separator: ","), "Too many targets, at most \(limit)") }
        return true
    }

    // PART <channel>{,<channel>} [<reason>]
    mutating func handlePart(_ request: Request) {
        let reason = request.params.count > 1 ? UTF8Boundary.prefix(PlainText.cleanFreeText(request.params[1]), maxBytes: config.kickLength) : nil
        let names = request.params[0].split(separator: ",").map(String.init)
        for name in names {
            guard let (key, _) = channel(named: name) else {
                reply(request.session, .noSuchChannel, name, "No such channel")
                continue
            }
            guard roomBook.membership.isMember(request.user.id, of: key) else {
                reply(request.session, .notOnChannel, name, "You're not on that channel")
                continue
            }
            part(request.user, key: key, reason: reason, now: request.now)
        }
    }

    mutating func part(_ user: User, key: String, reason: String?, now: Double) {
        guard let channel = roomBook.channels[key] else { return }
        var params = [channel.name]
        if let reason, !reason.isEmpty { params.append(reason) }
        deliver(IRCMessage(tags: accountTags(user), source: user.prefix, command: "PART", params: params), toRoom: key, now: now)
        linkUserEvent(user, "PART", params)
        removeMember(user.id, from: key)
    }

    // TOPIC <channel> [<topic>]
    mutating func handleTopic(_ request: Request) {
        let session = request.session
        let name = request.params[0]
        guard let (key, channel) = channel(named: name) else {
            reply(session, .noSuchChannel, name, "No such channel")
            return
        }
        let status = roomBook.membership.status(of: request.user.id, in: key)
        guard request.params.count > 1 else {
            if channel.isSecret && status == nil && !request.user.isOperator {
                reply(session, .notOnChannel, channel.name, "You're not on that channel")
            } else if channel.topic.isEmpty {
                reply(session, .noTopic, channel.name, "No topic is set")
            } else {
                sendTopic(session, channel)
            }
            return
        }
        guard let status else {
            reply(session, .notOnChannel, channel.name, "You're not on that channel")
            return
        }
        if channel.has("t") && !status.op {
            reply(session, .chanOPrivsNeeded, channel.name, "You're not channel operator")
            return
        }
        let topic = UTF8Boundary.prefix(PlainText.cleanFreeText(request.params[1]), maxBytes: config.topicLength)
        roomBook.channels[key]!.topic = topic
        // nick!user@host, so clients can show who set it in full (irssi shows the host).
        roomBook.channels[key]!.topicSetBy = request.user.prefix
        roomBook.channels[key]!.topicSetAt = request.now
        linkTopic(request.user, key: key)
        roomChanged(key, now: request.now)
        let message = IRCMessage(tags: accountTags(request.user), source: request.user.prefix, command: "TOPIC", params: [channel.name, topic])
        deliver(message, toRoom: key, now: request.now)
    }

    mutating func sendTopic(_ session: Session, _ channel: Channel) {
        reply(session, .topic, channel.name, channel.topic)
        reply(session, .topicWhoTime, channel.name, channel.topicSetBy, String(Int(channel.topicSetAt)))
    }

    // NAMES [<channel>{,<channel>}]
    mutating func handleNames(_ request: Request) {
        let session = request.session
        guard let list = request.params.first, !list.isEmpty else {
            // Without a room: the rooms the asker is in (not the whole server, which one short
            // line would otherwise buy), then the end (`*`).
            for key in roomBook.membership.rooms(of: request.user.id).sorted() {
                if let channel = roomBook.channels[key] { sendNames(session, key: key, channel, end: false) }
            }
            reply(session, .endOfNames, "*", "End of /NAMES list")
            return
        }
        let names = list.split(separator: ",").map(String.init)
        if exceedsTargetLimit(session, "NAMES", names) { return }
        for name in names {
            if let (key, channel) = channel(named: name), canSee(request.user, key: key) {
                sendNames(session, key: key, channel)
            } else {
                reply(session, .endOfNames, name, "End of /NAMES list")
            }
        }
    }

    /// A `+s` room is visible to its members and operators only.
    func canSee(_ user: User, key: String) -> Bool {
        guard let secret = roomBook.channels[key]?.isSecret else { return false }
        return canSee(user, key: key, secret: secret)
    }

    /// The same, with the room in hand (a room message: no second look-up, no copy of it).
    func canSee(_ user: User, key: String, secret: Bool) -> Bool {
        !secret || user.isOperator || roomBook.membership.isMember(user.id, of: key)
    }

    /// 353 lines, as many as it takes to stay under 512 bytes each, then 366. Non-members
    /// do not see `+i` users; `@` marks a secret room.
    mutating func sendNames(_ session: Session, key: String, _ channel: Channel, end: Bool = true) {
        let asker = session.user
        let all = session.caps.contains(.multiPrefix)
        let full = session.caps.contains(.userhostInNames)
        let isMember = roomBook.membership.isMember(asker.id, of: key)
        let symbol = channel.isSecret ? "@" : "="
        let target = asker.replyName
        // Unsorted on purpose: clients sort for display, and sorting 10,000 names for every
        // arrival made joining a big room quadratic in string comparisons. Names are gathered as
        // bytes: one String per 353 line, not one per member.
        let head = Array(":\(config.name) 353 \(target) \(symbol) \(channel.name) :".utf8)
        let overhead = head.count + 2
        if isMember {
            // A member sees everyone: the room's kept list, cut into lines at spaces and written
            // as bytes (the reply's only text is names: no String or message per line).
            let names = roomBook.membership.names(of: key, form: Membership.namesForm(allPrefixes: all, userhost: full))
            let room = IRCLimits.lineBytes - overhead
            var start = 0
            while start < names.count {
                var end = min(start + room, names.count)
                if end < names.count {
                    // Back to the space before the entry that does not fit (entries are far shorter than a line).
                    while end > start && names[end] != UInt8(ascii: " ") { end -= 1 }
                }
                var line = head
                line.reserveCapacity(head.count + end - start + 2)
                line += names[start..<end]
                line += [13, 10]
                sendRaw(session, line)
                start = end + 1
            }
            if end { reply(session, .endOfNames, channel.name, "End of /NAMES list") }
            return
        }
        var line: [UInt8] = []
        line.reserveCapacity(IRCLimits.lineBytes)
        for status in (roomBook.membership.members[key] ?? [:]).values {
            let member = status.user
            guard let nick = member.nick else { continue }
            if !isMember && member.isInvisible && !asker.isOperator { continue }
            let prefix = status.prefix(all: all)
            let name = full ? member.prefix : nick
            let size = prefix.utf8.count + name.utf8.count
            if !line.isEmpty && overhead + line.count + 1 + size > IRCLimits.lineBytes {
                reply(session, .namReply, symbol, channel.name, String(decoding: line, as: UTF8.self))
                line.removeAll(keepingCapacity: true)
            }
            if !line.isEmpty { line.append(UInt8(ascii: " ")) }
            line.append(contentsOf: prefix.utf8)
            line.append(contentsOf: name.utf8)
        }
        if !line.isEmpty { reply(session, .namReply, symbol, channel.name, String(decoding: line, as: UTF8.self)) }
        if end { reply(session, .endOfNames, channel.name, "End of /NAMES list") }
    }

    // LIST [<channel>{,<channel>}] [<elistcond>{,<elistcond>}]
    // ELIST=CMNTU: >n <n member counts, C>m C<m creation, T>m T<m topic age (minutes), mask and !mask.
    mutating func handleList(_ request: Request) {
        let session = request.session
        var wanted: Set<String>?
        var masks: [(mask: String, include: Bool)] = []
        var conditions: [(field: Character, op: Character, value: Double)] = []
        for param in request.params.prefix(2) {
            for word in param.split(separator: ",").map(String.init) {
                if let first = word.first, first == ">" || first == "<", let n = Double(word.dropFirst()) {
                    conditions.append(("U", first, n))
                } else if word.count > 2, let first = word.first, "CT".contains(first), let op = word.dropFirst().first,
                          op == ">" || op == "<", let n = Double(word.dropFirst(2)) {
                    conditions.append((first, op, n))
                } else if word.contains("*") || word.contains("?") {
                    masks.append(word.hasPrefix("!") ? (casemapping.fold(String(word.dropFirst())), false) : (casemapping.fold(word), true))
                } else if IRCNames.isChannel(word) {
                    wanted = (wanted ?? []).union([casemapping.fold(word)])
                }
            }
        }
        reply(session, .listStart, "Channel", "Users  Name")
        let query = ListQuery(wanted: wanted, masks: masks, conditions: conditions)
        // Rooms asked for by name (a line's worth at most) are answered at once; the whole
        // list is made a step at a time as the client takes it (`LongReply`).
        if let wanted {
            for key in wanted.sorted() { listEntry(session, key: key, query: query, now: request.now) }
            reply(session, .listEnd, "End of /LIST")
            return
        }
        startLongReply(session, .list(query, after: nil), now: request.now)
    }

    // KICK <channel> <user>{,<user>} [<comment>]
    mutating func handleKick(_ request: Request) {
        let session = request.session
        let name = request.params[0]
        guard let (key, channel) = channel(named: name) else {
            reply(session, .noSuchChannel, name, "No such channel")
            return
        }
        let comment = request.params.count > 2 ? UTF8Boundary.prefix(PlainText.cleanFreeText(request.params[2]), maxBytes: config.kickLength) : (request.user.nick ?? "")
        let targets = request.params[1].split(separator: ",").map(String.init)
        if exceedsTargetLimit(session, "KICK", targets) { return }
        for nick in targets {
            // Checked for each target: a kicker who kicks themselves first kicks no one after.
            guard let status = roomBook.membership.status(of: request.user.id, in: key) else {
                reply(session, .notOnChannel, channel.name, "You're not on that channel")
                return
            }
            guard status.op else {
                reply(session, .chanOPrivsNeeded, channel.name, "You're not channel operator")
                return
            }
            guard let target = user(named: nick), let targetNick = target.nick else {
                reply(session, .noSuchNick, nick, "No such nick/channel")
                continue
            }
            guard roomBook.membership.isMember(target.id, of: key) else {
                reply(session, .userNotInChannel, targetNick, channel.name, "They aren't on that channel")
                continue
            }
            let message = IRCMessage(tags: accountTags(request.user), source: request.user.prefix, command: "KICK",
                                     params: [channel.name, targetNick, comment])
            deliver(message, toRoom: key, now: request.now)
            linkKick(request.user, key: key, target: target, reason: comment)
            removeMember(target.id, from: key)
            log(session, "\(request.user.replyName) kicked \(targetNick) from \(channel.name): \(comment)")
        }
    }

    // INVITE <nickname> <channel> | INVITE (the rooms you are invited to)
    mutating func handleInvite(_ request: Request) {
        let session = request.session
        guard request.params.count >= 2 else {
            if request.params.isEmpty {
                for key in (roomBook.invitations[request.user.id] ?? []).sorted() {
                    if let channel = roomBook.channels[key] { reply(session, .inviteList, channel.name) }
                }
                reply(session, .endOfInviteList, "End of /INVITE list")
            } else {
                reply(session, .needMoreParams, "INVITE", "Not enough parameters")
            }
            return
        }
        let nick = request.params[0], name = request.params[1]
        // The modern docs' order: the room exists (403), the inviter is in it (442), may invite
        // (482), the invitee exists (401), is not already in (443).
        guard let (key, channel) = channel(named: name) else {
            reply(session, .noSuchChannel, name, "No such channel")
            return
        }
        guard let status = roomBook.membership.status(of: request.user.id, in: key) else {
            reply(session, .notOnChannel, channel.name, "You're not on that channel")
            return
        }
        if channel.has("i") && !status.op {
            reply(session, .chanOPrivsNeeded, channel.name, "You're not channel operator")
            return
        }
        guard let target = user(named: nick), let targetNick = target.nick else {
            reply(session, .noSuchNick, nick, "No such nick/channel")
            return
        }
        if roomBook.membership.isMember(target.id, of: key) {
            reply(session, .userOnChannel, targetNick, channel.name, "is already on channel")
            return
        }
        // Only an invite-only room keeps the invitation (it is what lets the invitee in); elsewhere
        // INVITE is a notice, so a plain member cannot use it to let a banned user past +b or +k.
        if channel.has("i") {
            if channel.invited.count >= config.inviteListLimit, !channel.invited.contains(target.id) {
                standardReply(session, "FAIL", command: "INVITE", code: "LIMIT_EXCEEDED", context: [channel.name], "Too many people are invited to this room already")
                return
            }
            roomBook.channels[key]!.invited.insert(target.id)
            roomBook.invitations[target.id, default: []].insert(key)
        }
        if target.remote != nil { linkInvite(request.user, target: target, key: key) }
        reply(session, .inviting, targetNick, channel.name)
        if let away = target.away { reply(session, .away, targetNick, away) }
        let invite = IRCMessage(tags: accountTags(request.user), source: request.user.prefix, command: "INVITE", params: [targetNick, channel.name])
        deliver(invite, to: CollectionOfOne(target.id), now: request.now)
        pushIfAway(target, invite, stamp: nil, now: request.now)
        // Nobody connected as them (always-on): kept for the next session that arrives.
        if target.alwaysOn, !target.sessions.contains(where: \.registered) {
            if target.missedInvites.count >= Self.missedInvitesLimit { target.missedInvites.removeFirst() }
            target.missedInvites.append(invite)
        }
        // invite-notify: the room's operators who asked hear of it (ergo and InspIRCd tell operators only).
        let operators = (roomBook.membership.members[key] ?? [:]).filter { $0.value.op && $0.key != request.user.id }.map(\.key)
        deliver(invite, to: operators, now: request.now, onlyWith: .inviteNotify)
    }
}
