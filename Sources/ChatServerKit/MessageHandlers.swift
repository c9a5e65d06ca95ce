import IRCWire

extension ServerState {
    // PRIVMSG <target>{,<target>} <text>
    // NOTICE <target>{,<target>} <text>
    mutating func handleMessage(_ request: Request) {
        let id = request.id
        let command = request.message.command
        guard let targetList = request.params.first, !targetList.isEmpty else {
            reply(id, .noRecipient, "No recipient given (\(command))")
            return
        }
        guard request.params.count > 1, !request.params[1].isEmpty else {
            reply(id, .noTextToSend, "No text to send")
            return
        }
        let text = request.params[1]
        clients[id]!.lastSpoke = request.now
        relay(request, command: command, targets: targetList, params: [text])
    }

    // TAGMSG <target>{,<target>}
    mutating func handleTagMessage(_ request: Request) {
        relay(request, command: "TAGMSG", targets: request.params[0], params: [])
    }

    /// Delivers a PRIVMSG, NOTICE or TAGMSG to rooms and people, with errors for targets that do not exist.
    mutating func relay(_ request: Request, command: String, targets: String, params: [String]) {
        let id = request.id
        let sender = clients[id]!
        let clientTags = request.message.tags.isEmpty ? [] : request.message.tags.filter { $0.isClientOnly }
        let onlyTagged: Capability? = command == "TAGMSG" ? .messageTags : nil
        // Most messages have one target: skip splitting then.
        // (utf8.contains: with Foundation in the module, String.contains(String) is a CFString search.)
        let names = targets.utf8.contains(UInt8(ascii: ",")) ? targets.split(separator: ",").map(String.init) : [targets]
        if names.count > config.maxTargets {
            reply(id, .tooManyTargets, targets, "Too many targets, at most \(config.maxTargets)")
            return
        }
        for name in names {
            if IRCNames.isChannel(name) {
                let key = casemapping.fold(name)
                guard let channel = channels[key] else {
                    reply(id, .noSuchChannel, name, "No such channel")
                    continue
                }
                if channel.noExternalMessages && channel.members[id] == nil {
                    reply(id, .cannotSendToChan, channel.name, "Cannot send to channel (you are not in it)")
                    continue
                }
                let message = IRCMessage(tags: clientTags, source: sender.prefix, command: command, params: [channel.name] + params)
                var recipients = channel.members.keys.filter { $0 != id }
                if clients[id]!.caps.contains(.echoMessage) { recipients.append(id) }
                deliver(message, to: recipients, now: request.now, onlyWithCapability: onlyTagged)
            } else {
                guard let target = client(named: name), let recipient = clients[target], let targetNick = recipient.nick else {
                    reply(id, .noSuchNick, name, "No such nick/channel")
                    continue
                }
                let message = IRCMessage(tags: clientTags, source: sender.prefix, command: command, params: [targetNick] + params)
                if clients[id]!.caps.contains(.echoMessage) && target != id {
                    deliver(message, to: [target, id], now: request.now, onlyWithCapability: onlyTagged)
                } else {
                    deliver(message, to: CollectionOfOne(target), now: request.now, onlyWithCapability: onlyTagged)
                }
                if command == "PRIVMSG", let away = recipient.away {
                    reply(id, .away, targetNick, away)
                }
            }
        }
    }

    // AWAY [<text>]
    mutating func handleAway(_ request: Request) {
        let id = request.id
        let text = request.params.first.map { UTF8Boundary.prefix($0, maxBytes: config.awayLength) } ?? ""
        clients[id]!.away = text.isEmpty ? nil : text
        if text.isEmpty {
            reply(id, .unaway, "You are no longer marked as being away")
        } else {
            reply(id, .nowAway, "You have been marked as being away")
        }
        let message = IRCMessage(source: clients[id]!.prefix, command: "AWAY", params: text.isEmpty ? [] : [text])
        deliver(message, to: neighbours(of: id), now: request.now, onlyWithCapability: .awayNotify)
    }
}
