/// `nick!user@host` masks with `*` and `?`, as bans, exceptions and invite exceptions use them.
public enum IRCMask {
    public static let maxBytes = 200

    /// The mask in full form, or nil when it cannot be one: `bob` is `bob!*@*`, `*@host` is
    /// `*!*@host`, `bob!x` is `bob!x@*`, as InspIRCd and ergo complete them.
    public static func normalise(_ raw: String) -> String? {
        guard !raw.isEmpty, raw.utf8.count <= maxBytes,
              !raw.unicodeScalars.contains(where: { $0 == " " || $0 == "," || $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }),
              !raw.hasPrefix(":") else { return nil }
        var nick = Substring(raw), user: Substring = "*", host: Substring = "*"
        if let at = nick.lastIndex(of: "@") {
            host = nick[nick.index(after: at)...]
            nick = nick[..<at]
        }
        if let bang = nick.firstIndex(of: "!") {
            user = nick[nick.index(after: bang)...]
            nick = nick[..<bang]
        } else if raw.contains("@") && !nick.isEmpty {
            // `user@host` without a nick.
            user = nick
            nick = "*"
        }
        if nick.isEmpty { nick = "*" }
        if user.isEmpty { user = "*" }
        if host.isEmpty { host = "*" }
        return "\(nick)!\(user)@\(host)"
    }

    /// Whether `mask` matches the full `nick!user@host`, without regard to case under `casemapping`.
    public static func matches(_ mask: String, _ hostmask: String, casemapping: Casemapping) -> Bool {
        IRCNames.globMatch(casemapping.fold(mask), casemapping.fold(hostmask))
    }
}
