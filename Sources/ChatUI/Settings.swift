/// One setting of the chat screen: the one table (`Setting.all`) that the command line
/// (`--NAME VALUE`), the config file (`NAME = VALUE`, read and written), `/set`, `--help`, the
/// man pages and Tab completion all read. Its name is the flag, the config key and `/set`'s name.
public struct Setting: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case toggle
        case number(ClosedRange<Int>)
        case choice([String])
        /// Comma-separated words (`highlights = deploy,alice`).
        case words
        /// A regular expression (Swift's `Regex` syntax), checked when set.
        case pattern
        /// Free text (a path, a command).
        case text
    }

    public let name: String
    public let kind: Kind
    public let defaultValue: String
    /// `/set` applies it to the running screen; otherwise it takes effect at the next start.
    public let appliesAtOnce: Bool
    public let help: String

    /// The value's placeholder in `--help` and the man page.
    public var placeholder: String {
        switch kind {
        case .toggle: return "on|off"
        case .number: return "N"
        case .choice(let values): return values.joined(separator: "|")
        case .words: return "WORD,…"
        case .pattern: return "REGEX"
        case .text: return "TEXT"
        }
    }

    /// The value as kept (`yes` → `on`), or why it is not one.
    public func check(_ raw: String) -> Result<String, SettingProblem> {
        let value = raw.trimmingCharacters(" ")
        switch kind {
        case .toggle:
            switch value.lowercased() {
            case "on", "true", "yes": return .success("on")
            case "off", "false", "no": return .success("off")
            default: return .failure(SettingProblem("\(name) is on or off, not \"\(raw)\""))
            }
        case .number(let range):
            guard let number = Int(value), range.contains(number) else {
                return .failure(SettingProblem("\(name) is a number from \(range.lowerBound) to \(range.upperBound), not \"\(raw)\""))
            }
            return .success(String(number))
        case .choice(let values):
            guard let chosen = values.first(where: { $0.lowercased() == value.lowercased() }) else {
                return .failure(SettingProblem("\(name) is one of \(values.joined(separator: ", ")), not \"\(raw)\""))
            }
            return .success(chosen)
        case .words:
            return .success(value.split(separator: ",").map { $0.trimmingCharacters(" ") }.filter { !$0.isEmpty }.joined(separator: ","))
        case .pattern:
            if value.isEmpty { return .success("") }
            guard (try? Regex(value)) != nil else { return .failure(SettingProblem("\(name): \"\(raw)\" is not a regular expression")) }
            return .success(value)
        case .text:
            guard !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                return .failure(SettingProblem("\(name) takes no control characters"))
            }
            if name == "notify-command" && DesktopNotification.words(value) == nil {
                return .failure(SettingProblem("\(name): a quote is not closed in \"\(raw)\""))
            }
            return .success(value)
        }
    }

    /// What Tab offers after `/set NAME `.
    public var completions: [String] {
        switch kind {
        case .toggle: return ["on", "off"]
        case .choice(let values): return values
        default: return []
        }
    }

    public static func named(_ name: String) -> Setting? { all.first { $0.name == name.lowercased() } }

    public static let all: [Setting] = [
        Setting(name: "timestamps", kind: .choice(["HH:MM", "HH:MM:SS"]), defaultValue: "HH:MM", appliesAtOnce: true,
                help: "the time before each line"),
        Setting(name: "nick-colors", kind: .toggle, defaultValue: "on", appliesAtOnce: true,
                help: "each nickname in its own colour (off: all in the default colour)"),
        Setting(name: "sidebar-width", kind: .number(0...60), defaultValue: "0", appliesAtOnce: true,
                help: "columns of the sidebar (0: a fifth of the screen, 12 to 24)"),
        Setting(name: "sidebar-members", kind: .choice(["all", "current", "off"]), defaultValue: "all", appliesAtOnce: true,
                help: "the people listed under the rooms in the sidebar: every room's, only the current room's, or none (the numbered conversations then fit)"),
        Setting(name: "bell", kind: .toggle, defaultValue: "on", appliesAtOnce: true,
                help: "ring on a direct message or a highlight elsewhere"),
        Setting(name: "notify", kind: .choice(["off", "bell", "osc", "command"]), defaultValue: "osc", appliesAtOnce: true,
                help: "a direct message or a highlight not in view: off, the bell only, a desktop notification through the terminal (OSC 777, 9 or 99, through tmux too), or notify-command"),
        Setting(name: "notify-command", kind: .text, defaultValue: "", appliesAtOnce: true,
                help: "with notify = command: a program and its arguments (quotes group words, as in a shell), run with the title and the text after them; no shell runs it"),
        Setting(name: "highlights", kind: .words, defaultValue: "", appliesAtOnce: true,
                help: "words that mark a line like a mention (whole words, any case)"),
        Setting(name: "highlight-regex", kind: .pattern, defaultValue: "", appliesAtOnce: true,
                help: "a regular expression that marks a line like a mention"),
        Setting(name: "smart-filter", kind: .toggle, defaultValue: "on", appliesAtOnce: true,
                help: "joins, parts, quits and renames of people who have not spoken for 10 minutes fold into one dim line"),
        Setting(name: "mouse", kind: .toggle, defaultValue: "on", appliesAtOnce: true,
                help: "clicks pick rows and messages, the wheel scrolls (Shift keeps the terminal's own selection)"),
        Setting(name: "typing", kind: .toggle, defaultValue: "on", appliesAtOnce: true,
                help: "tell others when you are writing to them (+typing)"),
        Setting(name: "arrows", kind: .choice(["pick", "history"]), defaultValue: "pick", appliesAtOnce: true,
                help: "Up and Down on an empty input line: pick the recipient in the sidebar, or walk your earlier lines as in irssi and WeeChat (Alt-Left/Right, Alt-1…0 and Alt-a then move between conversations)"),
        Setting(name: "paste-lines", kind: .number(1...1000), defaultValue: "3", appliesAtOnce: true,
                help: "a paste of more lines than this asks before it is sent"),
        Setting(name: "text-logs", kind: .toggle, defaultValue: "off", appliesAtOnce: true,
                help: "also write plain-text logs, one file per network and conversation a day, under ~/.local/state/chat-tui/logs"),
        Setting(name: "rejoin", kind: .toggle, defaultValue: "on", appliesAtOnce: false,
                help: "on starting the chat screen, join again the rooms you were in when chat-tui last ended (kept under ~/.local/state/chat-tui/rooms; --lines joins only the rooms it is told)"),
        Setting(name: "autosave", kind: .toggle, defaultValue: "on", appliesAtOnce: true,
                help: "on quitting, keep /set and /alias changes not yet saved in the config file (as irssi's settings_autosave)"),
        Setting(name: "scrollback", kind: .number(100...1_000_000), defaultValue: "4096", appliesAtOnce: false,
                help: "lines kept per conversation"),
        Setting(name: "download-dir", kind: .text, defaultValue: "", appliesAtOnce: false,
                help: "where received files go (empty: ~/Downloads/chat-tui)"),
        Setting(name: "dcc-auto-accept-from", kind: .words, defaultValue: "", appliesAtOnce: false,
                help: "take files from these people without asking"),
    ]
}

public struct SettingProblem: Error, Equatable, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The settings' values: what the flags and the config file said, then `/set`. Only values
/// that were given are kept; the rest are the table's defaults.
public struct Settings: Equatable, Sendable {
    public private(set) var given: [String: String] = [:]

    public init() {}

    public subscript(_ name: String) -> String {
        given[name] ?? Setting.named(name)?.defaultValue ?? ""
    }

    public func isOn(_ name: String) -> Bool { self[name] == "on" }
    public func number(_ name: String) -> Int { Int(self[name]) ?? 0 }
    public func words(_ name: String) -> [String] { self[name].split(separator: ",").map(String.init) }

    /// Sets a value; nil when it was taken, else why not (the value is then unchanged).
    @discardableResult
    public mutating func set(_ name: String, _ raw: String) -> SettingProblem? {
        guard let setting = Setting.named(name) else { return SettingProblem("no setting called \(name) (/set lists them)") }
        switch setting.check(raw) {
        case .success(let value): given[setting.name] = value; return nil
        case .failure(let problem): return problem
        }
    }

    /// Back to the default.
    public mutating func reset(_ name: String) { given[name.lowercased()] = nil }

    /// Every setting with its value, in the table's order (what `/set` lists and `/save` writes).
    public var all: [(setting: Setting, value: String)] { Setting.all.map { ($0, self[$0.name]) } }
}

/// `/alias NAME EXPANSION`: a command of the user's own, expanded before the commands are read.
/// `$1`…`$9` are the words typed after it, `$2-` the second word on, `$*` all of them, `$nick`
/// your nickname, `$target` where Enter sends; an expansion without `$` gets the words after it.
/// `;` separates several commands.
public struct Aliases: Equatable, Sendable {
    public private(set) var table: [String: String]

    /// The ones irssi users type without thinking, beside the short names built in
    /// (`SlashCommands.aliases`: /j, /q, /m, /w, /leave, /bye, /exit), which an alias may replace.
    public static let defaults: [String: String] = ["wc": "/close", "wii": "/whois $1 $1"]

    public init(_ table: [String: String] = Aliases.defaults) { self.table = table }

    public subscript(_ name: String) -> String? { table[name.lowercased()] }

    /// Adds or replaces one; why not when the name is not one word or is a built-in command.
    public mutating func set(_ name: String, _ expansion: String) -> String? {
        let key = name.lowercased().drop { $0 == "/" }
        guard !key.isEmpty, key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
            return "An alias is one word of letters and digits"
        }
        guard !SlashCommands.all.contains(where: { $0.name == key }) else { return "/\(key) is a command of its own: pick another name" }
        guard !expansion.isEmpty else { return "Usage: /alias NAME EXPANSION" }
        table[String(key)] = expansion.hasPrefix("/") ? expansion : "/" + expansion
        return nil
    }

    @discardableResult
    public mutating func remove(_ name: String) -> Bool { table.removeValue(forKey: name.lowercased()) != nil }

    /// The lines `line` stands for when it starts with an alias (nil otherwise).
    public func expand(_ line: String, nick: String, target: String) -> [String]? {
        guard line.hasPrefix("/") else { return nil }
        let body = line.dropFirst()
        let name = body.prefix { $0 != " " }.lowercased()
        guard let expansion = table[name] else { return nil }
        let rest = String(body.dropFirst(name.count).drop { $0 == " " })
        let words = rest.split(separator: " ").map(String.init)

        // Split before substituting: a `;` in what was typed is text, not a separator.
        let parts = expansion.split(separator: ";").map { $0.trimmingCharacters(" ") }.filter { !$0.isEmpty }
        let usesArguments = expansion.contains("$*") || (1...9).contains { expansion.contains("$\($0)") }
        return parts.enumerated().map { offset, part in
            var line = Self.substitute(part, rest: rest, words: words, nick: nick, target: target)
            // An empty `$2-` at the end leaves no trailing space.
            while line.last == " " { line.removeLast() }
            if !usesArguments && !rest.isEmpty && offset == parts.count - 1 { line += " " + rest }
            return line.hasPrefix("/") ? line : "/" + line
        }
    }

    /// Why an alias cannot run as typed: `$3` needs three words, else the words would shift
    /// (`/msg  hello` would send to "hello"). Nil: it can (or it is not an alias).
    public func problem(_ line: String) -> String? {
        guard line.hasPrefix("/") else { return nil }
        let body = line.dropFirst()
        let name = body.prefix { $0 != " " }.lowercased()
        guard let expansion = table[name] else { return nil }
        let given = body.dropFirst(name.count).split(separator: " ").count
        let needed = Self.wordsNeeded(expansion)
        return given >= needed ? nil : "/\(name) needs \(needed) word\(needed == 1 ? "" : "s") after it (it runs \(expansion))"
    }

    /// The highest `$N` an expansion uses on its own (`$N-` may be empty).
    static func wordsNeeded(_ expansion: String) -> Int {
        var needed = 0
        var characters = Array(expansion)[...]
        while let dollar = characters.firstIndex(of: "$") {
            let after = characters[(dollar + 1)...]
            if let digit = after.first?.wholeNumberValue, digit >= 1, after.dropFirst().first != "-" { needed = max(needed, digit) }
            characters = after
        }
        return needed
    }

    static func substitute(_ template: String, rest: String, words: [String], nick: String, target: String) -> String {
        var out = ""
        var index = template.startIndex
        while index < template.endIndex {
            let character = template[index]
            let after = template[template.index(after: index)...]
            guard character == "$" else { out.append(character); index = template.index(after: index); continue }
            if after.hasPrefix("*") {
                out += rest
                index = template.index(index, offsetBy: 2)
            } else if after.hasPrefix("nick") {
                out += nick
                index = template.index(index, offsetBy: 5)
            } else if after.hasPrefix("target") {
                out += target
                index = template.index(index, offsetBy: 7)
            } else if let digit = after.first?.wholeNumberValue, digit >= 1 {
                if after.dropFirst().first == "-" {
                    out += words.dropFirst(digit - 1).joined(separator: " ")
                    index = template.index(index, offsetBy: 3)
                } else {
                    out += words.indices.contains(digit - 1) ? words[digit - 1] : ""
                    index = template.index(index, offsetBy: 2)
                }
            } else {
                out.append(character)
                index = template.index(after: index)
            }
        }
        return out
    }
}
