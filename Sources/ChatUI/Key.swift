/// A key press (or a paste) as the model understands it, whatever terminal produced it.
public enum Key: Equatable, Sendable {
    case character(Character)
    /// Ctrl with a letter: `.control("w")` for Ctrl-W.
    case control(Character)
    case enter, tab, backspace, delete, escape
    case up, down, left, right, home, end, pageUp, pageDown
    /// Alt-Up or Ctrl-Up, Alt-Down or Ctrl-Down: the message cursor.
    case messageUp, messageDown
    /// Alt with a character (ESC then the character): Alt-1…Alt-0, Alt-a.
    case alt(Character)
    /// Alt-Left, Alt-Right: the previous and next conversation; Alt-Home, Alt-End: the top of
    /// what is loaded and back to the bottom.
    case altLeft, altRight, altHome, altEnd
    /// Ctrl-Left, Ctrl-Right: the cursor a word back and forward (as Alt-b and Alt-f).
    case wordLeft, wordRight
    /// A mouse event (SGR reporting, `CSI ? 1006 h`), at 0-based cell `x`, `y`.
    case mouse(MouseEvent)
    /// The terminal gained or lost the focus (focus reporting, `CSI ? 1004 h`: `ESC [ I`, `ESC [ O`).
    case focus(Bool)
    /// Text that arrived as one bracketed paste.
    case paste(String)
}

public struct MouseEvent: Equatable, Sendable {
    public enum Button: Equatable, Sendable { case left, middle, right, wheelUp, wheelDown, other }
    public var button: Button
    public var x: Int
    public var y: Int
    /// A press (`M`), not a release (`m`).
    public var pressed: Bool
    public init(button: Button, x: Int, y: Int, pressed: Bool) {
        self.button = button
        self.x = x
        self.y = y
        self.pressed = pressed
    }

    /// `[<B;X;YM` or `…m` (the sequence after ESC), with 1-based X and Y.
    static func sgr(_ sequence: String) -> MouseEvent? {
        guard sequence.hasPrefix("[<"), let final = sequence.last, final == "M" || final == "m" else { return nil }
        let numbers = sequence.dropFirst(2).dropLast().split(separator: ";").compactMap { Int($0) }
        guard numbers.count == 3, numbers[1] >= 1, numbers[2] >= 1 else { return nil }
        let code = numbers[0]
        // Motion (32) is not asked for; the modifier bits (4, 8, 16) do not change the button.
        guard code & 32 == 0 else { return nil }
        let button: Button
        if code & 64 != 0 {
            button = code & 1 == 0 ? .wheelUp : .wheelDown
        } else {
            button = [.left, .middle, .right, .other][code & 3]
        }
        return MouseEvent(button: button, x: numbers[1] - 1, y: numbers[2] - 1, pressed: final == "M")
    }
}

/// Turns the raw characters a terminal sends into keys, recognising bracketed paste
/// (`ESC [200~ … ESC [201~`) and dropping escape sequences nobody asked for.
public struct KeyDecoder: Sendable {
    private enum Mode: Sendable { case normal, escape(String), paste(String), pasteEscape(String, String) }
    private var mode = Mode.normal

    public init() {}

    /// One character from the terminal (control characters included, as they arrive).
    public mutating func feed(_ scalar: Unicode.Scalar) -> [Key] {
        switch mode {
        case .normal:
            return normal(scalar)
        case .escape(let sequence):
            if sequence.isEmpty && scalar != "[" && scalar != "O" {
                // Alt+key (a second ESC starts a new sequence; Alt with a control character is dropped).
                mode = scalar == "\u{1B}" ? .escape("") : .normal
                return scalar.value >= 0x20 && scalar.value != 0x7F ? [.alt(Character(scalar))] : []
            }
            let extended = sequence + String(scalar)
            if extended.count > 1, (0x40...0x7E).contains(scalar.value) {
                mode = .normal
                if extended == "[200~" { mode = .paste("") }
                return KeyDecoder.sequenceKey(extended).map { [$0] } ?? []
            }
            mode = extended.count > 16 ? .normal : .escape(extended)
            return []
        case .paste(let text):
            if scalar == "\u{1B}" { mode = .pasteEscape(text, ""); return [] }
            mode = .paste(text + String(scalar))
            return []
        case .pasteEscape(let text, let sequence):
            let extended = sequence + String(scalar)
            if extended == "[201~" {
                mode = .normal
                return [.paste(text.replacingCRLF())]
            }
            if "[201~".hasPrefix(extended) {
                mode = .pasteEscape(text, extended)
            } else {
                // Not the end marker: keep the bytes as text (ESC itself is never kept).
                mode = .paste(text + extended)
            }
            return []
        }
    }

    /// The keys common terminals send as escape sequences, for when terminfo does not match the
    /// terminal (TERM=xterm-256color inside tmux sends Home as `ESC [1~`, which xterm's terminfo
    /// calls `ESC OH`): vt100/xterm cursor keys in both modes, vt220 editing keys, rxvt's Home
    /// and End, each with or without modifiers (`ESC [1;5H` is Ctrl-Home, taken as Home).
    static func sequenceKey(_ sequence: String) -> Key? {
        guard let final = sequence.last else { return nil }
        let body = sequence.dropFirst().dropLast()
        // `1;5` (with a modifier): the key number is before the semicolon.
        let number = body.split(separator: ";").first.map(String.init) ?? ""
        // `1;3` (Alt) or `1;5` (Ctrl) on Up and Down moves the message cursor.
        let modifier = body.split(separator: ";").dropFirst().first.map(String.init)
        let alt = modifier == "3"
        if sequence.hasPrefix("[<") { return MouseEvent.sgr(sequence).map { .mouse($0) } }
        if sequence == "[I" { return .focus(true) }
        if sequence == "[O" { return .focus(false) }
        switch final {
        case "A": return alt || modifier == "5" ? .messageUp : .up
        case "B": return alt || modifier == "5" ? .messageDown : .down
        case "C": return alt ? .altRight : modifier == "5" ? .wordRight : .right
        case "D": return alt ? .altLeft : modifier == "5" ? .wordLeft : .left
        case "H": return alt ? .altHome : .home
        case "F": return alt ? .altEnd : .end
        case "~":
            switch number {
            case "1", "7": return alt ? .altHome : .home
            case "4", "8": return alt ? .altEnd : .end
            case "3": return .delete
            case "5": return .pageUp
            case "6": return .pageDown
            default: return nil
            }
        default: return nil
        }
    }

    /// Called when input pauses: a lone ESC was the Escape key.
    public mutating func flush() -> [Key] {
        if case .escape(let sequence) = mode, sequence.isEmpty {
            mode = .normal
            return [.escape]
        }
        return []
    }

    private mutating func normal(_ scalar: Unicode.Scalar) -> [Key] {
        switch scalar.value {
        case 0x1B: mode = .escape(""); return []
        case 0x0D, 0x0A: return [.enter]
        case 0x09: return [.tab]
        case 0x7F, 0x08: return [.backspace]
        case 0x01...0x1A: return [.control(Character(Unicode.Scalar(scalar.value + 0x60)!))]
        case 0x00..<0x20: return []
        default: return [.character(Character(scalar))]
        }
    }
}

extension String {
    func replacingCRLF() -> String {
        var out = ""
        var previousCR = false
        for scalar in unicodeScalars {
            if scalar == "\r" { out.unicodeScalars.append("\n"); previousCR = true; continue }
            if scalar == "\n" && previousCR { previousCR = false; continue }
            previousCR = false
            out.unicodeScalars.append(scalar)
        }
        return out
    }
}
