#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import ChatClientKit
import ChatTransport
import IRCTestSupport
import IRCWire

@Suite("a front end slower than the lines come")
struct EventBacklogTests {
    @Test("a flood three times the event bound, the events not taken: the client stops reading at the bound (the lines wait in the kernel and the server), then every line comes, in order, as they are taken")
    func floodWaitsForTheFrontEnd() async throws {
        let server = try TestServer(sendQueueLimit: 64 << 20)
        let alice = ChatClient(config: config(port: server.port, nick: "alice", rooms: ["#lobby"]))
        var events = alice.events.makeAsyncIterator()
        await alice.start()
        var joined = false
        while !joined, let event = await events.next() {
            if case .line(let id, let line) = event, id.key == "#lobby", line.text.contains("You joined") { joined = true }
        }
        #expect(joined)
        let bound = ChatClient.eventBound
        let count = 3 * bound
        let flooder = try server.client()
        _ = try flooder.register("flooder")
        var flood = ""
        for n in 0..<count { flood += "PRIVMSG #lobby :flood \(n)\r\n" }
        flooder.sendBytes(Array(flood.utf8))
        // Every line handed to the server's output for alice once this is answered.
        flooder.send("PING :done")
        _ = try flooder.readUntil(timeout: 30) { $0.command == "PONG" }
        let backlog = alice.events.backlog
        let deadline = Monotonic.now() + 30
        while backlog.count < bound && Monotonic.now() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        // A line's events at most past the bound: the client waits after each line.
        var most = backlog.count
        #expect(most >= bound && most <= bound + 8, "waiting events: \(most)")
        var seen: [Int] = []
        while seen.count < count, let event = await events.next() {
            most = max(most, backlog.count)
            if case .line(let id, let line) = event, id.key == "#lobby", line.sender == "flooder", line.text.hasPrefix("flood ") {
                seen.append(Int(line.text.dropFirst(6)) ?? -1)
            }
        }
        #expect(seen == Array(0..<count), "every line once, in order")
        #expect(most <= bound + 8, "at most \(most) events waited")
        await alice.quit(reason: "done")
    }
}
