import IRCWire

extension ServerState {
    // OPER <name> <password>
    mutating func handleOper(_ request: Request) {
        let session = request.session, user = request.user
        guard let block = config.operators.first(where: { $0.name == request.params[0] }) else {
            reply(session, .noOperHost, "No O-lines for your host")
            log(session, "error: OPER as unknown operator \"\(PlainText.visible(request.params[0]))\" by \(user.replyName)")
            return
        }
        guard block.accepts(request.params[1]) else {
            reply(session, .passwdMismatch, "Password incorrect")
            log(session, "error: wrong OPER password for \(block.name) from \(user.replyName)")
            return
        }
        if !user.isOperator {
            user.modes.insert("o")
            send(session, IRCMessage(source: user.prefix, command: "MODE", params: [user.replyName, "+o"]))
        }
        reply(session, .youreOper, "You are now an IRC operator")
        log(session, "\(user.replyName) is now an operator (\(block.name))")
        // An operator runs the room everyone joins: the host's own user gets +o there.
        if let room = config.room {
            let key = casemapping.fold(room)
            if let status = membership.status(of: user.id, in: key), !status.op, let channel = channels[key] {
                membership.setStatus(user.id, in: key, "o", true)
                let mode = IRCMessage(source: config.name, command: "MODE", params: [channel.name, "+o", user.replyName])
                deliver(mode, to: membership.members[key]!.keys, now: request.now)
            }
        }
    }

    // KILL <nickname> <comment>
    mutating func handleKill(_ request: Request) {
        let session = request.session, user = request.user
        guard let target = self.user(named: request.params[0]) else {
            if casemapping.equal(request.params[0], config.name) {
                reply(session, .cantKillServer, "You can't kill a server!")
            } else {
                reply(session, .noSuchNick, request.params[0], "No such nick/channel")
            }
            return
        }
        let comment = UTF8Boundary.prefix(request.params[1], maxBytes: config.kickLength)
        let reason = "Killed (\(user.replyName) (\(comment)))"
        log(session, "\(user.replyName) killed \(target.replyName): \(comment)")
        for targetSession in target.sessions {
            send(targetSession, IRCMessage(source: user.prefix, command: "KILL", params: [target.replyName, comment]))
            closeLink(targetSession, reason: reason, now: request.now)
        }
    }

    // CHGHOST <nickname> <new host> (operators; as InspIRCd's). Room mates with `chghost` see
    // `:old CHGHOST user host`; others see nothing, which the chghost spec allows.
    mutating func handleChghost(_ request: Request) {
        let session = request.session, user = request.user
        guard let target = self.user(named: request.params[0]) else {
            reply(session, .noSuchNick, request.params[0], "No such nick/channel")
            return
        }
        let host = request.params[1]
        guard !host.isEmpty, host.utf8.count <= 64, host.unicodeScalars.allSatisfy({
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || ".-:/".unicodeScalars.contains($0))
        }) else {
            standardReply(session, "FAIL", command: "CHGHOST", code: "INVALID_HOST", context: [host], "A host is 1 to 64 letters, digits and .-:/")
            return
        }
        let message = IRCMessage(source: target.prefix, command: "CHGHOST", params: [target.username ?? "unknown", host])
        target.host = host
        deliver(message, to: [target.id] + membership.neighbours(of: target.id), now: request.now, onlyWith: .chghost)
        notifyMonitors(online: target, now: request.now, extendedOnly: .chghost, message: message)
        log(session, "\(user.replyName) changed the host of \(target.replyName) to \(host)")
    }
}
