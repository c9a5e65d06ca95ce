import ChatClientKit

/// Conversations by number and by activity (WeeChat's buflist and hotlist, irssi's window
/// numbers): every conversation row of the sidebar is numbered in order, across networks;
/// Alt-1…Alt-0 and `/window N` go to one, Alt-a to the one with the most important news, Alt-Left
/// and Alt-Right to the previous and next.
extension ChatModel {
    /// The numbered rows, in the sidebar's order: each network's server window first (number 1
    /// with one network, as irssi's status window and WeeChat's core buffer), then its rooms and
    /// direct conversations in their kept order (`WindowOrder`); conversation N is
    /// `numberedRows[N - 1]`.
    public var numberedRows: [SidebarRow] {
        // The sidebar lists them in this order already (`sidebarItems`): its conversation rows.
        sidebarRows.filter { if case .conversation = $0.item { return true } else { return false } }
    }

    /// Each numbered row's number.
    var rowNumbers: [SidebarRow: Int] {
        Dictionary(numberedRows.enumerated().map { ($1, $0 + 1) }, uniquingKeysWith: { first, _ in first })
    }

    func entry(_ network: Int, _ id: ConversationID) -> String { WindowOrder.entry(network: networks[network].key, id) }

    /// After a client's event: conversations seen for the first time take the next numbers. A
    /// line in a conversation that has its number changes nothing (the one event a flood repeats).
    mutating func settleWindowOrder(after event: ClientEvent, in network: Int) {
        if case .line(let id, _) = event, id == .server || windowOrder.contains(entry(network, id)) { return }
        settleWindowOrder()
    }

    mutating func settleWindowOrder() {
        var present: [String] = []
        for network in networks.indices {
            // A room restored from the log that we are not in waits for its number until we join
            // it (it is listed after the numbered ones meanwhile); a direct conversation is numbered at once.
            let book = networks[network].state
            for id in book.order where id != .server {
                if id.kind == .room, let room = book[id], !room.isJoined && !room.awaitingRejoin { continue }
                present.append(entry(network, id))
            }
        }
        // A conversation being closed is not numbered again while its client closes it.
        if !closingEntries.isEmpty { closingEntries.formIntersection(present) }
        windowOrder.settle(present: present.filter { !closingEntries.contains($0) })
    }

    /// How much a conversation's news matters: 3 a mention, a highlight or a direct message;
    /// 2 other messages; 1 the server window's lines; 0 nothing new.
    func activity(_ row: SidebarRow) -> Int {
        guard case .conversation(let id) = row.item, let conversation = networks[row.network].state[id], conversation.unread > 0 else { return 0 }
        if id == .server { return 1 }
        return conversation.mentioned || id.kind == .direct ? 3 : 2
    }

    /// The status line's hotlist: the numbers of conversations with news, `!` where it is for you.
    public var hotlist: String {
        let items = numberedRows.enumerated().compactMap { index, row -> String? in
            let level = activity(row)
            guard level > 0, row != SidebarRow(network: selectedNetwork, item: .conversation(viewedID)) else { return nil }
            return String(index + 1) + (level == 3 ? "!" : "")
        }
        return items.isEmpty ? "" : "[" + items.joined(separator: ",") + "]"
    }

    /// Alt-N, `/window N`: conversation `number`; says so when there is none.
    mutating func goToConversation(number: Int) -> [UICommand] {
        let rows = numberedRows
        guard rows.indices.contains(number - 1) else {
            return [.note("No conversation \(number): there \(rows.count == 1 ? "is 1" : "are \(rows.count)")", conversation: viewedID, isError: true)]
        }
        return show(rows[number - 1])
    }

    /// Alt-a: the conversation with the most important news (the lowest number first among
    /// equals), never the one in view; with none left, back where the first Alt-a was pressed.
    mutating func jumpToActivity() -> [UICommand] {
        let here = SidebarRow(network: selectedNetwork, item: .conversation(viewedID))
        let rows = numberedRows
        let best = rows.filter { $0 != here && activity($0) > 0 }.max { a, b in
            let (la, lb) = (activity(a), activity(b))
            return la != lb ? la < lb : rows.firstIndex(of: a)! > rows.firstIndex(of: b)!
        }
        guard let best else {
            guard let back = beforeActivityJump, back != here, rows.contains(back) else { return [] }
            beforeActivityJump = nil
            return show(back)
        }
        if beforeActivityJump == nil { beforeActivityJump = here }
        return show(best)
    }

    /// Alt-Left, Alt-Right: the previous or next conversation by number (round the ends).
    mutating func stepConversation(by delta: Int) -> [UICommand] {
        let rows = numberedRows
        guard !rows.isEmpty else { return [] }
        let here = rows.firstIndex(of: SidebarRow(network: selectedNetwork, item: .conversation(viewedID))) ?? 0
        return show(rows[((here + delta) % rows.count + rows.count) % rows.count])
    }

    /// Goes to a conversation's row; what it shows is read (as when picked with the arrows and rested on).
    mutating func show(_ row: SidebarRow) -> [UICommand] {
        guard let index = sidebarRows.firstIndex(of: row) else { return [] }
        _ = selectIndex(index)
        scroll[viewedID] = scroll[viewedID] ?? 0
        return (viewedConversation?.unread ?? 0) > 0 ? [.markRead(viewedID)] : []
    }

    /// `/window N|goto N|NAME|next|prev|close` and `/buffer N|NAME|close`, as irssi and WeeChat take them.
    mutating func windowCommand(_ words: [String]) -> [UICommand] {
        var words = words
        if words.first?.lowercased() == "goto" { words.removeFirst() }
        guard let word = words.first else {
            // One line each, as irssi's /window list: a long list does not wrap into one paragraph.
            // Numbers right-aligned, and what is unread in each (`!`: for you), as /window list and WeeChat's buflist.
            let rows = numberedRows
            let digits = String(rows.count).count
            return rows.enumerated().map { offset, row in
                let number = String(offset + 1)
                var text = String(repeating: " ", count: digits - number.count) + number + "  " + rowName(row)
                if case .conversation(let id) = row.item, let conversation = networks[row.network].state[id], conversation.unread > 0 {
                    text += "  (\(conversation.unread) unread\(conversation.mentioned ? ", for you" : ""))"
                }
                return .note(text, conversation: viewedID, isError: false)
            }
        }
        switch word.lowercased() {
        case "next": return stepConversation(by: 1)
        case "prev", "previous": return stepConversation(by: -1)
        case "close": return runCommand("/close")
        case "move": return moveConversation(words.dropFirst().first)
        case "list": return windowCommand([])
        default: break
        }
        if let number = Int(word) { return goToConversation(number: number) }
        // A name: the exact one, else the first that starts so.
        let rows = numberedRows
        // Exactly, then without the room's `#` (`/window ops`), then by its start, then anywhere
        // in it (WeeChat's /buffer); "server" names the server window as "(server)" does.
        func bare(_ text: String) -> String { String(text.lowercased().filter { $0 != "(" && $0 != ")" }.drop { $0 == "#" || $0 == "&" }) }
        let folded = String(word.lowercased().filter { $0 != "(" && $0 != ")" }), typed = bare(word)
        func name(_ row: SidebarRow) -> String { String(rowName(row).lowercased().filter { $0 != "(" && $0 != ")" }) }
        if let row = rows.first(where: { name($0) == folded }) ?? rows.first(where: { bare(name($0)) == typed })
            ?? rows.first(where: { bare(name($0)).hasPrefix(typed) }) ?? rows.first(where: { !typed.isEmpty && bare(name($0)).contains(typed) }) {
            return show(row)
        }
        return [.note("No conversation called \(word) (/window lists them)", conversation: viewedID, isError: true)]
    }

    /// `/window move N|left|right|first|last`: the conversation in view takes number N (the
    /// others keep their order around it), as irssi's `/window move`.
    mutating func moveConversation(_ word: String?) -> [UICommand] {
        let rows = numberedRows.filter { if case .conversation(let id) = $0.item { return id != .server } else { return false } }
        let here = SidebarRow(network: selectedNetwork, item: .conversation(viewedID))
        guard viewedID != .server, let from = rows.firstIndex(of: here) else {
            return [.note("The server window stays first; /window move moves a room or a direct conversation", conversation: viewedID, isError: true)]
        }
        // The server windows take the first numbers: conversation N is rows[N - 1 - servers].
        let servers = numberedRows.count - rows.count
        let target: Int
        switch word?.lowercased() {
        case "left", "prev": target = from - 1
        case "right", "next": target = from + 1
        case "first": target = 0
        case "last": target = rows.count - 1
        case let word? where Int(word) != nil: target = Int(word)! - 1 - servers
        default: return [.note("/window move N|left|right|first|last", conversation: viewedID, isError: true)]
        }
        let to = min(max(0, target), rows.count - 1)
        guard to != from else { return [] }
        var others = rows
        others.remove(at: from)
        let before = to < others.count ? others[to] : nil
        guard case .conversation(let id) = here.item else { return [] }
        func key(_ row: SidebarRow) -> String? { if case .conversation(let id) = row.item { return entry(row.network, id) } else { return nil } }
        windowOrder.move(entry(selectedNetwork, id), before: before.flatMap(key))
        return [.note("\(rowName(here)) is now \(to + 1 + servers)", conversation: viewedID, isError: false)]
    }

    func rowName(_ row: SidebarRow) -> String {
        guard case .conversation(let id) = row.item else { return "" }
        if id == .server { return hasSeveralNetworks ? "(server \(networks[row.network].name))" : "(server)" }
        return networks[row.network].state[id]?.name ?? id.key
    }
}
