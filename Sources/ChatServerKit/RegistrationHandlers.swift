import ChatTransport
import IRCWire

extension ServerState {
    // CAP LS [302] | CAP LIST | CAP REQ :<caps> | CAP END
    mutating func handleCap(_ request: Request) {
        let session = request.session
        let name = session.user.replyName
        let subcommand = request.params[0].uppercased()
        func capReply(_ params: String...) {
            send(session, IRCMessage(source: config.name, command: "CAP", params: [name] + params))
        }
        switch subcommand {
        case "LS":
            if !session.registered { session.capNegotiating = true }
            // This reply follows this request's version; the highest one asked for is kept.
            let version = request.params.count > 1 ? Int(request.params[1]) ?? 0 : 0
            session.capVersion = max(session.capVersion, version)
            // 302 clients get values, and cap-notify without asking for it.
            if session.capVersion >= 302 { session.caps.insert(.capNotify) }
            var words = Capability.allCases.filter(offers).map { cap -> String in
                if version >= 302, let value = cap.value(config) { return "\(cap.rawValue)=\(value)" }
                return cap.rawValue
            }
            // STS: on the plain port, where TLS is; over TLS, how long to insist on it.
            if let sts = config.sts {
                words.append(session.secure ? "sts=duration=\(sts.duration)" : "sts=port=\(sts.port),duration=\(sts.duration)")
            }
            // Lines stay under 512 bytes: `CAP * LS * :…` continues, the last has no `*`.
            var lines: [[String]] = [[]]
            var length = 0
            for word in words {
                // Only 302 clients read continuation lines.
                if version >= 302 && length + word.utf8.count + 1 > 400 { lines.append([]); length = 0 }
                lines[lines.count - 1].append(word)
                length += word.utf8.count + 1
            }
            for (index, line) in lines.enumerated() {
                let text = line.joined(separator: " ")
                if index < lines.count - 1 { capReply("LS", "*", text) } else { capReply("LS", text) }
            }
        case "LIST":
            capReply("LIST", session.caps.names.joined(separator: " "))
        case "REQ":
            if !session.registered { session.capNegotiating = true }
            let asked = request.params.count > 1 ? request.params[1] : ""
            var caps = session.caps
            var acceptable = !asked.trimmingPrefix(" ").isEmpty
            for word in asked.split(separator: " ") {
                let remove = word.hasPrefix("-")
                guard let cap = Capability(rawValue: String(remove ? word.dropFirst() : word)), offers(cap) else {
                    acceptable = false
                    break
                }
                // A 302 client keeps cap-notify: its removal is acknowledged and ignored, as ergo does.
                if remove && cap == .capNotify && session.capVersion >= 302 { continue }
                if remove { caps.remove(cap) } else { caps.insert(cap) }
            }
            // draft/multiline is carried in batches: without batch it cannot be granted.
            if caps.contains(.multiline) && !caps.contains(.batch) { acceptable = false }
            // A request is granted whole or refused whole.
            if acceptable {
                let before = session.caps
                session.caps = caps
                if session.registered { roomBook.membership.refresh(session) }
                capReply("ACK", asked)
                // extended-isupport: the tokens now, before registration if need be, and again
                // whenever the capability is turned on.
                if caps.contains(.extendedISupport) && !before.contains(.extendedISupport) { sendISupport(session) }
            } else {
                capReply("NAK", asked)
            }
        case "END":
            guard !session.registered else { return }
            session.capNegotiating = false
            completeRegistrationIfReady(session, now: request.now)
        default:
            reply(session, .invalidCapCommand, request.params[0], "Invalid CAP command")
        }
    }

    // PASS <password>
    mutating func handlePass(_ request: Request) {
        guard !request.session.registered else {
            reply(request.session, .alreadyRegistered, "You may not reregister")
            return
        }
        let session = request.session
        guard let password = config.password else { return }
        let address = Self.throttleKey(session.user.address)
        var failures = gate.passwordFailures[address] ?? (0, request.now)
        if request.now - failures.since >= 60 { failures = (0, request.now) }
        // Loopback is exempt: the host's own screen, and whoever else is on this machine, are
        // not locked out by a neighbour's guesses.
        let loopback = Self.isLoopback(session.user.address)
        if failures.count >= 3 && !loopback {
            reply(session, .passwdMismatch, "Too many wrong passwords from your address; try again in a minute")
            closeLink(session, reason: "Bad password", now: request.now)
            return
        }
        // Compared in constant time over the UTF-8 bytes: not by String's canonical equivalence,
        // and with no early exit that would time how much matched.
        // Digests compared, so neither the bytes nor the length leak through timing.
        if Crypto.constantTimeEqual(Crypto.sha256(Array(request.params[0].utf8)), Crypto.sha256(Array(password.utf8))) {
            session.passwordAccepted = true
            // A NICK sent before PASS takes effect now.
            if let pending = session.pendingNick {
                session.pendingNick = nil
                changeNick(pending, session: session, now: request.now)
            }
            return
        }
        failures.count += 1
        if !loopback { gate.passwordFailures[address] = failures }
        if failures.count == 1 {
            log(session, "error: wrong password from \(address)")
        } else if failures.count == 3 {
            log(session, "error: three wrong passwords from \(address) within a minute; refusing its PASS until the minute is over")
        }
        reply(session, .passwdMismatch, "Password incorrect")
        closeLink(session, reason: "Bad password", now: request.now)
    }

    // NICK <nickname>
    mutating func handleNick(_ request: Request) {
        guard let wanted = request.params.first, !wanted.isEmpty else {
            reply(request.session, .noNicknameGiven, "No nickname given")
            return
        }
        changeNick(wanted, session: request.session, now: request.now)
    }

    mutating func changeNick(_ wanted: String, session: Session, now: Double) {
        let user = session.user
        if config.password != nil && !session.passwordAccepted && !session.registered {
            // Remembered, not claimed, not even checked: without the password nobody learns
            // which names are online (433), and the name is taken only once it is right.
            session.pendingNick = wanted
            completeRegistrationIfReady(session, now: now)
            return
        }
        // Logged in already, to an account whose user is here: registration makes this one
        // more session of it, under its nickname (whatever nickname is asked for now).
        if !session.registered, accountOwner(of: session) != nil {
            session.pendingNick = wanted
            completeRegistrationIfReady(session, now: now)
            return
        }
        // Still negotiating (a SASL login may follow) and the name is an account user's: it may
        // be this connection's own account, so the answer waits for registration (a 433 now
        // would send the client to `alice_` only for it to be alice after all).
        if !session.registered, session.capNegotiating, hasAccounts, config.multiclient,
           people.nicks[casemapping.fold(wanted)]?.account != nil {
            session.pendingNick = wanted
            return
        }
        // The look-alike keys, taken once: checked here, stored when the name is claimed.
        let keys = NameKeys.of(wanted, casemapping)
        if let problem = nickProblem(wanted, keys: keys, for: user) {
            reply(session, problem.numeric, wanted, problem.reason)
            log(session, "error: nickname \"\(wanted)\" refused (\(problem.numeric.rawValue)): \(problem.reason)")
            return
        }
        // An account's name, by someone not logged in to it: strict refuses it; otherwise the
        // change goes through with a warning (before registration, SASL may still log them in).
        let protectedBy = session.registered ? protectingAccount(of: wanted, for: user) : nil
        // Strict, or this connection had its grace period for that name already (it was renamed, or left and came back).
        if let account = protectedBy, config.nickProtection == .strict
            || session.graceGiven.contains(fold(account)) && session.nickProtectionDeadline == nil {
            reply(session, .nicknameInUse, wanted, "Nickname is reserved by an account; log in to it with SASL to use it")
            return
        }
        if user.nick == wanted { return }
        // Taken before the change: the announcement comes from the old name.
        let oldNick = user.nick
        let oldPrefix = user.prefix
        let sameName = oldNick.map { casemapping.equal($0, wanted) } ?? false
        if let old = oldNick { releaseNick(old, of: user, wasOnline: session.registered && !sameName) }
        claimNick(wanted, keys: keys, for: user)
        if session.registered {
            if let old = oldNick, !sameName { rememberDeparture(user, nick: old, now: now) }
            let change = IRCMessage(tags: accountTags(user), source: oldPrefix, command: "NICK", params: [wanted])
            deliver(change, to: [user.id] + roomBook.membership.neighbours(of: user.id), now: now, history: roomEntries(of: user))
            user.nickTS = Int(now)
            presenceMayChange(user)
            linkUserEvent(user, "NICK", [wanted, String(user.nickTS)])
            log(session, "\(oldNick ?? "*") is now known as \(wanted)")
            if !sameName { notifyMonitors(online: user, now: now) }
            if let account = protectedBy { warnNickProtected(session, account: account, now: now) } else { session.nickProtectionDeadline = nil }
        } else {
            completeRegistrationIfReady(session, now: now)
        }
    }

    /// This machine's own loopback address (127.0.0.1, ::1, which a user's host shows as 0::1):
    /// exempt from the per-address limits and the pacing, for the host's own screen and tools.
    /// Other 127/8 addresses are treated as anyone's (a test can play many hosts with them).
    static func isLoopback(_ address: String) -> Bool { address == "127.0.0.1" || address == "::1" || address == "0::1" }

    /// What password failures are counted by: the address, or an IPv6 address's /64 (a host
    /// gets a whole /64 and could otherwise walk through it).
    static func throttleKey(_ address: String) -> String {
        guard address.contains(":") else { return address }
        var groups = address.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        if let gap = groups.firstIndex(of: ""), groups.filter(\.isEmpty).count <= 2 || groups.count < 8 {
            // Expand "::" so the first four groups are the /64.
            let missing = 8 - groups.filter { !$0.isEmpty }.count
            groups.removeAll { $0.isEmpty }
            groups.insert(contentsOf: Array(repeating: "0", count: missing), at: min(gap, groups.count))
        }
        return groups.prefix(4).joined(separator: ":") + "::/64"
    }

    /// The network an address is in, for the share of unregistered connections: an IPv4 /24,
    /// an IPv6 /48 (a site's allocation).
    static func blockKey(_ address: String) -> String {
        if address.contains(":") {
            let key = throttleKey(address)
            return key.split(separator: ":").prefix(3).joined(separator: ":") + "::/48"
        }
        return address.split(separator: ".").prefix(3).joined(separator: ".") + ".0/24"
    }

    struct NickRefusal {
        let numeric: Numeric
        let reason: String
    }

    /// Why `user` cannot take `wanted`: the syntax, invisible or mixed-script characters (432),
    /// a name in use (433), or one that looks like a name in use or reserved (432).
    func nickProblem(_ wanted: String, keys: Set<String>, for user: User) -> NickRefusal? {
        if let problem = IRCNames.nickProblem(wanted, maxBytes: config.nickLength) {
            return NickRefusal(numeric: .erroneousNickname, reason: problem)
        }
        let folded = casemapping.fold(wanted)
        if let owner = people.nicks[folded], owner !== user {
            return NickRefusal(numeric: .nicknameInUse, reason: "Nickname is already in use")
        }
        for skeleton in keys {
            if let owner = people.nickSkeletons[skeleton], owner != user.id, let other = people.users[owner]?.nick {
                return NickRefusal(numeric: .erroneousNickname, reason: "Nickname looks too much like \(other), who is online")
            }
            if let reserved = reservedSkeletons[skeleton] {
                return NickRefusal(numeric: .erroneousNickname, reason: "Nickname looks like \(reserved), which is reserved")
            }
        }
        // Fail closed: while the accounts cannot be read, no nickname is known not to be one.
        if accountsUnreadable {
            return NickRefusal(numeric: .nicknameInUse, reason: "Nickname cannot be checked: " + Self.accountsUnavailable)
        }
        if let account = accountLookalike(wanted, keys: keys) {
            return NickRefusal(numeric: .erroneousNickname, reason: "Nickname looks too much like the account \(account)")
        }
        // After the look-alike checks, so that `аlice` is told whom it looks like, not only that it mixes scripts.
        if let problem = NameSafety.nickProblem(wanted) {
            return NickRefusal(numeric: .erroneousNickname, reason: problem)
        }
        return nil
    }

    mutating func claimNick(_ nick: String, keys: Set<String>, for user: User) {
        let folded = casemapping.fold(nick)
        people.nicks[folded] = user
        for skeleton in keys { people.nickSkeletons[skeleton] = user.id }
        user.nick = nick
        roomBook.membership.identityChanged(user.id)
    }

    /// Frees a nickname. When its owner was online, MONITOR watchers of it hear it is offline.
    mutating func releaseNick(_ nick: String, of user: User, wasOnline: Bool) {
        let folded = casemapping.fold(nick)
        if people.nicks[folded] === user { people.nicks.removeValue(forKey: folded) }
        for skeleton in NameKeys.of(nick, casemapping) where people.nickSkeletons[skeleton] == user.id {
            people.nickSkeletons.removeValue(forKey: skeleton)
        }
        guard wasOnline else { return }
        for watcher in people.monitors[folded] ?? [] {
            for session in people.users[watcher]?.sessions ?? [] { reply(session, .monOffline, nick) }
        }
    }

    // USER <username> <mode> <unused> :<realname>
    mutating func handleUser(_ request: Request) {
        let session = request.session
        guard !session.registered else {
            reply(session, .alreadyRegistered, "You may not reregister")
            return
        }
        // The modern docs: an empty username or real name is an error (461).
        guard !request.params[0].isEmpty, !request.params[3].isEmpty else {
            reply(session, .needMoreParams, "USER", "Not enough parameters")
            return
        }
        let safe = request.params[0].unicodeScalars.filter {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0))
        }
        let username = String(String.UnicodeScalarView(safe.prefix(config.userLength)))
        session.user.username = username.isEmpty ? "user" : username
        session.user.realname = UTF8Boundary.prefix(PlainText.cleanFreeText(request.params[3]), maxBytes: config.realnameLength)
        completeRegistrationIfReady(session, now: request.now)
    }

    // PING <token>
    mutating func handlePing(_ request: Request) {
        guard let token = request.params.first, !token.isEmpty else {
            reply(request.session, .noOrigin, "No origin specified")
            return
        }
        send(request.session, IRCMessage(source: config.name, command: "PONG", params: [config.name, token]))
    }

    // QUIT [<reason>]
    mutating func handleQuit(_ request: Request) {
        // "Quit: " even when the reason is empty (the modern docs), so nobody can fake a server's own QUIT reasons.
        let reason = "Quit: " + (request.params.first.map { UTF8Boundary.prefix(PlainText.cleanFreeText($0), maxBytes: config.kickLength) } ?? "")
        // A guest who quits is gone (no minute to come back in); an account stays as it would.
        if request.user.account == nil { request.user.ending = true }
        closeLink(request.session, reason: reason, now: request.now)
    }

    mutating func completeRegistrationIfReady(_ session: Session, now: Double) {
        let user = session.user
        guard !session.registered, !session.capNegotiating, user.nick != nil || session.pendingNick != nil || accountOwner(of: session) != nil,
              user.username != nil else { return }
        // A password being checked (SASL PLAIN, REGISTER) holds registration until its answer.
        if session.verifying { return }
        // SASL 3.2: registration completing mid-exchange aborts the exchange.
        if session.sasl != nil {
            endSASL(session)
            reply(session, .saslAborted, "SASL authentication aborted")
        }
        if config.password != nil && !session.passwordAccepted {
            reply(session, .passwdMismatch, "Password required")
            log(session, "error: no password from \(user.address)")
            closeLink(session, reason: "Bad password", now: now)
            return
        }
        // Logged in to an account whose user is here already: one more session of it.
        if registerAsSession(session, now: now) { return }
        // A nickname that waited for the login: taken now, or refused now (433), as any.
        if user.nick == nil, let pending = session.pendingNick {
            session.pendingNick = nil
            changeNick(pending, session: session, now: now)
            return
        }
        guard let nick = user.nick else { return }
        let protectedBy = protectingAccount(of: nick, for: user)
        if protectedBy != nil && config.nickProtection == .strict {
            reply(session, .nicknameInUse, nick, "Nickname is reserved by an account; log in to it with SASL to use it")
            releaseNick(nick, of: user, wasOnline: false)
            user.nick = nil
            return
        }
        session.registered = true
        gate.leaveUnregistered(session)
        people.registeredCount += 1
        people.registeredSessions += 1
        people.peakRegistered = max(people.peakRegistered, people.registeredCount)
        user.nickTS = Int(now)
        log(session, "registered as \(nick) (\(user.prefix))")
        claimAccount(user)
        sendWelcome(session)
        giveResumeToken(session)
        notifyMonitors(online: user, now: now)
        if let account = protectedBy { warnNickProtected(session, account: account, now: now) }
        linkIntroduce(user)
        if user.account != nil {
            touchPresence(user, now: now)
            markDeviceSeen(session, now: now)
        }
        if let room = config.room { join(session, channelName: room, key: nil, now: now) }
    }

    /// 001 to 005, LUSERS and the MOTD (and, to a client that asked for draft/persistence, the
    /// account's always-on setting before the MOTD ends).
    mutating func sendWelcome(_ session: Session) {
        let user = session.user
        let server = config.name
        reply(session, .welcome, "Welcome to the \(config.network) IRC network, \(user.prefix)")
        reply(session, .yourHost, "Your host is \(server), running version \(config.version)")
        reply(session, .created, "This server was created \(ServerTime.format(config.createdAt))")
        reply(session, .myInfo, server, config.version, UserModes.letters, ChannelModes.letters, ChannelModes.lettersWithParameter)
        sendISupport(session)
        sendLusers(session)
        if session.caps.contains(.persistence), let account = user.account { sendPersistenceStatus(session, account: fold(account)) }
        sendMotd(session)
    }

    /// 005 in lines of 12 tokens; with extended-isupport and batch, in a `draft/isupport` batch.
    mutating func sendISupport(_ session: Session) {
        var tokens = isupportTokens
        if let base = session.fileHostBase {
            // soju.im/FILEHOST: a URL of its own, so the upload needs no password (a guest's too).
            let token = session.uploadToken ?? Crypto.hex(Crypto.randomBytes(16))
            if session.uploadToken == nil {
                session.uploadToken = token
                people.uploadTokens[token] = session.connection
            }
            tokens.append("soju.im/FILEHOST=\(base)/upload/\(token)")
        }
        let batched = session.caps.contains(.extendedISupport) && session.caps.contains(.batch)
        let reference = batched ? newBatchReference() : nil
        if let reference { send(session, IRCMessage(source: config.name, command: "BATCH", params: ["+" + reference, "draft/isupport"])) }
        var start = 0
        while start < tokens.count {
            let chunk = Array(tokens[start..<min(start + 12, tokens.count)])
            var line = numeric(session, .isupport, params: chunk + ["are supported by this server"])
            if let reference { line.tags = [IRCTag("batch", reference)] }
            send(session, line)
            start += 12
        }
        if let reference { send(session, IRCMessage(source: config.name, command: "BATCH", params: ["-" + reference])) }
    }

    mutating func sendMotd(_ session: Session) {
        guard let lines = config.motd else {
            reply(session, .noMotd, "MOTD File is missing")
            return
        }
        reply(session, .motdStart, "- \(config.name) Message of the day - ")
        for line in lines { reply(session, .motd, "- " + UTF8Boundary.prefix(line, maxBytes: 400)) }
        reply(session, .endOfMotd, "End of /MOTD command.")
    }

    /// 251–255, 265, 266, as the modern docs list them.
    mutating func sendLusers(_ session: Session) {
        // Every user has one connection today, so registered connections are registered users.
        // Counted network-wide but for 255 and 265 (a linked network's remote users and servers too).
        let total = people.registeredCount
        let global = total + net.remoteUserCount
        let invisible = people.invisibleCount
        let operators = people.operatorCount
        let unknown = people.sessions.count - people.registeredSessions
        reply(session, .lUserClient, "There are \(global - invisible) users and \(invisible) invisible on \(net.servers.count + 1) servers")
        if operators > 0 { reply(session, .lUserOp, String(operators), "operator(s) online") }
        if unknown > 0 { reply(session, .lUserUnknown, String(unknown), "unknown connection(s)") }
        if !roomBook.channels.isEmpty { reply(session, .lUserChannels, String(roomBook.channels.count), "channels formed") }
        reply(session, .lUserMe, "I have \(total) clients and \(net.links.values.filter { $0.server != nil }.count) servers")
        let peak = max(people.peakRegistered, total)
        reply(session, .localUsers, String(total), String(peak), "Current local users \(total), max \(peak)")
        reply(session, .globalUsers, String(global), String(max(peak, global)), "Current global users \(global), max \(max(peak, global))")
    }
}
