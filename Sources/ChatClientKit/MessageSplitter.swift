import IRCWire

/// Splits text so every PRIVMSG the server relays stays within 512 bytes.
public enum MessageSplitter {
    /// The server prepends `:nick!user@host `; when we do not know our user and host yet,
    /// assume the longest usual ones (10 and 63 bytes).
    public static func maxTextBytes(command: String = "PRIVMSG", target: String, source: String?) -> Int {
        let sourceBytes = source.map { $0.utf8.count } ?? 30 + 1 + 10 + 1 + 63
        // ":" source " " command " " target " :" text CR LF
        return IRCLimits.lineBytes - 2 - (1 + sourceBytes + 1) - command.utf8.count - 1 - target.utf8.count - 2
    }

    /// Pieces of `text` of at most `maxBytes` bytes each, cut between characters (grapheme
    /// clusters), preferring the last space when there is one in the second half of a piece.
    public static func split(_ text: String, maxBytes: Int) -> [String] {
        let limit = max(maxBytes, 4)
        if text.utf8.count <= limit { return [text] }
        var pieces: [String] = []
        var current = ""
        var currentBytes = 0
        var lastSpace: String.Index?
        for character in text {
            let size = character.utf8.count
            if currentBytes + size > limit && !current.isEmpty {
                if let space = lastSpace, current.utf8.distance(from: current.startIndex, to: space) > limit / 2 {
                    let head = String(current[..<space])
                    let tail = String(current[current.index(after: space)...])
                    pieces.append(head)
                    current = tail
                } else {
                    pieces.append(current)
                    current = ""
                }
                currentBytes = current.utf8.count
                lastSpace = current.lastIndex(of: " ")
            }
            if character == " " { lastSpace = current.endIndex }
            current.append(character)
            currentBytes += size
        }
        if !current.isEmpty { pieces.append(current) }
        return pieces
    }
}
