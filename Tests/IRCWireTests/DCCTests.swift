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
