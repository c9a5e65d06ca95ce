import IRCWire
/// A run of text in one style.
public struct Span: Equatable, Sendable {
    public var text: String
    public var style: Style
    public init(_ text: String, _ style: Style = .plain) {
        self.text = text
        self.style = style
    }
}

/// mIRC formatting in received text becomes styles; every other control character is shown
/// visibly (`^[` in reverse video) and never reaches the terminal.
public enum FormattedText {
    /// The 16 mIRC colours as palette indices.
    static let mircColors: [PaletteColor] = [15, 0, 4, 2, 9, 1, 5, 3, 11, 10, 6, 14, 12, 13, 8, 7]

    public static func spans(_ text: String, base: Style = .plain) -> [Span] {
        var spans: [Span] = []
        var style = base
        var current = ""
        func flush() {
            if !current.isEmpty { spans.append(Span(current, style)); current = "" }
        }
        var scalars = Array(text.unicodeScalars)[...]
        while let scalar = scalars.popFirst() {
            switch scalar.value {
            case 0x02: flush(); style.bold.toggle()
            case 0x1D: flush(); style.italic.toggle()
            case 0x1F: flush(); style.underline.toggle()
            case 0x16: flush(); style.reverse.toggle()
            case 0x11, 0x1E: flush() // monospace, strikethrough: no terminal attribute worth it
            case 0x0F: flush(); style = base
            case 0x03:
                flush()
                guard let fg = takeNumber(&scalars) else {
                    style.foreground = base.foreground
                    style.background = base.background
                    continue
                }
                style.foreground = fg < 16 ? mircColors[fg] : base.foreground
                if scalars.first == ",", scalars.dropFirst().first.map({ ("0"..."9").contains($0) }) == true {
                    scalars.removeFirst()
                    if let bg = takeNumber(&scalars) { style.background = bg < 16 ? mircColors[bg] : base.background }
                }
            case 0x04:
                flush()
                var taken = 0
                while taken < 6, let next = scalars.first, next.properties.isASCIIHexDigit { scalars.removeFirst(); taken += 1 }
            case 0x00..<0x20, 0x7F:
                flush()
                var visible = style
                visible.reverse.toggle()
                spans.append(Span("^" + String(Unicode.Scalar(UInt8(scalar.value ^ 0x40))), visible))
            case _ where (0x80..<0xA0).contains(scalar.value) || PlainText.isInvisible(scalar):
                // C1 controls, bidi controls and invisible format characters, shown by their code
                // so they can neither reorder the text around them nor hide in it.
                flush()
                var visible = style
                visible.reverse.toggle()
                spans.append(Span(PlainText.notation(scalar), visible))
            default:
                current.unicodeScalars.append(scalar)
            }
        }
        flush()
        return spans
    }

    static func takeNumber(_ scalars: inout ArraySlice<Unicode.Scalar>) -> Int? {
        var value = 0
        var digits = 0
        while digits < 2, let next = scalars.first, ("0"..."9").contains(next) {
            value = value * 10 + Int(next.value - 48)
            scalars.removeFirst()
            digits += 1
        }
        return digits > 0 ? value : nil
    }
}

/// Wrapping styled text to a width, by grapheme cluster and display width.
public enum Wrapper {
    /// Breaks spans into rows of at most `width` columns; rows after the first get `indent`
    /// columns less (a hanging indent, drawn by the caller). Breaks at the last space when one
    /// is in the row, else between characters.
    public static func wrap(_ spans: [Span], width: Int, indent: Int = 0) -> [[Span]] {
        let first = max(1, width)
        let rest = max(1, width - indent)
        var characters: [(Character, Style)] = []
        for span in spans { for character in span.text { characters.append((character, span.style)) } }
        // The width of the word each character belongs to (0 for spaces): a word that fits on a
        // continuation row moves there whole; a longer one (a URL, 150 digits, a sentence of
        // Chinese) fills the row it starts on and breaks between grapheme clusters.
        var wordWidths = [Int](repeating: 0, count: characters.count)
        var start = 0
        while start < characters.count {
            if characters[start].0 == " " { start += 1; continue }
            var end = start, total = 0
            while end < characters.count && characters[end].0 != " " { total += DisplayWidth.of(characters[end].0); end += 1 }
            for i in start..<end { wordWidths[i] = total }
            start = end
        }
        var rows: [[Span]] = []
        var row: [(Character, Style)] = []
        var rowWidth = 0
        var limit = first
        func emit(_ characters: ArraySlice<(Character, Style)>) {
            var spans: [Span] = []
            for (character, style) in characters {
                if let last = spans.last, last.style == style {
                    spans[spans.count - 1].text.append(character)
                } else {
                    spans.append(Span(String(character), style))
                }
            }
            rows.append(spans)
        }
        for (index, (character, style)) in characters.enumerated() {
            let w = DisplayWidth.of(character)
            // A loop: whatever is carried to the next row must itself fit there before this
            // character is added, so nothing is ever cut off at the edge.
            while rowWidth + w > limit && !row.isEmpty {
                if character != " ", wordWidths[index] <= rest,
                   let space = row.lastIndex(where: { $0.0 == " " }), space > 0 {
                    emit(row[..<space])
                    row = Array(row[(space + 1)...])
                } else {
                    var width = 0, cut = 0
                    while cut < row.count && width + DisplayWidth.of(row[cut].0) <= limit {
                        width += DisplayWidth.of(row[cut].0)
                        cut += 1
                    }
                    emit(row[..<max(cut, 1)])
                    row = Array(row[max(cut, 1)...])
                }
                rowWidth = row.reduce(0) { $0 + DisplayWidth.of($1.0) }
                limit = rest
            }
            // A space that would start a continuation row is dropped.
            if character == " " && row.isEmpty && !rows.isEmpty { continue }
            row.append((character, style))
            rowWidth += w
        }
        if !row.isEmpty || rows.isEmpty { emit(row[...]) }
        return rows
    }
}
