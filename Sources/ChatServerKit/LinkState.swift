import ChatLink
import ChatTransport
import IRCWire

/// The server-to-server side of the state: links coming up (CAPAB, SERVER, the burst), kept
/// alive (PING), and going down (a netsplit), in InspIRCd's spanning-tree protocol 1205.
/// A remote user is a `User` with `remote` set and no sessions: membership, nicknames and
/// deliveries treat it like anyone else, and what it does arrives here as lines from its link.
extension ServerState {
    // MARK: Links from the runtime

    /// A link's connection is up (we dialled it, or it came to the link port): CAPAB goes out at once, as InspIRCd does.
    public mutating func linkConnected(_ id: ConnectionID, peer: String, dialled: LinkBlock?, secure: Bool, now: Double) {
        let link = LinkSession(connection: id, peer: peer, dialled: dialled, secure: secure, now: now)
        net.links[id] = link
        if let dialled { net.linkRetries[dialled.name]?.dialling = false }
        log("link \(peer): connected\(dialled.map { " (dialled \($0.name))" } ?? "")")
        for line in ourCapabilities() { sendLink(link, line) }
    }

    /// A dial failed before a connection was made: tried again later.
    public mutating func linkDialFailed(_ name: String, reason: String, now: Double) {
        net.linkRetries[name, default: LinkRetry()].dialling = false
        net.linkRetries[name, default: LinkRetry()].failed(now: now)
        log("link \(name): cannot connect: \(reason); trying again in \(Int(net.linkRetries[name]!.next - now)) s")
    }

    /// Connections to dial now: configured links with a host, not linked, not being dialled, due.
    mutating func dialDueLinks(now: Double) {
        for block in config.links.blocks where block.host != nil {
            if net.links.values.contains(where: { $0.name == block.name }) || net.servers.values.contains(where: { $0.name == block.name }) { continue }
            var retry = net.linkRetries[block.name] ?? LinkRetry()
            guard !retry.dialling, retry.next <= now else { continue }
            retry.dialling = true
            net.linkRetries[block.name] = retry
            outbox.items.append(.dialLink(block))
        }
    }

    /// One line from a link.
    public mutating func linkReceived(_ line: [UInt8], from id: ConnectionID, now: Double) {
        guard let link = net.links[id] else { return }
        link.lastActivity = now
        link.pingSentAt = nil
        let message: IRCMessage
        do {
            message = try IRCMessage(serverLine: line, maxBodyBytes: LinkLimits.maxLine)
        } catch {
            if case .empty = error { return }
            log("link \(link.name): ignored a line it sent (\(error))")
            return
        }
        switch link.phase {
        case .capabilities, .authentication:
            link.preAuthBytes += line.count
            link.preAuthLines += 1
            guard link.preAuthBytes <= LinkSession.preAuthByteLimit, link.preAuthLines <= LinkSession.preAuthLineLimit else {
                refuseLink(link, "sent \(link.preAuthLines) lines (\(link.preAuthBytes) bytes) before authenticating: more than a handshake", now: now)
                return
            }
            handshake(message, link, now: now)
        case .linked:
            networkEvent(message, from: link, now: now)
        }
    }

    /// A link that sent nothing for a while gets a PING; one that does not answer is dropped.
    mutating func tickLinks(now: Double) {
        var dead: [(LinkSession, String)] = []
        for link in net.links.values {
            if link.phase != .linked {
                if now - link.connectedAt >= config.registrationTimeout { dead.append((link, "Link handshake timed out")) }
            } else if let sent = link.pingSentAt {
                if now - sent >= config.links.pingTimeout { dead.append((link, "Ping timeout")) }
            } else if now - link.lastActivity >= config.links.pingInterval, let server = link.server {
                link.pingSentAt = now
                sendLink(link, IRCMessage(source: sid, command: "PING", params: [server.sid]))
            }
        }
        for (link, reason) in dead.sorted(by: { $0.0.connection < $1.0.connection }) { dropLink(link, reason: reason, now: now) }
        dialDueLinks(now: now)
    }

    // MARK: The handshake

    /// Our `CAPAB` block: protocol 1205 and our limits. No MODULES, CHANMODES or USERMODES:
    /// InspIRCd compares those lists only when the peer sends them, and refuses any difference
    /// (its own +p, +r, snomasks…), so we send none, as services packages do, and take the
    /// modes we do not know as unknown (they are ignored, not refused).
    func ourCapabilities() -> [IRCMessage] {
        var lines = [IRCMessage(command: "CAPAB", params: ["START", "1205"])]
        let capabilities = [
            "NICKMAX=\(config.nickLength)", "CHANMAX=\(config.channelLength)", "MAXMODES=\(config.maxModes)",
            "IDENTMAX=\(config.userLength)", "MAXQUIT=\(config.kickLength)", "MAXTOPIC=\(config.topicLength)",
            "MAXKICK=\(config.kickLength)", "MAXREAL=\(config.realnameLength)", "MAXAWAY=\(config.awayLength)",
            "MAXHOST=64", "MAXLINE=512", "CASEMAPPING=\(casemapping.rawValue)", "GLOBOPS=0",
            // Ours: InspIRCd ignores keys it does not know; a chat-tui peer reads it (history merge).
            "CHATTUI=1",
        ]
        lines += Capab.lines("CAPABILITIES", capabilities)
        lines.append(IRCMessage(command: "CAPAB", params: ["END"]))
        return lines
    }

    mutating func handshake(_ message: IRCMessage, _ link: LinkSession, now: Double) {
        switch message.command {
        case "CAPAB":
            guard link.phase == .capabilities else { return }
            _ = link.capab.take(message)
            guard link.capab.ended else { return }
            if let problem = capabilityProblem(link.capab) {
                refuseLink(link, problem, now: now)
                return
            }
            link.phase = .authentication
            // The side that dialled names itself first (its password too), once it knows the
            // peer is the one pinned: an impostor never learns the password. The other answers
            // once it has checked.
            if let block = link.dialled {
                if let problem = certificateProblem(block, link) {
                    refuseLink(link, problem, now: now)
                    return
                }
                sendLink(link, ServerLine(name: config.name, password: block.password, sid: sid, description: config.links.description).message())
            }
        case "SERVER":
            guard link.phase == .authentication, let line = ServerLine(message) else {
                refuseLink(link, "SERVER before CAPAB END, or malformed", now: now)
                return
            }
            authenticate(line, link, now: now)
        case "ERROR":
            log("link \(link.name): refused by the peer: \(message.params.first ?? "")")
            dropLink(link, reason: "ERROR: " + (message.params.first ?? ""), now: now, tellPeer: false)
        default:
            // PING before the burst and whatever a newer protocol sends first: nothing to do yet.
            break
        }
    }

    /// Why two servers cannot link, in words for both logs: the same casemapping (or nicknames
    /// would fold differently on each side) and protocol 1205 or later.
    func capabilityProblem(_ capab: Capab) -> String? {
        if capab.protocolVersion < 1205 { return "protocol \(capab.protocolVersion) is too old (1205 or later is needed)" }
        if let mapping = capab.capabilities["CASEMAPPING"], mapping != casemapping.rawValue {
            return "casemapping \(mapping) differs from ours (\(casemapping.rawValue))"
        }
        return nil
    }

    /// Why a link's TLS does not do: not TLS where the block wants it, or another certificate than the one pinned.
    func certificateProblem(_ block: LinkBlock, _ link: LinkSession) -> String? {
        if block.tls && !link.secure { return "\(block.name) must link over TLS (--link-tls off on both sides for a plain link)" }
        if let pinned = block.pinned, link.certificate != pinned {
            return "\(block.name) showed certificate \(link.certificate ?? "none"), not the pinned \(pinned)"
        }
        return nil
    }

    /// What a peer that fails authentication is told, whatever failed: the reason goes to our
    /// log only, so the answer tells no link name, password or certificate from another.
    static let linkRefusedWords = "Access denied (the link block's name, password or certificate is not right; the host's log says which)"

    mutating func authenticate(_ line: ServerLine, _ link: LinkSession, now: Double) {
        // The name, then the certificate (before the password: a peer showing the wrong
        // certificate learns nothing of the password), then the password; one answer for all.
        guard let block = config.links.blocks.first(where: { casemapping.equal($0.name, line.name) }) else {
            refuseAuthentication(link, "no link block for \(line.name)", now: now)
            return
        }
        if let dialled = link.dialled, !casemapping.equal(dialled.name, line.name) {
            refuseLink(link, "dialled \(dialled.name) but it says it is \(line.name)", now: now)
            return
        }
        if let problem = certificateProblem(block, link) {
            refuseAuthentication(link, problem, now: now)
            return
        }
        guard Crypto.constantTimeEqual(Array(line.password.utf8), Array(block.password.utf8)) else {
            refuseAuthentication(link, "wrong link password from \(line.name)", now: now)
            return
        }
        if line.sid == sid || net.servers[line.sid] != nil {
            refuseLink(link, "SID \(line.sid) of \(line.name) is already on the network (set --sid)", now: now)
            return
        }
        if casemapping.equal(line.name, config.name) || net.servers.values.contains(where: { casemapping.equal($0.name, line.name) }) {
            refuseLink(link, "\(line.name) is already on the network", now: now)
            return
        }
        if link.isChatTUI, LinkIDs.nodeByte(line.sid) == LinkIDs.nodeByte(sid) {
            refuseLink(link, "SIDs \(sid) and \(line.sid) give the same msgid node byte; set another --sid on one of them", now: now)
            return
        }
        if block.tls && block.fingerprint == nil {
            log("link \(line.name): no fingerprint pinned; it showed \(link.certificate ?? "none") (pin it with --link-fingerprint)")
        }
        link.block = block
        let server = RemoteServer(sid: line.sid, name: line.name, description: line.description, hops: 1, route: link.connection, parent: nil)
        link.server = server
        net.servers[line.sid] = server
        link.phase = .linked
        link.linkedAt = now
        net.linkRetries[block.name] = nil
        if link.dialled == nil {
            sendLink(link, ServerLine(name: config.name, password: block.password, sid: sid, description: config.links.description).message())
        }
        log("link \(line.name) [\(line.sid)]: authenticated\(link.secure ? " over TLS" : "")")
        // The others hear of the new server now; its users come with its burst.
        // `:<parent> SERVER <name> <sid> :<description>`: InspIRCd 3 refuses the older five-field form here.
        broadcast(IRCMessage(source: sid, command: "SERVER", params: [line.name, line.sid, line.description]), except: link.connection)
        sendBurst(link, now: now)
    }

    /// Everything the peer must know, in the order InspIRCd sends it: the servers beyond us,
    /// the users, then the rooms with their members, topics and lists.
    mutating func sendBurst(_ link: LinkSession, now: Double) {
        sendLink(link, IRCMessage(source: sid, command: "BURST", params: [String(Int(now))]))
        sendLink(link, IRCMessage(source: sid, command: "SINFO", params: ["version", "\(config.version). \(config.name) :"]))
        // Parents before children: by hops.
        for server in net.servers.values.sorted(by: { ($0.hops, $0.sid) < ($1.hops, $1.sid) }) where server.route != link.connection {
            sendLink(link, IRCMessage(source: server.parent ?? sid, command: "SERVER", params: [server.name, server.sid, server.description]))
        }
        let known = people.users.values.filter { $0.isOnline && $0.remote?.route != link.connection }.sorted { $0.id < $1.id }
        for user in known {
            for line in introduction(of: user) { sendLink(link, line) }
        }
        for key in roomBook.channels.keys.sorted() {
            guard let channel = roomBook.channels[key] else { continue }
            let members = (roomBook.membership.members[key] ?? [:]).values.filter { $0.user.isOnline && $0.user.remote?.route != link.connection }
            guard !members.isEmpty else { continue }
            let line = FJOINLine(room: channel.name, timestamp: Int(channel.createdAt), modes: LinkModes.fjoinModes(channel),
                                 members: members.sorted { $0.user.id < $1.user.id }.map { FJOINLine.Member(status: LinkModes.status($0), uuid: $0.user.uuid) })
            for message in line.messages(source: sid) { sendLink(link, message) }
            for letter in ["b", "e", "I"] as [Character] where !channel.lists[letter].isEmpty {
                for chunk in stride(from: 0, to: channel.lists[letter].count, by: 10) {
                    let entries = channel.lists[letter][chunk..<min(chunk + 10, channel.lists[letter].count)]
                    sendLink(link, IRCMessage(source: sid, command: "FMODE",
                                              params: [channel.name, String(Int(channel.createdAt)), "+" + String(repeating: letter, count: entries.count)]
                                                  + entries.map(\.mask)))
                }
            }
            if !channel.topic.isEmpty {
                sendLink(link, IRCMessage(source: sid, command: "FTOPIC",
                                          params: [channel.name, String(Int(channel.createdAt)), String(Int(channel.topicSetAt)),
                                                   channel.topicSetBy.isEmpty ? config.name : channel.topicSetBy, channel.topic]))
            }
        }
        sendLink(link, IRCMessage(source: sid, command: "ENDBURST"))
        link.burstSent = true
    }

    /// A user as the network learns of it: UID, then its account, away text and operator status.
    func introduction(of user: User) -> [IRCMessage] {
        guard let nick = user.nick else { return [] }
        let home = user.remote?.sid ?? sid
        var modes = "+" + String(user.modes.filter { $0 != "o" }.sorted())
        if user.isOperator { modes += "o" }
        let uid = UIDLine(uuid: user.uuid, nickTS: user.nickTS, nick: nick, host: user.address, displayedHost: user.host,
                          ident: user.username ?? "unknown", ip: user.address, signon: Int(user.signedOnAt), modes: modes,
                          realname: user.realname)
        var lines = [uid.message(source: home)]
        if let account = user.account {
            lines.append(IRCMessage(source: home, command: "METADATA", params: [user.uuid, "accountname", account]))
        }
        if user.isOperator { lines.append(IRCMessage(source: user.uuid, command: "OPERTYPE", params: ["Operator"])) }
        if let away = user.away {
            lines.append(IRCMessage(source: user.uuid, command: "AWAY", params: [String(Int(user.lastSpoke)), away]))
        }
        return lines
    }

    // MARK: Going down

    /// Refuses a link in its handshake: ERROR to the peer, a line in the log, the connection closed.
    /// A failed authentication: logged with its reason, answered with the same words as every
    /// other, and counted against the peer's address (`linkFailures`: its next tries are refused
    /// at once for a while, `ServerRuntime` asks `linkRefusedAtAccept`).
    mutating func refuseAuthentication(_ link: LinkSession, _ reason: String, now: Double) {
        log("link \(link.name): refused: \(reason)")
        net.linkFailures.failed(Self.throttleKey(SocketAddress.hostOfPeer(link.peer)), now: now)
        dropLink(link, reason: Self.linkRefusedWords, now: now)
    }

    /// Link connections still handshaking: from the address `key`, and in all.
    func pendingLinkHandshakes(from key: String) -> (fromAddress: Int, total: Int) {
        var fromAddress = 0, total = 0
        for link in net.links.values where link.phase != .linked && link.dialled == nil {
            total += 1
            if Self.throttleKey(SocketAddress.hostOfPeer(link.peer)) == key { fromAddress += 1 }
        }
        return (fromAddress, total)
    }

    /// Whether a connection from `host` to the link port is refused before a word: it failed to
    /// authenticate too often lately (loopback is not exempt: links are few and known).
    public func linkRefusedAtAccept(host: String, now: Double) -> Bool {
        net.linkFailures.refuses(Self.throttleKey(host), now: now)
    }

    mutating func refuseLink(_ link: LinkSession, _ reason: String, now: Double) {
        log("link \(link.name): refused: \(reason)")
        dropLink(link, reason: reason, now: now)
    }

    /// Closes a link (ERROR first, unless the peer is gone) and splits the servers behind it off.
    mutating func dropLink(_ link: LinkSession, reason: String, now: Double, tellPeer: Bool = true) {
        guard net.links[link.connection] != nil else { return }
        if tellPeer { sendLink(link, IRCMessage(command: "ERROR", params: [reason])) }
        outbox.items.append(.close(link.connection))
        linkLost(link, reason: reason, now: now)
    }

    /// The link is gone: every server behind it splits off, with a QUIT for each of their users
    /// whose reason names the two servers at the break (`our.name their.name`), the form irssi
    /// and WeeChat show as a netsplit.
    mutating func linkLost(_ link: LinkSession, reason: String, now: Double) {
        guard net.links.removeValue(forKey: link.connection) != nil else { return }
        if let block = link.block ?? link.dialled, block.host != nil {
            net.linkRetries[block.name, default: LinkRetry()].failed(now: now)
        }
        guard let server = link.server else {
            log("link \(link.name): closed before linking: \(reason)")
            return
        }
        rememberSplit(link)
        log("link \(server.name) [\(server.sid)]: lost: \(reason)")
        split(server, reason: reason, now: now, origin: nil)
    }

    /// Removes a server and everything behind it; the others hear `SQUIT` (but `origin`, which told us).
    mutating func split(_ server: RemoteServer, reason: String, now: Double, origin: ConnectionID?) {
        let quitReason = "\(net.servers[server.parent ?? ""]?.name ?? config.name) \(server.name)"
        var gone = [server]
        var index = 0
        while index < gone.count {
            let parent = gone[index].sid
            gone += net.servers.values.filter { $0.parent == parent }.sorted { $0.sid < $1.sid }
            index += 1
        }
        for lost in gone {
            for id in lost.users.sorted() {
                if let user = people.users[id] { removeRemoteUser(user, reason: quitReason, now: now) }
            }
            net.servers.removeValue(forKey: lost.sid)
        }
        broadcast(IRCMessage(source: sid, command: "SQUIT", params: [server.sid, reason]), except: origin ?? server.route)
    }

    /// A remote user leaves: QUIT to those who shared a room, its place everywhere given up.
    mutating func removeRemoteUser(_ user: User, reason: String, now: Double) {
        let quit = IRCMessage(tags: accountTags(user), source: user.prefix, command: "QUIT", params: [reason])
        deliver(quit, to: roomBook.membership.neighbours(of: user.id), now: now, history: roomEntries(of: user))
        for letter in user.modes { people.setMode(of: user, letter, false) }
        rememberDeparture(user, now: now)
        for key in roomBook.membership.rooms(of: user.id) { removeMember(user.id, from: key) }
        for key in roomBook.invitations[user.id] ?? [] { roomBook.forgetInvitation(user.id, to: key) }
        if let nick = user.nick { releaseNick(nick, of: user, wasOnline: true) }
        people.users.removeValue(forKey: user.id)
        net.usersByUUID.removeValue(forKey: user.uuid)
        user.remote?.users.remove(user.id)
        net.remoteUserCount -= 1
    }

    // MARK: Sending

    mutating func sendLink(_ link: LinkSession, _ message: IRCMessage) {
        outbox.items.append(.send(link.connection, message.serialized(maxBodyBytes: LinkLimits.maxLine)))
    }

    /// To every linked server that has had our burst, but `except` (where it came from).
    mutating func broadcast(_ message: IRCMessage, except: ConnectionID?) {
        guard !net.links.isEmpty else { return }
        var bytes: [UInt8]?
        for link in net.links.values where link.burstSent && link.connection != except {
            if bytes == nil { bytes = message.serialized(maxBodyBytes: LinkLimits.maxLine) }
            outbox.items.append(.send(link.connection, bytes!))
        }
    }

    /// To the link a user lives behind (nothing for our own users).
    mutating func route(_ message: IRCMessage, to user: User) {
        guard let server = user.remote, let link = net.links[server.route], link.burstSent else { return }
        sendLink(link, message)
    }

    /// The user a UUID names, here or remote.
    func user(uuid: String) -> User? {
        if uuid.hasPrefix(sid) {
            // Ours: the UUID is our SID and the user's number.
            var number: UInt64 = 0
            for byte in uuid.utf8.dropFirst(3) {
                let digit: UInt64
                switch byte {
                case 65...90: digit = UInt64(byte - 65)
                case 48...57: digit = UInt64(byte - 48 + 26)
                default: return nil
                }
                number = number * 36 + digit
            }
            return people.users[UserID(number)].flatMap { $0.uuid == uuid ? $0 : nil }
        }
        return net.usersByUUID[uuid]
    }

    /// A user (by UUID) or a server (by SID or name) as a message's source: for a client, a
    /// `nick!user@host` or a server name.
    func clientSource(_ source: String?) -> String {
        guard let source else { return config.name }
        if let user = user(uuid: source) { return user.prefix }
        if source == sid { return config.name }
        return net.servers[source]?.name ?? source
    }

    /// Whether any linked server is up: the relays below cost nothing when none is.
    var isLinked: Bool { !net.links.isEmpty }
}

/// A room's modes and a member's status as FJOIN writes them.
enum LinkModes {
    /// `+ntk secret` (lists go by FMODE).
    static func fjoinModes(_ channel: Channel) -> [String] {
        var letters = "+" + channel.flags.letters
        var parameters: [String] = []
        if let key = channel.key { letters.append("k"); parameters.append(key) }
        if let limit = channel.limit { letters.append("l"); parameters.append(String(limit)) }
        return [letters] + parameters
    }

    /// A member's status as FJOIN writes it (`o`, `v`, `ov`).
    static func status(_ member: MemberStatus) -> String { (member.op ? "o" : "") + (member.voice ? "v" : "") }
}
