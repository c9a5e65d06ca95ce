import ChatTransport
import ChatClientKit
import IRCWire

extension ChatModel {
    /// Applies one event and returns what the shell should do. The only place keys mean anything.
    public mutating func update(_ event: UIEvent) -> [UICommand] {
        focus = selectedNetwork
        defer { focus = selectedNetwork }
        switch event {
        case .resize(let width, let height):
            self.width = width
            self.height = height
            return [.redraw]
        case .tick(let now):
            self.now = now
            // Typing, then nothing for 5 seconds: paused (the spec's advice).
            if let sent = typingSent, sent.state == "active", now - lastEditAt >= 5 {
                typingSent = (sent.target, "paused", now)
                return [.typing("paused", to: sent.target)]
            }
            // The selection has rested: what it shows is read.
            if now - selectedAt >= 1, let viewed = viewedConversation, viewed.unread > 0 {
                return [.markRead(viewed.id)]
            }
            return []
        case .client(let clientEvent):
            return inNetwork(0) { $0.clientEventArrived(clientEvent) }
        case .fromNetwork(let index, let clientEvent):
            guard networks.indices.contains(index) else { return [] }
            return inNetwork(index) { $0.clientEventArrived(clientEvent) }
        case .filesListed(let word, let entries):
            // Applied only if the path is still the word being typed (keys may have come first).
            guard editor.text.hasPrefix("/send ") || editor.text.hasPrefix("/upload "), editor.currentWord == word else { return [] }
            editor.complete(nicks: PathCompletion.candidates(for: word, entries: entries), commands: [], atLineStart: false)
            return []
        case .key(let key):
            if let pending = pendingPaste { return answerPaste(key, lines: pending) }
            if confirmingQuit { return answerQuit(key) }
            if let trust = pendingTrust { return answerTrust(key, fingerprint: trust.fingerprint) }
            if roomPicker != nil { return pickRoom(key) }
            if searchPicker != nil { return pickHit(key) }
            if messageCursor != nil || key == .messageUp { return cursorKey(key) }
            let before = editor.text
            let commands = press(key)
            return commands + typingAfter(key, before: before)
        }
    }

    /// `update`, and when the conversation on screen changed with it, `.looking` for that
    /// network's client (news for the user, an invitation, goes where they are looking).
    public mutating func handle(_ event: UIEvent) -> [UICommand] {
        let before = (selectedNetwork, viewedID)
        var commands = update(event)
        if (selectedNetwork, viewedID) != before { commands.append(.on(network: selectedNetwork, .looking(viewedID))) }
        return commands
    }

    /// A client event: first applied to the screen's own view of the conversations, then
    /// what it means for the screen (a joined room takes the view, a renamed person is followed).
    mutating func clientEventArrived(_ event: ClientEvent) -> [UICommand] {
        // Scrolled up in the conversation a line arrives in: what was the last line, to tell a
        // line added below the view from one refused or placed above it.
        var lastBefore: ChatLine?
        if case .line(let id, _) = event, (scroll[id] ?? 0) > 0 { lastBefore = state[id]?.lines.last }
        state.apply(event)
        // Only the network in view has a pane: lines elsewhere are not read as they arrive.
        let inView = focus == selectedNetwork
        if inView, case .line(let id, _) = event, id == revealing?.id { reveal() }
        switch event {
        case .status(let status):
            self.status = status
            if case .registered = status { everRegistered = true }
            if case .reconnecting(let seconds, _) = status { reconnectAt = now + seconds } else { reconnectAt = nil }
            return statusNote(status)
        case .lag(let seconds):
            lag = seconds
            return []
        case .searchResults(let query, let hits, let failure):
            if let failure {
                searchWaiting = nil
                return [.note("Could not search your log for \(query): \(failure)", conversation: viewedID, isError: true)]
            }
            if searchWaiting != nil { return gatherSearch(query: query, hits: hits) }
            guard !hits.isEmpty else {
                return [.note("Nothing in your log has \(query)", conversation: viewedID, isError: false)]
            }
            searchPicker = (query, hits, 0)
            searchHitNetworks = []
            return []
        case .roomList:
            if awaitingRoomList {
                awaitingRoomList = false
                if inView { roomPicker = 0 }
            }
            return []
        case .unknownCertificate(let server, let fingerprint, let problem):
            pendingTrust = (server, fingerprint)
            trustNetwork = focus
            return [.note("The certificate of \(server) is not trusted (\(problem)). Its SHA-256 is \(fingerprint): "
                          + "if the server's owner gives you the same, answer y to trust it from now on", conversation: .server, isError: true)]
        case .notSent(let target, let text, let reason):
            // Said where the line was meant to go, with its text, so it can be sent again.
            let place = state[state.id(for: target)] != nil ? state.id(for: target) : .server
            return [.note("Not sent to \(target): \"\(text)\" (\(reason))", conversation: place, isError: true)]
        case .renamed(let old, let new):
            // The person you are talking to changed name: stay with them, wherever the new
            // name sorts (or even if it reads like a room's name).
            switch selection {
            case .conversation(.direct(let key)) where key == state.key(for: old):
                if state[.direct(state.key(for: new))] != nil { selection = .conversation(.direct(state.key(for: new))) }
            case .user(let nick, let room) where state.key(for: nick) == state.key(for: old):
                selection = .user(new, room: room)
            default:
                break
            }
            reconcileSelection()
            return []
        case .roomRenamed(let old, let new, let name):
            // A renamed room keeps its place: the view, the room commands act on, the scroll.
            if selection == .conversation(old) { selection = .conversation(new) }
            if case .user(let nick, let room) = selection, room == old { selection = .user(nick, room: new) }
            if let room = currentRoom, state.id(for: room) == old || state.key(for: room) == old.key { currentRoom = name }
            if let rows = scroll.removeValue(forKey: old) { scroll[new] = rows }
            reconcileSelection()
            return []
        case .joined(let id, let name, let again):
            reconcileSelection()
            // Joining a room takes you there, as irssi and WeeChat do (a rejoin after an outage does not).
            guard !again else { return [] }
            currentRoom = name
            selection = .conversation(id)
            if isHost && !hostHintShownInRoom {
                hostHintShownInRoom = true
                return hostHintInPane.map { .note($0, conversation: id, isError: false) }
            }
            return []
        case .line(let id, let line):
            // Scrolled up, the view stays on the lines being read (as irssi and WeeChat keep a
            // scrolled-back window still): a line added below moves the bottom, not the view.
            if let rows = scroll[id], rows > 0, let conversation = state[id], let last = conversation.lines.last, last == line, lastBefore != last {
                scroll[id] = rows + lineRows(line, in: conversation, width: Layout(width: width, height: height).paneWidth).count
            }
            var commands: [UICommand] = []
            if inView && id == viewedID {
                // In view: read as it arrives. Asked once per round trip (when the first unread
                // line appears), not once per line: a flood must not queue a command per line.
                if state[id]?.unread == 1 { commands.append(.markRead(id)) }
                if bellEnabled && line.rings { commands.append(.bell) }
            } else if bellEnabled && !line.isOwn && (line.isHighlight || id.kind == .direct)
                        && (line.kind == .message || line.kind == .action || line.kind == .notice || Self.isOffer(line)) {
                commands.append(.bell)
            }
            return commands
        case .opened(let id, _) where id == pendingShow:
            pendingShow = nil
            selection = .conversation(id)
            reconcileSelection()
            return []
        case .closed(let id):
            // Closed by you or by the client's limit on direct conversations: nothing kept about it.
            scroll[id] = nil
            olderAsked[id] = nil
            reconcileSelection()
            return []
        case .left, .members, .memberJoined, .memberLeft, .memberChanged, .connectionLost, .opened, .nickChanged:
            reconcileSelection()
            return []
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
        revealing = nil
        switch key {
        // With text in the input line, Up and Down walk your earlier lines (as in irssi and
        // WeeChat), so a draft never changes recipient; with an empty line they pick the recipient.
        case .up:
            if !editor.isEmpty { editor.historyPrevious(); return [] }
            return moveSelection(by: -1)
        case .down:
            if !editor.isEmpty { editor.historyNext(); return [] }
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
            } else {
                editor.complete(nicks: completionNames, commands: SlashCommands.completions)
            }
        case .escape: replyingTo = nil
        case .messageUp, .messageDown: break
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

    /// Scrolls the viewed conversation so the search hit being opened is in the middle of the pane.
    mutating func reveal() {
        guard let target = revealing, let conversation = state[target.id] else { return }
        let layout = Layout(width: width, height: height)
        var below = 0
        for line in conversation.lines.reversed() {
            let (spans, indent) = format(line, width: layout.paneWidth)
            let rows = Wrapper.wrap(spans, width: layout.paneWidth, indent: indent).count
            if line.time == target.time && line.text == target.text {
                scroll[target.id] = max(0, below + rows - (layout.paneHeight + 1) / 2)
                return
            }
            below += rows
        }
    }

    /// Scrolls; true when it stopped at the oldest line (it wanted to go further).
    @discardableResult
    mutating func scrollPane(by rows: Int) -> Bool {
        let id = viewedID
        var wanted = max(0, (scroll[id] ?? 0) + rows)
        var atTop = false
        // Never past the oldest line: at most as many rows up as there are above the pane.
        let layout = Layout(width: width, height: height)
        if wanted > 0, let conversation = viewedConversation {
            let height = max(0, layout.paneHeight - 1)
            // One row more than would fill the pane: exactly as many as needed is not the top.
            let available = paneRows(conversation, width: layout.paneWidth, needed: wanted + height + 1).count
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

    // MARK: Sending

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
        CommandContext(book: state, here: viewedID, room: viewedConversation?.kind == .room ? viewedConversation?.name : currentRoom,
                       target: target, registered: everRegistered, extraHelp: Self.keyHelp + hostHintInPane)
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

    /// Keys while the /search picker is open: Up/Down move, Enter opens the line in its
    /// conversation with the lines around it, Esc closes.
    mutating func pickHit(_ key: Key) -> [UICommand] {
        guard var picker = searchPicker else { return [] }
        let last = max(0, picker.hits.count - 1)
        switch key {
        case .up: picker.selected = max(0, picker.selected - 1)
        case .down: picker.selected = min(last, picker.selected + 1)
        case .pageUp: picker.selected = max(0, picker.selected - max(1, paneHeight - 2))
        case .pageDown: picker.selected = min(last, picker.selected + max(1, paneHeight - 2))
        case .home: picker.selected = 0
        case .end: picker.selected = last
        case .escape, .control("c"):
            searchPicker = nil
            return []
        case .enter:
            searchPicker = nil
            let hit = picker.hits[picker.selected]
            // Opened in its own network (the shell sends `.showAround` to the network shown).
            if searchHitNetworks.indices.contains(picker.selected) { selectNetwork(searchHitNetworks[picker.selected]) }
            selection = .conversation(hit.conversation)
            if hit.conversation.kind == .room { currentRoom = hit.name }
            revealing = (hit.conversation, hit.line.time, hit.line.text)
            reveal()
            return [.showAround(hit)]
        default: break
        }
        searchPicker = picker
        return []
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
                selection = .conversation(room.id)
                currentRoom = room.name
                return []
            }
            return [.irc(IRCMessage("JOIN", name))]
        default: break
        }
        return []
    }

    mutating func answerTrust(_ key: Key, fingerprint: String) -> [UICommand] {
        switch key {
        case .character("y"), .character("Y"):
            pendingTrust = nil
            return [forTrustNetwork(.trustCertificate(fingerprint))]
        case .character("n"), .character("N"), .escape, .enter:
            pendingTrust = nil
            return [forTrustNetwork(.note("Not trusted: not connected (/reconnect asks again)", conversation: .server, isError: false))]
        case .control("c"):
            pendingTrust = nil
            return [.quit(reason: "Leaving")]
        default:
            return []
        }
    }

    /// The answer about a certificate goes to the network whose client asked.
    func forTrustNetwork(_ command: UICommand) -> UICommand {
        trustNetwork == selectedNetwork ? command : .on(network: trustNetwork, command)
    }

    mutating func answerQuit(_ key: Key) -> [UICommand] {
        switch key {
        case .character("y"), .character("Y"), .control("c"):
            confirmingQuit = false
            return [.quit(reason: "The host closed the room")]
        case .character("n"), .character("N"), .escape, .enter:
            confirmingQuit = false
            return [.note("The room stays open", conversation: viewedID, isError: false)]
        default:
            return []
        }
    }

    /// The keys, for /help.
    static let keyHelp = [
        "Keys: Up/Down (empty input) pick the room or person Enter sends to; with text they recall earlier lines",
        "      Ctrl-P/Ctrl-N earlier and later lines; PgUp/PgDn scroll; Home/End the ends of the list or of the input",
        "      Tab completes names and commands; Ctrl-A/E/B/F/D/H/W/U/K/Y edit; Ctrl-L redraws; Ctrl-C quits",
        "      " + cursorHelp,
        "Sidebar: a number is unread lines, ! means one names you or is a direct message; (new) means Enter starts a conversation",
    ]

    mutating func answerPaste(_ key: Key, lines: [String]) -> [UICommand] {
        switch key {
        case .character("y"), .character("Y"):
            pendingPaste = nil
            // One message of several lines: the client sends it as one where the server takes it.
            return sendText(lines.joined(separator: "\n"), to: target, isAction: false)
        case .character("n"), .character("N"), .escape, .control("c"), .enter:
            pendingPaste = nil
            return [.note("Paste of \(lines.count) lines cancelled", conversation: viewedID, isError: false)]
        default:
            return []
        }
    }

    /// A `/command` typed on the chat screen: the shared interpreter decides, and what it says
    /// about the view (go to a conversation, wait for /list) is done here.
    mutating func runCommand(_ line: String) -> [UICommand] {
        var out: [UICommand] = []
        for command in CommandInterpreter.run(line, commandContext) {
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
        case .irc where word.lowercased() == "quote":
            // A raw line has no echo of its own: say it went.
            return "Sent to the server: " + line.dropFirst(word.count + 1).drop { $0 == " " }
        default:
            return nil
        }
    }
}

extension String {
    public func expandingTilde() -> String {
        guard hasPrefix("~/") || self == "~" else { return self }
        return (Environment["HOME"] ?? "") + dropFirst()
    }
}

/// Tab completion of file paths for /send, pure: the shell lists the directory
/// (`directory(of:)`, the names `matching` the prefix) and `candidates` makes the completions.
public enum PathCompletion {
    /// The directory to list for the path being typed (`~/` already expanded by the shell).
    public static func directory(of expandedWord: String) -> String {
        let directory = expandedWord.hasSuffix("/") ? expandedWord : Paths.directory(of: expandedWord)
        return directory.isEmpty ? "." : directory
    }

    /// The start of the names that complete `word`: its last part ("" after a slash).
    public static func prefix(of word: String) -> String {
        word.hasSuffix("/") ? "" : Paths.lastComponent(of: word)
    }

    /// The names that complete `prefix`; hidden files only when the prefix starts with a dot.
    public static func matching(_ names: [String], prefix: String) -> [String] {
        names.filter { $0.hasPrefix(prefix) && (!$0.hasPrefix(".") || prefix.hasPrefix(".")) }.sorted()
    }

    /// The words `word` may become, given its directory's entries: directories end in "/".
    public static func candidates(for word: String, entries: [FileEntry]) -> [String] {
        let prefix = prefix(of: word)
        let base = word.hasSuffix("/") ? word : String(word.dropLast(prefix.count))
        let names = Set(matching(entries.map(\.name), prefix: prefix))
        return entries.filter { names.contains($0.name) }.sorted { $0.name < $1.name }
            .map { base + $0.name + ($0.isDirectory ? "/" : "") }
    }
}

extension StringProtocol {
    func trimmingCharacters(_ character: Character) -> String {
        String(drop(while: { $0 == character }).reversed().drop(while: { $0 == character }).reversed())
    }
}

// MARK: The message cursor

extension ChatModel {
    static let cursorHelp = "Alt-Up (or Ctrl-Up) highlights a message: Up/Down move, r replies, e or + reacts, d deletes, y copies, p goes to the message a reply answers, Esc leaves"

    /// The messages the cursor can stop on: those with a msgid, not deleted.
    func cursorStops(_ conversation: Conversation) -> [Int] {
        conversation.lines.indices.filter { index in
            let line = conversation.lines[index]
            return line.msgid != nil && line.deletedBy == nil && (line.kind == .message || line.kind == .action || line.kind == .notice)
        }
    }

    /// A key while the message cursor is on (or Alt-Up to start it).
    mutating func cursorKey(_ key: Key) -> [UICommand] {
        guard let conversation = viewedConversation else {
            messageCursor = nil
            return []
        }
        let stops = cursorStops(conversation)
        // The highlighted message's index among the lines.
        let current = messageCursor.flatMap { msgid in stops.last { conversation.lines[$0].msgid == msgid } }
        if choosingReaction {
            // One reaction, then the cursor is done: what is typed next is text.
            choosingReaction = false
            messageCursor = nil
            scroll[conversation.id] = 0
            if case .character(let digit) = key, let number = digit.wholeNumberValue, number >= 1, number <= Shortcodes.common.count,
               let index = current, let msgid = conversation.lines[index].msgid {
                return CommandInterpreter.messageAction("react", on: msgid, in: conversation.name, text: Shortcodes.common[number - 1].emoji, commandContext)
            }
            return []
        }
        func move(to position: Int) {
            messageCursor = conversation.lines[stops[position]].msgid
            keepCursorInView(conversation, index: stops[position])
        }
        switch key {
        case .messageUp, .up:
            guard !stops.isEmpty else {
                messageCursor = nil
                return [.note("No message here to pick (messages need the server's msgid)", conversation: conversation.id, isError: true)]
            }
            let position = current.flatMap { stops.firstIndex(of: $0) }.map { max(0, $0 - 1) } ?? stops.count - 1
            move(to: position)
        case .messageDown, .down:
            guard let position = current.flatMap({ stops.firstIndex(of: $0) }) else { messageCursor = nil; return [] }
            if position + 1 < stops.count { move(to: position + 1) } else { messageCursor = nil; scroll[conversation.id] = 0 }
        case .escape:
            messageCursor = nil
            scroll[conversation.id] = 0
        case .character(let letter):
            guard let index = current, let msgid = conversation.lines[index].msgid else { messageCursor = nil; return [] }
            let line = conversation.lines[index]
            switch letter {
            case "r":
                let first = line.text.split(separator: "\n").first.map(String.init) ?? ""
                replyingTo = (msgid, line.sender ?? "", Ellipsis.fit(PlainText.visible(first), width: 30))
                messageCursor = nil
                scroll[conversation.id] = 0
            case "e", "+":
                choosingReaction = true
            case "d":
                messageCursor = nil
                return CommandInterpreter.messageAction("delete", on: msgid, in: conversation.name, text: "", commandContext)
            case "p":
                // A reply: to the message it answers, if it is here.
                if let parent = line.replyTo, let index = conversation.index(ofMessage: parent), stops.contains(index) {
                    messageCursor = parent
                    keepCursorInView(conversation, index: index)
                }
            case "y":
                messageCursor = nil
                return [.copy(line.text), .note("Copied to the terminal's clipboard (where it allows OSC 52)", conversation: conversation.id, isError: false)]
            default:
                // Any other letter is text: the cursor goes and the input takes it.
                messageCursor = nil
                let before = editor.text
                return press(key) + typingAfter(key, before: before)
            }
        default:
            // Anything else leaves the cursor and does what it does.
            messageCursor = nil
            let before = editor.text
            return press(key) + typingAfter(key, before: before)
        }
        return []
    }

    /// Scrolls so the highlighted line is on screen (at the bottom when it was below, the top when above).
    mutating func keepCursorInView(_ conversation: Conversation, index: Int) {
        let layout = Layout(width: width, height: height)
        var below = 0
        for line in conversation.lines[(index + 1)...] { below += lineRows(line, in: conversation, width: layout.paneWidth).count }
        let own = lineRows(conversation.lines[index], in: conversation, width: layout.paneWidth).count
        let height = max(1, layout.paneHeight - 1)
        var skip = scroll[conversation.id] ?? 0
        if below < skip { skip = below }
        if below + own > skip + height { skip = below + own - height }
        scroll[conversation.id] = max(0, skip)
    }
}

// MARK: Typing notifications

extension ChatModel {
    /// `+typing` for what a key did to the input: `active` at most every 3 seconds while a
    /// message is being written, `done` when the input is emptied or sent or the recipient
    /// changes; nothing for commands.
    mutating func typingAfter(_ key: Key, before: String) -> [UICommand] {
        let text = editor.text
        var commands: [UICommand] = []
        let writing = !text.isEmpty && !text.hasPrefix("/") && viewedID != .server
        let to = target
        if let sent = typingSent, sent.state != "done", !writing || sent.target != to || key == .enter {
            // Enter sent the message: that says it is done, for the server and the others.
            if key != .enter || sent.target != to { commands.append(.typing("done", to: sent.target)) }
            typingSent = nil
        }
        guard writing, text != before, !to.isEmpty else { return commands }
        lastEditAt = now
        if let sent = typingSent, sent.target == to, sent.state == "active", now - sent.at < 3 { return commands }
        typingSent = (to, "active", now)
        return commands + [.typing("active", to: to)]
    }
}

