import ChatStore
import IRCWire

/// The built-in NickServ, in ergo's shape, for people whose client has no SASL setting:
/// `/msg NickServ IDENTIFY [account] password` logs in (and, with multiclient, the connection
/// becomes a session of the account's user), REGISTER makes an account of the nickname, GHOST
/// and REGAIN free a nickname the account should have, SET ALWAYS-ON is PERSISTENCE in words,
/// INFO says what is kept. It answers in NOTICEs from `NickServ!NickServ@<server>`; its nickname
/// is reserved, and it is in no room's member list.
extension ServerState {
    func isNickServ(_ name: String) -> Bool { name.utf8.count == 8 && casemapping.fold(name) == "nickserv" }

    var nickServPrefix: String { "NickServ!NickServ@" + config.name }

    mutating func nickServSays(_ session: Session, _ text: String) { serviceSays(nickServPrefix, session, text) }

    // PRIVMSG NickServ :<command> [<arguments>]
    mutating func nickServ(_ request: Request, text: String) {
        let session = request.session
        guard let (command, arguments) = Self.serviceCommand(text) else { return nickServHelp(session) }
        guard hasAccounts else {
            return nickServSays(session, "This server has no accounts")
        }
        switch command {
        case "HELP": nickServHelp(session)
        case "IDENTIFY", "LOGIN": nickServIdentify(request, arguments)
        case "REGISTER": nickServRegister(request, arguments)
        case "GHOST": nickServGhost(request, arguments)
        case "REGAIN", "RECOVER": nickServRegain(request, arguments)
        case "SET": nickServSet(request, arguments)
        case "INFO": nickServInfo(session, arguments)
        default:
            nickServSays(session, "Unknown command \(PlainText.visible(String(command.prefix(32)))); /msg NickServ HELP lists them")
        }
    }

    mutating func nickServHelp(_ session: Session) {
        for line in [
            "NickServ logs you in to your account for clients without a SASL setting (with one, use it instead).",
            "IDENTIFY [account] password — log in; on every device you log in from you are the same person",
            "REGISTER password — make an account named after your nickname (you are logged in to it)",
            "GHOST nick — end another connection of your account that holds that nickname",
            "REGAIN [nick] — take back your account's nickname from whoever holds it without logging in",
            "SET ALWAYS-ON ON|OFF|DEFAULT — whether you stay in your rooms, away, while none of your devices is connected",
            "INFO [account] — what is kept for an account",
        ] { nickServSays(session, line) }
    }

    mutating func nickServIdentify(_ request: Request, _ arguments: [String]) {
        let session = request.session
        guard !arguments.isEmpty else { return nickServSays(session, "Usage: IDENTIFY [account] password") }
        if let account = session.user.account { return nickServSays(session, "You are already logged in as \(account)") }
        if session.verifying { return }
        let (asked, password) = arguments.count >= 2 ? (arguments[0], arguments[1...].joined(separator: " ")) : (session.user.replyName, arguments[0])
        let (name, device) = Self.accountAndDevice(asked)
        if let device { session.device = device }
        if let refusal = loginThrottled(session, account: name, now: request.now) {
            let prefix = "SASL authentication failed: "
            return nickServSays(session, refusal.hasPrefix(prefix) ? String(refusal.dropFirst(prefix.count)) : refusal)
        }
        guard let directory = accountBook.directory else { return nickServSays(session, "The " + Self.accountsUnavailable) }
        guard checkSlotFree(session) else { return nickServSays(session, "The server is busy; try again in a moment") }
        countAttempt(session, account: name, now: request.now)
        let found = directory.lookup(fold(name))
        session.viaNickServ = true
        session.loginOfUnknownAccount = found == nil
        requestCheck(session, .login(account: found?.name ?? name, credential: found?.credential ?? standInCredential(name)), password: password)
    }

    /// The password check's answer for IDENTIFY.
    mutating func identified(_ session: Session, account: String, matched: Bool, now: Double) {
        session.viaNickServ = false
        session.loginOfUnknownAccount = false
        guard matched else {
            log(session, "error: NickServ IDENTIFY failed for \(account)")
            nickServSays(session, "Wrong account name or password")
            return
        }
        forgiveAttempt(session, account: account)
        nickServSays(session, "You are now logged in as \(account)")
        loggedIn(session, account: account, viaSASL: false, now: now)
        completeRegistrationIfReady(session, now: now)
    }

    mutating func nickServRegister(_ request: Request, _ arguments: [String]) {
        let session = request.session
        guard let password = arguments.first else { return nickServSays(session, "Usage: REGISTER password") }
        guard session.registered, let nick = session.user.nick else { return nickServSays(session, "Choose a nickname first") }
        session.viaNickServ = true
        handleRegister(Request(session: session, message: IRCMessage(command: "REGISTER", params: [nick, "*", password]), now: request.now))
        // Refused at once (its reason said): the flag went with it; an answer to come keeps it.
        if !session.verifying { session.viaNickServ = false }
    }

    mutating func nickServGhost(_ request: Request, _ arguments: [String]) {
        let session = request.session
        guard let name = arguments.first else { return nickServSays(session, "Usage: GHOST nick") }
        guard let account = session.user.account else { return nickServSays(session, "Log in first (IDENTIFY)") }
        guard let target = user(named: name), target.remote == nil else { return nickServSays(session, "\(name) is not connected") }
        guard target !== session.user else { return nickServSays(session, "\(name) is you") }
        guard let theirs = target.account, fold(theirs) == fold(account) else {
            return nickServSays(session, "\(name) is not logged in to your account; REGAIN takes back your account's own nickname")
        }
        log(session, "\(session.user.replyName) ended \(target.replyName) with NickServ GHOST")
        target.ending = true
        endUser(target, quitMessage: "GHOST command used by \(session.user.replyName)", leaving: nil, now: request.now)
        nickServSays(session, "\(name) has been ended")
    }

    mutating func nickServRegain(_ request: Request, _ arguments: [String]) {
        let session = request.session
        guard let account = session.user.account else { return nickServSays(session, "Log in first (IDENTIFY)") }
        let wanted = arguments.first ?? account
        guard fold(wanted) == fold(account) else { return nickServSays(session, "Only your account's own nickname, \(account), can be taken back") }
        if let holder = user(named: wanted), holder !== session.user {
            if let theirs = holder.account, fold(theirs) == fold(account) {
                holder.ending = true
                endUser(holder, quitMessage: "REGAIN command used by \(session.user.replyName)", leaving: nil, now: request.now)
            } else if let theirSession = holder.sessions.first(where: \.registered), holder.remote == nil {
                var number = holder.id.raw
                var guest = "Guest\(number)"
                while people.nicks[casemapping.fold(guest)] != nil { number += 100_000; guest = "Guest\(number)" }
                send(theirSession, IRCMessage(source: nickServPrefix, command: "NOTICE", params: [holder.replyName,
                    "\(wanted) is the nickname of an account you are not logged in to: you are now \(guest)"]))
                changeNick(guest, session: theirSession, now: request.now)
            } else {
                return nickServSays(session, "\(wanted) is held elsewhere on the network; try again later")
            }
        }
        if session.user.nick.map({ casemapping.equal($0, wanted) }) != true { changeNick(wanted, session: session, now: request.now) }
        nickServSays(session, "You are \(session.user.replyName)")
    }

    mutating func nickServSet(_ request: Request, _ arguments: [String]) {
        let session = request.session
        guard arguments.count >= 2, ["ALWAYS-ON", "ALWAYS_ON", "ALWAYSON"].contains(arguments[0].uppercased()),
              ["ON", "OFF", "DEFAULT", "TRUE", "FALSE"].contains(arguments[1].uppercased()) else {
            return nickServSays(session, "Usage: SET ALWAYS-ON ON|OFF|DEFAULT")
        }
        guard let account = session.user.account else { return nickServSays(session, "Log in first (IDENTIFY)") }
        let setting = ["ON": "on", "TRUE": "on", "OFF": "off", "FALSE": "off"][arguments[1].uppercased()] ?? "default"
        let key = fold(account)
        setAlwaysOn(session, account: key, setting, now: request.now)
        let applies = alwaysOnWanted(key)
        nickServSays(session, "Always-on is \(setting) for \(account)" + (setting == "default" ? " (the server's default: \(applies ? "on" : "off"))" : "")
                     + (config.alwaysOn == .off ? "; this server keeps nobody present, so it does not apply" : ""))
        for other in session.user.sessions where other.caps.contains(.persistence) { sendPersistenceStatus(other, account: key) }
    }

    mutating func nickServInfo(_ session: Session, _ arguments: [String]) {
        let name = arguments.first ?? session.user.account ?? session.user.replyName
        guard let entry = accountBook.directory?.lookup(fold(name)) else { return nickServSays(session, "\(name) is not a registered account") }
        nickServSays(session, "Account \(entry.name) is registered")
        guard let mine = session.user.account, fold(mine) == fold(name) else { return }
        let key = fold(mine)
        let record = people.presence[key]
        nickServSays(session, "Always-on: \(persistenceSetting(key).lowercased()) (\(alwaysOnWanted(key) ? "you stay while no device is connected" : "you leave with your last device"))")
        let devices = (record?.devices.keys.sorted() ?? []).joined(separator: ", ")
        nickServSays(session, "Devices seen: \(devices.isEmpty ? "none" : devices); connected now: \(session.user.sessions.filter(\.registered).count)")
    }
}
