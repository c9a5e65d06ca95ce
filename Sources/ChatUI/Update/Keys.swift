import ChatTransport
import ChatClientKit
import IRCWire

// Keys: what a key does when no prompt or picker has it: the input line, the selection,
// scrolling.
extension ChatModel {
    mutating func press(_ key: Key) -> [UICommand] {
        revealing = nil
        switch key {
        // With text in the input line, Up and Down walk your earlier lines (as in irssi and
        // WeeChat), so a draft never changes recipient; with an empty line they pick the
        // recipient, or walk the lines too with `/set arrows history` (irssi's and WeeChat's way).
        case .up:
            if !editor.isEmpty || settings["arrows"] == "history" { editor.historyPrevious(); return [] }
            return moveSelection(by: -1)
        case .down:
            if !editor.isEmpty || settings["arrows"] == "history" { editor.historyNext(); return [] }
            return moveSelection(by: 1)
        case .pageUp:
            // At the top of what is loaded, a room asks the server for the lines before it.
            if scrollPane(by: max(1, paneHeight - 1)), let room = viewedConversation, room.kind == .room,
               let oldest = room.lines.first(where: { $0.msgid != nil })?.msgid, olderAsked[room.id] != oldest {
                olderAsked[room.id] = oldest
                return [.fetchOlder(room: room.name, before: oldest)]
            }
            return []
        case .pageDown: scrollPane(by: -max(1, paneHeight - 1)); return []
        case .home:
            if editor.isEmpty { return selectIndex(0) }
            editor.home()
        case .end:
            if editor.isEmpty { return selectIndex(sidebarRows.count - 1) }
            editor.end()
        case .left: editor.left()
        case .right: editor.right()
        case .backspace: editor.backspace()
        case .delete: editor.deleteForward()
        case .tab:
            let words = editor.text.split(separator: " ", omittingEmptySubsequences: false).count
            if (editor.text.hasPrefix("/send ") && words >= 3) || (editor.text.hasPrefix("/upload ") && words >= 2) {
                // A second Tab cycles through the names already listed; a first asks the shell.
                if editor.isCompleting {
                    editor.complete(nicks: [], commands: [], atLineStart: false)
                } else if !editor.currentWord.isEmpty {
                    return [.listFiles(word: editor.currentWord)]
                }
            } else if let candidates = settingCompletions {
                editor.complete(nicks: candidates, commands: [], atLineStart: false, emptyWord: true)
            } else {
                editor.complete(nicks: completionNames, commands: SlashCommands.completions + aliases.table.keys.map { "/" + $0 })
            }
        case .escape: replyingTo = nil
        case .messageUp, .messageDown, .focus: break
        case .mouse(let event): return mouse(event)
        case .alt(let character):
            if let digit = character.wholeNumberValue, character.isASCII { return goToConversation(number: digit == 0 ? 10 : digit) }
            if character == "a" || character == "A" { return jumpToActivity() }
            // Word by word, as readline, irssi and WeeChat have it.
            if character == "b" { editor.wordLeft() }
            if character == "f" { editor.wordRight() }
            if character == "d" { editor.deleteWordForward() }
        case .wordLeft: editor.wordLeft()
        case .wordRight: editor.wordRight()
        case .altLeft: return stepConversation(by: -1)
        case .altRight: return stepConversation(by: 1)
        case .altEnd: scroll[viewedID] = 0
        case .altHome: scrollPane(by: Int.max / 4)
        case .character(let character): editor.insert(String(character))
        case .paste(let text): return paste(text)
        case .enter: return submit(editor.submit())
        case .control(let letter):
            switch letter {
            case "a": editor.home()
            case "e": editor.end()
            case "b": editor.left()
            case "f": editor.right()
            case "d": editor.deleteForward()
            case "h": editor.backspace()
            case "w": editor.deleteWordBackward()
            case "u": editor.killToStart()
            case "k": editor.killToEnd()
            case "y": editor.yank()
            case "p": editor.historyPrevious()
            case "n": editor.historyNext()
            case "l": return [.redraw]
            case "c":
                // With text typed, Ctrl-C clears the line (Ctrl-Y brings it back) rather than
                // quitting with it; on an empty line it quits.
                if !editor.isEmpty {
                    editor.end()
                    editor.killToStart()
                    return []
                }
                // On an empty line it asks first (irssi's and WeeChat's Ctrl-C is a colour key:
                // a reflex must not end the session); a second Ctrl-C or y quits. The host's
                // question says the room closes for whoever is in it.
                confirmingQuit = true
                return []
            default: break
            }
        }
        return []
    }

    /// What Tab offers in `/set NAME VALUE` (names, then a setting's values), `/unalias NAME`
    /// and `/window NAME`; nil elsewhere (nicknames and commands).
    var settingCompletions: [String]? {
        let words = editor.text.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        switch (words.first?.lowercased(), words.count) {
        case ("/set", 2): return Setting.all.map(\.name) + ["display-name", "-default"]
        case ("/set", 3): return words[1] == "-default" ? Setting.all.map(\.name) : Setting.named(words[1])?.completions ?? []
        case ("/unalias", 2), ("/alias", 2): return aliases.table.keys.sorted()
        // `/window de` + Tab: the conversations' names (WeeChat completes buffer names).
        // A room by its name with or without the `#` (`/window dev` finds #dev).
        case ("/window", 2), ("/buffer", 2), ("/win", 2):
            let names = state.orderedConversations.filter { $0.kind != .server }.map(\.name)
            return names + names.filter { state.isChannel($0) }.map { String($0.dropFirst()) }
        default: return nil
        }
    }

    var paneHeight: Int { max(0, height - 3) }

    /// Scrolls the viewed conversation so the search hit being opened is in the middle of the pane.
    mutating func reveal() {
        guard let target = revealing, let conversation = state[target.id],
              let index = conversation.lines.lastIndex(where: { $0.time == target.time && $0.text == target.text }) else { return }
        let layout = self.layout
        // The rows as drawn (folded joins, the read marker, wrapped lines and all), bottom first:
        // where the line's last row is, counted from the bottom.
        let rows = paneRows(conversation, width: layout.paneWidth, needed: .max)
        guard let last = rows.firstIndex(where: { $0.line == index }) else { return }
        let first = rows.lastIndex(where: { $0.line == index }) ?? last
        // Its first row in the middle of the pane (the pane loses a row to "N more rows below").
        let height = max(1, layout.paneHeight - 1)
        scroll[target.id] = max(0, min(first + 1 - (layout.paneHeight + 1) / 2, rows.count - height))
    }

    /// The rows from the bottom of the pane to the top of the line `lines` from the newest in
    /// the conversation in view (what `scroll` would be to have it at the bottom; the bench's depth).
    public func rowsUp(toLinesFromBottom lines: Int) -> Int {
        guard let conversation = viewedConversation else { return 0 }
        let width = layout.paneWidth
        return conversation.lines.suffix(lines).reduce(0) { $0 + lineRows($1, in: conversation, width: width).count }
    }

    /// Scrolls; true when it stopped at the oldest line (it wanted to go further).
    @discardableResult
    mutating func scrollPane(by rows: Int) -> Bool {
        let id = viewedID
        var wanted = max(0, (scroll[id] ?? 0) + rows)
        var atTop = false
        // Never past the oldest line: at most as many rows up as there are above the pane.
        let layout = self.layout
        if wanted > 0, let conversation = viewedConversation {
            let height = max(0, layout.paneHeight - 1)
            // One row more than would fill the pane: exactly as many as needed is not the top.
            let available = paneRows(conversation, width: layout.paneWidth, needed: wanted + height + 1, skip: wanted + height + 1).count
            atTop = wanted >= max(0, available - height)
            wanted = min(wanted, max(0, available - height))
        }
        scroll[id] = wanted
        return atTop && rows > 0
    }

    /// Moves to the next row you can pick, skipping your own (and, with several networks, from
    /// one network's rows to the next). Nothing is opened or marked read.
    mutating func moveSelection(by delta: Int) -> [UICommand] {
        let rows = sidebarRows
        guard !rows.isEmpty else { return [] }
        var index = rows.firstIndex(of: SidebarRow(network: selectedNetwork, item: selection)) ?? 0
        repeat {
            let next = index + delta
            guard rows.indices.contains(next) else { return [] }
            index = next
        } while !isSelectable(rows[index])
        return selectIndex(index)
    }

    mutating func selectIndex(_ index: Int) -> [UICommand] {
        let rows = sidebarRows
        guard rows.indices.contains(index) else { return [] }
        var index = index
        // Home and End land on the nearest row that can be picked.
        while !isSelectable(rows[index]) && index + 1 < rows.count { index += 1 }
        selectNetwork(rows[index].network)
        selection = rows[index].item
        switch selection {
        case .conversation(let id):
            if id.kind == .room, let room = state[id] { currentRoom = room.name }
        case .user(_, let room):
            if let room = state[room] { currentRoom = room.name }
        case .heading, .networkHeading:
            break
        }
        return []
    }

}
