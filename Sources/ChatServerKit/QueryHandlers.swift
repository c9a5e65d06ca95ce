import IRCWire

extension ServerState {
    /// Whether `asker` may see `other` in a WHO or NAMES that is not about a shared room:
    /// `+i` users are visible only to those who share a room with them, to operators and to themselves.
    func isVisible(_ other: User, to asker: User) -> Bool {
        !other.isInvisible || other === asker || asker.isOperator || roomBook.membership.sharesRoom(asker.id, other.id)
    }

    // WHO <mask> [%<fields>[,<token>]]  (WHOX)
    mutating func handleWho(_ request: Request) {
        let session = request.session, asker = request.user
        let mask = request.params.first ?? "*"
        let whox = request.params.count > 1 && request.params[1].hasPrefix("%") ? WhoxRequest(request.params[1]) : nil
        if IRCNames.isChannel(mask) {
            if let (key, channel) = channel(named: mask) {
                let isMember = roomBook.membership.isMember(asker.id, of: key)
                if isMember || !channel.isSecret || asker.isOperator {
                    // A big room's answer is made a step at a time as the client takes it.
                    let members = (roomBook.membership.members[key] ?? [:]).keys.sorted()
                    startLongReply(session, .whoRoom(mask: mask, channelName: channel.name, key: key, members: members, next: 0,
                                                     whox: whox, showAll: isMember || asker.isOperator), now: request.now)
                    return
                }
            }
        } else {
            let folded = casemapping.fold(mask)
            let all = mask == "*" || mask == "0"
            // An exact nickname is answered even for someone invisible who shares no room with
            // the asker (the modern docs; InspIRCd does the same): only masks are filtered.
            let named = mask.contains("*") || mask.contains("?") ? nil : people.nicks[folded]
            let matches = people.users.values.filter { other in
                guard other.isOnline, isVisible(other, to: asker) || other === named else { return false }
                if all { return true }
                return [other.replyName, other.username ?? "", other.host, other.realname].contains {
                    IRCNames.globMatch(folded, casemapping.fold($0))
                }
            }.sorted { $0.id < $1.id }
            // A mask that matches everyone is answered for the first 500 (operators get all): one
            // short line must not buy a reply the size of the whole server.
            let limit = asker.isOperator ? Int.max : 500
            for other in matches.prefix(limit) {
                // The first room they share, as the modern docs suggest for `<channel>`.
                let shared = roomBook.membership.rooms(of: other.id).sorted().first { roomBook.membership.isMember(asker.id, of: $0) }
                whoReply(session, other, channel: shared.flatMap { roomBook.channels[$0]?.name } ?? "*",
                         status: shared.flatMap { roomBook.membership.status(of: other.id, in: $0) }, whox: whox, now: request.now)
            }
        }
        reply(session, .endOfWho, mask, "End of /WHO list")
    }

    mutating func whoReply(_ session: Session, _ other: User, channel: String, status: MemberStatus?, whox: WhoxRequest?, now: Double) {
        let multi = session.caps.contains(.multiPrefix)
        // H or G, `*` for an operator, the membership prefix, then user mode letters (the modern docs).
        let flags = (other.away == nil ? "H" : "G") + (other.isOperator ? "*" : "") + (status?.prefix(all: multi) ?? "")
            + (other.isBot ? "B" : "")
        // A remote user's server and its distance (hops), as every linked network answers.
        let server = other.remote?.name ?? config.name
        let hops = String(other.remote?.hops ?? 0)
        guard let whox else {
            reply(session, .whoReply, channel, other.username ?? "unknown", other.host, server, other.replyName, flags, "\(hops) \(other.realname)")
            return
        }
        var fields: [String] = []
        for field in WhoxRequest.order where whox.fields.contains(field) {
            switch field {
            case "t": fields.append(whox.token)
            case "c": fields.append(channel)
            case "u": fields.append(other.username ?? "unknown")
            // The real address only to operators and the user; CHGHOST would mean nothing otherwise.
            case "i": fields.append(session.user.isOperator || session.user === other ? other.address : "255.255.255.255")
            case "h": fields.append(other.host)
            case "s": fields.append(server)
            case "n": fields.append(other.replyName)
            case "f": fields.append(flags)
            case "d": fields.append(hops)
            case "l": fields.append(String(max(0, Int(now - other.lastSpoke))))
            case "a": fields.append(other.account ?? "0")
            case "o": fields.append("n/a")
            case "r": fields.append(other.realname)
            default: break
            }
        }
        // The real name may hold spaces: it is last, so it goes as the trailing parameter.
        reply(session, .whoSpcRpl, params: fields)
    }

    // WHOIS [<server>] <nick>
    mutating func handleWhois(_ request: Request) {
        let session = request.session, asker = request.user
        let nick = request.params.last!
        // TARGMAX=WHOIS:1.
        if exceedsTargetLimit(session, "WHOIS", nick.split(separator: ",").map(String.init)) { return }
        guard let other = user(named: nick), let name = other.nick else {
            reply(session, .noSuchNick, nick, "No such nick/channel")
            reply(session, .endOfWhois, nick, "End of /WHOIS list")
            return
        }
        reply(session, .whoisUser, name, other.username ?? "unknown", other.host, "*", other.realname)
        let multi = session.caps.contains(.multiPrefix)
        // Secret rooms only to those who share them (and operators).
        let rooms = roomBook.membership.rooms(of: other.id).sorted().compactMap { key -> String? in
            guard let channel = roomBook.channels[key], let status = roomBook.membership.status(of: other.id, in: key) else { return nil }
            if channel.isSecret && !roomBook.membership.isMember(asker.id, of: key) && !asker.isOperator && asker !== other { return nil }
            return status.prefix(all: multi) + channel.name
        }
        // As many 319 lines as the rooms need.
        var line: [String] = [], length = 0
        for room in rooms {
            if length + room.utf8.count + 1 > 400 {
                reply(session, .whoisChannels, name, line.joined(separator: " "))
                line.removeAll()
                length = 0
            }
            line.append(room)
            length += room.utf8.count + 1
        }
        if !line.isEmpty { reply(session, .whoisChannels, name, line.joined(separator: " ")) }
        // A remote user's server, as every IRC network's WHOIS names it.
        if let server = other.remote {
            reply(session, .whoisServer, name, server.name, server.description)
        } else {
            reply(session, .whoisServer, name, config.name, config.network)
        }
        if other.isOperator { reply(session, .whoisOperator, name, "is an IRC operator") }
        if other.isBot { reply(session, .whoisBot, name, "is a bot") }
        if other.sessions.contains(where: \.secure) { reply(session, .whoisSecure, name, "is using a secure connection") }
        if let account = other.account { reply(session, .whoisAccount, name, account, "is logged in as") }
        if let away = other.away { reply(session, .away, name, away) }
        whoisMetadata(session, other, name)
        reply(session, .whoisIdle, name, String(max(0, Int(request.now - other.lastSpoke))), String(Int(other.signedOnAt)),
              "seconds idle, signon time")
        // 318 names the nick exactly as asked (the modern docs).
        reply(session, .endOfWhois, nick, "End of /WHOIS list")
    }

    // WHOWAS <nick> [<count>]
    mutating func handleWhowas(_ request: Request) {
        let session = request.session
        let nick = request.params[0]
        // At most 10 entries, fewer when asked (InspIRCd's default is 10 too): the reply stays
        // small whatever one client did to fill the ring.
        let asked = request.params.count > 1 ? Int(request.params[1]) ?? 0 : 0
        let count = asked > 0 ? min(asked, 10) : 10
        let folded = casemapping.fold(nick)
        let entries = Array(people.whowas.reversed().lazy.filter { $0.foldedNick == folded }.prefix(count))
        if entries.isEmpty {
            reply(session, .wasNoSuchNick, nick, "There was no such nickname")
        }
        for entry in entries {
            reply(session, .whoWasUser, entry.nick, entry.username, entry.host, "*", entry.realname)
            reply(session, .whoisServer, entry.nick, config.name, ServerTime.format(entry.leftAt))
        }
        reply(session, .endOfWhoWas, nick, "End of WHOWAS")
    }

    // ISON <nick>{ <nick>}
    mutating func handleIson(_ request: Request) {
        let online = request.params.flatMap { $0.split(separator: " ") }.compactMap { user(named: String($0))?.nick }
        reply(request.session, .ison, online.joined(separator: " "))
    }

    // USERHOST <nick>{ <nick>}
    mutating func handleUserhost(_ request: Request) {
        let entries = request.params.flatMap { $0.split(separator: " ") }.prefix(5).compactMap { nick -> String? in
            guard let other = user(named: String(nick)), let name = other.nick else { return nil }
            return "\(name)\(other.isOperator ? "*" : "")=\(other.away == nil ? "+" : "-")\(other.username ?? "unknown")@\(other.host)"
        }
        reply(request.session, .userhost, entries.joined(separator: " "))
    }

    /// 402 when a command names a server that is not this one.
    mutating func isOtherServer(_ request: Request, _ index: Int) -> Bool {
        guard index < request.params.count, !request.params[index].isEmpty else { return false }
        let name = request.params[index]
        if casemapping.equal(name, config.name) || user(named: name) != nil { return false }
        reply(request.session, .noSuchServer, name, "No such server")
        return true
    }

    // TIME [<server>]
    mutating func handleTime(_ request: Request) {
        guard !isOtherServer(request, 0) else { return }
        reply(request.session, .time, config.name, String(Int(request.now)), "0", ServerTime.format(request.now))
    }

    // VERSION [<server>]
    mutating func handleVersion(_ request: Request) {
        guard !isOtherServer(request, 0) else { return }
        reply(request.session, .version, config.version, config.name, "chat-tui IRC server")
        sendISupport(request.session)
    }

    // LUSERS
    mutating func handleLusers(_ request: Request) { sendLusers(request.session) }

    // ADMIN [<server>]
    mutating func handleAdmin(_ request: Request) {
        guard !isOtherServer(request, 0) else { return }
        let session = request.session
        reply(session, .adminMe, config.name, "Administrative info")
        reply(session, .adminLoc1, config.adminInfo.first ?? "")
        reply(session, .adminLoc2, config.adminInfo.count > 1 ? config.adminInfo[1] : "")
        reply(session, .adminEmail, config.adminInfo.count > 2 ? config.adminInfo[2] : "")
    }

    // INFO [<server>]
    mutating func handleInfo(_ request: Request) {
        guard !isOtherServer(request, 0) else { return }
        for line in ["\(config.version): an IRC server and terminal client in one Swift package.",
                     "Started \(ServerTime.format(config.createdAt)).",
                     "Nicknames that look like others (Unicode TR39) are refused."] {
            reply(request.session, .info, line)
        }
        reply(request.session, .endOfInfo, "End of INFO list")
    }

    // HELP [<subject>]
    mutating func handleHelp(_ request: Request) {
        let session = request.session
        let subject = request.params.first.map { $0.uppercased() } ?? "*"
        guard let lines = ServerHelp.text(subject) else {
            reply(session, .helpNotFound, subject, "No help available on this topic")
            return
        }
        reply(session, .helpStart, subject, lines[0])
        // The first 705 is empty, as the modern docs suggest.
        reply(session, .helpText, subject, "")
        for line in lines.dropFirst() { reply(session, .helpText, subject, line) }
        reply(session, .endOfHelp, subject, "End of /HELP")
    }

    // MONITOR + <targets> | - <targets> | C | L | S
    mutating func handleMonitor(_ request: Request) {
        let session = request.session, user = request.user
        let targets = request.params.count > 1 ? request.params[1].split(separator: ",").map(String.init) : []
        switch request.params[0].uppercased() {
        case "+":
            var online: [String] = [], offline: [String] = []
            for (index, name) in targets.enumerated() {
                let folded = casemapping.fold(name)
                let known = user.monitoring[folded] != nil
                if !known && user.monitoring.count >= config.monitorLimit {
                    reply(session, .monListFull, String(config.monitorLimit), targets[index...].joined(separator: ","), "Monitor list is full")
                    break
                }
                guard IRCNames.nickProblem(name, maxBytes: config.nickLength) == nil else { continue }
                // A name already watched is reported again, as ergo does.
                if !known { user.monitoring[folded] = name }
                people.monitors[folded, default: []].insert(user.id)
                if let other = self.user(named: name) { online.append(other.prefix) } else { offline.append(name) }
            }
            sendMonitorList(session, .monOnline, online)
            sendMonitorList(session, .monOffline, offline)
        case "-":
            for name in targets {
                let folded = casemapping.fold(name)
                user.monitoring.removeValue(forKey: folded)
                people.monitors[folded]?.remove(user.id)
                if people.monitors[folded]?.isEmpty == true { people.monitors.removeValue(forKey: folded) }
            }
        case "C":
            for folded in user.monitoring.keys {
                people.monitors[folded]?.remove(user.id)
                if people.monitors[folded]?.isEmpty == true { people.monitors.removeValue(forKey: folded) }
            }
            user.monitoring.removeAll()
        case "L":
            sendMonitorList(session, .monList, user.monitoring.values.sorted())
            reply(session, .endOfMonList, "End of MONITOR list")
        case "S":
            var online: [String] = [], offline: [String] = []
            for name in user.monitoring.values.sorted() {
                if let other = self.user(named: name) { online.append(other.prefix) } else { offline.append(name) }
            }
            sendMonitorList(session, .monOnline, online)
            sendMonitorList(session, .monOffline, offline)
        default:
            standardReply(session, "FAIL", command: "MONITOR", code: "INVALID_PARAMS", context: [request.params[0]], "MONITOR takes +, -, C, L or S")
        }
    }

    /// Comma-joined names, as many lines as needed to stay within a line.
    mutating func sendMonitorList(_ session: Session, _ numeric: Numeric, _ names: [String]) {
        var line: [String] = []
        var length = 0
        for name in names {
            if length + name.utf8.count + 1 > 400 {
                reply(session, numeric, line.joined(separator: ","))
                line.removeAll()
                length = 0
            }
            line.append(name)
            length += name.utf8.count + 1
        }
        if !line.isEmpty { reply(session, numeric, line.joined(separator: ",")) }
    }

    /// Tells MONITOR watchers of `user`'s nickname that it is online (730); with `message`,
    /// relays an AWAY, SETNAME or CHGHOST instead to extended-monitor watchers who asked for
    /// `extendedOnly` and do not already hear it through a shared room.
    mutating func notifyMonitors(online user: User, now: Double, extendedOnly cap: Capability? = nil, message: IRCMessage? = nil) {
        guard let nick = user.nick, let watchers = people.monitors[casemapping.fold(nick)], !watchers.isEmpty else { return }
        if let message, let cap {
            let outside = watchers.filter { $0 != user.id && !roomBook.membership.sharesRoom($0, user.id) }
            var recipients: [UserID] = []
            for watcher in outside where people.users[watcher]?.sessions.contains(where: { $0.caps.contains(.extendedMonitor) }) == true {
                recipients.append(watcher)
            }
            deliver(message, to: recipients, now: now, onlyWith: cap)
            return
        }
        for watcher in watchers {
            for session in people.users[watcher]?.sessions ?? [] { reply(session, .monOnline, user.prefix) }
        }
    }

    /// account-notify: the user logged in or out (the trust issue's SASL calls this).
    mutating func accountChanged(_ user: User, now: Double) {
        let message = IRCMessage(tags: accountTags(user), source: user.prefix, command: "ACCOUNT", params: [user.account ?? "*"])
        deliver(message, to: [user.id] + roomBook.membership.neighbours(of: user.id), now: now, onlyWith: .accountNotify)
        notifyMonitors(online: user, now: now, extendedOnly: .accountNotify, message: message)
        linkAccount(user)
    }
}

/// The fields of a WHOX request (`%tcuihsnfdlaor,token`).
struct WhoxRequest {
    static let order: [Character] = ["t", "c", "u", "i", "h", "s", "n", "f", "d", "l", "a", "o", "r"]
    let fields: Set<Character>
    let token: String

    init(_ raw: String) {
        let body = raw.dropFirst()
        let parts = body.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false)
        fields = Set(parts.first ?? "")
        // The token is one to three digits (the WHOX spec); anything else is answered as 0.
        let given = parts.count > 1 ? parts[1] : ""
        token = (1...3).contains(given.count) && given.allSatisfy(\.isASCII) && given.allSatisfy(\.isNumber) ? String(given) : "0"
    }
}
