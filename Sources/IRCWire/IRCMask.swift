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
        globMatch(Array(casemapping.fold(mask).utf8), Array(casemapping.fold(hostmask).utf8))
    }

    /// `*` and `?` over UTF-8 bytes of already folded text; `?` stands for one whole character.
    /// Linear in practice: the usual backtracking to the last `*` only.
    public static func globMatch(_ pattern: [UInt8], _ text: [UInt8]) -> Bool {
        var p = 0, t = 0, star = -1, mark = 0
        func characterEnd(_ i: Int) -> Int {
            var j = i + 1
            while j < text.count && text[j] & 0xC0 == 0x80 { j += 1 }
            return j
        }
        while t < text.count {
            if p < pattern.count && pattern[p] == UInt8(ascii: "?") {
                p += 1
                t = characterEnd(t)
            } else if p < pattern.count && pattern[p] == UInt8(ascii: "*") {
                star = p
                mark = t
                p += 1
            } else if p < pattern.count && pattern[p] == text[t] {
                p += 1
                t += 1
            } else if star >= 0 {
                p = star + 1
                mark = characterEnd(mark)
                t = mark
            } else {
                return false
            }
        }
        while p < pattern.count && pattern[p] == UInt8(ascii: "*") { p += 1 }
        return p == pattern.count
    }
}
