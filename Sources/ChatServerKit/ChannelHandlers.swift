import IRCWire

extension ServerState {
    // JOIN <channel>{,<channel>} [<key>{,<key>}] | JOIN 0
    mutating func handleJoin(_ request: Request) {
        let id = request.id
        if request.params[0] == "0" {
            for key in clients[id]!.channels.sorted() {
                part(id, key: key, reason: "Left all rooms", now: request.now)
            }
            return
        }
        for name in request.params[0].split(separator: ",").map(String.init) {
            join(id, channelName: name, now: request.now)
        }
    }

    mutating func join(_ id: ConnectionID, channelName name: String, now: Double) {
        if let problem = IRCNames.channelProblem(name, maxBytes: config.channelLength) {
            reply(id, .badChanName, name, problem)
            return
        }
        let key = casemapping.fold(name)
        if clients[id]!.channels.contains(key) { return }
        if channels[key] == nil {
            channels[key] = Channel(name: name, createdAt: now)
        }
        // The first member of a new room runs it.
        let isFirst = channels[key]!.members.isEmpty
        channels[key]!.members[id] = MemberStatus(nick: clients[id]!.nick!, op: isFirst)
        clients[id]!.channels.insert(key)
        let channel = channels[key]!
        let joinMessage = IRCMessage(source: clients[id]!.prefix, command: "JOIN", params: [channel.name])
        deliver(joinMessage, to: channel.members.keys, now: now)
        if !channel.topic.isEmpty { sendTopic(id, channel) }
        sendNames(id, channel)
    }

    // PART <channel>{,<channel>} [<reason>]
    mutating func handlePart(_ request: Request) {
        let reason = request.params.count > 1 ? UTF8Boundary.prefix(request.params[1], maxBytes: config.kickLength) : nil
        for name in request.params[0].split(separator: ",").map(String.init) {
            let key = casemapping.fold(name)
            guard channels[key] != nil else {
                reply(request.id, .noSuchChannel, name, "No such channel")
                continue
            }
            guard clients[request.id]!.channels.contains(key) else {
                reply(request.id, .notOnChannel, name, "You're not on that channel")
                continue
            }
            part(request.id, key: key, reason: reason, now: request.now)
        }
    }

    mutating func part(_ id: ConnectionID, key: String, reason: String?, now: Double) {
        guard let channel = channels[key] else { return }
        var params = [channel.name]
        if let reason, !reason.isEmpty { params.append(reason) }
        let message = IRCMessage(source: clients[id]!.prefix, command: "PART", params: params)
        deliver(message, to: channel.members.keys, now: now)
        removeMember(id, from: key)
    }

    // TOPIC <channel> [<topic>]
    mutating func handleTopic(_ request: Request) {
        let id = request.id
        let name = request.params[0]
        let key = casemapping.fold(name)
        guard let channel = channels[key] else {
            reply(id, .noSuchChannel, name, "No such channel")
            return
        }
        guard request.params.count > 1 else {
            if channel.topic.isEmpty {
                reply(id, .noTopic, channel.name, "No topic is set")
            } else {
                sendTopic(id, channel)
            }
            return
        }
        guard let status = channel.members[id] else {
            reply(id, .notOnChannel, channel.name, "You're not on that channel")
            return
        }
        if channel.topicLocked && !status.op {
            reply(id, .chanOPrivsNeeded, channel.name, "You're not channel operator")
            return
        }
        let topic = UTF8Boundary.prefix(request.params[1], maxBytes: config.topicLength)
        channels[key]!.topic = topic
        channels[key]!.topicSetBy = clients[id]!.nick!
        channels[key]!.topicSetAt = request.now
        let message = IRCMessage(source: clients[id]!.prefix, command: "TOPIC", params: [channel.name, topic])
        deliver(message, to: channel.members.keys, now: request.now)
    }

    mutating func sendTopic(_ id: ConnectionID, _ channel: Channel) {
        reply(id, .topic, channel.name, channel.topic)
        reply(id, .topicWhoTime, channel.name, channel.topicSetBy, String(Int(channel.topicSetAt)))
    }

    // NAMES [<channel>{,<channel>}]
    mutating func handleNames(_ request: Request) {
        guard let list = request.params.first else {
            for key in channels.keys.sorted() { sendNames(request.id, channels[key]!, end: false) }
            reply(request.id, .endOfNames, "*", "End of /NAMES list")
            return
        }
        for name in list.split(separator: ",").map(String.init) {
            if let channel = channels[casemapping.fold(name)] {
                sendNames(request.id, channel)
            } else {
                reply(request.id, .endOfNames, name, "End of /NAMES list")
            }
        }
    }

    /// 353 lines, as many as it takes to stay under 512 bytes each, then 366.
    mutating func sendNames(_ id: ConnectionID, _ channel: Channel, end: Bool = true) {
        let all = clients[id]!.caps.contains(.multiPrefix)
        let target = clients[id]!.replyName
        // Unsorted on purpose: clients sort for display, and sorting 10,000 names for every
        // arrival made joining a big room quadratic in string comparisons. Names are gathered as
        // bytes: one String per 353 line, not one per member.
        let overhead = ":\(config.name) 353 \(target) = \(channel.name) :".utf8.count + 2
        var line: [UInt8] = []
        line.reserveCapacity(IRCLimits.lineBytes)
        for status in channel.members.values {
            let prefix = status.prefix(all: all)
            let size = prefix.utf8.count + status.nick.utf8.count
            if !line.isEmpty && overhead + line.count + 1 + size > IRCLimits.lineBytes {
                reply(id, .namReply, "=", channel.name, String(decoding: line, as: UTF8.self))
                line.removeAll(keepingCapacity: true)
            }
            if !line.isEmpty { line.append(UInt8(ascii: " ")) }
            line.append(contentsOf: prefix.utf8)
            line.append(contentsOf: status.nick.utf8)
        }
        if !line.isEmpty { reply(id, .namReply, "=", channel.name, String(decoding: line, as: UTF8.self)) }
        if end { reply(id, .endOfNames, channel.name, "End of /NAMES list") }
    }

    // LIST [<channel>{,<channel>}]
    mutating func handleList(_ request: Request) {
        let wanted = request.params.first.map { Set($0.split(separator: ",").map { casemapping.fold(String($0)) }) }
        reply(request.id, .listStart, "Channel", "Users  Name")
        for key in channels.keys.sorted() where wanted?.contains(key) ?? true {
            let channel = channels[key]!
            reply(request.id, .list, channel.name, String(channel.members.count), "[\(channel.modeString)] \(channel.topic)")
        }
        reply(request.id, .listEnd, "End of /LIST")
    }

    // KICK <channel> <user>{,<user>} [<comment>]
    mutating func handleKick(_ request: Request) {
        let id = request.id
        let name = request.params[0]
        let key = casemapping.fold(name)
        guard let channel = channels[key] else {
            reply(id, .noSuchChannel, name, "No such channel")
            return
        }
        guard let status = channel.members[id] else {
            reply(id, .notOnChannel, channel.name, "You're not on that channel")
            return
        }
        guard status.op else {
            reply(id, .chanOPrivsNeeded, channel.name, "You're not channel operator")
            return
        }
        let comment = request.params.count > 2 ? UTF8Boundary.prefix(request.params[2], maxBytes: config.kickLength) : clients[id]!.nick!
        for nick in request.params[1].split(separator: ",").map(String.init) {
            guard let target = client(named: nick), channels[key]?.members[target] != nil else {
                reply(id, .userNotInChannel, nick, channel.name, "They aren't on that channel")
                continue
            }
            let message = IRCMessage(source: clients[id]!.prefix, command: "KICK",
                                     params: [channel.name, clients[target]!.nick!, comment])
            deliver(message, to: channels[key]!.members.keys, now: request.now)
            removeMember(target, from: key)
            log(id, "\(clients[id]!.nick!) kicked \(clients[target]!.nick!) from \(channel.name): \(comment)")
        }
    }

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
        let id = request.id
        guard casemapping.equal(nick, clients[id]!.nick!) else {
            if client(named: nick) == nil {
                reply(id, .noSuchNick, nick, "No such nick/channel")
            } else {
                reply(id, .usersDontMatch, "Can't change mode for other users")
            }
            return
        }
        guard request.params.count > 1 else {
            reply(id, .umodeIs, clients[id]!.invisible ? "+i" : "+")
            return
        }
        var adding = true
        var applied = ""
        var appliedSign: Character?
        for flag in request.params[1] {
            switch flag {
            case "+": adding = true
            case "-": adding = false
            case "i":
                if clients[id]!.invisible != adding {
                    clients[id]!.invisible = adding
                    let sign: Character = adding ? "+" : "-"
                    if appliedSign != sign { applied.append(sign); appliedSign = sign }
                    applied.append("i")
                }
            default:
                reply(id, .uModeUnknownFlag, "Unknown MODE flag")
            }
        }
        if !applied.isEmpty {
            outbox.send(id, IRCMessage(source: clients[id]!.prefix, command: "MODE", params: [clients[id]!.nick!, applied]))
        }
    }

    mutating func channelMode(_ request: Request, name: String) {
        let id = request.id
        let key = casemapping.fold(name)
        guard let channel = channels[key] else {
            reply(id, .noSuchChannel, name, "No such channel")
            return
        }
        guard request.params.count > 1 else {
            reply(id, .channelModeIs, channel.name, channel.modeString)
            reply(id, .creationTime, channel.name, String(Int(channel.createdAt)))
            return
        }
        let modes = request.params[1]
        var arguments = Array(request.params.dropFirst(2))
        // A ban-list query (`MODE #room b`, as irssi sends on join) gets an empty list.
        if modes.trimmingPrefix("+") == "b" && arguments.isEmpty {
            reply(id, .endOfBanList, channel.name, "End of channel ban list")
            return
        }
        guard let status = channel.members[id], status.op else {
            reply(id, channel.members[id] == nil ? .notOnChannel : .chanOPrivsNeeded, channel.name,
                  channel.members[id] == nil ? "You're not on that channel" : "You're not channel operator")
            return
        }
        var adding = true
        var changes: [(sign: Character, mode: Character, argument: String?)] = []
        for flag in modes {
            switch flag {
            case "+": adding = true
            case "-": adding = false
            case "n", "t":
                let before = flag == "n" ? channels[key]!.noExternalMessages : channels[key]!.topicLocked
                guard before != adding else { continue }
                if flag == "n" { channels[key]!.noExternalMessages = adding } else { channels[key]!.topicLocked = adding }
                changes.append((adding ? "+" : "-", flag, nil))
            case "o", "v":
                guard !arguments.isEmpty else {
                    reply(id, .needMoreParams, "MODE", "Not enough parameters")
                    continue
                }
                let nick = arguments.removeFirst()
                guard let target = client(named: nick), channels[key]!.members[target] != nil else {
                    reply(id, .userNotInChannel, nick, channel.name, "They aren't on that channel")
                    continue
                }
                if flag == "o" { channels[key]!.members[target]!.op = adding } else { channels[key]!.members[target]!.voice = adding }
                changes.append((adding ? "+" : "-", flag, clients[target]!.nick!))
            default:
                reply(id, .unknownMode, String(flag), "is unknown mode char to me")
            }
        }
        guard !changes.isEmpty else { return }
        var modeText = ""
        var lastSign: Character?
        for change in changes {
            if change.sign != lastSign { modeText.append(change.sign); lastSign = change.sign }
            modeText.append(change.mode)
        }
        let message = IRCMessage(source: clients[id]!.prefix, command: "MODE",
                                 params: [channel.name, modeText] + changes.compactMap(\.argument))
        deliver(message, to: channels[key]!.members.keys, now: request.now)
    }
}
