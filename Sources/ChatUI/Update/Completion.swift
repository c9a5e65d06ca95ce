import ChatTransport
import ChatClientKit
import IRCWire

// Completion: Tab's file paths for /send and /upload (names and commands are the editor's).

/// Tab completion of file paths for /send, pure: the shell lists the directory
/// (`directory(of:)`, the names `matching` the prefix) and `candidates` makes the completions.
public enum PathCompletion {
    /// The directory to list for the path being typed (`~/` already expanded by the shell).
    public static func directory(of expandedWord: String) -> String {
        let directory = expandedWord.hasSuffix("/") ? expandedWord : Paths.directory(of: expandedWord)
        return directory.isEmpty ? "." : directory
    }

    /// The start of the names that complete `word`: its last part ("" after a slash).
    public static func prefix(of word: String) -> String {
        word.hasSuffix("/") ? "" : Paths.lastComponent(of: word)
    }

    /// The names that complete `prefix`; hidden files only when the prefix starts with a dot.
    public static func matching(_ names: [String], prefix: String) -> [String] {
        names.filter { $0.hasPrefix(prefix) && (!$0.hasPrefix(".") || prefix.hasPrefix(".")) }.sorted()
    }

    /// The words `word` may become, given its directory's entries: directories end in "/".
    public static func candidates(for word: String, entries: [FileEntry]) -> [String] {
        let prefix = prefix(of: word)
        let base = word.hasSuffix("/") ? word : String(word.dropLast(prefix.count))
        let names = Set(matching(entries.map(\.name), prefix: prefix))
        return entries.filter { names.contains($0.name) }.sorted { $0.name < $1.name }
            .map { base + $0.name + ($0.isDirectory ? "/" : "") }
    }
}
