import Testing
@testable import ChatUI
import ChatClientKit

/// Text from the network in the bars: shown visibly, never as the escape sequence it is.
@Suite("escapes in the title bar")
struct EscapeTests {
    @Test("a conversation named with an escape sequence: the title row shows ^[, no ESC reaches a cell")
    func titleAndStatus() {
        var model = lobbyModel(extra: [":alice!a@h JOIN #ro\u{1B}[2Jom"])
        model.currentRoom = "#ro\u{1B}[2Jom"
        model.selection = .conversation(.room("#ro\u{1B}[2Jom"))
        let screen = draw(model)
        #expect(screen.line(0).hasPrefix(" #ro^[[2Jom"), "\(screen.line(0))")
        #expect(!screen.cells.contains { $0.text.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 } })
    }
}
