import ChatTransport
import ChatClientKit
import IRCWire

// MARK: Typing notifications

extension ChatModel {
    /// `+typing` for what a key did to the input: `active` at most every 3 seconds while a
    /// message is being written, `done` when the input is emptied or sent or the recipient
    /// changes; nothing for commands.
    mutating func typingAfter(_ key: Key, before: String) -> [UICommand] {
        let text = editor.text
        // Off (/set typing off): what was said is ended with `done`, and nothing more is sent.
        var commands: [UICommand] = []
        let writing = settings.isOn("typing") && !text.isEmpty && !text.hasPrefix("/") && viewedID != .server
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
