/// Received text made safe for a terminal that shows it as plain characters.
public enum PlainText {
    /// Free text (a real name, an away message, a topic, a reason) as the server keeps it: C0
    /// and C1 control characters and DEL removed, except mIRC's formatting codes (bold, colour,
    /// hex colour, reset, monospace, reverse, italic, strikethrough, underline), which clients
    /// draw. Messages themselves are not cleaned: CTCP needs its \u{1}.
    public static func cleanFreeText(_ text: String) -> String {
        let formatting: Set<UInt32> = [0x02, 0x03, 0x04, 0x0F, 0x11, 0x16, 0x1D, 0x1E, 0x1F]
        func removed(_ scalar: Unicode.Scalar) -> Bool {
            (scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)) && !formatting.contains(scalar.value)
        }
        guard text.unicodeScalars.contains(where: removed) else { return text }
        return String(String.UnicodeScalarView(text.unicodeScalars.filter { !removed($0) }))
    }

    /// Removes mIRC formatting (bold, colours, …) and shows every other control character
    /// visibly (`^[` for ESC, `^G` for BEL, `<U+009B>` for C1 controls), so nothing a peer
    /// sends can move the cursor, change colours or retitle the terminal.
    public static func visible(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        var scalars = text.unicodeScalars.makeIterator()
        var pending: Unicode.Scalar? = scalars.next()
        while let scalar = pending {
            pending = scalars.next()
            switch scalar.value {
            case 0x02, 0x1D, 0x1F, 0x16, 0x0F, 0x11, 0x1E:
                continue // bold, italic, underline, reverse, reset, monospace, strikethrough
            case 0x03:
                // ^C[fg[,bg]] with one or two digits each.
                var digits = 0
                while let next = pending, digits < 2, ("0"..."9").contains(next) { digits += 1; pending = scalars.next() }
                if digits > 0, let comma = pending, comma == "," {
                    var lookahead = scalars
                    if let first = lookahead.next(), ("0"..."9").contains(first) {
                        pending = first
                        scalars = lookahead
                        var bgDigits = 0
                        while let next = pending, bgDigits < 2, ("0"..."9").contains(next) { bgDigits += 1; pending = scalars.next() }
                    }
                }
            case 0x04:
                // ^D[RRGGBB[,RRGGBB]]
                var count = 0
                while let next = pending, count < 6, next.properties.isASCIIHexDigit { count += 1; pending = scalars.next() }
            case 0x00..<0x20, 0x7F:
                out += "^" + String(Unicode.Scalar(UInt8(scalar.value ^ 0x40)))
            case 0x80..<0xA0:
                out += notation(scalar)
            case _ where isInvisible(scalar):
                out += notation(scalar)
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Bidi controls and invisible format characters: they reorder or hide neighbouring text
    /// (`holiday<U+202E>gpj.exe` shows as `holidayexe.jpg`), so they are shown by their code.
    /// Zero-width joiner and non-joiner stay (emoji sequences and Persian, Hindi need them), as
    /// do variation selectors and tag characters (flags).
    public static func isInvisible(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x061C, 0x180E, 0x200B, 0x200E, 0x200F, 0x202A...0x202E, 0x2060...0x2064, 0x2066...0x206F,
             0xFEFF, 0xFFF9...0xFFFB, 0x115F, 0x1160, 0x3164, 0xFFA0:
            return true
        default:
            return false
        }
    }

    /// `<U+202E>`: how a neutralised character is shown.
    public static func notation(_ scalar: Unicode.Scalar) -> String {
        "<U+" + String(scalar.value, radix: 16, uppercase: true).leftPadded(to: 4) + ">"
    }
}

extension String {
    /// Zero-padded on the left to `width` characters.
    public func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
