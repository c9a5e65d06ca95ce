import ChatTransport
import ChatClientKit
import ChatUI
import IRCWire

/// `chat-bench pageup`: what one PgUp costs the chat screen (the key applied, then the whole
/// screen drawn, as the app does per key) from the bottom of a room of `lines` lines to 3,000
/// lines up, page by page: milliseconds, the median of the first five pages and of the last
/// five, and the slowest. No server: the model is fed the lines as its client would.
func screenBench(lines: Int) {
    var state = ClientState(nick: "alice", scrollbackLimit: max(lines, 100))
    let members = (1...44).map { "p\($0)" }.joined(separator: " ")
    var setup = [":srv 001 alice :Welcome", ":srv 005 alice PREFIX=(ov)@+ CHANTYPES=# :are supported", ":alice!a@h JOIN #lobby",
                 ":srv 353 alice = #lobby :@alice \(members)", ":srv 366 alice #lobby :End"]
    let texts = ["a short line", "a line long enough to wrap once on a screen of a hundred and twenty columns, with some words to spare at its end",
                 "中文的一句话，还有一些表情 😀🎉", "alice: a mention with a link https://example.org/some/path?query=1"]
    for n in 0..<lines { setup.append("@msgid=m\(n) :p\(n % 44 + 1)!u@h PRIVMSG #lobby :\(texts[n % texts.count]) \(n)") }
    for (n, line) in setup.enumerated() { _ = state.receive(try! IRCMessage(parsing: line), now: 1_800_000_000 + Double(n)) }
    var model = ChatModel(state: state.book, width: 120, height: 40)
    model.everRegistered = true
    model.selection = .conversation(.room("#lobby"))
    model.currentRoom = "#lobby"
    var screen = Screen(width: 120, height: 40)

    // From the bottom, page by page, as a reader holding PgUp does, to 3,000 lines up: every
    // page is a key applied and the screen drawn; the first pages meet lines never drawn.
    let deep = model.rowsUp(toLinesFromBottom: 3_000)
    var times: [Double] = []
    while (model.scroll[.room("#lobby")] ?? 0) < deep {
        let start = Monotonic.now()
        _ = model.update(.key(.pageUp))
        model.render(into: &screen)
        times.append((Monotonic.now() - start) * 1000)
    }
    func median(_ part: ArraySlice<Double>) -> Double { part.sorted()[part.count / 2] }
    let bottom = median(times.prefix(5)), far = median(times.suffix(5)), worst = times.max() ?? 0
    // The same pages again, the way back down and up (what key repeat meets on a second pass).
    print("{\"scenario\": \"pageup\", \"lines\": \(lines), \"rows_up\": \(deep), \"pages\": \(times.count), \"bottom_ms\": \(rounded(bottom)), "
          + "\"deep_ms\": \(rounded(far)), \"max_ms\": \(rounded(worst))}")
}

func rounded(_ value: Double) -> Double { (value * 100).rounded() / 100 }

