import ChatStore
import IRCWire

/// soju.im/search: `SEARCH in=…;from=…;after=…;before=…;text=…;limit=…` over the history the
/// asker may read, by the same rule as CHATHISTORY — the rooms they are in now, and their
/// account's direct conversations (a guest's are not kept) — read off the loop by the history
/// reader. The answer is a `soju.im/search` batch of the newest matches, oldest first.
extension ServerState {
    static let searchLimit = 100

    mutating func handleSearch(_ request: Request) {
        let session = request.session
        func fail(_ code: String, _ context: [String], _ text: String) {
            standardReply(session, "FAIL", command: "SEARCH", code: code, context: context, always: true, text)
        }
        guard history != nil else { return fail("INTERNAL_ERROR", [], "History is off on this server") }
        var attributes: [String: String] = [:]
        for pair in request.params[0].split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            attributes[String(parts[0]).lowercased()] = parts.count == 2 ? Self.unescapedTagValue(String(parts[1])) : ""
        }
        if let unknown = attributes.keys.first(where: { !["in", "from", "after", "before", "text", "limit"].contains($0) }) {
            return fail("INVALID_PARAMS", [unknown], "SEARCH takes in, from, after, before, text and limit")
        }
        var limit = 50
        if let given = attributes["limit"] {
            guard let number = Int(given), number > 0 else { return fail("INVALID_PARAMS", ["limit"], "limit is a number above 0") }
            limit = min(number, Self.searchLimit)
        }
        func bound(_ name: String) -> Double?? {
            guard let value = attributes[name] else { return .some(nil) }
            return ServerTime.parse(value.hasPrefix("timestamp=") ? String(value.dropFirst(10)) : value).map { .some($0) } ?? nil
        }
        guard let after = bound("after"), let before = bound("before") else {
            return fail("INVALID_PARAMS", [attributes["after"] != nil ? "after" : "before"], "after and before are server-time timestamps")
        }
        // msgids begin with their millisecond: the time bounds are msgid bounds.
        let low = after.map { Int64(($0 * 1000).rounded()) << 16 } ?? 0
        let high = before.map { (Int64(($0 * 1000).rounded()) + 1) << 16 } ?? .max
        let text = attributes["text"] ?? ""
        guard text.utf8.count <= 300 else { return fail("INVALID_PARAMS", ["text"], "The text searched for is at most 300 bytes") }
        var targets: [String] = []
        var party: String?
        if let name = attributes["in"], !name.isEmpty {
            // The same rule as CHATHISTORY: a room one is in, one's own direct conversation.
            guard let target = readableTarget(name, for: session.user) else {
                return fail("INVALID_PARAMS", ["in"], "You cannot read \(name)'s history")
            }
            targets = [target]
        } else {
            targets = roomBook.membership.rooms(of: session.user.id).sorted()
            party = session.user.account.map { "a:" + AccountStore.key($0) }
        }
        let from = attributes["from"].flatMap { $0.isEmpty ? nil : casemapping.fold($0) }
        // A `from` is matched after the read: each target gives more rows then.
        let read = HistoryRead.search(targets: targets, party: party, text: text, low: low, high: high, limit: from == nil ? limit : limit * 5)
        requestHistory(session, [read], .search(from: from, limit: limit))
    }

    /// The rows found, from `from` only if asked, the newest `limit`, sent oldest first.
    mutating func answerSearch(_ results: [HistoryResult], session: Session, from: String?, limit: Int) {
        var rows: [HistoryRow] = []
        for case .rows(let found) in results { rows += found }
        if let from {
            rows = rows.filter { row in
                guard let message = try? IRCMessage(parsing: row.line), let source = message.source else { return false }
                let nick = String(source.prefix { $0 != "!" })
                return casemapping.fold(nick) == from
            }
        }
        rows = Array(rows.sorted { $0.msgid > $1.msgid }.prefix(limit)).reversed()
        let reference = newBatchReference()
        send(session, IRCMessage(source: config.name, command: "BATCH", params: ["+" + reference, "soju.im/search"]))
        for row in rows {
            let room = row.target.hasPrefix("dm ") ? nil : roomBook.channels[row.target]?.name
            replay(row, to: session, batch: reference, room: room)
        }
        send(session, IRCMessage(source: config.name, command: "BATCH", params: ["-" + reference]))
    }

    /// A message-tag value unescaped (`\:` `;`, `\s` space, `\\`), as SEARCH's attributes are written.
    static func unescapedTagValue(_ raw: String) -> String {
        var out = "", escaped = false
        for character in raw {
            if escaped {
                switch character {
                case ":": out.append(";")
                case "s": out.append(" ")
                case "r": out.append("\r")
                case "n": out.append("\n")
                default: out.append(character)
                }
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                out.append(character)
            }
        }
        return out
    }
}
