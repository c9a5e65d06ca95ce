import Testing
@testable import IRCWire

struct SerializeCase: CustomTestStringConvertible, Sendable {
    let message: IRCMessage
    let line: String
    var testDescription: String { line }
}

let serializeCases: [SerializeCase] = [
    SerializeCase(message: IRCMessage("PING", "x"), line: "PING x"),
    SerializeCase(message: IRCMessage("PRIVMSG", "#a", "hello world"), line: "PRIVMSG #a :hello world"),
    SerializeCase(message: IRCMessage("PRIVMSG", "#a", ""), line: "PRIVMSG #a :"),
    SerializeCase(message: IRCMessage("PRIVMSG", "#a", ":x"), line: "PRIVMSG #a ::x"),
    SerializeCase(message: IRCMessage(source: "n!u@h", command: "QUIT", params: []), line: ":n!u@h QUIT"),
    SerializeCase(message: IRCMessage(tags: [IRCTag("a", "b c;d\\"), IRCTag("e")], command: "TAGMSG", params: ["#a"]),
                  line: "@a=b\\sc\\:d\\\\;e TAGMSG #a"),
    SerializeCase(message: IRCMessage("PRIVMSG", "#a", "one\r\ntwo"), line: "PRIVMSG #a :one  two"),
]

@Test("serialises", arguments: serializeCases)
func serialises(_ c: SerializeCase) {
    #expect(c.message.line == c.line)
    #expect(Array(c.message.serialized().suffix(2)) == [13, 10])
}

@Test("round trip", arguments: parseCases)
func roundTrip(_ c: ParseCase) throws {
    let message = try IRCMessage(parsing: c.line)
    let again = try IRCMessage(bytes: message.serialized().dropLast(2))
    #expect(again == message)
}

@Test("over-long output is cut at a character boundary, never inside UTF-8", arguments: [1, 2, 3, 4])
func cutAtBoundary(width: Int) throws {
    let character: String = ["x", "é", "中", "😀"][width - 1]
    let text = String(repeating: character, count: 600)
    let bytes = IRCMessage(source: "someone!user@host", command: "PRIVMSG", params: ["#room", text]).serialized()
    #expect(bytes.count <= 512)
    #expect(Array(bytes.suffix(2)) == [13, 10])
    let body = String(validating: bytes.dropLast(2), as: UTF8.self)
    #expect(body != nil, "cut inside a character")
    #expect(body!.hasSuffix(character))
}

@Test("the tag section is not part of the 512-byte cut")
func tagsKeptWhole() {
    let message = IRCMessage(tags: [IRCTag("time", "2026-11-29T00:00:00.000Z")], source: "s", command: "PRIVMSG",
                             params: ["#a", String(repeating: "a", count: 600)])
    let bytes = message.serialized()
    #expect(bytes.count == 512 + "@time=2026-11-29T00:00:00.000Z ".utf8.count)
}

@Test("UTF8Boundary.prefix keeps whole characters")
func prefixByBytes() {
    #expect(UTF8Boundary.prefix("héllo", maxBytes: 2) == "h")
    #expect(UTF8Boundary.prefix("héllo", maxBytes: 3) == "hé")
    #expect(UTF8Boundary.prefix("👨‍👩‍👧", maxBytes: 10) == "")
    #expect(UTF8Boundary.prefix("abc", maxBytes: 10) == "abc")
}

@Test("source nick!user@host")
func sourceParsing() {
    let full = IRCSource(parsing: "nick!user@host.example")
    #expect(full.nick == "nick" && full.user == "user" && full.host == "host.example")
    let server = IRCSource(parsing: "irc.example")
    #expect(server.nick == "irc.example" && server.user == nil && server.host == nil)
    #expect(IRCSource(parsing: "a@b").host == "b")
    #expect(full.description == "nick!user@host.example")
}

@Test("fuzz finding (irc): a source or a command holding CR, LF or NUL is still written as one line")
func sourceAndCommandStayOneLine() {
    let message = IRCMessage(source: "alic\ne!al@10.0.0.1", command: "BA\rTCH\0", params: ["-s"])
    let line = message.serialized()
    #expect(line.filter { $0 == 10 }.count == 1 && !line.dropLast(2).contains(13) && !line.contains(0))
    #expect(String(decoding: line, as: UTF8.self) == ":alic e!al@10.0.0.1 BA TCH  -s\r\n")
}

@Test("a message's text with a CR, LF or NUL at any place, or a byte just above them, is written as one line, the rest as it was")
func textBreaksEveryPosition() {
    for length in 1...24 {
        let plain = String((0..<length).map { Character(Unicode.Scalar(UInt8(ascii: "a") + UInt8($0 % 26))) })
        #expect(!IRCMessage.mayHoldBreak(plain))
        #expect(IRCMessage(command: "PRIVMSG", params: ["#r", plain]).serialized() == Array("PRIVMSG #r :\(plain)\r\n".utf8))
        for position in 0..<length {
            for (byte, written) in [(UInt8(13), UInt8(32)), (10, 32), (0, 32), (1, 1), (14, 14), (0x7F, 0x7F)] {
                var bytes = Array(plain.utf8)
                bytes[position] = byte
                let text = String(decoding: bytes, as: UTF8.self)
                #expect(IRCMessage.mayHoldBreak(text) == (byte < 14), "\(byte) at \(position) of \(length)")
                var expected = bytes
                expected[position] = written
                let line = IRCMessage(command: "PRIVMSG", params: ["#r", text]).serialized()
                #expect(line == Array("PRIVMSG #r :".utf8) + expected + [13, 10], "\(byte) at \(position) of \(length)")
            }
        }
    }
}
