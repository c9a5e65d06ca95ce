#if canImport(Glibc)
import Glibc
#endif
import Testing
import ChatServerKit
import ChatTransport
import IRCTestSupport
import IRCWire

/// The runtime's limits over real sockets: pacing holds a flood back without losing a line,
/// a full queue stops the reading (the flooder's own writes block), and a long reply to a
/// client that does not read holds neither the loop nor the memory.
@Suite("runtime limits over sockets", .serialized)
struct RuntimeLimitTests {
    func pacedServer(burst: Int, perSecond: Double, queue: Int) throws -> TestServer {
        try TestServer {
            var limits = ConnectionLimits(exemptLoopback: false, burst: burst, linesPerSecond: perSecond, queuedLines: queue)
            limits.perAddress = 100
            limits.newPerWindow = 100
            $0.connectionLimits = limits
        }
    }

    @Test("a paced flood arrives whole and in order, and the flooder is not disconnected")
    func pacedFlood() throws {
        let server = try pacedServer(burst: 5, perSecond: 5000, queue: 32)
        let bystander = try server.client()
        try bystander.register("bystander")
        let flooder = try server.client()
        try flooder.register("flooder")
        var burst: [UInt8] = []
        for n in 0..<3000 { burst += Array("PRIVMSG #lobby :line \(n)\r\n".utf8) }
        flooder.sendBytes(burst + Array("PING :done\r\n".utf8))
        var expected = 0
        try bystander.readUntil(timeout: 60) { message in
            if message.command == "PRIVMSG" {
                #expect(message.params.last == "line \(expected)")
                expected += 1
            }
            return expected == 3000
        }
        _ = try flooder.readUntil(timeout: 30) { $0.command == "PONG" && $0.params.last == "done" }
    }

    @Test("past the queue the server stops reading: the flooder's writes block, a bystander is answered, the flooder stays")
    func backpressure() throws {
        let server = try pacedServer(burst: 5, perSecond: 1, queue: 16)
        let bystander = try server.client()
        try bystander.register("bystander")
        let flooder = try server.client()
        try flooder.register("flooder")
        _ = fcntl(flooder.fd, F_SETFL, fcntl(flooder.fd, F_GETFL) | O_NONBLOCK)
        let line = Array(("PRIVMSG #lobby :" + String(repeating: "x", count: 400) + "\r\n").utf8)
        var chunk: [UInt8] = []
        for _ in 0..<100 { chunk += line }
        var written = 0, blocked = false
        // The kernel's buffers fill once the server stops reading; then a write would block.
        while written < 256 << 20 {
            let n = chunk.withUnsafeBytes { Glibc.send(flooder.fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                #expect(errno == EAGAIN || errno == EWOULDBLOCK)
                // Blocked: wait a moment for the server to have read all it will (it reads in turns).
                var pfd = pollfd(fd: flooder.fd, events: Int16(POLLOUT), revents: 0)
                if poll(&pfd, 1, 500) == 0 { blocked = true; break }
                continue
            }
            written += n
        }
        #expect(blocked, "the server kept reading \(written) bytes")
        #expect(written < 64 << 20, "\(written) bytes went in before the writes blocked")
        bystander.send("PING :still-here")
        _ = try bystander.readUntil { $0.command == "PONG" && $0.params.last == "still-here" }
        bystander.send("WHOIS flooder")
        _ = try bystander.readUntil { $0.command == "311" }
    }

    @Test("LIST again and again to a client that does not read: the others are served, the reader keeps its place, then gets every list whole")
    func listToANonReader() throws {
        let server = try TestServer {
            $0.channelLimit = 2000
            $0.longReplyStep = 64
        }
        let owner = try server.client()
        try owner.register("owner")
        var joins: [String] = []
        var batch: [String] = []
        for n in 0..<1000 {
            batch.append("#room\(n)")
            if batch.count == 40 { joins.append("JOIN " + batch.joined(separator: ",")); batch = [] }
        }
        for join in joins { owner.send(join) }
        owner.send("PING :joined")
        _ = try owner.readUntil(timeout: 60) { $0.command == "PONG" && $0.params.last == "joined" }
        let reader = try server.client()
        try reader.register("reader")
        var asks: [UInt8] = []
        for _ in 0..<20 { asks += Array("LIST\r\n".utf8) }
        reader.sendBytes(asks + Array("PING :listed\r\n".utf8))
        // Not reading: the others are served meanwhile.
        let bystander = try server.client()
        try bystander.register("bystander")
        bystander.send("PING :prompt")
        _ = try bystander.readUntil { $0.command == "PONG" && $0.params.last == "prompt" }
        // Now reading: twenty whole lists in order, then the PONG.
        var lists = 0, entries = 0
        try reader.readUntil(timeout: 120) { message in
            if message.command == "322" { entries += 1 }
            if message.command == "323" {
                #expect(entries == 1001, "the 1,000 rooms and #lobby")
                entries = 0
                lists += 1
            }
            return message.command == "PONG" && message.params.last == "listed"
        }
        #expect(lists == 20)
    }
}
