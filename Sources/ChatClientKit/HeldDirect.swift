import IRCWire

/// Direct messages held for someone who is not on the server (a 401, after a reconnect or to a
/// line just typed): kept, shown as held, until MONITOR says they are online (730), or until
/// the user cancels them. A server without MONITOR cannot tell us: a line held across a
/// reconnect stays held, and the conversation says so (one just typed is shown as not sent).
public struct HeldDirect: Sendable {
    /// By folded nickname: the nickname as typed and the lines, oldest first.
    public internal(set) var waiting: [String: (nick: String, lines: [SentLines.Line])] = [:]
    /// Folded nicknames on this connection's MONITOR list.
    var monitored: Set<String> = []
    /// Held at most, all people together (past it a line is not sent, and it says so).
    static let limit = 200

    var count: Int { waiting.values.reduce(0) { $0 + $1.lines.count } }
}

extension ClientState {
    /// Whether the server tells us when people come online (ISUPPORT MONITOR).
    var hasMonitor: Bool { isupport["MONITOR"] != nil }

    /// A direct message the server could not deliver (401: `nick` is not here now): held until
    /// they are back.
    public mutating func holdForPerson(_ nick: String, text: String, isAction: Bool, now: Double) -> [ClientEvent] {
        let start = produced.count
        let key = key(for: nick)
        let id = id(for: nick)
        guard held.count < HeldDirect.limit else {
            emit(.notSent(target: nick, text: text, reason: "\(nick) is not on the server now, and \(HeldDirect.limit) lines are held already"))
            return Array(produced[start...])
        }
        let serial = newSerial()
        var entry = held.waiting[key] ?? (nick, [])
        entry.lines.append(SentLines.Line(target: nick, text: text, isAction: isAction, serial: serial))
        held.waiting[key] = entry
        say(heldLine(text, isAction: isAction, serial: serial, now: now), to: id, name: nick)
        if entry.lines.count == 1 {
            let words = hasMonitor
                ? "\(nick) is not on the server now: held until they are back (sent then; /cancel \(nick) gives up)"
                : "\(nick) is not on the server now, and this server cannot say when they are back: held; send it again to try"
            say(ChatLine(time: now, kind: .info, text: words), to: id, name: nick)
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

    // 730 <me> :nick!user@host[,nick!user@host…]: online now; their held lines go.
    mutating func monitorOnline(_ c: MessageContext) {
        guard let list = c.p.last else { return }
        for target in list.split(separator: ",") {
            let nick = IRCSource(parsing: String(target)).nick
            let key = key(for: nick)
            guard let entry = held.waiting.removeValue(forKey: key) else { continue }
            held.monitored.remove(key)
            for line in entry.lines {
                emit(.pendingDone(id(for: nick), serial: line.serial))
                deliverHeld(SentLines.Line(target: nick, text: line.text, isAction: line.isAction), now: c.time)
            }
            actions.append(.send(IRCMessage("MONITOR", "-", nick)))
        }
    }

    /// The user gave up on what is held for `nick`: shown as not sent, with its text.
    public mutating func cancelHeld(for nick: String) -> [ClientEvent] {
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
