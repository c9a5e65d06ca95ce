import Testing
@testable import IRCWire

/// Feeds `bytes` in chunks of `size` and collects what comes out.
func frame(_ bytes: [UInt8], chunk size: Int, max: Int = IRCLimits.frameBytes) -> [FramedLine] {
    var framer = LineFramer(maxLineBytes: max)
    var out: [FramedLine] = []
    var index = 0
    while index < bytes.count {
        let end = Swift.min(index + size, bytes.count)
        out += framer.feed(bytes[index..<end])
        index = end
    }
    return out
}

func lines(_ texts: String...) -> [FramedLine] { texts.map { .line(Array($0.utf8)) } }

struct FramerCase: CustomTestStringConvertible, Sendable {
    let name: String
    let input: [UInt8]
    let expected: [FramedLine]
    let max: Int
    var testDescription: String { name }
    init(_ name: String, _ input: String, _ expected: [FramedLine], max: Int = IRCLimits.frameBytes) {
        self.name = name; self.input = Array(input.utf8); self.expected = expected; self.max = max
    }
}

let framerCases: [FramerCase] = [
    FramerCase("CRLF", "NICK a\r\nUSER a 0 * :A\r\n", lines("NICK a", "USER a 0 * :A")),
    FramerCase("bare LF", "NICK a\nUSER a 0 * :A\n", lines("NICK a", "USER a 0 * :A")),
    FramerCase("unfinished line is held", "PING x\r\nPING y", lines("PING x")),
    FramerCase("empty lines", "\r\n\n", lines("", "")),
    FramerCase("UTF-8 split across chunks", "PRIVMSG #a :你好😀\r\n", lines("PRIVMSG #a :你好😀")),
    FramerCase("CR inside a line is kept", "A\rB\r\n", lines("A\rB")),
    FramerCase("over-long line reported, next line fine", String(repeating: "x", count: 40) + "\r\nOK\r\n",
               [.overlong(discardedBytes: 41), .line(Array("OK".utf8))], max: 20),
    FramerCase("line at the cap passes", String(repeating: "y", count: 20) + "\r\n",
               [.line(Array(repeating: UInt8(ascii: "y"), count: 20))], max: 20),
    // The byte of slack kept for a CR: a bare-LF line one over the cap passes, two over does not.
    FramerCase("one over the cap with a bare LF passes", String(repeating: "y", count: 21) + "\n",
               [.line(Array(repeating: UInt8(ascii: "y"), count: 21))], max: 20),
    FramerCase("two over the cap is over-long", String(repeating: "y", count: 21) + "\r\nOK\n",
               [.overlong(discardedBytes: 22), .line(Array("OK".utf8))], max: 20),
    FramerCase("lines after a line split across reads", "PING a\r\nPING b\r\nPING c\r\n", lines("PING a", "PING b", "PING c")),
]

@Test("frames lines in chunks of 1, 2, 5 and all at once",
      arguments: framerCases, [1, 2, 5, 1_000_000])
func framesInChunks(_ c: FramerCase, chunk: Int) {
    #expect(frame(c.input, chunk: chunk, max: c.max) == c.expected)
}

@Test("an endless line without LF never grows the buffer past the cap")
func boundedMemory() {
    var framer = LineFramer(maxLineBytes: 1000)
    let chunk = [UInt8](repeating: 65, count: 700)
    for _ in 0..<1000 {
        #expect(framer.feed(chunk).isEmpty)
        #expect(framer.pendingBytes <= 1001)
    }
    #expect(framer.feed(Array("\nPING x\n".utf8)) == [.overlong(discardedBytes: 700_000), .line(Array("PING x".utf8))])
}
