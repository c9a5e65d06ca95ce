#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import ChatClientKit
import IRCTestSupport

/// The rule every test lives by: what the suite starts never reads or writes the user's own
/// chat-tui folders (their history, config, log), however many servers it runs.
@Suite("Tests keep out of the user's own files", .serialized)
struct OwnFilesTests {
    /// Every file and folder under the user's chat-tui folders with its size and modification
    /// time, or "absent": equal before and after means nothing was created, changed or removed.
    static func snapshot() -> [String] {
        let home = ProcessInfo.processInfo.environment["HOME"] ?? NSHomeDirectory()
        var entries: [String] = []
        for folder in [".local/share/chat-tui", ".config/chat-tui", ".local/state/chat-tui"] {
            let root = home + "/" + folder
            guard FileManager.default.fileExists(atPath: root) else { entries.append("\(folder): absent"); continue }
            let inside = FileManager.default.enumerator(atPath: root).map { $0.compactMap { $0 as? String } } ?? []
            for name in ([""] + inside).sorted() {
                var info = stat()
                stat(root + "/" + name, &info)
                entries.append("\(folder)/\(name) \(info.st_size) \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)")
            }
        }
        return entries
    }

    @Test("the suite's server and client, used and restarted, leave the user's history, config and log as they were")
    func userFilesUntouched() async throws {
        let before = Self.snapshot()
        let port = try freePort()
        let home = TestHome("chat-tui-server")
        let first = try ServerProcess.chatTUI(port: port, home: home)
        let alice = ChatClient(config: config(port: port, nick: "alice"))
        let log = EventLog.watching(alice)
        await alice.start()
        _ = try await log.registered()
        await alice.send("a line the test says", to: "#lobby")
        try await log.line(in: "#lobby", containing: "a line the test says")
        await alice.quit()
        first.child.stop()
        // Started again on the same data: it reads what the first one kept, from its own folder.
        let second = try ServerProcess.chatTUI(port: port, home: home)
        let reader = try LineClient(port: port)
        _ = try reader.register("reader", caps: ["draft/chathistory", "batch"])
        reader.send("CHATHISTORY LATEST #lobby * 10")
        _ = try reader.readUntil(timeout: 10) { $0.command == "PRIVMSG" && $0.params.last == "a line the test says" }
        second.child.stop()

        #expect(FileManager.default.fileExists(atPath: home.dataDirectory), "the server kept its data in the test's own folder")
        #expect(Self.snapshot() == before)
    }
}
