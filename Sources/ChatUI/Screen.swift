/// A colour from the terminal's 256-colour palette.
public typealias PaletteColor = UInt8

public struct Style: Hashable, Sendable {
    public var foreground: PaletteColor?
    public var background: PaletteColor?
    public var bold = false
    public var dim = false
    public var italic = false
    public var underline = false
    public var reverse = false

    public init(foreground: PaletteColor? = nil, background: PaletteColor? = nil, bold: Bool = false, dim: Bool = false,
                italic: Bool = false, underline: Bool = false, reverse: Bool = false) {
        self.foreground = foreground
        self.background = background
        self.bold = bold
        self.dim = dim
        self.italic = italic
        self.underline = underline
        self.reverse = reverse
    }

    public static let plain = Style()
}

/// One terminal cell: a grapheme cluster, or nothing when it continues the wide character to its left.
public struct Cell: Hashable, Sendable {
    public var text: String
    public var style: Style

    public init(_ text: String = " ", style: Style = .plain) {
        self.text = text
        self.style = style
    }

    public var isContinuation: Bool { text.isEmpty }
    public static let blank = Cell()
}

/// The whole screen as data. Widgets draw into it; the curses backend copies out the cells
/// that changed; tests read it as lines.
public struct Screen: Equatable, Sendable {
    public let width: Int
    public let height: Int
    public private(set) var cells: [Cell]
    /// Where the terminal cursor should rest (the input line), if anywhere.
    public var cursor: (x: Int, y: Int)?

    public init(width: Int, height: Int) {
        self.width = max(0, width)
        self.height = max(0, height)
        cells = Array(repeating: .blank, count: self.width * self.height)
    }

    public static func == (a: Screen, b: Screen) -> Bool {
        a.width == b.width && a.height == b.height && a.cells == b.cells && a.cursor?.x == b.cursor?.x && a.cursor?.y == b.cursor?.y
    }

    public subscript(x: Int, y: Int) -> Cell {
        get { cells[y * width + x] }
        set { cells[y * width + x] = newValue }
    }

    public mutating func clear() {
        for i in cells.indices { cells[i] = .blank }
        cursor = nil
    }

    /// Fills a rectangle with spaces in `style`.
    public mutating func fill(x: Int, y: Int, width: Int, height: Int, style: Style = .plain) {
        for row in max(0, y)..<min(self.height, y + height) {
            for column in max(0, x)..<min(self.width, x + width) { self[column, row] = Cell(" ", style: style) }
        }
    }

    /// Writes `text` from column `x` of row `y`, stopping before column `x + limit`.
    /// A wide character that would not fit is replaced by a space. Returns the columns used.
    @discardableResult
    public mutating func put(_ text: some StringProtocol, x: Int, y: Int, limit: Int? = nil, style: Style = .plain) -> Int {
        guard y >= 0 && y < height && x < width else { return 0 }
        let end = min(width, x + (limit ?? width))
        var column = x
        for character in text {
            let w = DisplayWidth.of(character)
            if w == 0 {
                // A stray zero-width character joins the cell before it, never a cell of its own.
                if column > x, column - 1 < width, column - 1 >= 0 {
                    var previous = column - 1
                    while previous > 0 && self[previous, y].isContinuation { previous -= 1 }
                    self[previous, y].text.append(character)
                }
                continue
            }
            if column + w > end {
                if column < end { self[column, y] = Cell(" ", style: style); column += 1 }
                break
            }
            if column >= 0 {
                // Overwriting half of a wide character leaves its other half blank.
                if self[column, y].isContinuation && column > 0 { self[column - 1, y] = Cell(" ", style: self[column - 1, y].style) }
                self[column, y] = Cell(String(character), style: style)
                // A cluster wider than one column holds the columns after it (continuations).
                for extra in 1..<max(1, w) { self[column + extra, y] = Cell("", style: style) }
                if column + w < width && self[column + w, y].isContinuation { self[column + w, y] = Cell(" ", style: style) }
            }
            column += w
        }
        return column - x
    }

    /// Row `y` as text (wide characters once, trailing spaces kept).
    public func line(_ y: Int) -> String {
        var text = ""
        for x in 0..<width where !self[x, y].isContinuation { text += self[x, y].text }
        return text
    }

    /// Every row as text, for tests and for logging what was on screen.
    public var lines: [String] { (0..<height).map(line) }
}
