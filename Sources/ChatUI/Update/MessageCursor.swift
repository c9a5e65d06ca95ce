import ChatTransport
import ChatClientKit
import IRCWire

// MARK: The message cursor

extension ChatModel {
    static let cursorHelp = "Alt-Up (or Ctrl-Up) highlights a message: Up/Down move, r replies, e or + reacts, d deletes (after y to \"Delete …? y/n\"), y copies, p goes to the message a reply answers, Esc leaves"

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
                // Only where it can work: your own message, or anyone's in a room you run.
                guard mayDelete(line, in: conversation) else {
                    messageCursor = nil
                    return [.note("Only your own messages can be deleted here (a room's operators may delete others')", conversation: conversation.id, isError: true)]
                }
                // Asked first: a deletion cannot be taken back.
                messageCursor = nil
                let first = line.text.split(separator: "\n").first.map(String.init) ?? ""
                let whose = line.isOwn ? "your message" : "\(PlainText.visible(line.sender ?? "someone"))'s message"
                confirmingDelete = (msgid, conversation.name, whose + " \"" + Ellipsis.fit(PlainText.visible(first), width: 30) + "\"")
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
        let layout = self.layout
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

extension ChatModel {
    /// Whether `d` may delete a message: your own, or any in a room where you are an operator
    /// (`@`, or the ranks above it, or a half-operator `%`), as servers allow REDACT.
    func mayDelete(_ line: ChatLine, in conversation: Conversation) -> Bool {
        if line.isOwn { return true }
        guard conversation.kind == .room, let me = conversation.members[state.key(for: state.nick)] else { return false }
        return me.prefixes.contains { "~&@%".contains($0) }
    }
}
