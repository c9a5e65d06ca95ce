import IRCWire

extension ServerState {
    // PRIVMSG <target>{,<target>} <text>
    // NOTICE <target>{,<target>} <text>
    mutating func handleMessage(_ request: Request) {
        let session = request.session
        let command = request.message.command
        // A NOTICE never causes an automatic reply, errors included (the modern docs).
        let quiet = command == "NOTICE"
        guard let targetList = request.params.first, !targetList.isEmpty else {
            if !quiet { reply(session, .noRecipient, "No recipient given (\(command))") }
            return
        }
        guard request.params.count > 1, !request.params[1].isEmpty else {
            if !quiet { reply(session, .noTextToSend, "No text to send") }
            return
        }
        request.user.lastSpoke = request.now
        relay(request, command: command, targets: targetList, params: [request.params[1]], quiet: quiet)
    }

    // TAGMSG <target>{,<target>}
    mutating func handleTagMessage(_ request: Request) {
        relay(request, command: "TAGMSG", targets: request.params[0], params: [], quiet: false)
    }

    /// Delivers a PRIVMSG, NOTICE or TAGMSG to rooms and people, each target once, with errors
    /// for targets that do not exist or may not be spoken to (none for NOTICE).
    mutating func relay(_ request: Request, command: String, targets: String, params: [String], quiet: Bool) {
        let session = request.session
        let sender = request.user
        var tags = accountTags(sender)
        for tag in request.message.tags where tag.isClientOnly { tags.append(tag) }
        let onlyTagged: Capability? = command == "TAGMSG" ? .messageTags : nil
        let echo = session.caps.contains(.echoMessage)
        // Most messages have one target: skip splitting then.
        // (utf8.contains: with Foundation in the module, String.contains(String) is a CFString search.)
        let names = targets.utf8.contains(UInt8(ascii: ",")) ? targets.split(separator: ",").map(String.init) : [targets]
        if names.count > 1 && exceedsTargetLimit(session, command, names, quiet: quiet) { return }
        var seen: Set<String> = []
        for name in names {
            // `alice,alice` or `#a,#A`: one delivery per target.
            if names.count > 1 && !seen.insert(casemapping.fold(name)).inserted { continue }
            // STATUSMSG: `@#room` to its operators, `+#room` to its operators and voiced members.
            if let status = name.first, status == "@" || status == "+", IRCNames.isChannel(String(name.dropFirst())) {
                relayToStatus(request, command: command, status: status, room: String(name.dropFirst()), tags: tags, params: params, quiet: quiet)
                continue
            }
            // The built-in ChanServ and NickServ take PRIVMSG; a NOTICE or TAGMSG to them is dropped, as to any service.
            if isNickServ(name) {
                guard command == "PRIVMSG", let text = params.first else { continue }
                if echo { send(session, IRCMessage(tags: tags, source: sender.prefix, command: command, params: [name, text])) }
                nickServ(request, text: text)
                continue
            }
            if isChanServ(name) {
                guard command == "PRIVMSG", let text = params.first else { continue }
                // Echoed first (echo-message), as ergo echoes what is said to its services: a
                // client that waits for the echo would otherwise send the command again after a
                // reconnect, and ChanServ would carry it out twice.
                if echo { send(session, IRCMessage(tags: tags, source: sender.prefix, command: command, params: [name, text])) }
                chanServ(request, text: text)
                continue
            }
            guard let resolved = messageTarget(name, from: request.session, quiet: quiet) else { continue }
            if case .room(_, let channel) = resolved, let text = params.first, let refusal = ctctRefusal(text, channel) {
                if !quiet { reply(session, .cannotSendToChan, channel.name, refusal) }
                continue
            }
            if historyRefuses(session, command, resolved, alone: names.count == 1) { continue }
            switch resolved {
            case .room(let key, let channel):
                let message = IRCMessage(tags: tags, source: sender.prefix, command: command, params: [channel.name] + params)
                let stamp = self.stamp(command, now: request.now)
                // The sender's other sessions get it whatever they asked for (multiclient).
                deliver(message, toRoom: key, leaving: echo ? nil : session.connection, now: request.now, onlyWith: onlyTagged, stamp: stamp)
                linkRoomMessage(message, from: sender, room: key, stamp: stamp)
                // Someone it names who is kept present with no session connected: a push.
                if command == "PRIVMSG", !pushBook.subscriptions.isEmpty { pushMentions(message, roomKey: key, sender: sender, stamp: stamp, now: request.now) }
                // An outsider's echo (a room without +n): the same event, not stored twice.
                if echo && !roomBook.membership.isMember(sender.id, of: key) {
                    deliver(message, toUsers: [sender], now: request.now, onlyWith: onlyTagged, storable: false, stamp: stamp)
                }
            case .person(let target, let targetNick):
                let message = IRCMessage(tags: tags, source: sender.prefix, command: command, params: [targetNick] + params)
                if target.id == sender.id {
                    // To oneself: the delivered copy goes out unlabelled, and the echo (if asked for)
                    // is the labelled reply, as labeled-response requires.
                    let stamp = self.stamp(command, now: request.now)
                    deliver(message, toUsers: [sender], now: request.now, onlyWith: onlyTagged, viaResponse: false, stamp: stamp,
                            history: directEntry(sender, sender).map { [$0] } ?? [])
                    if echo && (onlyTagged.map(session.caps.contains) ?? true) { response?.messages.append(.message(message, stamp)) }
                } else {
                    let stamp = self.stamp(command, now: request.now)
                    // The sender's other sessions get a copy as an echo (multiclient).
                    deliver(message, toUsers: [target, sender], now: request.now, onlyWith: onlyTagged,
                            skipping: echo ? nil : session.connection, stamp: stamp, history: directEntry(sender, target).map { [$0] } ?? [])
                    if target.remote != nil { linkDirectMessage(message, from: sender, to: target, stamp: stamp) }
                    if command != "TAGMSG" { pushIfAway(target, message, stamp: stamp, now: request.now) }
                }
                if command == "PRIVMSG", target !== sender, let away = target.away {
                    reply(session, .away, targetNick, away)
                }
            }
        }
    }

    /// A room with +C takes no CTCP but ACTION (`/me`).
    func ctctRefusal(_ text: String, _ channel: Channel) -> String? {
        guard text.utf8.first == 1, channel.has(code: UInt8(ascii: "C")), !text.hasPrefix("\u{1}ACTION") else { return nil }
        return "Cannot send CTCP to channel (+C)"
    }

    /// A message to a room's operators (`@#room`) or its voiced members and operators (`+#room`):
    /// the same speak checks as the room; not kept in history (its readers are everyone).
    mutating func relayToStatus(_ request: Request, command: String, status: Character, room: String, tags: [IRCTag], params: [String], quiet: Bool) {
        let session = request.session, sender = request.user
        guard case .room(let key, let channel)? = messageTarget(room, from: session, quiet: quiet) else { return }
        if let text = params.first, let refusal = ctctRefusal(text, channel) {
            if !quiet { reply(session, .cannotSendToChan, channel.name, refusal) }
            return
        }
        let recipients = (roomBook.membership.members[key] ?? [:]).values.filter { member in
            member.user !== sender && (member.op || (status == "+" && member.voice))
        }.map(\.user)
        let echo = session.caps.contains(.echoMessage)
        let message = IRCMessage(tags: tags, source: sender.prefix, command: command, params: [String(status) + channel.name] + params)
        deliver(message, toUsers: recipients + [sender], now: request.now, onlyWith: command == "TAGMSG" ? .messageTags : nil,
                skipping: echo ? nil : session.connection, storable: false, stamp: stamp(command, now: request.now))
    }

    /// The most common line of all — `PRIVMSG bob :hi` to one person, from a client without
    /// echo-message, with nothing for history to keep and the recipient not away — relayed
    /// from the line's own bytes: no `IRCMessage` parsed, built or serialised, no response
    /// buffer (nothing is answered). Each of the recipient's connections gets what `relay`
    /// would send it (`Rendering.direct`). False, having changed nothing, for any other line.
    mutating func relayPlainDirect(_ line: [UInt8], from session: Session, now: Double) -> Bool {
        guard session.registered, session.openBatch == nil, !session.caps.contains(.echoMessage),
              !PlainTextLine.namesRoom(line), // (a room's line: not scanned twice, 600 instructions)
              let plain = PlainTextLine(line) else { return false } // (PlainTextLine is valid UTF-8 only)
        let sender = session.user
        // (A sender with other sessions: they get a copy, which `relay` makes.)
        guard sender.sessions.count == 1, line[plain.target.lowerBound] != UInt8(ascii: "#"),
              let (target, header) = directTarget(line[plain.target], notice: plain.isNotice, of: session), target !== sender,
              target.remote == nil, pushListener(target) == nil,
              plain.isNotice || target.away == nil, !historyEnabled || directEntry(sender, target) == nil else { return false }
        sender.lastSpoke = now
        // What `stamp(_:now:)` gives: a PRIVMSG or NOTICE always has a msgid (no string compare).
        let stamp = Stamp(time: now, msgid: messageIDs.next(now: now))
        let tags = accountTags(sender)
        for to in target.sessions where to.registered {
            outbox.items.append(.send(to.connection, Rendering.direct(header: header, text: line[plain.text], tags: tags, stamp, to.variant)))
        }
        return true
    }

    /// The registered user a direct message's target names, as `user(named:)` finds them, and the
    /// line's start: the session's last answer when the bytes and the command are the same and
    /// neither side has changed its `nick!user@host` since.
    mutating func directTarget(_ name: ArraySlice<UInt8>, notice: Bool, of session: Session) -> (User, [UInt8])? {
        let sender = session.user
        if let last = session.lastDirect, last.user.prefixGeneration == last.generation, sender.prefixGeneration == last.senderGeneration,
           last.notice == notice, last.name.elementsEqual(name), last.user.isOnline {
            return (last.user, last.header)
        }
        guard let found = user(named: String(decoding: name, as: UTF8.self)), let nick = found.nick else {
            // Whoever it remembered may have left: it keeps nobody alive.
            session.lastDirect = nil
            return nil
        }
        let header = Rendering.directHeader(notice ? "NOTICE" : "PRIVMSG", source: sender.prefix, target: nick)
        session.lastDirect = Session.LastDirect(name: Array(name), user: found, generation: found.prefixGeneration,
                                                senderGeneration: sender.prefixGeneration, notice: notice, header: header)
        return (found, header)
    }

    enum MessageTarget {
        case room(key: String, Channel)
        case person(User, nick: String)
    }

    /// Where a PRIVMSG, NOTICE, TAGMSG or multiline batch goes, after the one speak check; nil
    /// when it cannot go there (403, 404, 401 sent, unless `quiet`, as for a NOTICE).
    mutating func messageTarget(_ name: String, from session: Session, quiet: Bool) -> MessageTarget? {
        let sender = session.user
        if IRCNames.isChannel(name) {
            // A secret room does not exist for outsiders, unless it takes messages from outside.
            guard let (key, channel) = channel(named: name), canSee(sender, key: key, secret: channel.isSecret) || !channel.has(code: UInt8(ascii: "n")) else {
                if !quiet { reply(session, .noSuchChannel, name, "No such channel") }
                return nil
            }
            if let problem = speakProblem(sender, key: key, channel) {
                if !quiet { reply(session, .cannotSendToChan, channel.name, problem) }
                return nil
            }
            return .room(key: key, channel)
        }
        guard let target = user(named: name), let nick = target.nick else {
            if !quiet { reply(session, .noSuchNick, name, "No such nick/channel") }
            return nil
        }
        return .person(target, nick: nick)
    }

    // AWAY [<text>]
    mutating func handleAway(_ request: Request) {
        let session = request.session, user = request.user
        var text = request.params.first.map { UTF8Boundary.prefix(PlainText.cleanFreeText($0), maxBytes: config.awayLength) } ?? ""
        // draft/pre-away: `AWAY *` is "not here, for no particular reason" (a client that
        // connected by itself); shown to others in words.
        if text == "*" { text = "Away" }
        guard session.registered else {
            // Before registration only with draft/pre-away; nobody sees it until the user arrives.
            guard session.caps.contains(.preAway) else {
                reply(session, .notRegistered, "You have not registered")
                return
            }
            user.away = text.isEmpty ? nil : text
            session.away = user.away
            return
        }
        // Each session's own: the person is away when every session is (`refreshAway`).
        session.away = text.isEmpty ? nil : text
        if text.isEmpty {
            reply(session, .unaway, "You are no longer marked as being away")
        } else {
            reply(session, .nowAway, "You have been marked as being away")
        }
        refreshAway(user, now: request.now)
    }

    // SETNAME :<realname>
    mutating func handleSetname(_ request: Request) {
        let session = request.session, user = request.user
        let name = PlainText.cleanFreeText(request.params[0])
        guard !name.isEmpty, name.utf8.count <= config.realnameLength else {
            standardReply(session, "FAIL", command: "SETNAME", code: "INVALID_REALNAME", always: true,
                          "Real name must be 1 to \(config.realnameLength) bytes")
            return
        }
        user.realname = name
        let message = IRCMessage(tags: accountTags(user), source: user.prefix, command: "SETNAME", params: [name])
        deliver(message, to: [user.id] + roomBook.membership.neighbours(of: user.id), now: request.now, onlyWith: .setname)
        notifyMonitors(online: user, now: request.now, extendedOnly: .setname, message: message)
        linkUserEvent(user, "FNAME", [name])
    }

    // WALLOPS <text> (operators only): to everyone with user mode +w.
    mutating func handleWallops(_ request: Request) {
        let message = IRCMessage(tags: accountTags(request.user), source: request.user.prefix, command: "WALLOPS", params: [request.params[0]])
        let recipients = people.users.values.filter { $0.modes.contains("w") }.map(\.id)
        deliver(message, to: recipients, now: request.now)
    }
}
