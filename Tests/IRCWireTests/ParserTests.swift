import Testing
@testable import IRCWire

struct ParseCase: CustomTestStringConvertible, Sendable {
    let line: String
    let tags: [IRCTag]
    let source: String?
    let command: String
    let params: [String]
    var testDescription: String { line }

    init(_ line: String, tags: [IRCTag] = [], source: String? = nil, _ command: String, _ params: [String] = []) {
        self.line = line
        self.tags = tags
        self.source = source
        self.command = command
        self.params = params
    }
}

let parseCases: [ParseCase] = [
    ParseCase("PING", "PING"),
    ParseCase("ping :x", "PING", ["x"]),
    ParseCase("PRIVMSG #lobby :hello world", "PRIVMSG", ["#lobby", "hello world"]),
    ParseCase(":alice!a@host PRIVMSG bob :hi", source: "alice!a@host", "PRIVMSG", ["bob", "hi"]),
    ParseCase(":irc.example 001 alice :Welcome", source: "irc.example", "001", ["alice", "Welcome"]),
    ParseCase("USER u 0 * :Real Name", "USER", ["u", "0", "*", "Real Name"]),
    ParseCase("PRIVMSG #a :", "PRIVMSG", ["#a", ""]),
    ParseCase("PRIVMSG #a ::starts with colon", "PRIVMSG", ["#a", ":starts with colon"]),
    ParseCase("MODE   #a    +o    bob", "MODE", ["#a", "+o", "bob"]),
    ParseCase("JOIN #a ", "JOIN", ["#a"]),
    ParseCase("@time=2026-01-01T00:00:00.000Z :n!u@h PRIVMSG #a :x",
              tags: [IRCTag("time", "2026-01-01T00:00:00.000Z")], source: "n!u@h", "PRIVMSG", ["#a", "x"]),
    ParseCase("@a=b;c;+d=e\\sf\\:g TAGMSG #a",
              tags: [IRCTag("a", "b"), IRCTag("c"), IRCTag("+d", "e f;g")], "TAGMSG", ["#a"]),
    ParseCase("@k=back\\\\slash\\r\\n TAGMSG x", tags: [IRCTag("k", "back\\slash\r\n")], "TAGMSG", ["x"]),
    ParseCase("@k=\\x\\ TAGMSG x", tags: [IRCTag("k", "x")], "TAGMSG", ["x"]),
    ParseCase("@k= TAGMSG x", tags: [IRCTag("k")], "TAGMSG", ["x"]),
    ParseCase("PRIVMSG 小明 :你好，世界 🎉", "PRIVMSG", ["小明", "你好，世界 🎉"]),
    ParseCase("NICK Zoë", "NICK", ["Zoë"]),
    ParseCase("A B C D E F G H I J K L M N O P Q", "A", ["B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N", "O", "P", "Q"]),
]

@Test("parses", arguments: parseCases)
func parses(_ c: ParseCase) throws {
    let message = try IRCMessage(parsing: c.line)
    #expect(message.tags == c.tags)
    #expect(message.source == c.source)
    #expect(message.command == c.command)
    #expect(message.params == c.params)
}

struct BadLine: CustomTestStringConvertible, Sendable {
    let bytes: [UInt8]
    let error: IRCParseError
    let testDescription: String
    init(_ text: String, _ error: IRCParseError) {
        bytes = Array(text.utf8); self.error = error; testDescription = text
    }
    init(bytes: [UInt8], _ error: IRCParseError, _ name: String) {
        self.bytes = bytes; self.error = error; testDescription = name
    }
}

let badLines: [BadLine] = [
    BadLine("", .empty),
    BadLine("    ", .empty),
    BadLine(":source-only", .missingCommand),
    BadLine(":source ", .missingCommand),
    BadLine("@tag=1", .missingCommand),
    BadLine("12 x", .invalidCommand("12")),
    BadLine("PRIV-MSG x", .invalidCommand("PRIV-MSG")),
    BadLine("1234 x", .invalidCommand("1234")),
    BadLine(bytes: Array("PRIVMSG #a :nul".utf8) + [0] + Array("here".utf8), .containsNul, "NUL byte"),
    BadLine("PRIVMSG #a :" + String(repeating: "x", count: 500), .lineTooLong(512)),
    BadLine("@" + String(repeating: "a", count: 8191) + " PING", .tagsTooLong(8193)),
]

@Test("rejects", arguments: badLines)
func rejects(_ c: BadLine) {
    #expect(throws: c.error) { try IRCMessage(bytes: c.bytes) }
}

@Test("invalid UTF-8 becomes replacement characters, nothing else is lost")
func invalidUTF8() throws {
    let bytes = Array("PRIVMSG #a :ab".utf8) + [0xFF, 0xC3] + Array("cd".utf8)
    let message = try IRCMessage(bytes: bytes)
    #expect(message.params[1] == "ab\u{FFFD}\u{FFFD}cd")
}

@Test("a line of exactly 510 bytes is accepted")
func exactLimit() throws {
    let line = "PRIVMSG #a :" + String(repeating: "x", count: 510 - 12)
    #expect(line.utf8.count == 510)
    #expect(try IRCMessage(parsing: line).params[1].count == 498)
}

@Test("tags do not count against the 512-byte body")
func tagsSeparate() throws {
    let tag = "@+x=" + String(repeating: "a", count: 4000) + " "
    let line = tag + "PRIVMSG #a :" + String(repeating: "y", count: 498)
    #expect(try IRCMessage(parsing: line).tags.first?.value.count == 4000)
}

@Suite("PlainTextLine")
struct PlainTextLineTests {
    @Test("finds the target and text of a plain PRIVMSG or NOTICE, as the parser reads them", arguments: [
        "PRIVMSG bob :hi", "NOTICE bob :hi there", "PRIVMSG bob ::colon", "PRIVMSG #room :to a room",
        "PRIVMSG bob :caf\u{E9} \u{1F600}", "PRIVMSG bob :  spaces  ", "PRIVMSG b :" + String(repeating: "x", count: 499),
    ])
    func accepted(line: String) throws {
        let bytes = Array(line.utf8)
        let plain = try #require(PlainTextLine(bytes))
        let parsed = try IRCMessage(bytes: bytes)
        #expect(plain.isNotice == (parsed.command == "NOTICE"))
        #expect(String(decoding: bytes[plain.target], as: UTF8.self) == parsed.params[0])
        #expect(String(decoding: bytes[plain.text], as: UTF8.self) == parsed.params[1])
        #expect(parsed.params.count == 2)
    }

    @Test("leaves every other line to the parser", arguments: [
        "privmsg bob :hi", "@label=x PRIVMSG bob :hi", ":alice PRIVMSG bob :hi", "PRIVMSG bob,carol :hi",
        "PRIVMSG bob hi", "PRIVMSG  bob :hi", "PRIVMSG bob  :hi", "PRIVMSG bob :", "PRIVMSG bob", "PRIVMSG :hi",
        "PRIVMSG", "PRIVMSGX bob :hi", "TAGMSG bob", "PRIVMSG b :" + String(repeating: "x", count: 500),
        "PRIVMSG bob :a\rb", "PRIVMSG bob :a\nb", "PRIVMSG b\rob :x", "PRIVMSG bob :\r",
    ])
    func refused(line: String) {
        #expect(PlainTextLine(Array(line.utf8)) == nil)
    }

    @Test("a room's plain line is told by its first bytes, before any scan")
    func namesRoom() {
        for line in ["PRIVMSG #room :hi", "NOTICE #r :x", "PRIVMSG #"] { #expect(PlainTextLine.namesRoom(Array(line.utf8)), "\(line)") }
        for line in ["PRIVMSG bob :hi", "NOTICE bob :#x", "PRIVMSG ", "PRIVMSG", "@t=1 PRIVMSG #room :hi", ":a PRIVMSG #r :x", "JOIN #room", ""] {
            #expect(!PlainTextLine.namesRoom(Array(line.utf8)), "\(line)")
        }
    }

    /// The text is scanned eight bytes at a time: a NUL, CR or LF, or a byte of 0x80 or more,
    /// must be seen wherever it falls (in a word, in the tail, at either edge of a word).
    @Test("a NUL, CR or LF anywhere in the text is refused, and any high byte makes it checked as UTF-8")
    func everyPosition() {
        for length in 1...40 {
            let text = (0..<length).map { UInt8(ascii: "a") + UInt8($0 % 26) }
            let clean = Array("PRIVMSG bob :".utf8) + text
            #expect(PlainTextLine(clean)?.text.count == length)
            for position in 0..<length {
                for bad: UInt8 in [0, 10, 13] {
                    var line = clean
                    line[13 + position] = bad
                    #expect(PlainTextLine(line) == nil, "\(bad) at \(position) of \(length)")
                }
                // Near misses are ordinary text: 0x01, 0x09, 0x0B, 0x0C, 0x0E, 0x7F.
                for fine: UInt8 in [1, 9, 11, 12, 14, 0x7F] {
                    var line = clean
                    line[13 + position] = fine
                    #expect(PlainTextLine(line) != nil, "\(fine) at \(position) of \(length)")
                }
                // A lone 0xC3 is invalid UTF-8 (refused); 0xC3 0xA9 is é (taken).
                var invalid = clean
                invalid[13 + position] = 0xC3
                #expect(PlainTextLine(invalid) == nil, "0xC3 at \(position) of \(length)")
                if position + 1 < length {
                    var valid = clean
                    valid[13 + position] = 0xC3
                    valid[14 + position] = 0xA9
                    #expect(PlainTextLine(valid) != nil, "é at \(position) of \(length)")
                }
            }
        }
    }

    @Test("leaves a NUL or invalid UTF-8 to the parser (its error, its repair)")
    func refusedBytes() {
        #expect(PlainTextLine(Array("PRIVMSG bob :a".utf8) + [0, 98]) == nil)
        #expect(PlainTextLine(Array("PRIVMSG bob :caf".utf8) + [0xC3]) == nil)
        #expect(PlainTextLine(Array("PRIVMSG b".utf8) + [0, 98] + Array(" :x".utf8)) == nil)
        #expect(PlainTextLine(Array("PRIVMSG bob :caf".utf8) + [0xC3, 0xA9]) != nil)
    }
}
