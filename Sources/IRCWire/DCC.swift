/// CTCP framing: `\u{1}VERB args\u{1}` inside a PRIVMSG or NOTICE.
public enum CTCP {
    /// The verb and its argument text, or nil when `text` is not CTCP.
    public static func parse(_ text: String) -> (verb: String, arguments: String)? {
        guard text.hasPrefix("\u{1}") else { return nil }
        var body = text.dropFirst()
        if body.hasSuffix("\u{1}") { body = body.dropLast() }
        let verb = body.prefix(while: { $0 != " " })
        guard !verb.isEmpty else { return nil }
        return (verb.uppercased(), String(body.dropFirst(verb.count).drop(while: { $0 == " " })))
    }

    public static func make(_ verb: String, _ arguments: String) -> String {
        arguments.isEmpty ? "\u{1}\(verb)\u{1}" : "\u{1}\(verb) \(arguments)\u{1}"
    }
}

/// The DCC requests used for file transfer, as carried in CTCP.
public enum DCCMessage: Equatable, Sendable {
    /// `DCC SEND name address port size [token]`. Port 0 with a token is a passive (reverse)
    /// offer; the receiver answers with the same SEND carrying its own address, port and the token.
    case send(fileName: String, address: String, port: Int, size: UInt64, token: String?)
    /// `DCC RESUME name port position [token]`: the receiver asks to continue from `position`.
    case resume(fileName: String, port: Int, position: UInt64, token: String?)
    /// `DCC ACCEPT name port position [token]`: the sender agrees to resume.
    case accept(fileName: String, port: Int, position: UInt64, token: String?)

    /// Parses the text of a PRIVMSG; nil when it is not a DCC request we know.
    public init?(ctcp text: String) {
        guard let (verb, arguments) = CTCP.parse(text), verb == "DCC" else { return nil }
        var words = DCCMessage.split(arguments)
        guard words.count >= 2 else { return nil }
        let kind = words.removeFirst().uppercased()
        let name = words.removeFirst()
        switch kind {
        case "SEND":
            guard words.count >= 3, let port = Int(words[1]), (0...65535).contains(port), let size = UInt64(words[2]) else { return nil }
            self = .send(fileName: name, address: DCCMessage.decodeAddress(words[0]), port: port, size: size,
                         token: words.count > 3 ? words[3] : nil)
        case "RESUME", "ACCEPT":
            guard words.count >= 2, let port = Int(words[0]), (0...65535).contains(port), let position = UInt64(words[1]) else { return nil }
            let token = words.count > 2 ? words[2] : nil
            self = kind == "RESUME" ? .resume(fileName: name, port: port, position: position, token: token)
                                    : .accept(fileName: name, port: port, position: position, token: token)
        default:
            return nil
        }
    }

    /// The CTCP text to put in a PRIVMSG.
    public var ctcp: String {
        switch self {
        case .send(let name, let address, let port, let size, let token):
            var words = ["SEND", DCCMessage.quote(name), DCCMessage.encodeAddress(address), String(port), String(size)]
            if let token { words.append(token) }
            return CTCP.make("DCC", words.joined(separator: " "))
        case .resume(let name, let port, let position, let token), .accept(let name, let port, let position, let token):
            let verb: String
            if case .resume = self { verb = "RESUME" } else { verb = "ACCEPT" }
            var words = [verb, DCCMessage.quote(name), String(port), String(position)]
            if let token { words.append(token) }
            return CTCP.make("DCC", words.joined(separator: " "))
        }
    }

    /// Words separated by spaces; a name in double quotes may contain spaces.
    static func split(_ text: String) -> [String] {
        var words: [String] = []
        var current = ""
        var quoted = false
        for character in text {
            if character == "\"" { quoted.toggle(); continue }
            if character == " " && !quoted {
                if !current.isEmpty { words.append(current); current = "" }
                continue
            }
            current.append(character)
        }
        if !current.isEmpty { words.append(current) }
        return words
    }

    public static func quote(_ name: String) -> String {
        let clean = name.replacingQuotes()
        return clean.contains(" ") ? "\"\(clean)\"" : clean
    }

    /// IPv4 travels as one unsigned 32-bit number; IPv6 as text.
    public static func encodeAddress(_ address: String) -> String {
        let parts = address.split(separator: ".")
        guard parts.count == 4, let bytes = Optional(parts.compactMap { UInt32($0) }), bytes.count == 4,
              bytes.allSatisfy({ $0 < 256 }) else { return address }
        return String(bytes.reduce(UInt32(0)) { $0 << 8 | $1 })
    }

    public static func decodeAddress(_ text: String) -> String {
        guard let value = UInt32(text) else { return text }
        return "\(value >> 24).\(value >> 16 & 255).\(value >> 8 & 255).\(value & 255)"
    }
}

extension String {
    func replacingQuotes() -> String { filter { $0 != "\"" } }
}

/// What an offered file name becomes on disk: a plain name, never a path.
public enum SafeFileName {
    public static let maxBytes = 200

    public static func make(_ offered: String) -> String {
        // Keep only what follows the last slash or backslash: no directories, no absolute paths.
        var name = offered.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        // Controls become `_`; bidi and invisible characters are dropped: `holiday<U+202E>gpj.exe`
        // is saved as `holidaygpj.exe`, a name that shows what the file is.
        name = String(String.UnicodeScalarView(name.unicodeScalars.filter { !PlainText.isInvisible($0) }.map { scalar -> Unicode.Scalar in
            let value = scalar.value
            let unsafe = value < 0x20 || value == 0x7F || (0x80..<0xA0).contains(value) || "<>:\"|?*".unicodeScalars.contains(scalar)
            return unsafe ? "_" : scalar
        }))
        name = name.trimmingSpacesAndDots()
        // No hidden files, nothing that reads as an option to a later shell command.
        while let first = name.first, first == "." || first == "-" { name.removeFirst() }
        if name.isEmpty || name == ".." { name = "download" }
        if name.utf8.count > maxBytes {
            // Keep the extension when there is a short one.
            let dot = name.lastIndex(of: ".")
            let ext = dot.map { String(name[$0...]) } ?? ""
            if !ext.isEmpty && ext.utf8.count <= 16 {
                name = UTF8Boundary.prefix(String(name[..<dot!]), maxBytes: maxBytes - ext.utf8.count) + ext
            } else {
                name = UTF8Boundary.prefix(name, maxBytes: maxBytes)
            }
        }
        return name
    }

    /// `name`, or `name (1).ext`, `name (2).ext`… — the first for which `exists` is false.
    public static func unique(_ name: String, exists: (String) -> Bool) -> String {
        if !exists(name) && !exists(name + ".part") { return name }
        let dot = name.lastIndex(of: ".").flatMap { $0 == name.startIndex ? nil : $0 }
        let stem = dot.map { String(name[..<$0]) } ?? name
        let ext = dot.map { String(name[$0...]) } ?? ""
        var n = 1
        while true {
            let candidate = "\(stem) (\(n))\(ext)"
            if !exists(candidate) && !exists(candidate + ".part") { return candidate }
            n += 1
        }
    }
}

extension String {
    func trimmingSpacesAndDots() -> String {
        var text = Substring(self)
        while let last = text.last, last == " " || last == "." { text.removeLast() }
        while let first = text.first, first == " " { text.removeFirst() }
        return String(text)
    }
}
