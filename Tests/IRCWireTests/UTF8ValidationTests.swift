import Testing
import IRCWire

@Suite("UTF-8 validation")
struct UTF8ValidationTests {
    @Test("the ASCII check reads eight bytes at a time: a high byte anywhere, at every length, is found")
    func asciiEveryPosition() {
        for length in 0...25 {
            let plain = [UInt8](repeating: UInt8(ascii: "a"), count: length)
            #expect(UTF8Validation.isASCII(plain) && UTF8Validation.isValid(plain))
            for position in 0..<length {
                var bytes = plain
                bytes[position] = 0x80
                #expect(!UTF8Validation.isASCII(bytes), "length \(length), high byte at \(position)")
                #expect(!UTF8Validation.isValid(bytes), "a lone continuation byte is not UTF-8")
                bytes.replaceSubrange(position...position, with: Array("é".utf8))
                #expect(UTF8Validation.isValid(bytes), "length \(length), é at \(position)")
            }
        }
    }

    @Test("overlong forms, surrogates and code points past U+10FFFF are refused")
    func malformed() {
        for bad: [UInt8] in [[0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82], [0xFF]] {
            #expect(!UTF8Validation.isValid(Array("hello ".utf8) + bad + Array(" world".utf8)), "\(bad)")
        }
        #expect(UTF8Validation.isValid(Array("emoji 🎉 and 中文 text".utf8)))
    }
}
