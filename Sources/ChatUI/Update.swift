import Foundation
import ChatClientKit
import IRCWire

extension ChatModel {
    /// Applies one event and returns what the shell should do. The only place keys mean anything.
    public mutating func update(_ event: UIEvent) -> [UICommand] {
        switch event {
        case .resize(let width, let height):
            self.width = width
            self.height = height
            return [.redraw]
        case .tick(let now):
            self.now = now
            // The selection has rested: what it shows is read.
            if now - selectedAt >= 1, let viewed = viewedConversation, viewed.unread > 0 {
                return [.markRead(viewedKey == ClientState.serverKey ? ClientState.serverKey : viewed.name)]
            }
            return []
        case .client(let clientEvent):
            return clientEventArrived(clientEvent)
        case .key(let key):
            if let pending = pendingPaste { return answerPaste(key, lines: pending) }
            if confirmingQuit { return answerQuit(key) }
            if roomPicker != nil { return pickRoom(key) }
            return press(key)
        }
    }

    mutating func clientEventArrived(_ event: ClientEvent) -> [UICommand] {
        switch event {
        case .status(let status):
            self.status = status
            if case .registered = status { everRegistered = true }
            if case .reconnecting(let seconds, _) = status { reconnectAt = now + seconds } else { reconnectAt = nil }
            return []
        case .lag(let seconds):
            lag = seconds
            return []
        case .roomListReady:
            if awaitingRoomList {
                awaitingRoomList = false
                roomPicker = 0
            }
            return []
        case .notSent(let target, let text, let reason):
            // Said where the line was meant to go, with its text, so it can be sent again.
            let place = state.conversation(target)?.name ?? "server"
            return [.note("Not sent to \(target): \"\(text)\" (\(reason))", conversation: place, isError: true)]
        case .renamed(let old, let new):
            // The person you are talking to changed name: stay with them, wherever the new
            // name sorts (or even if it reads like a room's name).
            switch selection {
            case .conversation(let name) where state.key(for: name) == state.key(for: old):
                selection = .conversation(new)
            case .user(let nick, let room) where state.key(for: nick) == state.key(for: old):
                selection = .user(new, room: room)
            default:
                break
            }
            return []
        case .conversationOpened(let name):
            // Joining a room takes you there, as irssi and WeeChat do.
            if state.isChannel(name) {
                currentRoom = name
                selection = .conversation(name)
                if isHost && !hostHintShownInRoom {
                    hostHintShownInRoom = true
                    return hostHint.map { .note($0, conversation: name, isError: false) }
                }
            }
            return []
        case .line(let conversation, let line):
            var commands: [UICommand] = []
            let isViewed = state.key(for: conversation) == viewedKey
                || (conversation == "server" && viewedKey == ClientState.serverKey)
            if isViewed {
                commands.append(.markRead(conversation))
            } else if bellEnabled && !line.isOwn && (line.isHighlight || state.conversation(conversation)?.kind == .direct)
                        && (line.kind == .message || line.kind == .action || line.kind == .notice || Self.isOffer(line)) {
                commands.append(.bell)
            }
            return commands
        default:
            return []
        }
    }

    /// A file offer waiting for /accept (it rings and counts as unread like a message).
    static func isOffer(_ line: ChatLine) -> Bool {
        if case .transfer = line.kind { return line.isHighlight }
        return false
    }

    mutating func press(_ key: Key) -> [UICommand] {
        switch key {
        // With text in the input line, Up and Down walk your earlier lines (as in irssi and
        // WeeChat), so a draft never changes recipient; with an empty line they pick the recipient.
        case .up:
            if !editor.isEmpty { editor.historyPrevious(); return [] }
            return moveSelection(by: -1)
        case .down:
            if !editor.isEmpty { editor.historyNext(); return [] }
            return moveSelection(by: 1)
        case .pageUp: scrollPane(by: max(1, paneHeight - 1)); return []
        case .pageDown: scrollPane(by: -max(1, paneHeight - 1)); return []
        case .home:
            if editor.isEmpty { return selectIndex(0) }
            editor.home()
        case .end:
            if editor.isEmpty { return selectIndex(sidebar.count - 1) }
            editor.end()
        case .left: editor.left()
        case .right: editor.right()
        case .backspace: editor.backspace()
        case .delete: editor.deleteForward()
        case .tab:
            if editor.text.hasPrefix("/send ") && editor.text.split(separator: " ", omittingEmptySubsequences: false).count >= 3 {
                editor.complete(nicks: PathCompletion.candidates(for: editor.currentWord), commands: [], atLineStart: false)
            } else {
                editor.complete(nicks: completionNames, commands: SlashCommands.completions)
            }
        case .escape: break
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
                // The host's Ctrl-C closes the room for everyone: ask first when others are in it.
                if isHost && othersOnline > 0 {
                    confirmingQuit = true
                    return []
                }
                return [.quit(reason: "Leaving")]
            default: break
            }
        }
        return []
    }

    var paneHeight: Int { max(0, height - 3) }

    mutating func scrollPane(by rows: Int) {
        let key = viewedKey
        scroll[key] = max(0, (scroll[key] ?? 0) + rows)
    }

    /// Moves to the next row you can pick, skipping your own. Nothing is opened or marked read.
    mutating func moveSelection(by delta: Int) -> [UICommand] {
        let items = sidebar
        guard !items.isEmpty else { return [] }
        var index = items.firstIndex(of: selection) ?? 0
        repeat {
            let next = index + delta
            guard items.indices.contains(next) else { return [] }
            index = next
        } while !isSelectable(items[index])
        return selectIndex(index)
    }

    mutating func selectIndex(_ index: Int) -> [UICommand] {
        let items = sidebar
        guard items.indices.contains(index) else { return [] }
        var index = index
        // Home and End land on the nearest row that can be picked.
        while !isSelectable(items[index]) && index + 1 < items.count { index += 1 }
        selection = items[index]
        switch selection {
        case .conversation(let name):
            if state.conversation(name)?.kind == .room { currentRoom = name }
        case .user(_, let room):
            currentRoom = room
        }
        return []
    }

    // MARK: Sending

    mutating func submit(_ line: String) -> [UICommand] {
        let here = viewedConversation?.name ?? "server"
        if line.trimmingCharacters(" ").isEmpty {
            return [.note("Empty message: nothing sent", conversation: here, isError: true)]
        }
        if line.hasPrefix("/") && !line.hasPrefix("//") { return runCommand(line) }
        let text = line.hasPrefix("//") ? String(line.dropFirst()) : line
        // Writing jumps back to the newest lines, where your message will appear.
        scroll[viewedKey] = 0
        let commands = sendText(text, to: target, isAction: false)
        // Refused (the server window, a room you left, yourself): the line stays in the input.
        if commands.count == 1, case .note(_, _, true) = commands[0] { editor.set(line) }
        return commands
    }

    mutating func sendText(_ text: String, to target: String, isAction: Bool) -> [UICommand] {
        let here = viewedConversation?.name ?? "server"
        if !everRegistered {
            return [.note("Not connected yet: your name is not set, so nothing was sent", conversation: here, isError: true)]
        }
        if case .conversation("server") = selection, target == "server" {
            return [.note("This is the server window: pick a room or a person (Up/Down) to send a message", conversation: here, isError: true)]
        }
        if state.isMe(target) {
            return [.note("That is you: pick someone else to send a message to", conversation: here, isError: true)]
        }
        if let room = state.conversation(target), room.kind == .room, !room.isJoined, !room.awaitingRejoin {
            return [.note("You left \(room.name): /join \(room.name) to talk there again", conversation: here, isError: true)]
        }
        // Writing is looking: the conversation is read. A first message to someone makes the
        // direct conversation, and the selection moves to it.
        var commands: [UICommand] = []
        if case .user(let nick, _) = selection, state.key(for: nick) == state.key(for: target) {
            if let conversation = state.conversation(nick) {
                if conversation.unread > 0 { commands.append(.markRead(nick)) }
            } else {
                commands.append(.open(nick))
            }
        } else if let viewed = viewedConversation, viewed.unread > 0, state.key(for: viewed.name) == state.key(for: target) {
            commands.append(.markRead(viewed.name))
        }
        return commands + [isAction ? .action(text: text, to: target) : .send(text: text, to: target)]
    }

    mutating func paste(_ text: String) -> [UICommand] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            .filter { !$0.trimmingCharacters(" ").isEmpty }
        if lines.count <= 1 {
            editor.insert(lines.first ?? "")
            return []
        }
        if lines.count > pasteConfirmThreshold {
            pendingPaste = lines
            return []
        }
        return lines.flatMap { sendText($0, to: target, isAction: false) }
    }

    /// Keys while the /list picker is open.
    mutating func pickRoom(_ key: Key) -> [UICommand] {
        let rooms = state.roomList
        let index = roomPicker ?? 0
        switch key {
        case .up: roomPicker = max(0, index - 1)
        case .down: roomPicker = min(max(0, rooms.count - 1), index + 1)
        case .pageUp: roomPicker = max(0, index - max(1, paneHeight - 2))
        case .pageDown: roomPicker = min(max(0, rooms.count - 1), index + max(1, paneHeight - 2))
        case .home: roomPicker = 0
        case .end: roomPicker = max(0, rooms.count - 1)
        case .escape, .control("c"):
            roomPicker = nil
        case .enter:
            roomPicker = nil
            guard rooms.indices.contains(index) else { return [] }
            let name = rooms[index].name
            if let room = state.conversation(name), room.kind == .room, room.isJoined {
                selection = .conversation(room.name)
                currentRoom = room.name
                return []
            }
            return [.irc(IRCMessage("JOIN", name))]
        default: break
        }
        return []
    }

    mutating func answerQuit(_ key: Key) -> [UICommand] {
        switch key {
        case .character("y"), .character("Y"), .control("c"):
            confirmingQuit = false
            return [.quit(reason: "The host closed the room")]
        case .character("n"), .character("N"), .escape, .enter:
            confirmingQuit = false
            return [.note("The room stays open", conversation: viewedConversation?.name ?? "server", isError: false)]
        default:
            return []
        }
    }

    /// The keys, for /help.
    static let keyHelp = [
        "Keys: Up/Down (empty input) pick the room or person Enter sends to; with text they recall earlier lines",
        "      Ctrl-P/Ctrl-N earlier and later lines; PgUp/PgDn scroll; Home/End the ends of the list or of the input",
        "      Tab completes names and commands; Ctrl-A/E/B/F/D/H/W/U/K/Y edit; Ctrl-L redraws; Ctrl-C quits",
    ]

    mutating func answerPaste(_ key: Key, lines: [String]) -> [UICommand] {
        switch key {
        case .character("y"), .character("Y"):
            pendingPaste = nil
            return lines.flatMap { sendText($0, to: target, isAction: false) }
        case .character("n"), .character("N"), .escape, .control("c"), .enter:
            pendingPaste = nil
            return [.note("Paste of \(lines.count) lines cancelled", conversation: viewedConversation?.name ?? "server", isError: false)]
        default:
            return []
        }
    }

    mutating func runCommand(_ line: String) -> [UICommand] {
        let here = viewedConversation?.name ?? "server"
        let body = line.dropFirst()
        let name = String(body.prefix(while: { $0 != " " }))
        let rest = body.dropFirst(name.count).drop(while: { $0 == " " })
        let words = rest.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard let command = SlashCommands.named(name) else {
            return [.note("Unknown command /\(name): /help lists the commands", conversation: here, isError: true)]
        }
        guard words.count >= command.minArguments else {
            return [.note("Usage: \(command.usage) — \(command.summary)", conversation: here, isError: true)]
        }
        let room = viewedConversation?.kind == .room ? viewedConversation?.name : currentRoom
        switch command.name {
        case "help":
            let width = SlashCommands.all.map(\.usage.count).max() ?? 0
            let commands = SlashCommands.all.map { cmd -> UICommand in
                .note(cmd.usage + String(repeating: " ", count: width - cmd.usage.count + 2) + cmd.summary, conversation: here, isError: false)
            }
            let keys = ChatModel.keyHelp.map { UICommand.note($0, conversation: here, isError: false) }
            return commands + keys + hostHint.map { .note($0, conversation: here, isError: false) }
        case "msg":
            let text = String(rest.drop(while: { $0 != " " }).dropFirst())
            return sendText(text, to: words[0], isAction: false)
        case "query":
            guard !state.isMe(words[0]) else { return [.note("That is you", conversation: here, isError: true)] }
            selection = .conversation(words[0])
            return [.open(words[0]), .markRead(words[0])]
        case "me":
            return sendText(String(rest), to: target, isAction: true)
        case "nick":
            if let problem = IRCNames.nickProblem(words[0], maxBytes: state.isupport.nickLength ?? 30) {
                return [.note("\(words[0]): \(problem)", conversation: here, isError: true)]
            }
            return [.irc(IRCMessage("NICK", words[0]))]
        case "join":
            // Already in it: go there (irssi and WeeChat switch to the window).
            if let room = state.conversation(words[0]), room.kind == .room, room.isJoined {
                selection = .conversation(room.name)
                currentRoom = room.name
                return room.unread > 0 ? [.markRead(room.name)] : []
            }
            return [.irc(IRCMessage("JOIN", words[0]))]
        case "part":
            let named = words.first.map { state.isChannel($0) } ?? false
            guard let which = named ? words[0] : room else {
                return [.note("Not in a room: /part #ROOM", conversation: here, isError: true)]
            }
            let reason = words.dropFirst(named ? 1 : 0).joined(separator: " ")
            return [.irc(IRCMessage(command: "PART", params: reason.isEmpty ? [which] : [which, reason]))]
        case "topic":
            guard let room else { return [.note("Not in a room", conversation: here, isError: true)] }
            return [.irc(IRCMessage(command: "TOPIC", params: rest.isEmpty ? [room] : [room, String(rest)]))]
        case "away":
            return [.irc(IRCMessage(command: "AWAY", params: rest.isEmpty ? [] : [String(rest)]))]
        case "whois":
            return [.irc(IRCMessage("WHOIS", words[0]))]
        case "names":
            guard let room, let conversation = state.conversation(room) else {
                return [.note("Not in a room", conversation: here, isError: true)]
            }
            let names = conversation.sortedMembers().map { $0.highestPrefix + $0.nick }
            return [.note("\(room): \(names.count) people: " + names.joined(separator: " "), conversation: here, isError: false)]
        case "kick", "ban", "unban", "op", "deop", "voice", "devoice":
            guard let room else { return [.note("/\(command.name) works in a room: pick one first", conversation: here, isError: true)] }
            return Self.operatorCommand(command.name, room: room, words: words, rest: String(rest))
        case "invite":
            guard let into = words.count > 1 ? words[1] : room else {
                return [.note("Usage: /invite NICK #ROOM", conversation: here, isError: true)]
            }
            return [.irc(IRCMessage("INVITE", words[0], into))]
        case "mode":
            // `/mode +i`: the room in view; `/mode alice +i`, `/mode #dev -k *`: that target.
            let first = words.first ?? ""
            let named = !first.isEmpty && !first.hasPrefix("+") && !first.hasPrefix("-")
            guard let target = named ? first : room else {
                return [.note("Usage: /mode #ROOM +MODES (or pick a room first)", conversation: here, isError: true)]
            }
            return [.irc(IRCMessage(command: "MODE", params: [target] + words.dropFirst(named ? 1 : 0)))]
        case "list":
            awaitingRoomList = true
            return [.irc(IRCMessage(command: "LIST", params: words.prefix(1).map { $0 }))]
        case "ignore":
            return [.ignore(words.first)]
        case "unignore":
            return [.unignore(words[0])]
        case "quote":
            guard let message = try? IRCMessage(parsing: String(rest)) else {
                return [.note("Not an IRC line: \(rest)", conversation: here, isError: true)]
            }
            return [.irc(message)]
        case "clear":
            scroll[viewedKey] = 0
            return [.clear(here)]
        case "close":
            let leftRoom = viewedConversation.map { $0.kind == .room && !$0.isJoined && !$0.awaitingRejoin } ?? false
            guard viewedConversation?.kind == .direct || leftRoom else {
                return [.note("/close closes a direct conversation or a room you have left; use /part to leave a room", conversation: here, isError: true)]
            }
            selection = currentRoom.map { .conversation($0) } ?? .conversation("server")
            return [.close(here)]
        case "send":
            let passive = words[0] == "-p"
            let nick = passive ? words[1] : words[0]
            let pathStart = passive ? 2 : 1
            guard words.count > pathStart else { return [.note("Usage: \(command.usage)", conversation: here, isError: true)] }
            // The path is the rest of the line, spaces and all.
            var remainder = Substring(rest)
            for _ in 0..<pathStart { remainder = remainder.drop(while: { $0 != " " }).drop(while: { $0 == " " }) }
            let path = String(remainder).expandingTilde()
            if state.isMe(nick) { return [.note("That is you: pick someone else to send a file to", conversation: here, isError: true)] }
            return [.sendFile(path: path, to: nick, passive: passive)]
        case "accept", "reject":
            let id = words.first.flatMap { Int($0.trimmingPrefix("#")) }
            if !words.isEmpty && id == nil { return [.note("Usage: \(command.usage)", conversation: here, isError: true)] }
            return [command.name == "accept" ? .acceptTransfer(id) : .rejectTransfer(id)]
        case "transfers":
            return [.listTransfers]
        case "cancel":
            guard let id = Int(words[0].trimmingPrefix("#")) else { return [.note("Usage: \(command.usage)", conversation: here, isError: true)] }
            return [.cancelTransfer(id)]
        case "disconnect":
            return [.disconnect]
        case "reconnect":
            return [.reconnect]
        case "quit":
            return [.quit(reason: rest.isEmpty ? "Leaving" : String(rest))]
        default:
            return []
        }
    }
}

extension ChatModel {
    /// KICK and the membership and ban modes, as IRC lines for `room`. Several nicknames go in
    /// lines of four changes each (every server takes at least four per MODE).
    static func operatorCommand(_ name: String, room: String, words: [String], rest: String) -> [UICommand] {
        switch name {
        case "kick":
            let reason = String(rest.drop(while: { $0 != " " }).drop(while: { $0 == " " }))
            return [.irc(IRCMessage(command: "KICK", params: reason.isEmpty ? [room, words[0]] : [room, words[0], reason]))]
        case "ban", "unban":
            // A bare nickname bans that nickname wherever it comes from.
            let mask = words[0].contains("!") || words[0].contains("@") ? words[0] : words[0] + "!*@*"
            return [.irc(IRCMessage("MODE", room, (name == "ban" ? "+b" : "-b"), mask))]
        default:
            let sign = name.hasPrefix("de") ? "-" : "+"
            let letter = name.hasSuffix("op") ? "o" : "v"
            return stride(from: 0, to: words.count, by: 4).map { start in
                let nicks = Array(words[start..<min(start + 4, words.count)])
                return .irc(IRCMessage(command: "MODE", params: [room, sign + String(repeating: letter, count: nicks.count)] + nicks))
            }
        }
    }
}

extension String {
    func expandingTilde() -> String {
        guard hasPrefix("~/") || self == "~" else { return self }
        return (ProcessInfo.processInfo.environment["HOME"] ?? "") + dropFirst()
    }
}

/// Tab completion of file paths for /send.
enum PathCompletion {
    static func candidates(for word: String) -> [String] {
        let expanded = word.expandingTilde()
        let directory = expanded.hasSuffix("/") ? expanded : (expanded as NSString).deletingLastPathComponent
        let prefix = expanded.hasSuffix("/") ? "" : (expanded as NSString).lastPathComponent
        let listed = (try? FileManager.default.contentsOfDirectory(atPath: directory.isEmpty ? "." : directory)) ?? []
        let base = word.hasSuffix("/") ? word : String(word.dropLast(prefix.count))
        return listed.filter { $0.hasPrefix(prefix) && (!$0.hasPrefix(".") || prefix.hasPrefix(".")) }.map { name in
            var isDirectory: ObjCBool = false
            let full = (directory.isEmpty ? "" : directory + "/") + name
            _ = FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory)
            return base + name + (isDirectory.boolValue ? "/" : "")
        }
    }
}

extension StringProtocol {
    func trimmingCharacters(_ character: Character) -> String {
        String(drop(while: { $0 == character }).reversed().drop(while: { $0 == character }).reversed())
    }
}
