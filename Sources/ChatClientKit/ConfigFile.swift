import ChatTransport

/// The `name = value` settings file, written back for what the program itself changes
/// (`/ignore`): one setting replaced in place, every other line (comments too) kept.
public enum ConfigFile {
    public static func set(_ name: String, to value: String?, in path: String) throws {
        let old = Files.readText(path) ?? ""
        var lines = old.isEmpty ? [] : old.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).map(String.init)
        if lines.last == "" { lines.removeLast() }
        let matches: (String) -> Bool = { line in
            let key = line.split(separator: "=", maxSplits: 1).first.map { $0.trimmedOfWhitespace() }
            return key == name
        }
        if let value {
            let line = "\(name) = \(value)"
            if let index = lines.firstIndex(where: matches) { lines[index] = line } else { lines.append(line) }
        } else {
            lines.removeAll(where: matches)
        }
        try Files.createDirectories(Paths.directory(of: path))
        try Files.writeAtomically(path, Array((lines.joined(separator: "\n") + "\n").utf8))
    }
}
