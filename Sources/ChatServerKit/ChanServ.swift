import ChatStore
import IRCWire

/// The built-in ChanServ, as ergo has one: `/msg ChanServ REGISTER #room` by an operator of the
/// room who is logged in to an account keeps the room across restarts with its founder (the
/// records: `RoomPersistence.swift`). It answers in NOTICEs from `ChanServ!ChanServ@<server>`;
/// the nickname is reserved (`ServerConfig.reservedNicks`), so nobody can pose as it. It serves
/// this server's own users; on a linked network the network's services are the ones to ask.
extension ServerState {
    /// Whether a PRIVMSG target names the built-in ChanServ.
    func isChanServ(_ name: String) -> Bool {
        name.utf8.count == 8 && casemapping.fold(name) == "chanserv"
    }

    var chanServPrefix: String { "ChanServ!ChanServ@" + config.name }

    /// One line from ChanServ to the person asking.
    mutating func chanServSays(_ session: Session, _ text: String) { serviceSays(chanServPrefix, session, text) }

    /// One line from a built-in service (ChanServ, NickServ) to the person asking.
    mutating func serviceSays(_ prefix: String, _ session: Session, _ text: String) {
        send(session, IRCMessage(source: prefix, command: "NOTICE", params: [session.user.replyName, text]))
    }

    /// A service command's words: the command, upper-cased, and its arguments (nil: no words).
    static func serviceCommand(_ text: String) -> (command: String, arguments: [String])? {
        let words = text.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard let command = words.first?.uppercased() else { return nil }
        return (command, Array(words.dropFirst()))
    }

    // PRIVMSG ChanServ :<command> [<room> [<arguments>]]
    mutating func chanServ(_ request: Request, text: String) {
        let session = request.session
        guard let (command, arguments) = Self.serviceCommand(text) else { return chanServHelp(session) }
        switch command {
        case "HELP": chanServHelp(session)
        case "REGISTER": chanServRegister(request, arguments)
        case "INFO": chanServInfo(session, arguments)
        case "DROP": chanServDrop(request, arguments)
        case "OP", "DEOP": chanServOp(request, arguments, on: command == "OP")
        case "ACCESS": chanServAccess(request, arguments)
        default:
            chanServSays(session, "Unknown command \(PlainText.visible(String(command.prefix(32)))); /msg ChanServ HELP lists them")
        }
    }

    mutating func chanServHelp(_ session: Session) {
        for line in [
            "ChanServ keeps a room registered to your account across restarts: its modes, lists, topic and who runs it.",
            "A room nobody registered ends when its last member leaves.",
            "REGISTER #room — register a room you are an operator of (log in to an account first)",
            "INFO #room — who registered a room, when, and who has access",
            "ACCESS #room [LIST | ADD account | DEL account] — accounts that always get in and get op (the founder changes it)",
            "OP #room [nick] / DEOP #room [nick] — give or take op (founder and access accounts)",
            "DROP #room — unregister a room (its founder); it then ends with its last member",
        ] { chanServSays(session, line) }
    }

    /// The room a command names, folded, or nil having said what is wrong.
    mutating func chanServRoom(_ session: Session, _ arguments: [String], usage: String) -> (key: String, name: String)? {
        guard let name = arguments.first, IRCNames.isChannel(name) else {
            chanServSays(session, "Name the room: \(usage)")
            return nil
        }
        let key = casemapping.fold(name)
        return (key, roomBook.channels[key]?.name ?? roomBook.roomRecords.records[key]?.name ?? name)
    }

    /// A time as people read it: `2026-12-05 00:05 UTC`.
    static func shownDate(_ time: Double) -> String {
        let iso = ServerTime.format(time)
        return iso.prefix(10) + " " + iso.dropFirst(11).prefix(5) + " UTC"
    }

    /// The account's display name for a folded one, as the directory has it.
    func accountName(_ folded: String) -> String { accountBook.directory?.lookup(folded)?.name ?? folded }

    /// Whether the user may act as the room's founder: its account founded it, or it is an IRC operator.
    func actsAsFounder(_ user: User, key: String) -> Bool {
        if user.isOperator { return true }
        guard let account = user.account, let entry = roomBook.roomRecords.saved[key] else { return false }
        return entry.founder == AccountStore.key(account)
    }

    mutating func chanServRegister(_ request: Request, _ arguments: [String]) {
        let session = request.session, user = request.user
        guard let (key, name) = chanServRoom(session, arguments, usage: "REGISTER #room") else { return }
        let shown = PlainText.visible(name)
        guard let account = user.account else {
            return chanServSays(session, "Log in to an account first (SASL): a room is registered to an account, not a nickname")
        }
        if let entry = roomBook.roomRecords.saved[key] {
            return chanServSays(session, "\(shown) is already registered, to \(accountName(entry.founder))")
        }
        guard roomBook.channels[key] != nil, roomBook.membership.status(of: user.id, in: key)?.op == true else {
            return chanServSays(session, "You need to be an operator of \(shown) to register it (join it first)")
        }
        // Fail closed: without the saved rooms, a registration could not be kept or checked.
        guard roomBook.roomRecords.enabled else {
            return chanServSays(session, "Rooms cannot be registered now: the saved rooms could not be read (the host's log says why)")
        }
        guard roomsFounded(by: account) < roomBook.roomRecords.perAccountLimit else {
            return chanServSays(session, "Your account has registered \(roomBook.roomRecords.perAccountLimit) rooms, the most one may; DROP one first")
        }
        guard roomBook.roomRecords.saved.count < roomBook.roomRecords.limit else {
            return chanServSays(session, "This server keeps no more registered rooms (\(roomBook.roomRecords.limit)); ask its host")
        }
        registerRoom(key, founder: account, now: request.now)
        log(session, "rooms: \(name) registered to the account \(account)")
        chanServSays(session, "\(shown) is registered to your account \(account): its modes, lists and topic are kept across restarts, and you always get back in and get op")
    }

    mutating func chanServInfo(_ session: Session, _ arguments: [String]) {
        guard let (key, name) = chanServRoom(session, arguments, usage: "INFO #room") else { return }
        let shown = PlainText.visible(name)
        guard let entry = roomBook.roomRecords.saved[key] else {
            return chanServSays(session, "\(shown) is not registered: it ends when its last member leaves")
        }
        chanServSays(session, "\(shown) is registered to \(accountName(entry.founder)) since \(Self.shownDate(entry.registeredAt))")
        let access = entry.operatorAccounts.sorted().map(accountName)
        chanServSays(session, access.isEmpty ? "Access: only its founder" : "Access: \(access.joined(separator: ", "))")
    }

    mutating func chanServDrop(_ request: Request, _ arguments: [String]) {
        let session = request.session
        guard let (key, name) = chanServRoom(session, arguments, usage: "DROP #room") else { return }
        let shown = PlainText.visible(name)
        guard roomBook.roomRecords.saved[key] != nil else { return chanServSays(session, "\(shown) is not registered") }
        guard actsAsFounder(request.user, key: key) else {
            return chanServSays(session, "Only the founder of \(shown) (or an IRC operator) may drop it")
        }
        dropRoom(key, now: request.now)
        log(session, "rooms: \(name) dropped by \(request.user.replyName)")
        chanServSays(session, "\(shown) is no longer registered: it ends when its last member leaves")
    }

    mutating func chanServAccess(_ request: Request, _ arguments: [String]) {
        let session = request.session
        guard let (key, name) = chanServRoom(session, arguments, usage: "ACCESS #room [LIST | ADD account | DEL account]") else { return }
        let shown = PlainText.visible(name)
        guard let entry = roomBook.roomRecords.saved[key] else { return chanServSays(session, "\(shown) is not registered") }
        let verb = arguments.count > 1 ? arguments[1].uppercased() : "LIST"
        switch verb {
        case "LIST":
            guard isSavedOperator(request.user, key: key) || request.user.isOperator else {
                return chanServSays(session, "Only the founder and access accounts of \(shown) see its access list")
            }
            chanServSays(session, "\(shown): founder \(accountName(entry.founder))")
            for account in entry.operatorAccounts.sorted() { chanServSays(session, "\(shown): access \(accountName(account))") }
            chanServSays(session, "End of the access list of \(shown)")
        case "ADD", "DEL":
            guard actsAsFounder(request.user, key: key) else {
                return chanServSays(session, "Only the founder of \(shown) (or an IRC operator) changes its access list")
            }
            guard arguments.count > 2 else { return chanServSays(session, "Name the account: ACCESS \(shown) \(verb) account") }
            let folded = AccountStore.key(arguments[2])
            if verb == "ADD" {
                guard let found = accountBook.directory?.lookup(folded) else {
                    return chanServSays(session, "There is no account \(PlainText.visible(arguments[2]))")
                }
                guard folded != entry.founder else { return chanServSays(session, "\(found.name) founded \(shown): it has access already") }
                guard setAccess(key, account: found.name, on: true, now: request.now) else {
                    return chanServSays(session, "\(shown) has \(RoomRecords.operatorLimit) access accounts, the most a room keeps")
                }
                log(session, "rooms: \(name): access given to the account \(found.name) by \(request.user.replyName)")
                chanServSays(session, "\(found.name) now has access to \(shown): they always get in and get op on joining")
            } else {
                guard entry.operatorAccounts.contains(folded) else {
                    return chanServSays(session, "\(PlainText.visible(arguments[2])) has no access to \(shown)")
                }
                _ = setAccess(key, account: folded, on: false, now: request.now)
                log(session, "rooms: \(name): access taken from the account \(accountName(folded)) by \(request.user.replyName)")
                chanServSays(session, "\(accountName(folded)) no longer has access to \(shown)")
            }
        default:
            chanServSays(session, "ACCESS \(shown) takes LIST, ADD account or DEL account")
        }
    }

    mutating func chanServOp(_ request: Request, _ arguments: [String], on: Bool) {
        let session = request.session, user = request.user
        let verb = on ? "OP" : "DEOP"
        guard let (key, name) = chanServRoom(session, arguments, usage: "\(verb) #room [nick]") else { return }
        let shown = PlainText.visible(name)
        guard roomBook.roomRecords.saved[key] != nil else { return chanServSays(session, "\(shown) is not registered") }
        guard isSavedOperator(user, key: key) || user.isOperator else {
            return chanServSays(session, "Only the founder and access accounts of \(shown) may ask that")
        }
        guard let channel = roomBook.channels[key] else { return chanServSays(session, "Nobody is in \(shown) now") }
        let nick = arguments.count > 1 ? arguments[1] : user.replyName
        guard let target = self.user(named: nick), roomBook.membership.status(of: target.id, in: key) != nil else {
            return chanServSays(session, "\(PlainText.visible(nick)) is not in \(shown)")
        }
        guard let mode = ChannelModes.mode("o"),
              let change = applyChannelMode(ModeChange(adding: on, letter: "o", argument: target.replyName), mode, key: key,
                                            setter: chanServPrefix, now: request.now, replyTo: session) else {
            return chanServSays(session, "\(target.replyName) \(on ? "is an operator" : "is not an operator") of \(shown) already")
        }
        deliver(IRCMessage(source: chanServPrefix, command: "MODE", params: [channel.name] + ModeSyntax.format([change])), toRoom: key, now: request.now)
        linkModes(source: sid, key: key, [change])
    }
}
