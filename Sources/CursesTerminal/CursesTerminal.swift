#if canImport(Glibc)
import Glibc
#endif
import CNcursesw
import ChatUI
import IRCWire

/// The terminal through ncurses: the only code that calls curses, always on the main actor
/// (curses is single-threaded). It reads keys without blocking and draws the cells of a
/// `Screen` that changed since the last frame.
@MainActor
public final class CursesTerminal {
    private var previous: Screen?
    private var decoder = KeyDecoder()
    /// The codes curses gives Alt-Up and Ctrl-Up (and Down) where the terminal describes them
    /// (terminfo's kUP3, kUP5, kDN3, kDN5): the message cursor; Alt-Left, Alt-Right, Alt-Home,
    /// Alt-End (kLFT3, kRIT3, kHOM3, kEND3).
    private var messageKeys: [Int32: Key] = [:]
    private var pairs: [Int: Int32] = [:]
    private var hasColors = false
    private var colorCount: Int32 = 8
    private(set) public var isActive = false

    public init() {}

    /// Takes over the terminal. Call `shutdown()` to give it back.
    public func start() {
        CursesTerminal.ensureUTF8Locale()
        // LINES and COLUMNS in the environment (shells and test runners export them) would
        // override the real size; ask the terminal instead.
        use_env(false)
        initscr()
        let (width, height) = size
        resize_term(Int32(height), Int32(width))
        raw()
        noecho()
        nonl()
        keypad(chat_stdscr(), true)
        for (capability, key) in [("kUP3", Key.messageUp), ("kUP5", .messageUp), ("kDN3", .messageDown), ("kDN5", .messageDown),
                                  ("kLFT3", .altLeft), ("kRIT3", .altRight), ("kHOM3", .altHome), ("kEND3", .altEnd),
                                  ("kLFT5", .wordLeft), ("kRIT5", .wordRight)] {
            if let code = Self.extendedKeyCode(capability) { messageKeys[code] = key }
        }
        // No insert/delete-character shifts: a cluster written past curses must stay where it was put.
        idcok(chat_stdscr(), false)
        nodelay(chat_stdscr(), true)
        chat_set_escdelay(25)
        if has_colors() {
            start_color()
            use_default_colors()
            hasColors = true
            colorCount = chat_colors()
        }
        isActive = true
        CursesTerminal.writeRaw("\u{1B}[?2004h") // bracketed paste on
        CursesTerminal.writeRaw("\u{1B}[?1004h") // focus reporting on (notifications while it is elsewhere)
        // Mouse events reach the key decoder as they come (SGR, `ESC [ < B ; X ; Y M`): curses
        // must not take their start for its own KEY_MOUSE (xterm's terminfo says kmous=\E[<).
        keyok(KEY_MOUSE, false)
        CursesTerminal.installCrashHandlers()
    }

    /// Restores the terminal. Safe to call twice.
    public func shutdown() {
        guard isActive else { return }
        isActive = false
        CursesTerminal.writeRaw("\u{1B}[?2004l\u{1B}[?1004l")
        setMouse(false)
        endwin()
    }

    public var size: (width: Int, height: Int) {
        var ws = winsize()
        if ioctl(1, UInt(TIOCGWINSZ), &ws) == 0, ws.ws_col > 0, ws.ws_row > 0 {
            return (Int(ws.ws_col), Int(ws.ws_row))
        }
        return (Int(chat_cols()), Int(chat_lines()))
    }

    /// After SIGWINCH: tell curses the new size and draw everything again.
    public func resized() -> (width: Int, height: Int) {
        let (width, height) = size
        resize_term(Int32(height), Int32(width))
        wclear(chat_stdscr())
        previous = nil
        return (width, height)
    }

    public func forceRedraw() {
        wclear(chat_stdscr())
        previous = nil
    }

    /// Every key waiting now (non-blocking).
    public func readKeys() -> [Key] {
        var keys: [Key] = []
        var character: wint_t = 0
        while true {
            let result = wget_wch(chat_stdscr(), &character)
            if result == ERR { break }
            if result == chat_key_code_yes() {
                if let key = messageKeys[Int32(character)] ?? CursesTerminal.functionKey(Int32(character)) { keys.append(key) }
                continue
            }
            if let scalar = Unicode.Scalar(UInt32(character)) {
                keys += decoder.feed(scalar)
            }
        }
        keys += decoder.flush()
        return keys
    }

    /// The key code curses gives the sequence terminfo names `capability`, if any.
    static func extendedKeyCode(_ capability: String) -> Int32? {
        guard let value = tigetstr(capability) else { return nil }
        // tigetstr says -1 for a capability that is not a string, 0 for one the terminal lacks.
        if Int(bitPattern: value) == -1 { return nil }
        let code = key_defined(value)
        return code > 0 ? code : nil
    }

    static func functionKey(_ code: Int32) -> Key? {
        switch code {
        case KEY_UP: return .up
        case KEY_DOWN: return .down
        case KEY_LEFT: return .left
        case KEY_RIGHT: return .right
        case KEY_HOME: return .home
        case KEY_END: return .end
        case KEY_PPAGE: return .pageUp
        case KEY_NPAGE: return .pageDown
        case KEY_BACKSPACE: return .backspace
        case KEY_DC: return .delete
        case KEY_ENTER: return .enter
        default: return nil
        }
    }

    /// Copies the cells that changed to the terminal and places the cursor. Clusters curses
    /// cannot hold in a cell (`ClusterOverlay`) are blanks to curses and written whole after
    /// its refresh, with the cursor set before and after each.
    public func draw(_ screen: Screen) {
        let full = previous == nil || previous!.width != screen.width || previous!.height != screen.height
        let plan = ClusterOverlay.plan(previous: full ? nil : previous, screen: screen, direct: Self.drawnPastCurses)
        for y in plan.repaint { wredrawln(chat_stdscr(), Int32(y), 1) }
        for y in 0..<screen.height {
            for x in 0..<screen.width {
                let cell = screen[x, y]
                if !full && previous![x, y] == cell { continue }
                if cell.isContinuation { continue }
                if Self.drawnPastCurses(cell.text) {
                    // Its columns, as blanks in its style: curses keeps them; the cluster comes after.
                    let blank = Cell(" ", style: cell.style)
                    for column in x..<min(screen.width, x + DisplayWidth.of(cell.text)) { put(blank, x: column, y: y) }
                    continue
                }
                put(cell, x: x, y: y)
            }
        }
        previous = screen
        if let cursor = screen.cursor {
            curs_set(1)
            wmove(chat_stdscr(), Int32(cursor.y), Int32(cursor.x))
        } else {
            curs_set(0)
        }
        wrefresh(chat_stdscr())
        var bytes = ClusterOverlay.bytes(plan.writes, cursor: (Int(chat_cursor_x()), Int(chat_cursor_y())))
        if !bytes.isEmpty {
            _ = bytes.withUnsafeMutableBytes { write(1, $0.baseAddress, $0.count) }
            // The terminal's attributes are plain again (each write ends in SGR 0): curses is told.
            vidattr(0)
        }
    }

    /// Past curses: what `ClusterOverlay` says, and a single code point whose width the C
    /// library (which curses lays out by) counts otherwise than we do.
    static func drawnPastCurses(_ text: String) -> Bool {
        if ClusterOverlay.needsDirectWrite(text) { return true }
        guard let scalar = text.unicodeScalars.first, text.unicodeScalars.count == 1, scalar.value >= 0x1F000 else { return false }
        return Int(wcwidth(wchar_t(bitPattern: scalar.value))) != DisplayWidth.of(text)
    }

    private func put(_ cell: Cell, x: Int, y: Int) {
        var scalars = Array(cell.text.unicodeScalars.prefix(Int(chat_ccharw_max())))
        // A cut emoji sequence must not end in a joiner.
        while scalars.count > 1 && scalars.last == "\u{200D}" { scalars.removeLast() }
        var wide = scalars.map { wchar_t(bitPattern: $0.value) }
        if wide.isEmpty { wide = [wchar_t(32)] }
        wide.append(0)
        var attrs: Int32 = 0
        let style = cell.style
        if style.bold { attrs |= chat_attr_bold() }
        if style.dim { attrs |= chat_attr_dim() }
        if style.reverse { attrs |= chat_attr_reverse() }
        if style.underline { attrs |= chat_attr_underline() }
        if style.italic { attrs |= chat_attr_italic() }
        let pair = colorPair(style.foreground, style.background)
        _ = chat_put_cell(Int32(y), Int32(x), wide, attrs, pair)
    }

    private func colorPair(_ foreground: PaletteColor?, _ background: PaletteColor?) -> Int32 {
        guard hasColors, foreground != nil || background != nil else { return 0 }
        func fit(_ color: PaletteColor?) -> Int32 {
            guard let color else { return -1 }
            return Int32(color) < colorCount ? Int32(color) : Int32(color) % 8
        }
        let fg = fit(foreground), bg = fit(background)
        let key = Int(fg + 1) * 512 + Int(bg + 1)
        if let pair = pairs[key] { return pair }
        let next = Int32(pairs.count + 1)
        guard next < chat_color_pairs() else { return 0 }
        init_extended_pair(next, fg, bg)
        pairs[key] = next
        return next
    }

    public func bell() { beep() }

    /// Puts text on the terminal's clipboard (OSC 52; terminals that do not allow it ignore it).
    public func copyToClipboard(_ text: String) {
        CursesTerminal.writeRaw("\u{1B}]52;c;" + Base64.encode(Array(text.utf8)) + "\u{7}")
    }

    /// Mouse reporting on or off (clicks and the wheel, SGR-encoded; Shift keeps the terminal's
    /// own selection).
    public func setMouse(_ on: Bool) {
        CursesTerminal.writeRaw(on ? "\u{1B}[?1000h\u{1B}[?1006h" : "\u{1B}[?1006l\u{1B}[?1000l")
    }

    /// Writes a desktop notification's sequence (`DesktopNotification.sequence`).
    public func writeSequence(_ bytes: String) { CursesTerminal.writeRaw(bytes) }

    /// Sets the terminal window's title (xterm-style OSC 0).
    public func setTitle(_ title: String) {
        let safe = String(title.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.map(Character.init))
        CursesTerminal.writeRaw("\u{1B}]0;\(safe)\u{7}")
    }

    static func writeRaw(_ text: String) {
        var bytes = Array(text.utf8)
        _ = bytes.withUnsafeMutableBytes { write(1, $0.baseAddress, $0.count) }
    }

    /// Without a UTF-8 locale ncurses drops every non-ASCII character.
    static func ensureUTF8Locale() {
        setlocale(LC_ALL, "")
        let codeset = String(cString: nl_langinfo(nl_item(CODESET)))
        if codeset.uppercased().replacingDashes() != "UTF8" {
            setlocale(LC_ALL, "C.UTF-8")
        }
    }

    /// A crash must not leave the terminal in raw mode: restore it, then die as we would have.
    static func installCrashHandlers() {
        for number in [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT] {
            signal(number) { received in
                endwin()
                let off = "\u{1B}[?2004l"
                _ = off.withCString { write(1, $0, strlen($0)) }
                signal(received, SIG_DFL)
                raise(received)
            }
        }
    }
}

extension String {
    func replacingDashes() -> String { filter { $0 != "-" } }
}
