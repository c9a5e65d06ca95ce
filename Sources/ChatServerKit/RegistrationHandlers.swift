import IRCWire

extension ServerState {
    // CAP LS [302] | CAP LIST | CAP REQ :<caps> | CAP END
    mutating func handleCap(_ request: Request) {
        let id = request.id
        let name = clients[id]!.replyName
        let subcommand = request.params[0].uppercased()
        func capReply(_ params: String...) {
            outbox.send(id, IRCMessage(source: config.name, command: "CAP", params: [name] + params))
        }
        switch subcommand {
        case "LS":
            if !clients[id]!.registered { clients[id]!.capNegotiating = true }
            capReply("LS", Capability.allCases.map(\.rawValue).joined(separator: " "))
        case "LIST":
            capReply("LIST", clients[id]!.caps.names.joined(separator: " "))
        case "REQ":
            if !clients[id]!.registered { clients[id]!.capNegotiating = true }
            let asked = request.params.count > 1 ? request.params[1] : ""
            var caps = clients[id]!.caps
            var acceptable = true
            for word in asked.split(separator: " ") {
                let remove = word.hasPrefix("-")
                guard let cap = Capability(rawValue: String(remove ? word.dropFirst() : word)) else {
                    acceptable = false
                    break
                }
                if remove { caps.remove(cap) } else { caps.insert(cap) }
            }
            // A request is granted whole or refused whole.
            if acceptable {
                clients[id]!.caps = caps
                capReply("ACK", asked)
            } else {
                capReply("NAK", asked)
            }
        case "END":
            guard !clients[id]!.registered else { return }
            clients[id]!.capNegotiating = false
            completeRegistrationIfReady(id, now: request.now)
        default:
            reply(id, .invalidCapCommand, request.params[0], "Invalid CAP command")
        }
    }

    // PASS <password>
    mutating func handlePass(_ request: Request) {
        guard !clients[request.id]!.registered else {
            reply(request.id, .alreadyRegistered, "You may not reregister")
            return
        }
        clients[request.id]!.password = request.params[0]
    }

    // NICK <nickname>
    mutating func handleNick(_ request: Request) {
        let id = request.id
        guard let wanted = request.params.first, !wanted.isEmpty else {
            reply(id, .noNicknameGiven, "No nickname given")
            return
        }
        if let problem = IRCNames.nickProblem(wanted, maxBytes: config.nickLength) {
            reply(id, .erroneousNickname, wanted, problem)
            log(id, "error: erroneous nickname \"\(wanted)\" (432)")
            return
        }
        let folded = casemapping.fold(wanted)
        if let owner = nicks[folded], owner != id {
            reply(id, .nicknameInUse, wanted, "Nickname is already in use")
            return
        }
        let client = clients[id]!
        if client.nick == wanted { return }
        // Taken before the change: the announcement comes from the old name.
        let oldNick = client.nick
        let oldPrefix = client.prefix
        if let old = oldNick { nicks.removeValue(forKey: casemapping.fold(old)) }
        nicks[folded] = id
        client.nick = wanted
        for key in client.channels { channels[key]?.members[id]?.nick = wanted }
        if client.registered {
            let change = IRCMessage(source: oldPrefix, command: "NICK", params: [wanted])
            deliver(change, to: [id] + neighbours(of: id), now: request.now)
            log(id, "\(oldNick!) is now known as \(wanted)")
        } else {
            completeRegistrationIfReady(id, now: request.now)
        }
    }

    // USER <username> <mode> <unused> :<realname>
    mutating func handleUser(_ request: Request) {
        let id = request.id
        guard !clients[id]!.registered else {
            reply(id, .alreadyRegistered, "You may not reregister")
            return
        }
        let safe = request.params[0].unicodeScalars.filter {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0))
        }
        let user = String(String.UnicodeScalarView(safe.prefix(10)))
        clients[id]!.user = user.isEmpty ? "user" : user
        clients[id]!.realname = UTF8Boundary.prefix(request.params[3], maxBytes: 100)
        completeRegistrationIfReady(id, now: request.now)
    }

    // PING <token>
    mutating func handlePing(_ request: Request) {
        guard let token = request.params.first else {
            reply(request.id, .noOrigin, "No origin specified")
            return
        }
        outbox.send(request.id, IRCMessage(source: config.name, command: "PONG", params: [config.name, token]))
    }

    // QUIT [<reason>]
    mutating func handleQuit(_ request: Request) {
        let reason = request.params.first.map { "Quit: " + UTF8Boundary.prefix($0, maxBytes: config.kickLength) } ?? "Quit"
        closeLink(request.id, reason: reason, now: request.now)
    }

    mutating func completeRegistrationIfReady(_ id: ConnectionID, now: Double) {
        let client = clients[id]!
        guard !client.registered, !client.capNegotiating, let nick = client.nick, client.user != nil else { return }
        if let password = config.password, client.password != password {
            reply(id, .passwdMismatch, "Password incorrect")
            log(id, "error: wrong or missing password from \(nick)")
            closeLink(id, reason: "Bad password", now: now)
            return
        }
        clients[id]!.registered = true
        log(id, "registered as \(nick) (\(clients[id]!.prefix))")
        let server = config.name
        reply(id, .welcome, "Welcome to the \(config.network) IRC network, \(clients[id]!.prefix)")
        reply(id, .yourHost, "Your host is \(server), running version \(config.version)")
        reply(id, .created, "This server was created \(ServerTime.format(config.createdAt))")
        outbox.send(id, IRCMessage(source: server, command: Numeric.myInfo.rawValue,
                                   params: [nick, server, config.version, "i", "ntov", "ov"]))
        let tokens = config.isupport.map { $0.1.isEmpty ? $0.0 : "\($0.0)=\($0.1)" }
        var start = 0
        while start < tokens.count {
            let chunk = Array(tokens[start..<min(start + 12, tokens.count)])
            outbox.send(id, IRCMessage(source: server, command: Numeric.isupport.rawValue,
                                       params: [nick] + chunk + ["are supported by this server"]))
            start += 12
        }
        registeredCount += 1
        let users = registeredCount
        reply(id, .lUserClient, "There are \(users) users and 0 invisible on 1 server")
        reply(id, .lUserMe, "I have \(users) clients and 0 servers")
        sendMotd(id)
        join(id, channelName: config.room, now: now)
    }

    mutating func sendMotd(_ id: ConnectionID) {
        guard let lines = config.motd else {
            reply(id, .noMotd, "MOTD File is missing")
            return
        }
        reply(id, .motdStart, "- \(config.name) Message of the day - ")
        for line in lines { reply(id, .motd, "- " + UTF8Boundary.prefix(line, maxBytes: 400)) }
        reply(id, .endOfMotd, "End of /MOTD command.")
    }
}
