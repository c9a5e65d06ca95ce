import ChatTransport

/// The `name = value` settings file, written back for what the program itself changes
/// (`/ignore`): one setting replaced in place, every other line (comments too) kept. The file's
/// `[network]` sections hold settings of one network each: a global setting is written in the
/// part before the first section, never at the end of the file, where it would belong to the
/// last network (and make the next start fail).
public enum ConfigFile {
    public static func set(_ name: String, to value: String?, in path: String) throws {
        let old = Files.readText(path) ?? ""
        var lines = old.isEmpty ? [] : old.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).map(String.init)
        if lines.last == "" { lines.removeLast() }
        let matches: (String) -> Bool = { line in
            let key = line.split(separator: "=", maxSplits: 1).first.map { $0.trimmedOfWhitespace() }
            return key == name
        }
        // The global part: the lines before the first `[section]`.
        var global = lines.firstIndex { $0.trimmedOfWhitespace().hasPrefix("[") } ?? lines.count
        if let value {
            let line = "\(name) = \(value)"
            if let index = lines[..<global].firstIndex(where: matches) {
                lines[index] = line
            } else {
                // After the global settings, before the blank lines that lead to the first section.
                var at = global
                while at > 0 && lines[at - 1].trimmedOfWhitespace().isEmpty { at -= 1 }
                lines.insert(line, at: at)
            }
        } else {
            while let index = lines[..<global].firstIndex(where: matches) {
                lines.remove(at: index)
                global -= 1
            }
        }
        try Files.createDirectories(Paths.directory(of: path))
        try Files.writeAtomically(path, Array((lines.joined(separator: "\n") + "\n").utf8))
    }
}
