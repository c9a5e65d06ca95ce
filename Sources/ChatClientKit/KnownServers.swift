import ChatTransport

/// The certificates a user chose to trust, one `host:port FINGERPRINT` per line, as SSH keeps
/// known_hosts: a server seen again with another certificate is refused, not trusted anew.
public enum KnownServers {
    public static func fingerprint(for server: String, in path: String) -> String? {
        guard let text = Files.readText(path) else { return nil }
        for line in text.split(whereSeparator: \.isNewline) {
            let words = line.split(separator: " ")
            if words.count >= 2, words[0] == server { return String(words[1]) }
        }
        return nil
    }

    /// Throws when the file cannot be written (the caller says so: the trust then lasts only
    /// this run).
    public static func remember(_ server: String, _ fingerprint: String, in path: String) throws {
        let existing = Files.readText(path) ?? ""
        let kept = existing.split(whereSeparator: \.isNewline).filter { !$0.hasPrefix(server + " ") }.map(String.init)
        let text = (kept + ["\(server) \(fingerprint)"]).joined(separator: "\n") + "\n"
        try Files.createDirectories(Paths.directory(of: path))
        try Files.writeAtomically(path, Array(text.utf8))
    }

    /// Hex digits only, upper case: `ab:cd` and `ABCD` are the same fingerprint.
    public static func normalise(_ fingerprint: String) -> String {
        String(fingerprint.uppercased().filter { $0.isHexDigit })
    }
}
