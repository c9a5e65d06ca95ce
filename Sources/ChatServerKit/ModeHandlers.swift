import IRCWire

extension ServerState {
    // MODE <target> [<modestring> [<mode arguments>...]]
    mutating func handleMode(_ request: Request) {
        let target = request.params[0]
        if IRCNames.isChannel(target) {
            channelMode(request, name: target)
        } else {
            userMode(request, nick: target)
        }
    }

    mutating func userMode(_ request: Request, nick: String) {
        let session = request.session, user = request.user
        guard casemapping.equal(nick, user.replyName) else {
            if self.user(named: nick) == nil {
                reply(session, .noSuchNick, nick, "No such nick/channel")
            } else {
                reply(session, .usersDontMatch, "Can't change mode for other users")
            }
            return
        }
        guard request.params.count > 1 else {
            reply(session, .umodeIs, "+" + String(user.modes.sorted()))
            return
        }
        let parsed = ModeSyntax.user.parse(request.params[1], arguments: [], unknownAreFlags: true)
        var applied: [ModeChange] = []
        var unknown = false
        for change in parsed.changes {
            guard let mode = UserModes.mode(change.letter) else {
                unknown = true
                continue
            }
            // +o comes only from OPER; anyone may drop it.
            if mode.setter == .server && change.adding { continue }
            guard user.modes.contains(change.letter) != change.adding else { continue }
            people.setMode(of: user, change.letter, change.adding)
            applied.append(change)
        }
        if !applied.isEmpty {
            send(session, IRCMessage(tags: accountTags(user), source: user.prefix, command: "MODE",
                                     params: [user.replyName] + ModeSyntax.format(applied)))
            linkUserEvent(user, "MODE", [user.uuid] + ModeSyntax.format(applied))
        }
        // The known modes are applied first, then the unknown ones reported (the modern docs).
        if unknown { reply(session, .uModeUnknownFlag, "Unknown MODE flag") }
    }

    mutating func channelMode(_ request: Request, name: String) {
        let session = request.session, user = request.user
        guard let (key, channel) = channel(named: name) else {
            reply(session, .noSuchChannel, name, "No such channel")
            return
        }
        let status = roomBook.membership.status(of: user.id, in: key)
        guard request.params.count > 1 else {
            if channel.isSecret && status == nil && !user.isOperator {
                reply(session, .notOnChannel, channel.name, "You're not on that channel")
                return
            }
            reply(session, .channelModeIs, params: [channel.name] + channel.modeParameters(showKey: status != nil))
            reply(session, .creationTime, channel.name, String(Int(channel.createdAt)))
            return
        }
        let parsed = ModeSyntax.server.parse(request.params[1], arguments: Array(request.params.dropFirst(2)))
        var applied: [ModeChange] = []
        var withParameter = 0
        var privilegeReported = false
        var listed: Set<Character> = []
        // 472 once per unknown letter, not once per occurrence (`MODE #r +QQQQ…`).
        for letter in parsed.unknown where listed.insert(letter).inserted {
            reply(session, .unknownMode, String(letter), "is unknown mode char to me")
        }
        listed.removeAll()
        for change in parsed.changes {
            guard let mode = ChannelModes.mode(change.letter) else { continue }
            // A list letter without a mask lists it, which needs no privilege: each list once per
            // command, so `MODE #r bbbb…` cannot multiply a full list into megabytes.
            if mode.kind == .list && change.argument == nil {
                guard listed.insert(mode.letter).inserted else { continue }
                // Outsiders of a secret room see an empty list, so a client waiting for its end is answered.
                let hidden = channel.isSecret && status == nil && !user.isOperator
                sendList(session, hidden ? Channel(name: channel.name, createdAt: channel.createdAt) : roomBook.channels[key]!, letter: mode.letter)
                continue
            }
            if mode.kind != .flag && !(mode.kind == .parameterWhenSet && !change.adding) {
                withParameter += 1
                // MODES: changes with a parameter past the advertised number are ignored, as InspIRCd does.
                if withParameter > config.maxModes { continue }
            }
            // 482 for members and outsiders alike (the modern docs; ergo does the same).
            guard status?.op == true else {
                if !privilegeReported { reply(session, .chanOPrivsNeeded, channel.name, "You're not channel operator") }
                privilegeReported = true
                continue
            }
            if let change = applyChannelMode(change, mode, key: key, setter: user.prefix, now: request.now, replyTo: session) { applied.append(change) }
        }
        guard !applied.isEmpty else { return }
        let message = IRCMessage(tags: accountTags(user), source: user.prefix, command: "MODE",
                                 params: [channel.name] + ModeSyntax.format(applied))
        deliver(message, toRoom: key, now: request.now)
        linkModes(user, key: key, applied)
        // Saved once per command (a voice changes nothing kept).
        if applied.contains(where: { $0.letter != "v" }) { roomChanged(key, now: request.now) }
    }

    /// Applies one change an operator (or a linked server) asked for; the change as announced, or
    /// nil when nothing changed. Refusals go to `session` (none for a server's change).
    mutating func applyChannelMode(_ change: ModeChange, _ mode: ChannelMode, key: String, setter: String, now: Double,
                                   replyTo session: Session?) -> ModeChange? {
        let name = roomBook.channels[key]!.name
        var argument = change.argument
        if let raw = argument, change.adding || mode.kind == .list {
            switch ChannelModes.validate(mode, raw, casemapping: casemapping) {
            case .success(let value): argument = value
            case .failure(.invalid(let reason)):
                // The parameter is one parameter, whatever it holds: `*` when it cannot be shown as
                // one (spaces, empty, a leading colon), the reason the trailing one.
                let shown = raw.isEmpty || raw.contains(" ") || raw.hasPrefix(":") ? "*" : raw
                if let session { reply(session, .invalidModeParam, name, String(mode.letter), shown, reason) }
                return nil
            }
        }
        switch mode.kind {
        case .flag:
            guard roomBook.channels[key]!.flags.contains(mode.letter) != change.adding else { return nil }
            if change.adding { roomBook.channels[key]!.flags.insert(mode.letter) } else { roomBook.channels[key]!.flags.remove(mode.letter) }
            if mode.letter == "i" && !change.adding { roomBook.clearInvitations(key) }
            return ModeChange(adding: change.adding, letter: mode.letter)
        case .alwaysParameter: // +k
            if change.adding {
                guard roomBook.channels[key]!.key != argument else { return nil }
                roomBook.channels[key]!.key = argument
                return ModeChange(adding: true, letter: "k", argument: argument)
            }
            guard roomBook.channels[key]!.key != nil else { return nil }
            roomBook.channels[key]!.key = nil
            return ModeChange(adding: false, letter: "k", argument: "*")
        case .parameterWhenSet: // +l
            if change.adding {
                let limit = Int(argument ?? "")
                guard roomBook.channels[key]!.limit != limit else { return nil }
                roomBook.channels[key]!.limit = limit
                return ModeChange(adding: true, letter: "l", argument: argument)
            }
            guard roomBook.channels[key]!.limit != nil else { return nil }
            roomBook.channels[key]!.limit = nil
            return ModeChange(adding: false, letter: "l")
        case .list:
            guard let mask = argument else { return nil }
            var list = roomBook.channels[key]!.lists[mode.letter]
            let folded = Array(casemapping.fold(mask).utf8)
            let existing = list.firstIndex { $0.folded == folded }
            if change.adding {
                guard existing == nil else { return nil }
                if list.count >= ChannelModes.listLimit {
                    if let session { reply(session, .banListFull, name, String(mode.letter), "Channel list is full") }
                    return nil
                }
                list.append(ListEntry(mask: mask, folded: Array(casemapping.fold(mask).utf8), setBy: setter, setAt: now))
            } else {
                guard let existing else { return nil }
                // Announced as it was set, whatever case the remover typed.
                let removed = list.remove(at: existing)
                roomBook.channels[key]!.lists[mode.letter] = list
                return ModeChange(adding: false, letter: mode.letter, argument: removed.mask)
            }
            roomBook.channels[key]!.lists[mode.letter] = list
            return ModeChange(adding: true, letter: mode.letter, argument: mask)
        case .membership:
            guard let nick = argument else { return nil }
            guard let target = user(named: nick) else {
                if let session { reply(session, .noSuchNick, nick, "No such nick/channel") }
                return nil
            }
            guard let current = roomBook.membership.status(of: target.id, in: key) else {
                if let session { reply(session, .userNotInChannel, target.replyName, name, "They aren't on that channel") }
                return nil
            }
            guard current.has(mode.letter) != change.adding else { return nil }
            roomBook.membership.setStatus(target.id, in: key, mode.letter, change.adding)
            return ModeChange(adding: change.adding, letter: mode.letter, argument: target.replyName)
        }
    }

    /// 367/368 for bans, 348/349 for exceptions, 346/347 for invite exceptions.
    mutating func sendList(_ session: Session, _ channel: Channel, letter: Character) {
        let (entry, end, text): (Numeric, Numeric, String)
        switch letter {
        case "e": (entry, end, text) = (.exceptList, .endOfExceptList, "End of channel exception list")
        case "I": (entry, end, text) = (.invexList, .endOfInvexList, "End of Channel Invite Exception List")
        default: (entry, end, text) = (.banList, .endOfBanList, "End of channel ban list")
        }
        for item in channel.lists[letter] {
            reply(session, entry, channel.name, item.mask, item.setBy, String(Int(item.setAt)))
        }
        reply(session, end, channel.name, text)
    }
}
