/// The checks against impersonation that follow `IRCNames`: a name that passes those rules may
/// still hide characters, reorder what is shown, or mix scripts to pass for another name.
/// The reasons are English sentences for the text of ERR_ERRONEUSNICKNAME (432) and
/// ERR_BADCHANNAME (479).
///
/// Look-alike names that pass these checks (`alice` and `ａｌｉｃｅ`) are for the caller to
/// catch by comparing `Confusables.skeleton` of the folded names.
public enum NameSafety {
    /// Why `nick` would let its owner pass for someone else, or nil when it is safe. Call it on a
    /// nickname `IRCNames.nickProblem` allows.
    ///
    /// Refused: control, format, bidi and other default-ignorable characters, Hangul fillers,
    /// spaces and unassigned code points; a nickname without a letter or digit, or starting with
    /// a combining mark; and letters of scripts that UTS #39 (section 5.2, "Highly Restrictive")
    /// does not allow together: one script, or Latin with Han and Hiragana and Katakana, with
    /// Han and Bopomofo, or with Han and Hangul. Common and Inherited characters (digits,
    /// punctuation, combining accents) go with any script.
    public static func nickProblem(_ nick: String) -> String? {
        if let problem = hiddenCharacterProblem(nick, subject: "Nickname") { return problem }
        if !nick.unicodeScalars.contains(where: isLetterOrDigit) { return "Nickname has no visible letter or digit" }
        if let first = nick.unicodeScalars.first, isCombiningMark(first) {
            return "Nickname starts with a combining mark (\(codePoint(first)))"
        }
        return mixedScriptProblem(nick)
    }

    /// Why `name` would hide or disguise what it is, or nil when it is safe. Call it on a room
    /// name `IRCNames.channelProblem` allows.
    ///
    /// The same characters as in nicknames are refused. Scripts may mix: a room name is the name
    /// of a topic, often in two languages (`#python-русский`), and it cannot pass for a person.
    /// As in ergo, a room that copies another one's name with look-alike letters is caught by
    /// comparing skeletons instead, which the caller must do when a room is created.
    public static func channelProblem(_ name: String) -> String? {
        hiddenCharacterProblem(name, subject: "Room name")
    }

    /// Characters that show nothing, show as a space, or change how the text around them shows.
    enum Hidden: Equatable {
        case control, directionControl, hangulFiller, invisible, space, lineBreak, unassigned
    }

    static func hidden(_ scalar: Unicode.Scalar) -> Hidden? {
        let properties = scalar.properties
        switch properties.generalCategory {
        case .control: return .control  // C0, DEL and C1
        case .spaceSeparator: return .space
        case .lineSeparator, .paragraphSeparator: return .lineBreak
        case .unassigned: return .unassigned
        default: break
        }
        if properties.isBidiControl { return .directionControl }
        switch scalar.value {
        // Letters by their general category, but they show nothing (most fonts draw them blank).
        case 0x115F, 0x1160, 0x3164, 0xFFA0: return .hangulFiller
        default: break
        }
        if properties.generalCategory == .format || properties.isDefaultIgnorableCodePoint { return .invisible }
        return nil
    }

    static func hiddenCharacterProblem(_ name: String, subject: String) -> String? {
        for scalar in name.unicodeScalars {
            guard let kind = hidden(scalar) else { continue }
            let code = codePoint(scalar)
            switch kind {
            case .control: return "\(subject) contains a control character (\(code))"
            case .directionControl: return "\(subject) contains a text direction control (\(code)), which reorders what is shown"
            case .hangulFiller: return "\(subject) contains a Hangul filler, which is invisible (\(code))"
            case .invisible: return "\(subject) contains an invisible character (\(code))"
            case .space: return "\(subject) contains a space (\(code))"
            case .lineBreak: return "\(subject) contains a line break (\(code))"
            case .unassigned: return "\(subject) contains an unassigned code point (\(code))"
            }
        }
        return nil
    }

    static func mixedScriptProblem(_ nick: String) -> String? {
        let tables = ConfusableTables.shared
        var seen: [ConfusableTables.Script] = []
        for scalar in nick.unicodeScalars {
            let script = tables.script(of: scalar)
            if script == ConfusableData.common || script == ConfusableData.inherited || seen.contains(script) { continue }
            if !isHighlyRestrictive(seen + [script]) {
                // Any allowed set is allowed pair by pair, so some earlier script clashes with this one.
                let clash = seen.first { !isHighlyRestrictive([$0, script]) } ?? seen[0]
                let kind = scalar.properties.generalCategory == .decimalNumber ? "characters" : "letters"
                let name = tables.scriptName(script)
                return "Nickname mixes \(tables.scriptName(clash)) and \(name) \(kind) (\(String(scalar)), \(codePoint(scalar)), is \(name))"
            }
            seen.append(script)
        }
        return nil
    }

    /// Whether UTS #39 lets `scripts` (Common and Inherited left out) make one identifier.
    static func isHighlyRestrictive(_ scripts: [ConfusableTables.Script]) -> Bool {
        if scripts.count <= 1 { return true }
        let latinHan = [ConfusableData.latin, ConfusableData.han]
        let allowed = [
            latinHan + [ConfusableData.hiragana, ConfusableData.katakana],
            latinHan + [ConfusableData.bopomofo],
            latinHan + [ConfusableData.hangul],
        ]
        return allowed.contains { set in scripts.allSatisfy(set.contains) }
    }

    static func isLetterOrDigit(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter, .decimalNumber:
            return true
        default:
            return false
        }
    }

    static func isCombiningMark(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark: return true
        default: return false
        }
    }

    /// `U+` and at least four hex digits, as Unicode writes code points.
    static func codePoint(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
}
