/// Grapheme clusters curses cannot draw, written past it. A curses cell holds one spacing
/// character and a few combining ones, so a ZWJ family (👨‍👩‍👧‍👦), a flag (🇯🇵, two spacing
/// regional indicators), a skin tone (👍🏽) reach the terminal cut to their first code point,
/// and a keycap (1️⃣) or a VS16 emoji (❤️) is laid out at its base's width while the terminal
/// draws it two columns wide, shifting the rest of the row. Such a cell is given to curses as
/// blanks in its style (so curses' picture of the screen holds its columns), and after curses
/// has drawn, the cluster is written whole at its place with the cursor set explicitly before
/// it and after it: a terminal that disagrees about its width cannot move what follows.
/// Pure: the curses backend performs what `plan` and `bytes` decide.
public enum ClusterOverlay {
    /// Whether curses could not draw this cell's text as it is: more than one spacing code
    /// point, or a cluster wider than its first code point (a keycap, VS16).
    public static func needsDirectWrite(_ text: String) -> Bool {
        guard let character = text.first, text.unicodeScalars.count > 1 else { return false }
        let scalars = text.unicodeScalars
        let spacing = scalars.filter { DisplayWidth.width(of: $0) > 0 }.count
        return spacing > 1 || DisplayWidth.of(character) != DisplayWidth.width(of: scalars.first!)
    }

    public struct Write: Equatable, Sendable {
        public let x: Int
        public let y: Int
        public let text: String
        public let style: Style
    }

    public struct Plan: Equatable, Sendable {
        /// Rows whose direct writes changed: curses must repaint them whole first (what it
        /// believes is there is blanks, not what we wrote over them).
        public var repaint: [Int] = []
        /// The clusters to write after curses has drawn, in row order.
        public var writes: [Write] = []
    }

    /// What to repaint and write for `screen`, given what was written for the frame before
    /// (`previous`: nil for a full redraw). `direct` says which cells go past curses.
    public static func plan(previous: Screen?, screen: Screen, direct: (String) -> Bool = needsDirectWrite) -> Plan {
        var plan = Plan()
        let same = previous.map { $0.width == screen.width && $0.height == screen.height } ?? false
        for y in 0..<screen.height {
            var now: [Write] = []
            var before: [Write] = []
            var changed = false
            for x in 0..<screen.width {
                let cell = screen[x, y]
                let isDirect = !cell.isContinuation && direct(cell.text)
                if isDirect { now.append(Write(x: x, y: y, text: cell.text, style: cell.style)) }
                if same, let old = previous?[x, y], !old.isContinuation, direct(old.text) {
                    before.append(Write(x: x, y: y, text: old.text, style: old.style))
                    if old != cell { changed = true }
                }
            }
            if !same {
                plan.writes += now
            } else if changed {
                // One went or changed: curses repaints the row, then every cluster of it is written again.
                plan.repaint.append(y)
                plan.writes += now
            } else {
                // The same clusters are there; new ones (on cells that were not direct) are written.
                plan.writes += now.filter { write in !before.contains(write) }
            }
        }
        return plan
    }

    /// The bytes that write the clusters: for each, the cursor set to its cell, its style,
    /// the cluster, the style reset, and the cursor set to the column after its width; then
    /// the cursor back where curses left it (`cursor`, 0-based).
    public static func bytes(_ writes: [Write], cursor: (x: Int, y: Int)) -> [UInt8] {
        guard !writes.isEmpty else { return [] }
        var out = ""
        for write in writes {
            out += "\u{1B}[\(write.y + 1);\(write.x + 1)H"
            out += sgr(write.style)
            out += write.text
            out += "\u{1B}[0m"
            // Resynchronise: wherever the terminal put its cursor, the next column is this one.
            out += "\u{1B}[\(write.y + 1);\(write.x + 1 + DisplayWidth.of(write.text))H"
        }
        out += "\u{1B}[\(cursor.y + 1);\(cursor.x + 1)H"
        return Array(out.utf8)
    }

    /// The SGR of a style: attributes, then 256-colour foreground and background.
    static func sgr(_ style: Style) -> String {
        var codes: [String] = []
        if style.bold { codes.append("1") }
        if style.dim { codes.append("2") }
        if style.italic { codes.append("3") }
        if style.underline { codes.append("4") }
        if style.reverse { codes.append("7") }
        if let foreground = style.foreground { codes.append("38;5;\(foreground)") }
        if let background = style.background { codes.append("48;5;\(background)") }
        return codes.isEmpty ? "" : "\u{1B}[" + codes.joined(separator: ";") + "m"
    }
}
