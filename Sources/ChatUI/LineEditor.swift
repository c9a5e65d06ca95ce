/// The input line, edited by grapheme cluster: one Left or Backspace moves over one 中, one 👍🏽
/// or one e + combining accent, never half of one.
public struct LineEditor: Equatable, Sendable {
    public private(set) var characters: [Character] = []
    public private(set) var cursor = 0
    private var killBuffer: [Character] = []
    private(set) var history: [String] = []
    private var historyIndex: Int?
    private var draft: [Character] = []
    private var completion: Completion?
    public var historyLimit = 500

    struct Completion: Equatable, Sendable {
        let start: Int
        let matches: [String]
        var index: Int
        let suffix: String
    }

    public init() {}

    public var text: String { String(characters) }
    public var isEmpty: Bool { characters.isEmpty }

    public mutating func set(_ text: String) {
        characters = Array(text)
        cursor = characters.count
        completion = nil
    }

    public mutating func insert(_ text: String) {
        // Inserting may merge with a neighbour (a combining mark after a letter): rebuild around the cursor.
        let before = String(characters[..<cursor]) + text
        let after = String(characters[cursor...])
        let merged = Array(before + after)
        cursor = Array(before).count
        characters = merged
        cursor = min(cursor, characters.count)
        completion = nil
    }

    public mutating func left() { cursor = max(0, cursor - 1); completion = nil }
    public mutating func right() { cursor = min(characters.count, cursor + 1); completion = nil }
    public mutating func home() { cursor = 0; completion = nil }
    public mutating func end() { cursor = characters.count; completion = nil }

    public mutating func backspace() {
        guard cursor > 0 else { return }
        characters.remove(at: cursor - 1)
        cursor -= 1
        completion = nil
    }

    public mutating func deleteForward() {
        guard cursor < characters.count else { return }
        characters.remove(at: cursor)
        completion = nil
    }

    /// Ctrl-W: the word before the cursor, and the spaces after it.
    public mutating func deleteWordBackward() {
        let start = wordStart(before: cursor)
        killBuffer = Array(characters[start..<cursor])
        characters.removeSubrange(start..<cursor)
        cursor = start
        completion = nil
    }

    /// Alt-b, Ctrl-Left: to the start of the word before the cursor (spaces skipped first).
    public mutating func wordLeft() {
        cursor = wordStart(before: cursor)
        completion = nil
    }

    /// Alt-f, Ctrl-Right: to the end of the word after the cursor (spaces skipped first).
    public mutating func wordRight() {
        cursor = wordEnd(after: cursor)
        completion = nil
    }

    /// Alt-d: the word after the cursor, and the spaces before it (Ctrl-Y puts it back).
    public mutating func deleteWordForward() {
        let end = wordEnd(after: cursor)
        killBuffer = Array(characters[cursor..<end])
        characters.removeSubrange(cursor..<end)
        completion = nil
    }

    /// Where the word before `index` starts (the spaces before `index` skipped first).
    private func wordStart(before index: Int) -> Int {
        var start = index
        while start > 0 && characters[start - 1] == " " { start -= 1 }
        while start > 0 && characters[start - 1] != " " { start -= 1 }
        return start
    }

    /// Where the word after `index` ends (the spaces after `index` skipped first).
    private func wordEnd(after index: Int) -> Int {
        var end = index
        while end < characters.count && characters[end] == " " { end += 1 }
        while end < characters.count && characters[end] != " " { end += 1 }
        return end
    }

    /// Ctrl-U: everything before the cursor.
    public mutating func killToStart() {
        killBuffer = Array(characters[..<cursor])
        characters.removeSubrange(..<cursor)
        cursor = 0
        completion = nil
    }

    /// Ctrl-K: everything from the cursor on.
    public mutating func killToEnd() {
        killBuffer = Array(characters[cursor...])
        characters.removeSubrange(cursor...)
        completion = nil
    }

    /// Ctrl-Y: puts back what Ctrl-W, Ctrl-U or Ctrl-K removed last.
    public mutating func yank() {
        insert(String(killBuffer))
    }

    /// Enter: returns the line and remembers it.
    public mutating func submit() -> String {
        let line = text
        if !line.isEmpty && history.last != line {
            history.append(line)
            if history.count > historyLimit { history.removeFirst(history.count - historyLimit) }
        }
        characters = []
        cursor = 0
        historyIndex = nil
        completion = nil
        return line
    }

    /// Ctrl-P: the previous line from history (the current one is kept as a draft).
    public mutating func historyPrevious() {
        guard !history.isEmpty else { return }
        if historyIndex == nil {
            draft = characters
            historyIndex = history.count - 1
        } else if historyIndex! > 0 {
            historyIndex! -= 1
        } else {
            return
        }
        characters = Array(history[historyIndex!])
        cursor = characters.count
    }

    /// Ctrl-N: the next line from history, then the draft.
    public mutating func historyNext() {
        guard let index = historyIndex else { return }
        if index + 1 < history.count {
            historyIndex = index + 1
            characters = Array(history[index + 1])
        } else {
            historyIndex = nil
            characters = draft
        }
        cursor = characters.count
    }

    /// Tab: completes the word before the cursor from `commands` (when it is the first word and
    /// starts with `/`) or `nicks`; repeated Tabs cycle through the matches.
    /// The word before the cursor.
    public var currentWord: String {
        var start = cursor
        while start > 0 && characters[start - 1] != " " { start -= 1 }
        return String(characters[start..<cursor])
    }

    /// Whether the last Tab completed a word with several choices still to cycle through.
    public var isCompleting: Bool { !(completion?.matches.isEmpty ?? true) }

    /// `emptyWord`: an empty word offers every candidate (a setting's values after `/set NAME `).
    public mutating func complete(nicks: [String], commands: [String], atLineStart: Bool = true, emptyWord: Bool = false) {
        if var current = completion, !current.matches.isEmpty {
            current.index = (current.index + 1) % current.matches.count
            replaceWord(from: current.start, with: current.matches[current.index] + current.suffix)
            completion = current
            return
        }
        var start = cursor
        while start > 0 && characters[start - 1] != " " { start -= 1 }
        let word = String(characters[start..<cursor])
        guard !word.isEmpty || emptyWord else { return }
        let matches: [String]
        let suffix: String
        if start == 0 && word.hasPrefix("/") {
            matches = commands.filter { $0.lowercased().hasPrefix(word.lowercased()) }.sorted()
            suffix = " "
        } else {
            matches = nicks.filter { $0.lowercased().hasPrefix(word.lowercased()) }
                .sorted { $0.lowercased() < $1.lowercased() }
            // A nickname at the start of a line is addressed ("bob: "); a room's name never is.
            let addressed = start == 0 && atLineStart && !(word.hasPrefix("#") || word.hasPrefix("&"))
            suffix = addressed ? ": " : (nicks.allSatisfy { $0.hasSuffix("/") } ? "" : " ")
        }
        guard !matches.isEmpty else { return }
        replaceWord(from: start, with: matches[0] + suffix)
        completion = Completion(start: start, matches: matches, index: 0, suffix: suffix)
    }

    private mutating func replaceWord(from start: Int, with replacement: String) {
        characters.replaceSubrange(start..<cursor, with: Array(replacement))
        cursor = start + replacement.count
    }

    /// The part of the line to show in `width` columns, scrolled so the cursor is visible,
    /// and the cursor's column within it.
    public func visible(width: Int) -> (text: String, cursorColumn: Int) {
        let shown = window(width: width)
        return (shown.text, shown.cursorColumn)
    }

    /// A click in the input row: the cursor to the character at `column` of the window shown
    /// at `width` (the end when past the text).
    public mutating func moveCursor(toColumn column: Int, width: Int) {
        var start = 0
        var columnsBeforeCursor = characters[..<cursor].reduce(0) { $0 + DisplayWidth.of($1) }
        while columnsBeforeCursor > width - 1 && start < cursor {
            columnsBeforeCursor -= DisplayWidth.of(characters[start])
            start += 1
        }
        var used = 0
        var index = start
        while index < characters.count {
            let w = DisplayWidth.of(characters[index])
            if used + w > column { break }
            used += w
            index += 1
        }
        cursor = index
        completion = nil
    }

    /// The part of the line that fits in `width` columns around the cursor, and whether text is
    /// hidden before or after it (the input row marks both).
    public func window(width: Int) -> (text: String, cursorColumn: Int, hiddenBefore: Bool, hiddenAfter: Bool) {
        guard width > 1 else { return ("", 0, false, false) }
        var start = 0
        var columnsBeforeCursor = characters[..<cursor].reduce(0) { $0 + DisplayWidth.of($1) }
        // Keep the cursor inside the window, with a column to spare at the right edge.
        while columnsBeforeCursor > width - 1 && start < cursor {
            columnsBeforeCursor -= DisplayWidth.of(characters[start])
            start += 1
        }
        var text = ""
        var used = 0
        var end = start
        for character in characters[start...] {
            let w = DisplayWidth.of(character)
            if used + w > width { break }
            text.append(character)
            used += w
            end += 1
        }
        return (text, columnsBeforeCursor, start > 0, end < characters.count)
    }
}
