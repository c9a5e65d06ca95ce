#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import ChatClientKit
import ChatServerKit
import IRCTestSupport
import IRCWire

@Suite("/search asks the server too (soju.im/search)", .serialized)
struct ServerSearchTests {
    @Test("a client keeping no log of its own finds a line the server kept from before it came; nothing is a clear zero")
    func serverHits() async throws {
        let port = try freePort()
        let directory = NSTemporaryDirectory() + "chat-tui-search-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var settings = ServerConfig()
        settings.name = "test.server"
        let server = try ServerHandle.start(config: settings, bind: "127.0.0.1", port: port,
                                            history: HistoryOptions(path: directory + "/server.db")) { _ in }
        defer { server.stop() }
        let carol = try LineClient(port: port)
        try carol.register("carol")
        carol.send("PRIVMSG #lobby :the release is pineapple-7")
        for n in 0..<120 { carol.send("PRIVMSG #lobby :filler \(n)") }
        carol.send("PING :said")
        _ = try carol.readUntil { $0.command == "PONG" }

        var cfg = config(port: port, nick: "bob", rooms: ["#lobby"])
        cfg.logPath = nil
        let bob = ChatClient(config: cfg)
        let log = EventLog.watching(bob)
        await bob.start()
        try await log.line(in: "#lobby", containing: "filler 119")
        await bob.search(["PINEAPPLE"])
        let found = try await log.next("the results") { if case .searchResults = $0 { return true } else { return false } }
        guard case .searchResults(let query, let hits, let failure) = found else { return }
        #expect(query == "PINEAPPLE" && failure == nil)
        #expect(hits.map(\.line.text) == ["the release is pineapple-7"], "older than the lines bob was given on joining: only the server had it")
        #expect(hits.first?.conversation == .room("#lobby") && hits.first?.line.msgid != nil)
        await bob.search(["durian"])
        let none = try await log.next("the empty results") { if case .searchResults(let q, _, _) = $0 { return q == "durian" } else { return false } }
        guard case .searchResults(_, let empty, nil) = none else { Issue.record("a failure instead of nothing found"); return }
        #expect(empty.isEmpty)
        await bob.quit()
    }
}
