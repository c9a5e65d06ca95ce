/// Rules for what may be a nickname or a room name.
public enum IRCNames {
    /// Characters a nickname may use besides letters and digits.
    public static let nickSpecials: Set<Character> = ["[", "]", "\\", "`", "_", "^", "{", "|", "}", "-"]

    /// Why `nick` cannot be a nickname, or nil when it can. Letters of every script are allowed.
    public static func nickProblem(_ nick: String, maxBytes: Int) -> String? {
        guard let first = nick.first else { return "Nickname is empty" }
        if nick.utf8.count > maxBytes { return "Nickname is longer than \(maxBytes) bytes" }
        if first.isNumber || first == "-" { return "Nickname may not start with a digit or -" }
        for character in nick {
            if nickSpecials.contains(character) { continue }
            let allowed = character.unicodeScalars.allSatisfy { scalar in
                switch scalar.properties.generalCategory {
                case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
                     .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber:
                    return true
                default:
                    return false
                }
            }
            if !allowed {
                return "Nickname may contain only letters, digits and []\\`_^{|}- (not \(visible(character)))"
            }
        }
        return nil
    }

    /// Why `name` cannot be a room name, or nil when it can.
    public static func channelProblem(_ name: String, types: String = "#", maxBytes: Int) -> String? {
        guard let first = name.first, types.contains(first) else { return "Room names start with \(types)" }
        if name.count < 2 { return "Room name is empty" }
        if name.utf8.count > maxBytes { return "Room name is longer than \(maxBytes) bytes" }
        for scalar in name.unicodeScalars {
            if scalar == " " || scalar == "," || scalar == ":" || scalar.value < 0x20 || scalar.value == 0x7F {
                return "Room names may not contain spaces, commas, colons or control characters"
            }
        }
        return nil
    }

    public static func isChannel(_ target: String, types: String = "#") -> Bool {
        // Channel types are ASCII: the first byte says it (a Character would cost a grapheme break).
        guard let first = target.utf8.first else { return false }
        return types.utf8.contains(first)
    }

    /// A character as a user can read it in an error: control characters by their code.
    static func visible(_ character: Character) -> String {
        let scalars = character.unicodeScalars
        if scalars.count == 1, let scalar = scalars.first, scalar.value < 0x20 || scalar.value == 0x7F || scalar == " " {
            return scalar == " " ? "space" : "U+" + String(scalar.value, radix: 16, uppercase: true)
        }
        return "\"\(character)\""
    }

    /// `*` and `?` glob matching, as WHO masks use it; `fold` makes it case-insensitive.
    /// The one implementation is `IRCMask.globMatch`, on UTF-8 bytes.
    public static func globMatch(_ pattern: String, _ text: String) -> Bool {
        IRCMask.globMatch(Array(pattern.utf8), Array(text.utf8))
    }
}
