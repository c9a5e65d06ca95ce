#if canImport(Glibc)
import Glibc
#endif

/// Why a line is not an IRC message.
public enum IRCParseError: Error, Equatable, Sendable, CustomStringConvertible {
    case empty
    case missingCommand
    case invalidCommand(String)
    case tagsTooLong(Int)
    case lineTooLong(Int)
    case containsNul

    public var description: String {
        switch self {
        case .empty: return "empty line"
        case .missingCommand: return "no command"
        case .invalidCommand(let c): return "invalid command \"\(c)\""
        case .tagsTooLong(let n): return "tags are \(n) bytes, more than \(IRCLimits.tagBytes)"
        case .lineTooLong(let n): return "line is \(n) bytes, more than \(IRCLimits.lineBytes - 2)"
        case .containsNul: return "line contains a NUL byte"
        }
    }
}

extension IRCMessage {
    /// Parses one line without its line ending. Invalid UTF-8 becomes U+FFFD, so text is never lost whole.
    public init(parsing line: String) throws(IRCParseError) {
        try self.init(bytes: Array(line.utf8))
    }

    /// Parses one line (without CR LF) from raw bytes.
    public init(bytes: some Collection<UInt8>) throws(IRCParseError) {
        try self.init(line: Array(bytes))
    }

    /// The concrete entry point (a generic one called across modules is not specialised).
    public init(bytes: [UInt8]) throws(IRCParseError) {
        try self.init(line: bytes)
    }

    /// A line between servers: their lines may be longer than a client's 512 bytes (a burst's
    /// FJOIN, a CAPAB list), up to `maxBodyBytes` after the tags.
    public init(serverLine bytes: [UInt8], maxBodyBytes: Int) throws(IRCParseError) {
        try self.init(line: bytes, maxBodyBytes: maxBodyBytes)
    }

    init(line: [UInt8], maxBodyBytes: Int = IRCLimits.lineBytes - 2) throws(IRCParseError) {
        var index = 0
        let end = line.count
        // (memchr: a byte-by-byte `contains` was ~3 instructions a byte of every line.)
        if line.withUnsafeBufferPointer({ bytes in bytes.baseAddress.map { memchr($0, 0, bytes.count) != nil } ?? false }) {
            throw .containsNul
        }

        func skipSpaces() {
            while index < end && line[index] == UInt8(ascii: " ") { index += 1 }
        }
        func word() -> ArraySlice<UInt8> {
            let start = index
            while index < end && line[index] != UInt8(ascii: " ") { index += 1 }
            return line[start..<index]
        }

        skipSpaces()
        if index == end { throw .empty }

        var tags: [IRCTag] = []
        if line[index] == UInt8(ascii: "@") {
            let start = index
            index += 1
            let raw = word()
            if index - start + 1 > IRCLimits.tagBytes { throw .tagsTooLong(index - start + 1) }
            tags = IRCTagCoding.parse(raw)
            skipSpaces()
        }
        let bodyStart = index
        if end - bodyStart > maxBodyBytes { throw .lineTooLong(end - bodyStart) }

        var source: String?
        if index < end && line[index] == UInt8(ascii: ":") {
            index += 1
            source = String(decoding: word(), as: UTF8.self)
            skipSpaces()
        }
        if index == end { throw .missingCommand }
        let commandBytes = word()
        let command = String(decoding: commandBytes, as: UTF8.self)
        guard IRCMessage.isValidCommand(commandBytes) else { throw .invalidCommand(command) }

        var params: [String] = []
        // Room for the usual two or three at once (growing from empty allocated twice a line).
        params.reserveCapacity(4)
        while true {
            skipSpaces()
            if index == end { break }
            if line[index] == UInt8(ascii: ":") {
                params.append(String(decoding: line[(index + 1)..<end], as: UTF8.self))
                break
            }
            params.append(String(decoding: word(), as: UTF8.self))
        }
        // Commands are usually sent in capitals already: then nothing to make.
        let upper = commandBytes.allSatisfy { !($0 >= 97 && $0 <= 122) } ? command : command.uppercased()
        self.init(tags: tags, source: source, command: upper, params: params)
    }

    /// A command is letters only, or exactly three digits.
    static func isValidCommand(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard !bytes.isEmpty else { return false }
        if bytes.allSatisfy({ ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) }) { return true }
        return bytes.count == 3 && bytes.allSatisfy { $0 >= 48 && $0 <= 57 }
    }
}

/// A PRIVMSG or NOTICE in the form clients nearly always send it — no tags, no source, the
/// command in capitals, one target, one space each, the text in the trailing form:
/// `PRIVMSG bob :hello`. It says where the target and the text are in the line, so a server
/// can relay the line without parsing it into an `IRCMessage`.
public struct PlainTextLine: Sendable, Equatable {
    public let isNotice: Bool
    public let target: Range<Int>
    public let text: Range<Int>

    /// Nil for every other line (tags, a source, lower case, a list of targets, extra spaces or
    /// parameters, an empty text, a NUL, CR or LF, invalid UTF-8, over the length limit): the parser
    /// takes those, with its errors and repairs.
    public init?(_ line: [UInt8]) {
        let count = line.count
        guard count <= IRCLimits.lineBytes - 2 else { return nil }
        let start: Int
        if PlainTextLine.starts(line, PlainTextLine.privmsg) {
            isNotice = false
            start = PlainTextLine.privmsg.count
        } else if PlainTextLine.starts(line, PlainTextLine.notice) {
            isNotice = true
            start = PlainTextLine.notice.count
        } else {
            return nil
        }
        // One pass: the target's end, and whether any byte is a NUL, CR or LF (a CR inside a line
        // is kept by the framer; relayed raw it would start a forged line on some clients: the
        // serialiser makes it a space), a comma in the target, or not ASCII (only then is the
        // line checked as UTF-8).
        let found: (end: Int, clean: Bool, ascii: Bool) = line.withUnsafeBufferPointer { bytes in
            var index = start
            var high: UInt8 = 0
            while index < count, bytes[index] != UInt8(ascii: " ") {
                let byte = bytes[index]
                if byte == UInt8(ascii: ",") || byte == 0 || byte == 10 || byte == 13 { return (index, false, true) }
                high |= byte
                index += 1
            }
            let end = index
            // The target, a space, a colon and at least one byte of text.
            guard end > start, end + 2 < count, bytes[end + 1] == UInt8(ascii: ":") else { return (end, false, true) }
            // The text eight bytes at a time: a word has a NUL, LF or CR byte exactly when one of
            // `w`, `w ^ 0x0A…`, `w ^ 0x0D…` has a zero byte (`(x - 0x01…) & ~x & 0x80…` is non-zero
            // exactly then), and a byte ≥ 0x80 shows in the OR of the words.
            let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
            func hasZeroByte(_ x: UInt64) -> Bool { (x &- ones) & ~x & highs != 0 }
            var i = end + 2
            var wordHigh: UInt64 = 0
            let base = UnsafeRawPointer(bytes.baseAddress!)
            while i + 8 <= count {
                let word = base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                if hasZeroByte(word) || hasZeroByte(word ^ (ones &* 0x0A)) || hasZeroByte(word ^ (ones &* 0x0D)) { return (end, false, true) }
                wordHigh |= word
                i += 8
            }
            while i < count {
                let byte = bytes[i]
                if byte == 0 || byte == 10 || byte == 13 { return (end, false, true) }
                high |= byte
                i += 1
            }
            return (end, true, high < 0x80 && wordHigh & highs == 0)
        }
        guard found.clean, found.ascii || UTF8Validation.isValid(line) else { return nil }
        target = start..<found.end
        text = (found.end + 2)..<count
    }

    private static let privmsg = Array("PRIVMSG ".utf8)
    private static let notice = Array("NOTICE ".utf8)

    /// A plain `PRIVMSG #…` or `NOTICE #…`: a room's line, told by its first bytes (the direct
    /// message's fast path steps aside before scanning the rest).
    public static func namesRoom(_ line: [UInt8]) -> Bool {
        let start = starts(line, privmsg) ? privmsg.count : starts(line, notice) ? notice.count : 0
        return start > 0 && start < line.count && line[start] == UInt8(ascii: "#")
    }

    private static func starts(_ line: [UInt8], _ word: [UInt8]) -> Bool {
        guard line.count > word.count else { return false }
        for i in 0..<word.count where line[i] != word[i] { return false }
        return true
    }
}
