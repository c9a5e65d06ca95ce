import ChatTransport
import ChatClientKit
import IRCWire

// Prompts and pickers: while one is open, it has the keys (a paste's y/n, a certificate's,
// the host's quit, the /list and /search pickers).
extension ChatModel {
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

    /// "Delete bob's message "…"? y/n": y deletes, anything else keeps it.
    mutating func answerDelete(_ key: Key, _ deleting: (msgid: String, target: String, what: String)) -> [UICommand] {
        confirmingDelete = nil
        switch key {
        case .character("y"), .character("Y"):
            return CommandInterpreter.messageAction("delete", on: deleting.msgid, in: deleting.target, text: "", commandContext)
        default:
            return [.note("Not deleted", conversation: viewedID, isError: false)]
        }
    }

    /// Quitting now closes the host's room for others in it.
    var closesRoom: Bool { isHost && othersOnline > 0 }

    mutating func answerQuit(_ key: Key) -> [UICommand] {
        switch key {
        case .character("y"), .character("Y"), .control("c"):
            confirmingQuit = false
            defer { quitReason = nil }
            return [.quit(reason: quitReason ?? (closesRoom ? "The host closed the room" : "Leaving"))]
        case .character("n"), .character("N"), .escape, .enter:
            confirmingQuit = false
            quitReason = nil
            return closesRoom ? [.note("The room stays open", conversation: viewedID, isError: false)] : []
        default:
            return []
        }
    }

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
}
