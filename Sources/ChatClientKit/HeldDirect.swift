import IRCWire

/// Direct messages held for someone who is not on the server (a 401, after a reconnect or to a
/// line just typed): kept, shown as held, until MONITOR says they are online (730), or until
/// the user cancels them. A server without MONITOR cannot tell us: a line held across a
/// reconnect stays held, and the conversation says so (one just typed is shown as not sent).
///
/// A held line is for the person, not the nickname: it is bound to the account the person was
/// last seen with (`AccountsSeen`). When the nickname is back, the account is checked (WHOX)
/// and the lines go only if it is the same; a nickname seen with no account (or never seen)
/// cannot be checked, so nothing is sent on our own: the user is asked (`/send-held NICK` or
/// `/cancel NICK`).
public struct HeldDirect: Sendable {
    /// Who the lines are for, as far as the client could tell when it held them.
    public enum Person: Sendable, Equatable {
        /// Logged in to this account (as the server said: account-tag, extended-join, WHOX).
        case account(String)
        /// Seen with no account, or never seen: whoever has the nickname next may be someone else.
        case unknown
    }

    public struct Waiting: Sendable {
        /// The nickname as typed.
        public var nick: String
        public var lines: [SentLines.Line]
        public var person: Person
        /// Asked the server whose the nickname is now (a WHOX under way).
        var checking = false
        /// The user was told the nickname is back and asked what to do (said once until it goes again).
        var asked = false
    }

    /// By folded nickname: the lines, oldest first, and whom they are for.
    public internal(set) var waiting: [String: Waiting] = [:]
    /// Folded nicknames on this connection's MONITOR list.
    var monitored: Set<String> = []
    /// The WHOX token of the account checks (`WHO nick %tna,<token>`).
    static let whoToken = "847"
    /// Held at most, all people together (past it a line is not sent, and it says so).
    static let limit = 200

    var count: Int { waiting.values.reduce(0) { $0 + $1.lines.count } }
}

extension ClientState {
    /// Whether the server tells us when people come online (ISUPPORT MONITOR).
    var hasMonitor: Bool { isupport["MONITOR"] != nil }

    /// A direct message the server could not deliver (401: `nick` is not here now): held until
    /// they are back.
    mutating func holdForPerson(_ nick: String, text: String, isAction: Bool, now: Double) -> [ClientEvent] {
        let start = produced.count
        let key = key(for: nick)
        let id = id(for: nick)
        guard held.count < HeldDirect.limit else {
            emit(.notSent(target: nick, text: text, reason: "\(nick) is not on the server now, and \(HeldDirect.limit) lines are held already"))
            return Array(produced[start...])
        }
        let serial = newSerial()
        let person: HeldDirect.Person = accountsSeen.account(of: key).map { .account($0) } ?? .unknown
        var entry = held.waiting[key] ?? HeldDirect.Waiting(nick: nick, lines: [], person: person)
        entry.lines.append(SentLines.Line(target: nick, text: text, isAction: isAction, serial: serial))
        held.waiting[key] = entry
        say(heldLine(text, isAction: isAction, serial: serial, now: now), to: id, name: nick)
        if entry.lines.count == 1 {
            let words = hasMonitor
                ? "\(nick) is not on the server now: held until they are back (sent then; /cancel \(nick) gives up)"
                : "\(nick) is not on the server now, and this server cannot say when they are back: held; send it again to try"
            say(ChatLine(time: now, kind: .info, text: words), to: id, name: nick)
            // Typed elsewhere (/msg in a room): said there too, where the eyes are.
            if let typed = replyConversation, typed != id, book[typed] != nil {
                say(ChatLine(time: now, kind: .info, text: words + " — in the conversation with \(nick)"), to: typed)
            }
        }
        watchHeld()
        return Array(produced[start...])
    }

    /// Asks the server to watch the people with held lines (once per connection each).
    mutating func watchHeld() {
        guard hasMonitor, isRegistered else { return }
        let unwatched = held.waiting.keys.filter { !held.monitored.contains($0) }.sorted()
        guard !unwatched.isEmpty else { return }
        held.monitored.formUnion(unwatched)
        actions.append(.send(IRCMessage("MONITOR", "+", unwatched.compactMap { held.waiting[$0]?.nick }.joined(separator: ","))))
    }

    // 730 <me> :nick!user@host[,nick!user@host…]: the nickname is online now. Lines for an
    // account go once the server says the nickname is that account's; others wait for the user.
    mutating func monitorOnline(_ c: MessageContext) {
        guard let list = c.p.last else { return }
        for target in list.split(separator: ",") {
            let nick = IRCSource(parsing: String(target)).nick
            let key = key(for: nick)
            guard let entry = held.waiting[key] else { continue }
            switch entry.person {
            case .account where isupport["WHOX"] != nil:
                guard !entry.checking else { continue }
                held.waiting[key]!.checking = true
                actions.append(.send(IRCMessage("WHO", nick, "%tna,\(HeldDirect.whoToken)")))
            case .account(let account):
                askAboutHeld(key, "\(nick) is back, and this server cannot say whether it is the account \(account) your lines were for", now: c.time)
            case .unknown:
                askAboutHeld(key, "\(nick) is back — they may be someone else", now: c.time)
            }
        }
    }

    /// 354 <me> <token> <nick> <account>: the answer to an account check of a held nickname
    /// (true when it was one). The lines go if the account is the one they are for.
    mutating func heldAccountChecked(_ c: MessageContext) -> Bool {
        guard c.p.count >= 4, c.p[1] == HeldDirect.whoToken else { return false }
        let nick = c.p[2], account = c.p[3] == "0" ? nil : c.p[3]
        let key = key(for: nick)
        accountsSeen.saw(key, account: account)
        guard let entry = held.waiting[key], entry.checking else { return true }
        held.waiting[key]!.checking = false
        if case .account(let expected) = entry.person, let account, AccountsSeen.same(account, expected) {
            sendHeldNow(key, now: c.time)
        } else if case .account(let expected) = entry.person {
            askAboutHeld(key, "\(nick) is back, but \(account.map { "logged in as \($0)" } ?? "not logged in"), not as \(expected), the account your lines were for: not sent", now: c.time)
        }
        return true
    }

    /// Says the nickname is back and what the user can do; sends nothing.
    mutating func askAboutHeld(_ key: String, _ words: String, now: Double) {
        guard let entry = held.waiting[key], !entry.asked else { return }
        held.waiting[key]!.asked = true
        say(ChatLine(time: now, kind: .info, text: "\(words): /send-held \(entry.nick) sends what is held, /cancel \(entry.nick) gives it up"),
            to: id(for: entry.nick), name: entry.nick)
    }

    /// The held lines for `key` go now.
    mutating func sendHeldNow(_ key: String, now: Double) {
        guard let entry = held.waiting.removeValue(forKey: key) else { return }
        held.monitored.remove(key)
        for line in entry.lines {
            emit(.pendingDone(id(for: entry.nick), serial: line.serial))
            deliverHeld(SentLines.Line(target: entry.nick, text: line.text, isAction: line.isAction), now: now)
        }
        actions.append(.send(IRCMessage("MONITOR", "-", entry.nick)))
    }

    // 731 <me> :nick[,nick…]: offline again; when they come back the question is asked anew.
    mutating func monitorOffline(_ c: MessageContext) {
        guard let list = c.p.last else { return }
        for target in list.split(separator: ",") {
            let key = key(for: IRCSource(parsing: String(target)).nick)
            if held.waiting[key] != nil {
                held.waiting[key]!.asked = false
                held.waiting[key]!.checking = false
            }
        }
    }

    /// The user gave up on what is held for `nick`: shown as not sent, with its text.
    mutating func cancelHeld(for nick: String) -> [ClientEvent] {
        let start = produced.count
        let key = key(for: nick)
        guard let entry = held.waiting.removeValue(forKey: key) else { return [] }
        for line in entry.lines {
            emit(.pendingDone(id(for: nick), serial: line.serial))
            emit(.notSent(target: entry.nick, text: line.text, reason: "cancelled"))
        }
        if held.monitored.remove(key) != nil, isRegistered { actions.append(.send(IRCMessage("MONITOR", "-", entry.nick))) }
        return Array(produced[start...])
    }
}
