import ChatClientKit

/// Conversations by number and by activity (WeeChat's buflist and hotlist, irssi's window
/// numbers): every conversation row of the sidebar is numbered in order, across networks;
/// Alt-1…Alt-0 and `/window N` go to one, Alt-a to the one with the most important news, Alt-Left
/// and Alt-Right to the previous and next.
extension ChatModel {
    /// The numbered rows (rooms, direct conversations, server windows), in sidebar order:
    /// conversation N is `numberedRows[N - 1]`.
    public var numberedRows: [SidebarRow] {
        sidebarRows.filter { if case .conversation = $0.item { return true } else { return false } }
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
            let list = numberedRows.enumerated().map { "\($0.offset + 1) \(rowName($0.element))" }.joined(separator: "  ")
            return [.note(list, conversation: viewedID, isError: false)]
        }
        switch word.lowercased() {
        case "next": return stepConversation(by: 1)
        case "prev", "previous": return stepConversation(by: -1)
        case "close": return runCommand("/close")
        default: break
        }
        if let number = Int(word) { return goToConversation(number: number) }
        // A name: the exact one, else the first that starts so.
        let rows = numberedRows
        let folded = word.lowercased()
        if let row = rows.first(where: { rowName($0).lowercased() == folded }) ?? rows.first(where: { rowName($0).lowercased().hasPrefix(folded) }) {
            return show(row)
        }
        return [.note("No conversation called \(word) (/window lists them)", conversation: viewedID, isError: true)]
    }

    func rowName(_ row: SidebarRow) -> String {
        guard case .conversation(let id) = row.item else { return "" }
        if id == .server { return hasSeveralNetworks ? "(server \(networks[row.network].name))" : "(server)" }
        return networks[row.network].state[id]?.name ?? id.key
    }
}
