import Testing
@testable import IRCWire

@Suite("DCC and CTCP")
struct DCCTests {
    @Test("DCC SEND, RESUME and ACCEPT parse and print", arguments: [
        ("\u{1}DCC SEND report.pdf 2130706433 50000 1048576\u{1}",
         DCCMessage.send(fileName: "report.pdf", address: "127.0.0.1", port: 50000, size: 1_048_576, token: nil)),
        ("\u{1}DCC SEND \"my file.txt\" 3232235777 0 12 77\u{1}",
         DCCMessage.send(fileName: "my file.txt", address: "192.168.1.1", port: 0, size: 12, token: "77")),
        ("\u{1}DCC SEND f ::1 4000 5\u{1}", DCCMessage.send(fileName: "f", address: "::1", port: 4000, size: 5, token: nil)),
        ("\u{1}DCC RESUME report.pdf 50000 4096\u{1}", DCCMessage.resume(fileName: "report.pdf", port: 50000, position: 4096, token: nil)),
        ("\u{1}DCC ACCEPT report.pdf 0 4096 77\u{1}", DCCMessage.accept(fileName: "report.pdf", port: 0, position: 4096, token: "77")),
    ])
    func roundTrip(_ text: String, _ expected: DCCMessage) {
        #expect(DCCMessage(ctcp: text) == expected)
        #expect(DCCMessage(ctcp: expected.ctcp) == expected)
    }

    @Test("not DCC, or malformed", arguments: [
        "hello", "\u{1}ACTION waves\u{1}", "\u{1}DCC CHAT chat 1 2\u{1}", "\u{1}DCC SEND f 1 99999 5\u{1}",
        "\u{1}DCC SEND f 1 2\u{1}", "\u{1}DCC SEND f 1 2 -5\u{1}",
    ])
    func rejects(_ text: String) {
        #expect(DCCMessage(ctcp: text) == nil)
    }

    @Test("CTCP framing")
    func ctcp() {
        #expect(CTCP.parse("\u{1}VERSION\u{1}")! == ("VERSION", ""))
        #expect(CTCP.parse("\u{1}action waves hello\u{1}")! == ("ACTION", "waves hello"))
        #expect(CTCP.parse("plain") == nil)
        #expect(CTCP.make("PING", "123") == "\u{1}PING 123\u{1}")
    }
}

@Suite("hostile file names")
struct SafeFileNameTests {
    @Test("reduced to a plain name", arguments: [
        ("../../etc/passwd", "passwd"),
        ("/abs/path/secret.txt", "secret.txt"),
        ("..\\..\\windows\\system.ini", "system.ini"),
        ("a\nb", "a_b"),
        ("tab\there", "tab_here"),
        ("esc\u{1B}[31mred", "esc_[31mred"),
        (".bashrc", "bashrc"),
        ("-rf", "rf"),
        ("--help.txt", "help.txt"),
        ("...", "download"),
        ("..", "download"),
        ("", "download"),
        ("/", "download"),
        ("报告 2026.pdf", "报告 2026.pdf"),
        ("名前.txt", "名前.txt"),
        ("what?.txt", "what_.txt"),
        ("trailing dot. ", "trailing dot"),
        ("holiday\u{202E}gpj.exe", "holidaygpj.exe"),
        ("\u{2066}report\u{2069}.pdf", "report.pdf"),
        ("zero\u{200B}width.txt", "zerowidth.txt"),
        ("👨‍👩‍👧.png", "👨‍👩‍👧.png"),
    ])
    func sanitised(_ offered: String, _ expected: String) {
        #expect(SafeFileName.make(offered) == expected)
    }

    @Test("a 300-byte name is cut between characters and keeps its extension")
    func long() {
        let name = SafeFileName.make(String(repeating: "長", count: 100) + ".pdf")
        #expect(name.utf8.count <= SafeFileName.maxBytes)
        #expect(name.hasSuffix(".pdf"))
        #expect(String(validating: Array(name.utf8), as: UTF8.self) != nil)
        let plain = SafeFileName.make(String(repeating: "x", count: 300))
        #expect(plain.utf8.count == SafeFileName.maxBytes)
    }

    @Test("never overwrite: report (1).pdf, report (2).pdf")
    func unique() {
        let taken: Set<String> = ["report.pdf", "report (1).pdf", "notes", "notes (1).part"]
        #expect(SafeFileName.unique("report.pdf", exists: taken.contains) == "report (2).pdf")
        #expect(SafeFileName.unique("fresh.pdf", exists: taken.contains) == "fresh.pdf")
        #expect(SafeFileName.unique("notes", exists: taken.contains) == "notes (2)", "a .part file holds its name too")
    }
}

@Suite("SHA-256")
struct SHA256Tests {
    @Test("FIPS 180 test vectors", arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func vectors(_ text: String, _ digest: String) {
        #expect(SHA256.hash(Array(text.utf8)) == digest)
    }

    @Test("a million a's, fed in uneven pieces")
    func million() {
        var hasher = SHA256()
        var fed = 0
        var piece = 1
        while fed < 1_000_000 {
            let count = min(piece, 1_000_000 - fed)
            hasher.update([UInt8](repeating: UInt8(ascii: "a"), count: count))
            fed += count
            piece = piece * 3 % 1000 + 1
        }
        #expect(SHA256.hex(hasher.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}
