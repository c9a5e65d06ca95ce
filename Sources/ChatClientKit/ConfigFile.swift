import ChatTransport

/// The `name = value` settings file, written back for what the program itself changes (`/save`,
/// `/ignore`): the one writer. A setting is replaced in place and every other line (comments,
/// blank lines, other sections) is kept. Settings for every network live in the part before the
/// first `[section]`: one is added there, never at the end of the file, where it would belong to
/// the last network (and make the next start fail). A section of its own (`[aliases]`) is
/// rewritten entry by entry in place, or added at the end.
public enum ConfigFile {
    /// One global setting; nil removes it.
    public static func set(_ name: String, to value: String?, in path: String) throws {
        try write(global: [.init(name: name, value: value)], in: path)
    }

    /// A global setting to write: nil removes it; `onlyIfPresent` updates a line that is there
    /// but adds none (a default value the file does not mention stays unmentioned).
    public struct Entry: Equatable, Sendable {
        public var name: String
        public var value: String?
        public var onlyIfPresent: Bool
        public init(name: String, value: String?, onlyIfPresent: Bool = false) {
            self.name = name
            self.value = value
            self.onlyIfPresent = onlyIfPresent
        }
    }

    public static func write(global: [Entry], section: (name: String, entries: [(key: String, value: String)])? = nil, in path: String) throws {
        let text = updated(Files.readText(path) ?? "", global: global, section: section)
        try Files.createDirectories(Paths.directory(of: path))
        try Files.writeAtomically(path, Array(text.utf8), mode: 0o600)  // it may hold a password
    }

    /// A value as the file spells it: in double quotes (`\"` and `\\` inside) when it would not
    /// read back as itself, that is when it has a ` #` (a comment elsewhere) or starts with a quote.
    public static func spelled(_ value: String) -> String {
        guard value.contains(" #") || value.contains("\t#") || value.hasPrefix("\"") else { return value }
        return "\"" + value.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"") + "\""
    }

    /// A quoted value read back (`text` starts at its opening quote): the value and what follows
    /// the closing quote; nil when the quote is not closed.
    public static func unquoted(_ text: Substring) -> (value: String, rest: Substring)? {
        guard text.first == "\"" else { return nil }
        var value = "", escaped = false
        var index = text.index(after: text.startIndex)
        while index < text.endIndex {
            let character = text[index]
            if escaped { value.append(character); escaped = false }
            else if character == "\\" { escaped = true }
            else if character == "\"" { return (value, text[text.index(after: index)...]) }
            else { value.append(character) }
            index = text.index(after: index)
        }
        return nil
    }

    static func key(of line: String) -> String? {
        let trimmed = line.trimmedOfWhitespace()
        guard !trimmed.hasPrefix("#"), !trimmed.hasPrefix("["), let equals = line.firstIndex(of: "=") else { return nil }
        return line[..<equals].trimmedOfWhitespace()
    }

    /// The file's new text (pure: what `write` writes).
    public static func updated(_ old: String, global: [Entry], section: (name: String, entries: [(key: String, value: String)])? = nil) -> String {
        var lines = old.isEmpty ? [] : old.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).map(String.init)
        if lines.last == "" { lines.removeLast() }
        for entry in global {
            // The global part: the lines before the first `[section]`.
            let end = lines.firstIndex { $0.trimmedOfWhitespace().hasPrefix("[") } ?? lines.count
            let present = lines[..<end].indices.filter { key(of: lines[$0]) == entry.name }
            guard let value = entry.value else {
                for index in present.reversed() { lines.remove(at: index) }
                continue
            }
            let line = "\(entry.name) = \(spelled(value))"
            if let first = present.first {
                lines[first] = line
                for index in present.dropFirst().reversed() { lines.remove(at: index) }
            } else if !entry.onlyIfPresent {
                // After the global settings, before the blank lines that lead to the first section.
                var at = end
                while at > 0 && lines[at - 1].trimmedOfWhitespace().isEmpty { at -= 1 }
                lines.insert(line, at: at)
            }
        }
        if let section {
            let header = "[\(section.name)]"
            if let start = lines.firstIndex(where: { $0.trimmedOfWhitespace() == header }) {
                var end = lines[(start + 1)...].firstIndex { $0.trimmedOfWhitespace().hasPrefix("[") } ?? lines.count
                var written = Set<String>()
                var index = start + 1
                while index < end {
                    if let key = key(of: lines[index]) {
                        if let entry = section.entries.first(where: { $0.key == key }), !written.contains(key) {
                            lines[index] = "\(key) = \(entry.value)"
                            written.insert(key)
                        } else {
                            lines.remove(at: index)
                            end -= 1
                            continue
                        }
                    }
                    index += 1
                }
                var at = end
                while at > start + 1 && lines[at - 1].trimmedOfWhitespace().isEmpty { at -= 1 }
                for entry in section.entries where !written.contains(entry.key) {
                    lines.insert("\(entry.key) = \(entry.value)", at: at)
                    at += 1
                }
            } else if !section.entries.isEmpty {
                if let last = lines.last, !last.trimmedOfWhitespace().isEmpty { lines.append("") }
                lines.append(header)
                lines += section.entries.map { "\($0.key) = \($0.value)" }
            }
        }
        return lines.isEmpty ? "" : lines.joined(separator: "\n") + "\n"
    }
}
