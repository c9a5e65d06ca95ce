/// A key press (or a paste) as the model understands it, whatever terminal produced it.
public enum Key: Equatable, Sendable {
    case character(Character)
    /// Ctrl with a letter: `.control("w")` for Ctrl-W.
    case control(Character)
    case enter, tab, backspace, delete, escape
    case up, down, left, right, home, end, pageUp, pageDown
    /// Text that arrived as one bracketed paste.
    case paste(String)
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
                // Alt+key: ignored, but a second ESC starts a new sequence.
                mode = scalar == "\u{1B}" ? .escape("") : .normal
                return []
            }
            let extended = sequence + String(scalar)
            if extended.count > 1, (0x40...0x7E).contains(scalar.value) {
                mode = .normal
                if extended == "[200~" { mode = .paste("") }
                return []
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
