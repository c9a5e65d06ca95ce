/// Grapheme clusters curses cannot draw, written past it. A curses cell holds one spacing
/// character and a few combining ones, so a ZWJ family (👨‍👩‍👧‍👦), a flag (🇯🇵, two spacing
/// regional indicators), a skin tone (👍🏽) reach the terminal cut to their first code point,
/// and a keycap (1️⃣) or a VS16 emoji (❤️) is laid out at its base's width while the terminal
/// draws it two columns wide, shifting the rest of the row. Such a cell is given to curses as
/// blanks in its style (so curses' picture of the screen holds its columns), and after curses
/// has drawn, the cluster is written whole at its place with the cursor set explicitly before
/// it and after it: a terminal that disagrees about its width cannot move what follows.
/// A terminal that draws it wider than that (tmux 3.3 gives a skin tone's modifier two columns
/// of its own) covers the cells after it: those are written again after it (`following`), so
/// the text beside a cluster is never lost under it; the cluster is then drawn cut, not the text.
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
        /// The cells after it (up to its `overhang`, before the next cluster), written again after it.
        public var following: [Piece] = []
    }

    /// One cell's text and style.
    public struct Piece: Equatable, Sendable {
        public let text: String
        public let style: Style
    }

    /// How many columns wider than its width a terminal could draw a cluster: its code points'
    /// widths added up, less its own (a family of four: 6; a skin tone: 2; a flag, a keycap: 0).
    public static func overhang(_ text: String) -> Int {
        max(0, text.unicodeScalars.reduce(0) { $0 + DisplayWidth.width(of: $1) } - DisplayWidth.of(text))
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
                if isDirect { now.append(write(x, y, of: screen, direct: direct)) }
                if same, let previous, case let old = previous[x, y], !old.isContinuation, direct(old.text) {
                    before.append(write(x, y, of: previous, direct: direct))
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

    /// The write for the cluster at `x`, `y`: it, and the cells after it that it could cover.
    static func write(_ x: Int, _ y: Int, of screen: Screen, direct: (String) -> Bool) -> Write {
        let cell = screen[x, y]
        var write = Write(x: x, y: y, text: cell.text, style: cell.style)
        var next = x + DisplayWidth.of(cell.text)
        let end = min(screen.width, next + overhang(cell.text))
        while next < end {
            let after = screen[next, y]
            if !after.isContinuation {
                if direct(after.text) { break }
                write.following.append(Piece(text: after.text, style: after.style))
            }
            next += 1
        }
        return write
    }

    /// The bytes that write the clusters: for each, the cursor set to its cell, its style,
    /// the cluster, the style reset, the cursor set to the column after its width and the
    /// cells it could cover written again; then
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
            for piece in write.following {
                let style = sgr(piece.style)
                out += style + piece.text + (style.isEmpty ? "" : "\u{1B}[0m")
            }
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
