import IRCWire

extension ServerState {
    // OPER <name> <password>
    mutating func handleOper(_ request: Request) {
        let session = request.session
        // No operators at all: 491. An unknown name gets the same 464 as a wrong password, as in
        // ergo, so that OPER does not tell which names exist.
        guard !config.operators.isEmpty else {
            reply(session, .noOperHost, "No O-lines for your host")
            return
        }
        // Online guessing: after three failures this connection's OPER is refused unchecked.
        guard session.failedOperAttempts < 3 else {
            reply(session, .passwdMismatch, "Password incorrect")
            return
        }
        if session.verifying { return }
        guard accountBook.pendingPasswordChecks < config.maxPendingPasswordChecks else {
            reply(session, .passwdMismatch, "The server is busy; try again in a moment")
            return
        }
        // Every block of that name is tried (the host's own and one from --oper may share it);
        // an unknown name is hashed against a stand-in, so timing does not tell names apart.
        // The hashing (PBKDF2) runs on the worker; `operChecked` has the answer.
        let candidates = config.operators.filter { $0.name == request.params[0] }
        session.operName = request.params[0]
        requestCheck(session, .oper(blocks: candidates.isEmpty ? [OperatorBlock.standIn] : candidates), password: request.params[1])
    }

    mutating func operChecked(_ session: Session, block name: String?, now: Double) {
        let user = session.user
        let asked = session.operName ?? ""
        session.operName = nil
        // The stand-in's name is empty: it never makes anyone an operator.
        guard let name, !name.isEmpty else {
            session.failedOperAttempts += 1
            reply(session, .passwdMismatch, "Password incorrect")
            log(session, "error: failed OPER as \"\(asked)\" by \(user.replyName)")
            return
        }
        if !user.isOperator {
            people.setMode(of: user, "o", true)
            linkUserEvent(user, "OPERTYPE", ["Operator"])
            send(session, IRCMessage(source: user.prefix, command: "MODE", params: [user.replyName, "+o"]))
        }
        reply(session, .youreOper, "You are now an IRC operator")
        log(session, "\(user.replyName) is now an operator (\(name))")
        // An operator runs the room everyone joins: the host's own user gets +o there.
        if let room = config.room {
            let key = casemapping.fold(room)
            if let status = roomBook.membership.status(of: user.id, in: key), !status.op, let channel = roomBook.channels[key] {
                roomBook.membership.setStatus(user.id, in: key, "o", true)
                let mode = IRCMessage(source: config.name, command: "MODE", params: [channel.name, "+o", user.replyName])
                deliver(mode, toRoom: key, now: now)
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
        let comment = UTF8Boundary.prefix(PlainText.cleanFreeText(request.params[1]), maxBytes: config.kickLength)
        let reason = "Killed (\(user.replyName) (\(comment)))"
        log(session, "\(user.replyName) killed \(target.replyName): \(comment)")
        if target.remote != nil {
            linkKill(user, target: target, comment: comment, reason: reason, now: request.now)
            return
        }
        // The killed user sees the KILL and its own QUIT (the modern docs), then ERROR; every
        // session of it, and an always-on user leaves too.
        target.ending = true
        for targetSession in target.sessions {
            send(targetSession, IRCMessage(source: user.prefix, command: "KILL", params: [target.replyName, comment]))
            send(targetSession, IRCMessage(source: target.prefix, command: "QUIT", params: [reason]))
            closeLink(targetSession, reason: reason, now: request.now)
        }
        endUser(target, quitMessage: reason, leaving: nil, now: request.now)
    }

    // CHGHOST <nickname> <new host> (operators; as InspIRCd's). Room mates with `chghost` see
    // `:old CHGHOST user host`; the others get the fallback the spec suggests: a QUIT from the
    // old mask, then a JOIN from the new one in each shared room, with its status as MODE.
    mutating func handleChghost(_ request: Request) {
        let session = request.session, user = request.user
        guard let target = self.user(named: request.params[0]) else {
            reply(session, .noSuchNick, request.params[0], "No such nick/channel")
            return
        }
        let host = request.params[1]
        guard !host.isEmpty, !host.hasPrefix(":"), host.utf8.count <= 64, host.unicodeScalars.allSatisfy({
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || ".-:/".unicodeScalars.contains($0))
        }) else {
            standardReply(session, "FAIL", command: "CHGHOST", code: "INVALID_HOST", context: [host], "A host is 1 to 64 letters, digits and .-:/")
            return
        }
        let message = IRCMessage(tags: accountTags(target), source: target.prefix, command: "CHGHOST", params: [target.username ?? "unknown", host])
        let oldPrefix = target.prefix
        target.host = host
        roomBook.membership.identityChanged(target.id)
        let neighbours = roomBook.membership.neighbours(of: target.id)
        deliver(message, to: [target.id] + neighbours, now: request.now, onlyWith: .chghost)
        let quit = IRCMessage(tags: accountTags(target), source: oldPrefix, command: "QUIT", params: ["Changing host"])
        deliver(quit, to: neighbours, now: request.now, excluding: .chghost, storable: false)
        for key in roomBook.membership.rooms(of: target.id).sorted() {
            guard let channel = roomBook.channels[key], let members = roomBook.membership.members[key], let status = members[target.id] else { continue }
            let others = members.keys.filter { $0 != target.id }
            let join = IRCMessage(tags: accountTags(target), source: target.prefix, command: "JOIN",
                                  params: [channel.name, target.account ?? "*", target.realname])
            deliver(join, to: others, now: request.now, excluding: .chghost, storable: false)
            let letters = (status.op ? "o" : "") + (status.voice ? "v" : "")
            if !letters.isEmpty {
                let mode = IRCMessage(source: config.name, command: "MODE",
                                      params: [channel.name, "+" + letters] + Array(repeating: target.replyName, count: letters.count))
                deliver(mode, to: others, now: request.now, excluding: .chghost, storable: false)
            }
        }
        notifyMonitors(online: target, now: request.now, extendedOnly: .chghost, message: message)
        log(session, "\(user.replyName) changed the host of \(target.replyName) to \(host)")
    }
}
