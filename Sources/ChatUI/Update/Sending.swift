import ChatTransport
import ChatClientKit
import IRCWire

// Sending: Enter, /commands, pastes, and what is said where about them.
extension ChatModel {
    mutating func submit(_ line: String) -> [UICommand] {
        let here = viewedID
        if line.trimmingCharacters(" ").isEmpty {
            return [.note("Empty message: nothing sent", conversation: here, isError: true)]
        }
        // Writing jumps back to the newest lines, where your message (or a command's answer) appears.
        scroll[viewedID] = 0
        if line.hasPrefix("/") && !line.hasPrefix("//") { return runCommand(line) }
        let text = line.hasPrefix("//") ? String(line.dropFirst()) : line
        if let parent = replyingTo, let conversation = viewedConversation {
            replyingTo = nil
            return writing(to: conversation.name) + CommandInterpreter.messageAction("reply", on: parent.msgid, in: conversation.name, text: text, commandContext)
        }
        let commands = sendText(text, to: target, isAction: false)
        // Refused (the server window, a room you left, yourself): the line stays in the input.
        if commands.count == 1, case .note(_, _, true) = commands[0] { editor.set(line) }
        return commands
    }

    var commandContext: CommandContext {
        var context = CommandContext(book: state, here: viewedID, room: commandRoom,
                                     target: target, registered: everRegistered, extraHelp: Self.keyHelp + hostHintInPane)
        context.now = now
        return context
    }

    /// The room /topic, /part, /names, /kick act on: the room in view, or the room of the person
    /// picked in its member list. Nil in a direct conversation or the server window (irssi's "Not
    /// joined to any channel"): a room viewed earlier is not where a command typed here goes.
    var commandRoom: String? {
        switch selection {
        case .conversation(let id): return id.kind == .room ? state[id]?.name : nil
        case .user(_, let room): return room.kind == .room ? state[room]?.name : nil
        case .heading, .networkHeading: return nil
        }
    }

    mutating func sendText(_ text: String, to target: String, isAction: Bool) -> [UICommand] {
        if let reason = CommandInterpreter.refusal(sendingTo: target, commandContext) {
            return [.note(reason, conversation: viewedID, isError: true)]
        }
        return writing(to: target) + [isAction ? .action(text: text, to: target) : .send(text: text, to: target)]
    }

    /// Writing is looking: the conversation is read. A first message to someone picked in the
    /// sidebar makes the direct conversation, and the selection moves to it.
    mutating func writing(to target: String) -> [UICommand] {
        let id = ConversationID.direct(state.key(for: target))
        if case .user(let nick, _) = selection, state.key(for: nick) == state.key(for: target) {
            if let conversation = state[id] {
                return conversation.unread > 0 ? [.markRead(id)] : []
            }
            return [.open(nick)]
        }
        if let viewed = viewedConversation, viewed.unread > 0, state.key(for: viewed.name) == state.key(for: target) {
            return [.markRead(viewed.id)]
        }
        return []
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
        return sendText(lines.joined(separator: "\n"), to: target, isAction: false)
    }

    /// The keys, for /help.
    static let keyHelp = [
        "Keys: Up/Down (empty input) pick the room or person Enter sends to; with text they recall earlier lines",
        "      Ctrl-P/Ctrl-N earlier and later lines; PgUp/PgDn scroll; Home/End the ends of the list or of the input",
        "      Tab completes names and commands; Ctrl-A/E/B/F/D/H/W/U/K/Y edit; Alt-B/F/D and Ctrl-Left/Right by words",
        "      Ctrl-L redraws; Ctrl-C clears the line, and on an empty line asks to quit",
        "      " + cursorHelp,
        "Sidebar: a number is unread lines, ! means one names you or is a direct message; (new) means Enter starts a conversation",
    ]

    /// A `/command` typed on the chat screen: the shared interpreter decides, and what it says
    /// about the view (go to a conversation, wait for /list) is done here.
    mutating func runCommand(_ line: String, depth: Int = 0) -> [UICommand] {
        // An alias of the user's: its lines, each run in turn (an alias may use another, four deep).
        if let lines = aliases.expand(line, nick: state.nick, target: target) {
            guard depth < 4 else { return [.note("Aliases within aliases go four deep at most: \(line)", conversation: viewedID, isError: true)] }
            if let problem = aliases.problem(line) { return [.note(problem, conversation: viewedID, isError: true)] }
            // A step refused stops the rest (`/wc` must not part a room its first step failed to leave).
            var out: [UICommand] = []
            for (index, step) in lines.enumerated() {
                let done = runCommand(step, depth: depth + 1)
                out += done
                let refused = done.contains { if case .note(_, _, isError: true) = $0 { return true } else { return false } }
                if refused && index < lines.count - 1 {
                    out.append(.note("The rest of \(line.prefix { $0 != " " }) was not run", conversation: viewedID, isError: false))
                    break
                }
            }
            return out
        }
        var out: [UICommand] = []
        for command in CommandInterpreter.run(line, commandContext) {
            if case .setting = command { out += settingsCommand(command); continue }
            if case .alias = command { out += settingsCommand(command); continue }
            if case .unalias = command { out += settingsCommand(command); continue }
            if case .window(let words) = command { out += windowCommand(words); continue }
            // The host's /quit closes the room for whoever is in it: asked first, as Ctrl-C is
            // (irssi's and WeeChat's /quit leave only yourself; here it ends everyone's room).
            if case .quit(let reason) = command, closesRoom {
                confirmingQuit = true
                quitReason = line.split(separator: " ", maxSplits: 1).count > 1 ? reason : nil
                continue
            }
            if case .showHighlights = command { out += showHighlights(); continue }
            if case .lastlog(let words) = command {
                lastlogIn = (viewedID, viewedConversation?.name ?? "this conversation")
                // irssi's /lastlog matches the line as shown, its `<bob>` too: one word may be who said it.
                out.append(.search(words, alsoSender: words.count == 1))
                continue
            }
            if case .scroll(let toEnd) = command {
                if toEnd { scroll[viewedID] = 0 } else { scrollPane(by: Int.max / 4) }
                continue
            }
            if let meant = networkCommand(command) {
                out += meant
                continue
            }
            switch command {
            case .show(let id):
                guard state[id] != nil else {
                    // Opened by the command just before (/query): go there when the client says it is open.
                    pendingShow = id
                    continue
                }
                selection = .conversation(id)
                if id.kind == .room, let room = state[id] { currentRoom = room.name }
                reconcileSelection()
                if (state[id]?.unread ?? 0) > 0 { out.append(.markRead(id)) }
            case .awaitRoomList:
                awaitingRoomList = true
            case .clear(let id):
                scroll[id] = 0
                out.append(command)
            case .close(let id):
                windowOrder.remove(entry(selectedNetwork, id))
                closingEntries.insert(entry(selectedNetwork, id))
                if viewedID == id { selection = .conversation(currentRoom.map { state.id(for: $0) } ?? .server) }
                out.append(command)
            case .send(_, let to), .action(_, let to):
                out += writing(to: to)
                out.append(command)
            default:
                out.append(command)
            }
            if let echo = echoWhereTyped(command, line: line) { out.append(.note(echo, conversation: viewedID, isError: false)) }
        }
        return out
    }

    /// Why we are not connected, as a line in the server window (the status line cuts it): once
    /// per reason, so retrying for ever does not fill the window.
    mutating func statusNote(_ status: ConnectionStatus) -> [UICommand] {
        let why: String, words: (String) -> String
        switch status {
        case .registered:
            notedStatusReason = nil
            return []
        case .reconnecting(_, let reason): (why, words) = (reason, { "Not connected: \($0) — trying again (/disconnect stops)" })
        case .disconnected(let reason): (why, words) = (reason, { "Disconnected: \($0)" })
        case .stopped(let reason): (why, words) = (reason, { "Stopped: \($0) (/reconnect to try again)" })
        case .connecting, .connected: return []
        }
        // The note says how to stop in its own words: the reason without the status line's.
        let reason = why.hasSuffix(ConnectionEnd.stopRetrying) ? String(why.dropLast(ConnectionEnd.stopRetrying.count)) : why
        guard !reason.isEmpty, notedStatusReason != reason else { return [] }
        notedStatusReason = reason
        return [.note(words(reason), conversation: .server, isError: true)]
    }

    /// What a command that acts elsewhere did, said in the conversation it was typed in (the
    /// message itself and a transfer's progress go to the conversation with the person).
    func echoWhereTyped(_ command: UICommand, line: String) -> String? {
        let here = viewedID
        let typed = line.dropFirst().prefix { $0 != " " }.lowercased()
        let word = SlashCommands.aliases[typed] ?? typed
        // Elsewhere: not the conversation in view, nor the person picked in the sidebar (the
        // view moves to the conversation with them once it is opened).
        func elsewhere(_ name: String) -> Bool {
            // `/query bob hello`: the view goes to bob, where hello shows.
            if word == "query" { return false }
            if case .user(let nick, _) = selection, state.key(for: nick) == state.key(for: name) { return false }
            return state.id(for: name) != here
        }
        switch command {
        case .send(let text, let to) where elsewhere(to):
            return "-> \(to): \(text)"
        case .action(let text, let to) where elsewhere(to):
            return "-> \(to): * \(state.nick) \(text)"
        case .uploadFile(let path, let to) where elsewhere(to):
            return "Uploading \(Paths.lastComponent(of: path)) for \(to) (how it goes is in the conversation with \(to))"
        case .sendFile(let path, let to, let passive) where elsewhere(to):
            return "Offering \(Paths.lastComponent(of: path)) to \(to)" + (passive ? " (passive)" : "")
                + " (how it goes is in the conversation with \(to))"
        case .acceptTransfer(let id):
            let waiting = id.flatMap { transfers[$0] } ?? transfers.values.filter { $0.state == .pending }.max { $0.id < $1.id }
            guard let info = waiting, info.direction == .receiving, info.state == .pending, elsewhere(info.peer) else { return nil }
            return "Accepting \(info.offeredName) from \(info.peer) (transfer \(info.id); its progress is in the conversation with \(info.peer))"
        case .irc(let message) where word == "notice" && message.params.count == 2 && elsewhere(message.params[0]):
            return "-> -\(message.params[0])- \(message.params[1])"
        case .irc(let message) where word == "ctcp" && message.params.count == 2:
            let verb = message.params[1].dropFirst().prefix { $0 != " " && $0 != "\u{1}" }
            return "CTCP \(verb) sent to \(message.params[0]); the answer will show here"
        case .irc where word.lowercased() == "quote":
            // A raw line has no echo of its own: say it went.
            return "Sent to the server: " + line.dropFirst(word.count + 1).drop { $0 == " " }
        default:
            return nil
        }
    }
}
