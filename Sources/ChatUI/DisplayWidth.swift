/// Terminal columns taken by text, measured by grapheme cluster: CJK and emoji take two,
/// combining marks and other zero-width characters none.
public enum DisplayWidth {
    public static func of(_ character: Character) -> Int {
        let scalars = character.unicodeScalars
        guard let first = scalars.first else { return 0 }
        if scalars.count == 1 {
            return width(of: first)
        }
        // Emoji sequences: ZWJ families, skin tones, keycaps and VS16 all render as one wide glyph.
        if scalars.contains("\u{FE0F}") || scalars.contains("\u{200D}") { return 2 }
        if (0x1F1E6...0x1F1FF).contains(first.value) { return 2 } // a flag: two regional indicators
        if scalars.contains(where: { (0x1F3FB...0x1F3FF).contains($0.value) }) { return 2 }
        // Anything else (a Devanagari conjunct with its vowel sign, a Tamil or Bengali vowel sign,
        // a Khmer subscript…): as wide as terminals draw it, each spacing code point a column of
        // its own (wcwidth's count), not its first letter's: `हि` is two columns, `न्दी` three.
        var total = 0
        for scalar in scalars { total += width(of: scalar) }
        return max(total, width(of: first), 0)
    }

    public static func of(_ text: some StringProtocol) -> Int {
        var total = 0
        for character in text { total += of(character) }
        return total
    }

    /// The width of one scalar on its own.
    static func width(of scalar: Unicode.Scalar) -> Int {
        let value = scalar.value
        if value < 0x20 || (0x7F..<0xA0).contains(value) { return 0 }
        if value < 0x300 { return 1 }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format:
            return 0
        default:
            break
        }
        if value == 0x200B || (0x1160...0x11FF).contains(value) { return 0 }
        if scalar.properties.isEmojiPresentation { return 2 }
        return isWide(value) ? 2 : 1
    }

    /// East Asian Wide and Fullwidth ranges (Unicode's EastAsianWidth.txt, W and F).
    static func isWide(_ value: UInt32) -> Bool {
        switch value {
        case 0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x23E9...0x23EC, 0x23F0, 0x23F3,
             0x25FD...0x25FE, 0x2614...0x2615, 0x2648...0x2653, 0x267F, 0x2693, 0x26A1, 0x26AA...0x26AB,
             0x26BD...0x26BE, 0x26C4...0x26C5, 0x26CE, 0x26D4, 0x26EA, 0x26F2...0x26F3, 0x26F5, 0x26FA,
             0x26FD, 0x2705, 0x270A...0x270B, 0x2728, 0x274C, 0x274E, 0x2753...0x2755, 0x2757,
             0x2795...0x2797, 0x27B0, 0x27BF, 0x2B1B...0x2B1C, 0x2B50, 0x2B55,
             0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
             0xA960...0xA97F, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F,
             0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x16FE0...0x16FE4, 0x17000...0x18CFF, 0x1B000...0x1B2FF,
             0x1F004, 0x1F0CF, 0x1F18E, 0x1F191...0x1F19A, 0x1F200...0x1F251, 0x1F300...0x1F64F,
             0x1F680...0x1F6FF, 0x1F7E0...0x1F7EB, 0x1F90C...0x1F9FF, 0x1FA70...0x1FAFF,
             0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return true
        default:
            return false
        }
    }
}

/// Text cut to a width for a one-row bar: at a word boundary where one is near, with `…`.
public enum Ellipsis {
    public static func fit(_ text: String, width: Int) -> String {
        guard width > 0 else { return "" }
        if DisplayWidth.of(text) <= width { return text }
        var kept = ""
        var used = 0
        for character in text {
            let w = DisplayWidth.of(character)
            if used + w > width - 1 { break }
            kept.append(character)
            used += w
        }
        // Back to the last space when it is in the second half, so no word is cut in two.
        if let space = kept.lastIndex(of: " "), kept.distance(from: kept.startIndex, to: space) > kept.count / 2 {
            kept = String(kept[..<space])
        }
        while kept.last == " " { kept.removeLast() }
        return kept + "…"
    }
}
