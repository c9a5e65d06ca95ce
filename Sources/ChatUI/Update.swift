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
            defer { settleWindowOrder(after: clientEvent, in: 0) }
            return inNetwork(0) { $0.clientEventArrived(clientEvent) }
        case .fromNetwork(let index, let clientEvent):
            guard networks.indices.contains(index) else { return [] }
            // A conversation seen for the first time takes the next number.
            defer { settleWindowOrder(after: clientEvent, in: index) }
            return inNetwork(index) { $0.clientEventArrived(clientEvent) }
        case .filesListed(let word, let entries):
            // Applied only if the path is still the word being typed (keys may have come first).
            guard editor.text.hasPrefix("/send ") || editor.text.hasPrefix("/upload "), editor.currentWord == word else { return [] }
            editor.complete(nicks: PathCompletion.candidates(for: word, entries: entries), commands: [], atLineStart: false)
            return []
        case .settingsLoaded(let result):
            return settingsLoaded(result)
        case .key(.focus(let focused)):
            terminalFocused = focused
            return []
        case .key(.mouse(let event)):
            // A question waiting for y or n keeps the screen as it is.
            if pendingPaste != nil || confirmingQuit || pendingTrust != nil || confirmingDelete != nil { return [] }
            return mouse(event)
        case .key(let key):
            // A /join typed, or a room picked from /list: the view goes there when it is joined.
            let commands = keyPressed(key)
            noteJoinsAsked(commands)
            return commands
        }
    }

    mutating func keyPressed(_ key: Key) -> [UICommand] {
        if let pending = pendingPaste { return answerPaste(key, lines: pending) }
        if confirmingQuit { return answerQuit(key) }
        if let deleting = confirmingDelete { return answerDelete(key, deleting) }
        if let trust = pendingTrust { return answerTrust(key, fingerprint: trust.fingerprint) }
        if roomPicker != nil { return pickRoom(key) }
        if searchPicker != nil { return pickHit(key) }
        if messageCursor != nil || key == .messageUp { return cursorKey(key) }
        let before = editor.text
        return press(key) + typingAfter(key, before: before)
    }

    /// The rooms a key's commands ask to join: the view goes to them when they are joined.
    mutating func noteJoinsAsked(_ commands: [UICommand]) {
        for command in commands {
            var message: IRCMessage?
            if case .irc(let m) = command { message = m }
            if case .on(network: _, .irc(let m)) = command { message = m }
            guard let message, message.command == "JOIN", let rooms = message.params.first else { continue }
            askToJoin(rooms.split(separator: ",").map(String.init))
        }
    }

    /// Rooms the user asked for (a /join, a picker, `--join` at start): each takes the view when joined.
    public mutating func askToJoin(_ rooms: [String]) {
        for room in rooms {
            if joinsAsked.count >= 64 { joinsAsked.removeAll() }
            joinsAsked.insert(room.lowercased())
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
        case .searchResults(let query, var hits, let failure):
            // /lastlog: only this conversation's lines.
            var query = query
            if let only = lastlogIn, failure == nil {
                lastlogIn = nil
                // The words as one phrase, as irssi's /lastlog matches them (the log finds lines with
                // each word); one word may also be who said the line (irssi matches `<bob>` too).
                let phrase = query.lowercased()
                let oneWord = !phrase.contains(" ")
                hits = hits.filter { $0.conversation == only.id && ($0.network == nil || $0.network == networks[focus].key)
                    && ($0.line.text.lowercased().contains(phrase) || (oneWord && $0.line.sender?.lowercased() == phrase)) }
                query += " in " + only.name
            }
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
            // Joining a room you asked for takes you there, as irssi and WeeChat do; a rejoin after
            // an outage does not, nor do the rooms joined at start (but the first, from the server
            // window) or by another device of your account.
            guard !again else { return [] }
            guard joinsAsked.remove(name.lowercased()) != nil || selection == .conversation(.server) else { return [] }
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
            // (The book may have marked the line quiet for the smart filter: compared by what was said.)
            if let rows = scroll[id], rows > 0, let conversation = state[id], let last = conversation.lines.last,
               last.time == line.time && last.text == line.text && last.sender == line.sender, lastBefore != last {
                scroll[id] = rows + lineRows(line, in: conversation, width: layout.paneWidth).count
            }
            var commands: [UICommand] = notification(for: line, in: id, seen: inView && id == viewedID && terminalFocused)
            if inView && id == viewedID {
                // In view: read as it arrives. Asked once per round trip (when the first unread
                // line appears), not once per line: a flood must not queue a command per line.
                if state[id]?.unread == 1 { commands.append(.markRead(id)) }
                if bellEnabled && line.rings { commands.append(.bell) }
            } else if bellEnabled && !line.isOwn && !line.isOldNews && (line.isHighlight || id.kind == .direct)
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

    /// A line for you (a direct message, a mention, a highlight; never your own or a join) that
    /// you cannot see now (another conversation, or the terminal not focused): a notification,
    /// or the bell with notify = bell. Never for old news (the local log restored at start, the
    /// lines shown on joining); lines missed while away (a gap filled) are news.
    func notification(for line: ChatLine, in id: ConversationID, seen: Bool) -> [UICommand] {
        guard !seen, !line.isOwn, !line.isOldNews, line.isHighlight || id.kind == .direct,
              line.kind == .message || line.kind == .action || line.kind == .notice else { return [] }
        let sender = PlainText.visible(line.sender ?? "")
        let place = id.kind == .direct ? sender : sender + " in " + PlainText.visible(state[id]?.name ?? id.key)
        let first = line.text.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let body = PlainText.visible(line.kind == .action ? "* \(sender) \(first)" : first)
        switch settings["notify"] {
        case "osc", "command": return [.notify(title: (hasSeveralNetworks ? "[\(networks[focus].name)] " : "") + place, body: body)]
        case "bell": return bellEnabled ? [] : [.bell]
        default: return []
        }
    }

    /// A file offer waiting for /accept (it rings and counts as unread like a message).
    static func isOffer(_ line: ChatLine) -> Bool {
        if case .transfer = line.kind { return line.isHighlight }
        return false
    }
}

extension String {
    public func expandingTilde() -> String {
        guard hasPrefix("~/") || self == "~" else { return self }
        return (Environment["HOME"] ?? "") + dropFirst()
    }
}

extension StringProtocol {
    func trimmingCharacters(_ character: Character) -> String {
        String(drop(while: { $0 == character }).reversed().drop(while: { $0 == character }).reversed())
    }
}
