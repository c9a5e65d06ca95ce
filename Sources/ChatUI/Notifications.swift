/// Desktop notifications through the terminal: the escape sequence is chosen by the terminal
/// (OSC 99 for kitty, OSC 9 for iTerm2 and Windows Terminal, OSC 777 for the rest: VTE, foot,
/// WezTerm, Ghostty, urxvt), wrapped for tmux's passthrough when inside tmux (tmux 3.3 and later
/// pass it with `set -g allow-passthrough on`). Pure: the shell writes the bytes.
public enum DesktopNotification {
    public enum Style: String, Sendable, Equatable { case osc777, osc9, osc99 }

    /// The sequence the terminal understands, from its environment (`TERM`, `TERM_PROGRAM`,
    /// kitty's and Windows Terminal's variables), looking through tmux to the terminal it runs in.
    public static func style(environment: [String: String]) -> Style {
        let term = environment["TERM"] ?? ""
        let program = environment["TERM_PROGRAM"] ?? ""
        if environment["KITTY_WINDOW_ID"] != nil || term == "xterm-kitty" { return .osc99 }
        if program == "iTerm.app" || environment["ITERM_SESSION_ID"] != nil || environment["WT_SESSION"] != nil || environment["ConEmuPID"] != nil {
            return .osc9
        }
        return .osc777
    }

    /// The text as a terminal may be given it inside a sequence: no control characters (C0, DEL,
    /// C1 — an ESC or BEL would end the sequence early or start another), at most 200 characters.
    static func clean(_ text: String, separator: Bool) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) { out.unicodeScalars.append(" "); continue }
            // OSC 777's fields are separated by `;`: a title with one would move the text.
            if separator && scalar == ";" { out.unicodeScalars.append(","); continue }
            out.unicodeScalars.append(scalar)
        }
        return out.count > 200 ? String(out.prefix(199)) + "…" : out
    }

    /// The bytes to write for a notification with `title` and `body`.
    public static func sequence(_ style: Style, title: String, body: String, inTmux: Bool) -> String {
        let title = clean(title, separator: true), body = clean(body, separator: false)
        let st = "\u{1B}\\"
        let plain: String
        switch style {
        case .osc777: plain = "\u{1B}]777;notify;\(title);\(body)" + st
        case .osc9: plain = "\u{1B}]9;\(title): \(body)" + st
        case .osc99: plain = "\u{1B}]99;i=1:d=0;\(title)" + st + "\u{1B}]99;i=1:d=1:p=body;\(body)" + st
        }
        guard inTmux else { return plain }
        // tmux passes what is between `ESC P tmux;` and `ESC \` to the terminal, every ESC doubled.
        return "\u{1B}Ptmux;" + plain.replacing("\u{1B}", with: "\u{1B}\u{1B}") + st
    }

    /// `--notify command`: the program and its arguments (split into words as a shell would
    /// split them, quotes and backslashes, but nothing expanded and no shell run), then the title
    /// and the text as two more arguments; nil when no program is set or a quote is not closed.
    public static func commandArguments(_ setting: String, title: String, body: String) -> [String]? {
        guard let words = words(setting), !words.isEmpty else { return nil }
        return words + [clean(title, separator: false), clean(body, separator: false)]
    }

    /// Words as `sh` splits them: blanks separate; `'…'` keeps everything, `"…"` keeps all but
    /// `\"` and `\\`, a backslash outside quotes keeps the next character. Nil: a quote left open.
    public static func words(_ text: String) -> [String]? {
        var words: [String] = [], word = "", inWord = false
        var quote: Character?, escaped = false
        for character in text {
            if escaped {
                if quote == "\"" && character != "\"" && character != "\\" { word.append("\\") }
                word.append(character); escaped = false; continue
            }
            switch (quote, character) {
            case (nil, " "), (nil, "\t"):
                if inWord { words.append(word); word = ""; inWord = false }
            case (nil, "'"), (nil, "\""): quote = character; inWord = true
            case ("'", "'"), ("\"", "\""): quote = nil
            case (nil, "\\"), ("\"", "\\"): escaped = true; inWord = true
            default: word.append(character); inWord = true
            }
        }
        guard quote == nil, !escaped else { return nil }
        if inWord { words.append(word) }
        return words
    }
}
