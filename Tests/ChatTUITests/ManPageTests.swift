import Foundation
import Testing
@testable import chat_tui
import ChatUI

/// The man pages are written from the program's tables (issue 44, item 3): the committed ones
/// are what the program writes now (`make man` rewrites them), and name every flag `--help` does.
@Suite("man pages from the flag and command tables")
struct ManPageTests {
    static let root: String = {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path
    }()

    static func committed(_ name: String) -> String? {
        try? String(contentsOfFile: root + "/man/" + name, encoding: .utf8)
    }

    @Test("man/chat-tui.1 and man/chat-tui.conf.5 are what `chat-tui man 1|5` writes (run make man after changing a flag or a command)")
    func upToDate() {
        #expect(Self.committed("chat-tui.1") == ManPages.chatTUI() + "\n")
        #expect(Self.committed("chat-tui.conf.5") == ManPages.config() + "\n")
    }

    @Test("every flag --help prints is in chat-tui(1), every command /help lists too, and every option in chat-tui.conf(5)")
    func everyFlag() {
        let page = ManPages.chatTUI(), conf = ManPages.config()
        for flag in Arguments.flags {
            #expect(Arguments.usage.contains("--" + flag.name))
            #expect(page.contains("\\fB\\-\\-" + ManPages.roff(flag.name) + "\\fR"), "--\(flag.name)")
            if flag.scope != .mode { #expect(conf.contains("\\fB" + ManPages.roff(flag.name) + "\\fR"), "\(flag.name) in the config page") }
        }
        for command in SlashCommands.all { #expect(page.contains(ManPages.roff(command.usage)), "\(command.usage)") }
    }
}
