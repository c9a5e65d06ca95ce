import Foundation
import Testing
import IRCTestSupport
@testable import ChatServerKit
import ChatStore
import ChatTransport
import IRCWire

/// With history on, nothing goes out before history has committed every row handed over
/// before it: a member never sees a message a crash could still take from history (after a
/// SIGKILL its sender, seeing no echo, sends it again, and everyone would see it twice: the
/// chaos soak found this).
@Suite("history on: what anyone receives is stored already", .serialized)
struct CommitGateTests {
    /// A commit the test lets happen: the writer stops before each commit while `holding`.
    final class CommitHold: Sendable {
        let holding = Locked(false)
        let reached = Semaphore()
        let go = Semaphore()
        func beforeCommit() {
            guard holding.withLock({ $0 }) else { return }
            reached.signal()
            go.wait(seconds: 30)
        }
    }

    /// A server with history in `path` whose writer stops before each commit while `hold.holding`.
    static func serverWithHeldCommits(_ path: String) throws -> (TestServer, CommitHold) {
        let hold = CommitHold()
        var options = HistoryOptions(path: path)
        options.beforeCommit = { hold.beforeCommit() }
        return (try TestServer(history: options), hold)
    }

    /// Sends `lines` from `client` and waits until the server's loop has finished two more
    /// turns: the turn that handled what was sent before them is over.
    static func turnsPass(_ server: TestServer, after client: LineClient, _ lines: String...) {
        let turns = server.handle.turnsDone
        for line in lines { client.send(line) }
        while server.handle.turnsDone <= turns + 1 { usleep(1000) }
    }

    /// Bytes waiting on a socket now (nothing is waited for).
    func waitingBytes(_ fd: Int32) -> Int {
        var buffer = [UInt8](repeating: 0, count: 4096)
        return max(0, recv(fd, &buffer, buffer.count, Int32(MSG_PEEK | MSG_DONTWAIT)))
    }

    @Test("a room message is held from its members (and its sender's echo) until its row is committed; then it comes, stored")
    func heldUntilCommitted() throws {
        let path = NSTemporaryDirectory() + "chat-tui-gate-\(UUID().uuidString).db"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let (server, hold) = try Self.serverWithHeldCommits(path)
        let listener = try server.client()
        try listener.register("listener", caps: ["message-tags"])
        let speaker = try server.client()
        try speaker.register("speaker", caps: ["echo-message"])
        _ = try listener.expect("JOIN")
        let bystander = try server.client()
        try bystander.register("bystander")
        _ = try listener.expect("JOIN")
        _ = try speaker.expect("JOIN")
        hold.holding.withLock { $0 = true }
        speaker.send("PRIVMSG #lobby :not yet stored")
        #expect(hold.reached.wait(seconds: 10), "the writer has the row")
        // The turn that fanned the message out is over once a later turn is: the bystander's
        // PING makes one.
        Self.turnsPass(server, after: bystander, "PING :later")
        #expect(waitingBytes(listener.fd) == 0, "nothing reached the member before the commit")
        #expect(waitingBytes(speaker.fd) == 0, "nor the sender")
        hold.holding.withLock { $0 = false }
        hold.go.signal()
        let message = try listener.expect("PRIVMSG")
        #expect(message.params.last == "not yet stored")
        let text = try #require(message.tags.first(where: { $0.key == "msgid" })?.value)
        let msgid = Int64(bitPattern: try #require(MessageIDs.value(text)))
        let rows = try Database(path: path).query("SELECT count(*) FROM history WHERE target = '#lobby' AND msgid = ?", [.integer(msgid)])
        #expect(rows.first?.first == .integer(1), "stored when it came")
        #expect(try speaker.expect("PRIVMSG").params.last == "not yet stored")
        #expect(try bystander.expect("PONG").params.last == "later", "the bystander's answer came after the commit too (one order for everyone)")
    }

    @Test("what was written before a message still waiting for its commit goes without it: one committed line out, the next held")
    func committedPartGoes() throws {
        let path = NSTemporaryDirectory() + "chat-tui-gate-\(UUID().uuidString).db"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let (server, hold) = try Self.serverWithHeldCommits(path)
        let listener = try server.client()
        try listener.register("listener")
        let speaker = try server.client()
        try speaker.register("speaker")
        let bystander = try server.client()
        try bystander.register("bystander")
        _ = try listener.readUntil { $0.command == "JOIN" && $0.source?.hasPrefix("bystander") == true }
        hold.holding.withLock { $0 = true }
        speaker.send("PRIVMSG #lobby :one")
        #expect(hold.reached.wait(seconds: 10), "the writer holds the first row")
        speaker.send("PRIVMSG #lobby :two")
        // The turn that handled "two" is over once two later ones are (the bystander's PINGs make them).
        Self.turnsPass(server, after: bystander, "PING :a", "PING :b")
        hold.go.signal() // "one" is committed; the writer then holds "two"
        #expect(try listener.expect("PRIVMSG").params.last == "one", "the committed line went on its own")
        #expect(hold.reached.wait(seconds: 10), "the writer holds the second row")
        #expect(waitingBytes(listener.fd) == 0, "\"two\" waits for its commit")
        hold.holding.withLock { $0 = false }
        hold.go.signal()
        #expect(try listener.expect("PRIVMSG").params.last == "two")
    }

    @Test("a history read asked while a line waits for its commit is read after the commit: the answer has the line")
    func readAfterCommit() throws {
        let path = NSTemporaryDirectory() + "chat-tui-gate-\(UUID().uuidString).db"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let (server, hold) = try Self.serverWithHeldCommits(path)
        let speaker = try server.client()
        try speaker.register("speaker")
        let reader = try server.client()
        try reader.register("reader", caps: ["draft/chathistory", "batch", "server-time", "message-tags"])
        hold.holding.withLock { $0 = true }
        speaker.send("PRIVMSG #lobby :said before the question")
        #expect(hold.reached.wait(seconds: 10), "the writer holds the row")
        reader.send("CHATHISTORY LATEST #lobby * 10")
        // The read is asked in a turn that ends before the commit: the reader's PING answers after it.
        Self.turnsPass(server, after: reader, "PING :asked")
        hold.holding.withLock { $0 = false }
        hold.go.signal()
        let lines = try reader.readUntil { $0.command == "PONG" }
        let said = lines.filter { $0.command == "PRIVMSG" && $0.tags.contains { $0.key == "batch" } }.map { $0.params.last! }
        #expect(said.last == "said before the question", "the answer (read once the line was committed) has it")
    }
}
