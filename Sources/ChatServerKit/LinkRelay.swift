import ChatLink
import IRCWire

/// What our own users do, told to the linked network: each handler calls one of these after
/// it has changed the state, with the network's form of the event (users by UUID, rooms with
/// their timestamp). Nothing is made when no link is up.
extension ServerState {
    /// A user has registered: UID (and its account, away text, operator status) to every link.
    mutating func linkIntroduce(_ user: User) {
        guard isLinked else { return }
        for line in introduction(of: user) { broadcast(line, except: nil) }
    }

    /// One of ours joined a room: FJOIN with the room's timestamp and modes, so a server that
    /// has not got the room makes it as ours is.
    mutating func linkJoin(_ user: User, key: String) {
        guard isLinked, user.remote == nil, let channel = roomBook.channels[key], let status = roomBook.membership.status(of: user.id, in: key) else { return }
        let line = FJOINLine(room: channel.name, timestamp: Int(channel.createdAt), modes: LinkModes.fjoinModes(channel),
                             members: [FJOINLine.Member(status: LinkModes.status(status), uuid: user.uuid)])
        for message in line.messages(source: sid) { broadcast(message, except: nil) }
    }

    /// PART, QUIT, NICK, AWAY, FNAME, OPERTYPE, MODE of one of ours: `:<uuid> <command> <params>` everywhere.
    mutating func linkUserEvent(_ user: User, _ command: String, _ params: [String]) {
        guard isLinked, user.remote == nil else { return }
        broadcast(IRCMessage(source: user.uuid, command: command, params: params), except: nil)
    }

    /// A message from one of ours to a room: to the links behind which the room has members,
    /// with its msgid and time, so every node keeps it under the same msgid.
    mutating func linkRoomMessage(_ message: IRCMessage, from user: User, room key: String, stamp: Stamp) {
        guard isLinked, user.remote == nil else { return }
        relayToLinks(networkForm(message, from: user, stamp: stamp), room: key, except: nil)
    }

    /// A message from one of ours to a remote user: along the route to its server.
    mutating func linkDirectMessage(_ message: IRCMessage, from user: User, to target: User, stamp: Stamp) {
        guard let server = target.remote, let link = net.links[server.route], link.burstSent else { return }
        var form = networkForm(message, from: user, stamp: stamp)
        form.params[0] = target.uuid
        sendLink(link, form)
    }

    /// `@msgid=…;time=…;+client-tags :<uuid> PRIVMSG <target> :<text>`.
    func networkForm(_ message: IRCMessage, from user: User, stamp: Stamp) -> IRCMessage {
        var tags = message.tags.filter(\.isClientOnly)
        tags.insert(IRCTag("time", stamp.timeTag), at: 0)
        if let id = stamp.msgidTag { tags.insert(IRCTag("msgid", id), at: 0) }
        return IRCMessage(tags: tags, source: user.uuid, command: message.command, params: message.params)
    }

    /// To each link behind which `key` has a member (but `except`).
    mutating func relayToLinks(_ message: IRCMessage, room key: String, except: ConnectionID?) {
        guard isLinked else { return }
        var routes: Set<ConnectionID> = []
        for status in (roomBook.membership.members[key] ?? [:]).values {
            if let route = status.user.remote?.route, route != except { routes.insert(route) }
        }
        guard !routes.isEmpty else { return }
        let bytes = message.serialized(maxBodyBytes: LinkLimits.maxLine)
        for route in routes.sorted() where net.links[route]?.burstSent == true {
            outbox.items.append(.send(route, bytes))
        }
    }

    /// A room's modes changed by one of ours: FMODE with the room's timestamp, members by UUID.
    mutating func linkModes(_ user: User, key: String, _ applied: [ModeChange]) {
        guard user.remote == nil else { return }
        linkModes(source: user.uuid, key: key, applied)
    }

    /// A mode change of ours, from one of our users (its UUID) or our server (its SID: ChanServ's).
    mutating func linkModes(source: String, key: String, _ applied: [ModeChange]) {
        guard isLinked, let channel = roomBook.channels[key] else { return }
        let network = applied.map { change -> ModeChange in
            guard ChannelModes.mode(change.letter)?.kind == .membership, let nick = change.argument,
                  let target = self.user(named: nick) else { return change }
            return ModeChange(adding: change.adding, letter: change.letter, argument: target.uuid)
        }
        broadcast(IRCMessage(source: source, command: "FMODE", params: [channel.name, String(Int(channel.createdAt))] + ModeSyntax.format(network)),
                  except: nil)
    }

    /// A topic set by one of ours: FTOPIC with the room's and the topic's time.
    mutating func linkTopic(_ user: User, key: String) {
        guard isLinked, user.remote == nil, let channel = roomBook.channels[key] else { return }
        broadcast(IRCMessage(source: user.uuid, command: "FTOPIC",
                             params: [channel.name, String(Int(channel.createdAt)), String(Int(channel.topicSetAt)), channel.topic]),
                  except: nil)
    }

    /// One of ours kicked someone: KICK naming the target by UUID.
    mutating func linkKick(_ user: User, key: String, target: User, reason: String) {
        guard isLinked, user.remote == nil, let channel = roomBook.channels[key] else { return }
        broadcast(IRCMessage(source: user.uuid, command: "KICK", params: [channel.name, target.uuid, reason]), except: nil)
    }

    /// An operator of ours killed a remote user: KILL to the network, and the user leaves here.
    mutating func linkKill(_ user: User, target: User, comment: String, reason: String, now: Double) {
        guard target.remote != nil else { return }
        broadcast(IRCMessage(source: user.uuid, command: "KILL", params: [target.uuid, comment]), except: nil)
        removeRemoteUser(target, reason: reason, now: now)
    }

    /// One of ours invited a remote user: INVITE with the room's timestamp, to everyone (the
    /// invitee's server tells it; the others keep the invitation for +i).
    mutating func linkInvite(_ user: User, target: User, key: String) {
        guard isLinked, let channel = roomBook.channels[key] else { return }
        // The last field is when the invitation expires (0: never), as InspIRCd 3 sends it.
        broadcast(IRCMessage(source: user.uuid, command: "INVITE", params: [target.uuid, channel.name, String(Int(channel.createdAt)), "0"]),
                  except: nil)
    }

    /// An account logged in or out here: METADATA accountname.
    mutating func linkAccount(_ user: User) {
        guard isLinked, user.remote == nil, user.isOnline else { return }
        broadcast(IRCMessage(source: sid, command: "METADATA", params: [user.uuid, "accountname", user.account ?? ""]), except: nil)
    }
}
