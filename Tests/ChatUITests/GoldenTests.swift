import Foundation
import Testing
@testable import ChatUI
@testable import ChatClientKit
import IRCWire

/// Whole screens compared row by row with golden text, as ratatui's TestBackend tests do: a
/// layout test that checks every cell, not a fragment. With `styles`, every cell's attributes
/// too: one letter per column (a wide character's two columns both carry its letter), looked
/// up in `StyleLegend.standard` plus the test's own `legend` (colours, such as a nickname's);
/// a style in neither reads as `?`.
func expectScreen(_ model: ChatModel, _ golden: [String], styles: [String]? = nil, legend: [Character: Style] = [:],
                  sourceLocation: SourceLocation = #_sourceLocation) {
    let screen = draw(model)
    let lines = screen.lines
    let letters = styles.map { _ in StyleLegend.rows(of: screen, legend: legend) }
    if ProcessInfo.processInfo.environment["PRINT_GOLDEN"] != nil, lines != golden || letters != styles {
        // For writing a new golden: the screen as Swift literals, to be read and checked by eye.
        print("GOLDEN \(sourceLocation.fileName):\(sourceLocation.line)\n" + lines.map { "            \"" + $0 + "\"," }.joined(separator: "\n"))
        if let letters { print("STYLES \(sourceLocation.fileName):\(sourceLocation.line)\n" + letters.map { "            \"" + $0 + "\"," }.joined(separator: "\n")) }
    }
    #expect(lines.count == golden.count, sourceLocation: sourceLocation)
    for (y, (actual, expected)) in zip(lines, golden).enumerated() {
        #expect(actual == expected, "row \(y)", sourceLocation: sourceLocation)
    }
    if let styles, let letters {
        #expect(letters.count == styles.count, "style rows", sourceLocation: sourceLocation)
        for (y, (actual, expected)) in zip(letters, styles).enumerated() {
            #expect(actual == expected, "styles of row \(y)", sourceLocation: sourceLocation)
        }
    }
}

/// The letters golden screens write a cell's attributes with.
enum StyleLegend {
    /// ' ' plain, 'd' dim, 'r' reverse, 'b' bold, 'R' bold and reverse (the selected room), 'D'
    /// dim and reverse (the selected server window);
    /// 'e' an error (red, bold), 'h' a highlight (yellow, bold).
    static let standard: [Character: Style] = [
        " ": .plain, "d": Style(dim: true), "r": Style(reverse: true), "b": Style(bold: true),
        "R": Style(bold: true, reverse: true), "D": Style(dim: true, reverse: true), "e": Palette.error, "h": Palette.highlight,
    ]

    /// Letters for nicknames' colours (bold for our own, `me`).
    static func nicks(_ letters: [String: Character], me: String = "alice") -> [Character: Style] {
        Dictionary(uniqueKeysWithValues: letters.map { ($0.value, Palette.nickStyle($0.key, own: $0.key == me)) })
    }

    /// The lobby's people: A alice (us), B bob, C carol, X 小明.
    static let lobby = nicks(["alice": "A", "bob": "B", "carol": "C", "小明": "X"])

    /// Each row of `screen` as letters, one per column.
    static func rows(of screen: Screen, legend: [Character: Style]) -> [String] {
        let all = standard.merging(legend) { _, test in test }
        // Ordered, so that two letters for one style always read the same.
        let letters = all.keys.sorted()
        return (0..<screen.height).map { y in
            var row = ""
            for x in 0..<screen.width {
                let cell = screen[x, y]
                if cell.isContinuation, let previous = row.last {
                    row.append(previous)
                    continue
                }
                row.append(letters.first { all[$0] == cell.style } ?? "?")
            }
            return row
        }
    }
}

@Suite("whole screens")
struct GoldenTests {
    /// A message read back off the screen: the pane part of its rows, the continuation rows'
    /// hanging indent removed, joined.
    static func text(of screen: [String], rows: Range<Int>, paneWidth: Int, indent: Int) -> String {
        rows.enumerated().map { (n, y) -> String in
            var width = 0
            var kept = ""
            for character in screen[y] {
                width += DisplayWidth.of(character)
                if width > paneWidth { break }
                kept.append(character)
            }
            while kept.last == " " { kept.removeLast() }
            return n == 0 ? kept : String(kept.dropFirst(indent))
        }.joined()
    }

    @Test("a 150-character first word wraps whole: every character on screen, none cut at the edge", arguments: [
        String(repeating: "1234567890", count: 15),
        "https://example.com/" + String(repeating: "a1b2c3d4e5", count: 13),
        String(repeating: "中文没有空格的句子", count: 6),
        String(repeating: "😀", count: 60),
    ])
    func longFirstWord(_ word: String) {
        for width in [40, 60, 61, 100] {
            let model = lobbyModel(width: width, height: 24, extra: [":bob!b@h PRIVMSG #lobby :\(word)"])
            let screen = draw(model).lines
            let layout = Layout(width: width, height: 24)
            let first = screen.firstIndex { $0.contains("<bob>") }!
            let shown = Self.text(of: screen, rows: first..<(layout.paneTop + layout.paneHeight), paneWidth: layout.paneWidth,
                                  indent: "10:05 <bob> ".count)
            #expect(shown == "10:05 <bob> " + word, "at width \(width): \(shown)")
        }
    }

    @Test("the whole 60×12 screen with a long URL after the nickname: it fills the row it starts on")
    func goldenLongURL() {
        let url = "https://example.com/" + String(repeating: "x", count: 70) + "/end"
        let model = lobbyModel(extra: [":bob!b@h PRIVMSG #lobby :see \(url)"])
        expectScreen(model, [
            " #lobby (4)                                                 ",
            "                                               │1 (server)  ",
            "                                               │2 #lobby    ",
            "                                               │ @alice…    ",
            "                                               │ +bob       ",
            "                                               │  carol     ",
            "10:05 -!- You joined #lobby                    │  小明      ",
            "10:05 <bob> see https://example.com/xxxxxxxxxxx│            ",
            "            xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx│            ",
            "            xxxxxxxxxxxxxxxxxxxxxxxx/end       │            ",
            " alice │ connected │ Enter sends to #lobby                  ",
            ">                                                           ",
        ], styles: [
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "                                               ddddddddddd  ",
            "                                               dRRRRRRRRrrrr",
            "                                               dAAAAAAAA    ",
            "                                               dBBBBB       ",
            "                                               dCCCCCCC     ",
            "ddddddddddddddddddddddddddd                    dXXXXXX      ",
            "dddddddBBBdd                                   d            ",
            "                                               d            ",
            "                                               d            ",
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "dd                                                          ",
        ], legend: StyleLegend.lobby)
    }
}

@Test("a word that fits on the next row moves there whole; a longer one fills the row it starts on")
func wordPlacement() {
    let plain = { (rows: [[Span]]) in rows.map { $0.map(\.text).joined() } }
    #expect(plain(Wrapper.wrap([Span("hello wonderful world")], width: 10)) == ["hello", "wonderful", "world"])
    #expect(plain(Wrapper.wrap([Span("hi abcdefghijklmnopqrstuvwxyz")], width: 10, indent: 3)) == ["hi abcdefg", "hijklmn", "opqrstu", "vwxyz"])
    #expect(plain(Wrapper.wrap([Span("<nick> 一二三四五六七八九十")], width: 12, indent: 7)) == ["<nick> 一二", "三四", "五六", "七八", "九十"])
}

@Test("a bidi-laden message is shown harmlessly: every row, the border in place")
func goldenBidi() {
    let model = lobbyModel(extra: [
        ":bob!b@h PRIVMSG #lobby :see holiday\u{202E}gpj.exe now",
        ":m\u{2067}allory!m@h PRIVMSG #lobby :\u{2066}\u{202B}hidden\u{2069} text",
    ])
    expectScreen(model, [
        " #lobby (4)                                                 ",
        "                                               │1 (server)  ",
        "                                               │2 #lobby    ",
        "                                               │ @alice…    ",
        "                                               │ +bob       ",
        "                                               │  carol     ",
        "10:05 -!- You joined #lobby                    │  小明      ",
        "10:05 <bob> see holiday<U+202E>gpj.exe now     │            ",
        "10:05 <m<U+2067>allory> <U+2066><U+202B>hidden<│            ",
        "                       U+2069> text            │            ",
        " alice │ connected │ Enter sends to #lobby                  ",
        ">                                                           ",
    ], styles: [
        "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
        "                                               ddddddddddd  ",
        "                                               dRRRRRRRRrrrr",
        "                                               dAAAAAAAA    ",
        "                                               dBBBBB       ",
        "                                               dCCCCCCC     ",
        "ddddddddddddddddddddddddddd                    dXXXXXX      ",
        // The invisible characters' notation in reverse, so it cannot pass for text.
        "dddddddBBBdd           rrrrrrrr                d            ",
        "dddddddBBBBBBBBBBBBBBBddrrrrrrrrrrrrrrrr      rd            ",
        "                       rrrrrrr                 d            ",
        "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
        "dd                                                          ",
    ], legend: StyleLegend.lobby)
}

@Suite("echo where typed")
struct EchoGoldenTests {
    @Test("/msg 小明 from #lobby: the message is echoed in #lobby as -> 小明: text, the whole screen")
    func goldenMessageEcho() {
        var model = lobbyModel()
        let commands = model.type("/msg 小明 你好，晚上见")
        #expect(commands.contains(.send(text: "你好，晚上见", to: "小明")))
        model.performNotes(commands, now: 36300)
        model.receive(":alice!a@h PRIVMSG 小明 :你好，晚上见", now: 36300)
        expectScreen(model, [
            " #lobby (4)                                                 ",
            "                                               │1 (server)  ",
            "                                               │2 #lobby    ",
            "                                               │ @alice…    ",
            "                                               │ +bob       ",
            "                                               │  carol     ",
            "                                               │  小明      ",
            "                                               │3 小明      ",
            "10:05 -!- You joined #lobby                    │            ",
            "10:05 -!- -> 小明: 你好，晚上见                │            ",
            " alice │ connected │ Enter sends to #lobby                  ",
            ">                                                           ",
        ], styles: [
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "                                               ddddddddddd  ",
            "                                               dRRRRRRRRrrrr",
            "                                               dAAAAAAAA    ",
            "                                               dBBBBB       ",
            "                                               dCCCCCCC     ",
            "                                               dXXXXXX      ",
            "                                               d            ",
            "ddddddddddddddddddddddddddd                    d            ",
            "ddddddddddddddddddddddddddddddd                d            ",
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "dd                                                          ",
        ], legend: StyleLegend.lobby)
    }

    @Test("/send, /accept and /quote say in the conversation where they were typed what was done")
    func goldenCommandEchoes() {
        var model = lobbyModel()
        // An offer as the client reports it (the actor makes the transfer, not the message table).
        model.receive(.transfer(TransferInfo(id: 1, direction: .receiving, peer: "bob", offeredName: "slow.dat",
                                             localPath: "/home/alice/Downloads/slow.dat", size: 1 << 20, state: .pending, offeredAt: 36300)))
        var commands = model.type("/send carol ~/photos/cake.jpg")
        commands += model.type("/accept")
        commands += model.type("/quote WHO #lobby")
        model.performNotes(commands, now: 36300)
        expectScreen(model, [
            " #lobby (4)                                                 ",
            "                                               │1 (server)  ",
            "10:05 -!- You joined #lobby                    │2 #lobby    ",
            "10:05 -!- Offering cake.jpg to carol (how it   │ @alice…    ",
            "          goes is in the conversation with     │ +bob       ",
            "          carol)                               │  carol     ",
            "10:05 -!- Accepting slow.dat from bob (transfer│  小明      ",
            "          1; its progress is in the            │            ",
            "          conversation with bob)               │            ",
            "10:05 -!- Sent to the server: WHO #lobby       │            ",
            " alice │ connected │ Enter sends to #lobby                  ",
            ">                                                           ",
        ], styles: [
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "                                               ddddddddddd  ",
            "ddddddddddddddddddddddddddd                    dRRRRRRRRrrrr",
            "dddddddddddddddddddddddddddddddddddddddddddd   dAAAAAAAA    ",
            "          dddddddddddddddddddddddddddddddd     dBBBBB       ",
            "          dddddd                               dCCCCCCC     ",
            "ddddddddddddddddddddddddddddddddddddddddddddddddXXXXXX      ",
            "          ddddddddddddddddddddddddd            d            ",
            "          dddddddddddddddddddddd               d            ",
            "dddddddddddddddddddddddddddddddddddddddd       d            ",
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "dd                                                          ",
        ], legend: StyleLegend.lobby)
    }

    @Test("no echo where the message lands anyway: /msg to the conversation in view")
    func noEchoInTarget() {
        var model = lobbyModel()
        let commands = model.type("/msg #lobby hello")
        #expect(!commands.contains { if case .note = $0 { return true } else { return false } })
    }
}

@Suite("why we are not connected")
struct ConnectionReasonGoldenTests {
    /// alice before registering, looking at the server window.
    static func unregistered() -> ChatModel {
        var model = ChatModel(state: ConversationBook(nick: "alice"), width: 60, height: 12)
        model.now = 36300
        model.receive(.status(.connecting(host: "nowhere.invalid", port: 6667, attempt: 1)))
        return model
    }

    @Test("a bad host: the reason is a line in the server window, once however often it retries; the whole screen")
    func goldenBadHost() {
        var model = Self.unregistered()
        for attempt in 1...3 {
            let commands = model.receive(.status(.reconnecting(inSeconds: 2, reason: "host not found: nowhere.invalid (Name or service not known)")))
            #expect(commands.count == (attempt == 1 ? 1 : 0), "attempt \(attempt)")
            model.performNotes(commands, now: 36300)
        }
        expectScreen(model, [
            " server messages                                            ",
            "                                               │1 (server)  ",
            "                                               │            ",
            "                                               │            ",
            "                                               │            ",
            "                                               │            ",
            "10:05 !!! Not connected: host not found:       │            ",
            "          nowhere.invalid (Name or service not │            ",
            "          known) — trying again (/disconnect   │            ",
            "          stops)                               │            ",
            " alice │ reconnecting in 2 s (host not found:…              ",
            ">                                                           ",
        ], styles: [
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "                                               dDDDDDDDDDDrr",
            "                                               d            ",
            "                                               d            ",
            "                                               d            ",
            "                                               d            ",
            "ddddddeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee       d            ",
            "          eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee d            ",
            "          eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee   d            ",
            "          eeeeee                               d            ",
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "dd                                                          ",
        ], legend: StyleLegend.lobby)
    }

    @Test("a wrong SASL password: the refusal is a line in the server window; the whole screen")
    func goldenWrongPassword() {
        var model = Self.unregistered()
        model.receive(.status(.connected))
        model.performNotes(model.receive(.status(.stopped(reason: "login failed for alice: Invalid credentials"))), now: 36300)
        expectScreen(model, [
            " server messages                                            ",
            "                                               │1 (server)  ",
            "                                               │            ",
            "                                               │            ",
            "                                               │            ",
            "                                               │            ",
            "                                               │            ",
            "10:05 !!! Stopped: login failed for alice:     │            ",
            "          Invalid credentials (/reconnect to   │            ",
            "          try again)                           │            ",
            " alice │ disconnected: login failed for alice: Invalid…     ",
            ">                                                           ",
        ])
    }
}

@Suite("the host's join lines")
struct HostHintGoldenTests {
    /// The host screen's hint as `joinHint` and `tlsHint` (main.swift) make it for a default
    /// `--serve` (plain 6667 and a self-signed certificate on 6697).
    static let fingerprint = (0..<32).map { String(format: "%02X", ($0 * 37 + 11) % 256) }.joined(separator: ":")
    static let hint = [
        "Hosting your room on port 6667. Others join with:",
        "  chat-tui --host 192.168.1.20",
        "or from irssi: /connect 192.168.1.20 6667; on this machine: chat-tui --host 127.0.0.1",
        "Over TLS (port 6697):",
        "  chat-tui --host 192.168.1.20 --port 6697 --tls-fingerprint \(fingerprint)",
        "the certificate is self-signed (SHA-256 above); from irssi:",
        "  /connect -tls -notls_verify -tls_pinned_cert \(fingerprint) 192.168.1.20 6697",
    ]

    @Test("at 60×15 the lines telling people how to join stay on screen in the host's room; the fingerprints go above them")
    func goldenHostHintSmall() {
        var state = ClientState(nick: "alice")
        for line in [":srv 001 alice :Welcome alice!a@h", ":srv 005 alice PREFIX=(ov)@+ CHANTYPES=# :are supported"] {
            _ = state.apply(try! IRCMessage(parsing: line), now: 36300)
        }
        var model = ChatModel(state: state.book, width: 60, height: 15)
        model.hostHint = Self.hint
        model.everRegistered = true
        model.status = .registered(nick: "alice")
        let commands = model.receive(":alice!a@h JOIN #lobby", ":srv 353 alice = #lobby :@alice", ":srv 366 alice #lobby :End", now: 36300)
        model.performNotes(commands, now: 36300)
        model.receive(.markedRead(.room("#lobby")))
        expectScreen(model, [
            " #lobby (1)                                                 ",
            "          (SHA-256 above); from irssi:         │1 (server)  ",
            "10:05 -!-   /connect -tls -notls_verify        │2 #lobby    ",
            "          -tls_pinned_cert 0B:30:55:7A:9F:C4:E9│ @alice…    ",
            "          :0E:33:58:7D:A2:C7:EC:11:36:5B:80:A5:│            ",
            "          CA:EF:14:39:5E:83:A8:CD:F2:17:3C:61:8│            ",
            "          6 192.168.1.20 6697                  │            ",
            "10:05 -!- Hosting your room on port 6667.      │            ",
            "          Others join with:                    │            ",
            "10:05 -!-   chat-tui --host 192.168.1.20       │            ",
            "10:05 -!- or from irssi: /connect 192.168.1.20 │            ",
            "          6667; on this machine: chat-tui      │            ",
            "          --host 127.0.0.1                     │            ",
            " alice │ connected │ Enter sends to #lobby                  ",
            ">                                                           ",
        ])
        // The order on the pane; /help keeps the hint as given.
        #expect(model.hostHintInPane == Array(Self.hint[3...] + Self.hint[..<3]))
    }
}
