#if canImport(Glibc)
import Glibc
#endif
import Testing
import ChatTransport
import Foundation
import Synchronization
import IRCWire

@Suite("connecting", .serialized)
struct ConnectTests {
    @Test("connection refused names the host and port")
    func refused() throws {
        // Bind a port and close it again, so nothing listens there.
        let fds = try Sockets.listen(bind: "127.0.0.1", port: 0)
        let port = Sockets.boundPort(fds[0])
        fds.forEach { close($0) }
        #expect(throws: TransportError.connectionRefused(host: "127.0.0.1", port: port)) {
            _ = try Sockets.connect(host: "127.0.0.1", port: port, timeout: 2)
        }
    }

    @Test("an unknown host is reported as not found")
    func unknownHost() {
        do {
            _ = try Sockets.connect(host: "no-such-host.invalid", port: 6667, timeout: 2)
            Issue.record("connected to a host that does not exist")
        } catch {
            guard case .hostNotFound(let host, _) = error else { Issue.record("got \(error)"); return }
            #expect(host == "no-such-host.invalid")
            #expect(error.description.hasPrefix("host not found: no-such-host.invalid"))
        }
    }

    @Test("a listener that never accepts makes connect time out")
    func timesOut() throws {
        // A backlog of 0 and connections that are never accepted fill the queue; the kernel then
        // drops further SYNs and connect waits, which is what the timeout is for.
        let fds = try Sockets.listen(bind: "127.0.0.1", port: 0, backlog: 0)
        defer { fds.forEach { close($0) } }
        let port = Sockets.boundPort(fds[0])
        var held: [Int32] = []
        defer { held.forEach { close($0) } }
        var timedOut = false
        for _ in 0..<16 {
            do {
                held.append(try Sockets.connect(host: "127.0.0.1", port: port, timeout: 0.5))
            } catch {
                #expect(error == .timedOut(host: "127.0.0.1", port: port, seconds: 0.5))
                timedOut = true
                break
            }
        }
        #expect(timedOut)
    }

    @Test("a busy port is reported as in use")
    func addressInUse() throws {
        let first = try Sockets.listen(bind: "127.0.0.1", port: 0)
        defer { first.forEach { close($0) } }
        let port = Sockets.boundPort(first[0])
        #expect(throws: TransportError.addressInUse(address: "127.0.0.1", port: port)) {
            _ = try Sockets.listen(bind: "127.0.0.1", port: port)
        }
    }

    /// A connected AF_UNIX stream pair, the writing end (0) non-blocking, with the kernel's buffers
    /// set small when asked (so that writes stop part-way).
    func socketPair(sendBuffer: Int32? = nil, receiveBuffer: Int32? = nil) -> [Int32] {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        Sockets.setNonBlocking(pair[0])
        if var size = sendBuffer { setsockopt(pair[0], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        if var size = receiveBuffer { setsockopt(pair[1], SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        return pair
    }

    @Test("output buffer writes everything a reader takes, in order")
    func outputBuffer() throws {
        let pair = socketPair()
        defer { close(pair[0]); close(pair[1]) }
        var buffer = OutputBuffer()
        var expected: [UInt8] = []
        for i in 0..<20_000 {
            let line = Array("line \(i)\r\n".utf8)
            buffer.append(line)
            expected += line
        }
        var received: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: 65536)
        while received.count < expected.count {
            let result = buffer.flush(to: pair[0])
            #expect(result == .done || result == .wouldBlock)
            let n = scratch.withUnsafeMutableBytes { recv(pair[1], $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 { received += scratch[0..<n] }
        }
        #expect(received == expected)
        #expect(buffer.isEmpty)
    }

    @Test("a flush with a limit writes exactly that many bytes (small lines and big shared chunks alike), and the rest after")
    func outputBufferLimited() throws {
        let pair = socketPair()
        defer { close(pair[0]); close(pair[1]) }
        var buffer = OutputBuffer()
        var expected: [UInt8] = []
        for i in 0..<60 {
            // Small lines copied into chunks of our own, and every fifth a big shared array.
            let line = i % 5 == 4 ? (0..<3_000).map { UInt8(truncatingIfNeeded: $0 &+ i) } : Array("line \(i)\r\n".utf8)
            buffer.append(line)
            expected += line
        }
        var received: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: 65536)
        func drain() {
            while true {
                let n = scratch.withUnsafeMutableBytes { recv(pair[1], $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if n <= 0 { return }
                received += scratch[0..<n]
            }
        }
        // Limits that fall inside small lines, on chunk edges and inside big chunks.
        for limit in [1, 7, 100, 1_000, 2_999, 3_001, 5_000] {
            let before = received.count
            #expect(buffer.flush(to: pair[0], limit: limit) == .done)
            drain()
            #expect(received.count == before + limit, "limit \(limit)")
            #expect(buffer.sent == received.count, "the stream's place: bytes written so far")
            #expect(received == Array(expected[0..<received.count]))
        }
        #expect(buffer.flush(to: pair[0], limit: 0) == .done)
        while !buffer.isEmpty {
            _ = buffer.flush(to: pair[0])
            drain()
        }
        drain()
        #expect(received == expected)
    }

    @Test("a shared array adopted from an offset by an empty buffer: its tail is written, the array itself unchanged, and later lines follow it")
    func outputBufferFromOffset() throws {
        let pair = socketPair()
        defer { close(pair[0]); close(pair[1]) }
        let shared = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 % 251) }
        var buffer = OutputBuffer()
        buffer.append(shared, from: 12_345)
        #expect(buffer.count == shared.count - 12_345 && buffer.chunkCount == 1)
        buffer.append(Array("after\r\n".utf8))
        buffer.append(shared, from: shared.count)
        let expected = Array(shared[12_345...]) + Array("after\r\n".utf8)
        var received: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: 65536)
        while received.count < expected.count {
            _ = buffer.flush(to: pair[0])
            let n = scratch.withUnsafeMutableBytes { recv(pair[1], $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 { received += scratch[0..<n] }
        }
        #expect(received == expected)
        #expect(buffer.isEmpty)
        #expect(shared[0] == 0 && shared.count == 40_000)
    }

    @Test("appends between partial writes, and one shared line in two buffers, keep every byte in order")
    func outputBufferInterleaved() throws {
        var pairs: [[Int32]] = []
        for _ in 0..<2 { pairs.append(socketPair(sendBuffer: 2048, receiveBuffer: 2048)) }
        defer { for pair in pairs { close(pair[0]); close(pair[1]) } }
        var buffers = [OutputBuffer(), OutputBuffer()]
        var expected: [[UInt8]] = [[], []]
        var received: [[UInt8]] = [[], []]
        var scratch = [UInt8](repeating: 0, count: 1000)
        var stalls = 0
        var gathered = 0
        for round in 0..<400 {
            // The same array to both (as a fan-out does), then a line of each one's own. Every
            // third shared array is big (a room's gathered deliveries): kept by reference, as a
            // chunk of its own, and sent with the others in one sendmsg.
            let length = round % 3 == 1 ? OutputBuffer.shareFrom + round * 7 : round % 97
            let shared = Array("shared \(round) \(String(repeating: "s", count: length))\r\n".utf8)
            for b in 0..<2 {
                // Every seventh round, from an offset (a held tail): adopted when the buffer is
                // empty, copied when something waits.
                let from = round % 7 == 3 ? 1 + (round + b) % 9 : 0
                buffers[b].append(shared, from: from)
                let own = Array("own \(b) \(round)\r\n".utf8)
                if round % 3 != 0 { buffers[b].append(own) }
                expected[b] += shared[from...] + (round % 3 != 0 ? own : [])
                if buffers[b].chunkCount > 1 { gathered += 1 }
                // Flushed on some rounds only, and read a little at a time: the kernel buffer fills
                // and the writes stop part-way through.
                if round % 5 == 0, buffers[b].flush(to: pairs[b][0]) == .wouldBlock { stalls += 1 }
                guard round % 4 == 0 else { continue }
                let n = scratch.withUnsafeMutableBytes { recv(pairs[b][1], $0.baseAddress, 1 + round % 200, Int32(MSG_DONTWAIT)) }
                if n > 0 { received[b] += scratch[0..<n] }
            }
        }
        for b in 0..<2 {
            while received[b].count < expected[b].count {
                _ = buffers[b].flush(to: pairs[b][0])
                let n = scratch.withUnsafeMutableBytes { recv(pairs[b][1], $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if n > 0 { received[b] += scratch[0..<n] }
            }
            #expect(received[b] == expected[b])
        }
        #expect(stalls > 10, "the kernel refused part of a write often enough to test that path")
        #expect(gathered > 50, "big shared arrays were held as chunks of their own")
    }

    @Test("random mixes of small lines and big shared arrays, past 64 chunks at once, partial writes: every byte in order")
    func outputBufferRandom() throws {
        let pair = socketPair(sendBuffer: 4096)
        defer { close(pair[0]); close(pair[1]) }
        var seed: UInt64 = 7
        func next(_ bound: Int) -> Int {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Int((seed >> 33) % UInt64(bound))
        }
        var buffer = OutputBuffer()
        var expected: [UInt8] = [], received: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: 70_000)
        var mostChunks = 0, stalls = 0
        for step in 0..<3000 {
            let big = next(3) == 0
            let length = big ? OutputBuffer.shareFrom + next(3000) : 1 + next(200)
            let line = (0..<length).map { UInt8(truncatingIfNeeded: step &+ $0) }
            buffer.append(line)
            expected += line
            mostChunks = max(mostChunks, buffer.chunkCount)
            // Long stretches without a flush let more than 64 chunks pile up.
            if next(100) < 3 {
                if buffer.flush(to: pair[0]) == .wouldBlock { stalls += 1 }
                let n = scratch.withUnsafeMutableBytes { recv(pair[1], $0.baseAddress, 1 + next($0.count - 1), Int32(MSG_DONTWAIT)) }
                if n > 0 { received += scratch[0..<n] }
            }
            #expect(buffer.count <= expected.count - received.count)
        }
        while received.count < expected.count {
            _ = buffer.flush(to: pair[0])
            let n = scratch.withUnsafeMutableBytes { recv(pair[1], $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 { received += scratch[0..<n] }
        }
        #expect(received == expected)
        #expect(buffer.isEmpty && buffer.chunkCount == 0)
        #expect(mostChunks > 64, "more chunks waiting than one sendmsg takes")
        #expect(stalls > 5, "the kernel refused part of a write")
    }
}

@Suite("a flooding peer")
struct FloodTests {
    @Test("the reader stops at its limit and lets TCP push back; nothing is lost")
    func boundedInput() async throws {
        let listener = try Sockets.listen(bind: "127.0.0.1", port: 0)
        defer { listener.forEach { close($0) } }
        let port = Sockets.boundPort(listener[0])
        let total = 400_000
        // 400,000 lines of about 100 bytes: 40 MB, far more than loopback buffers hold.
        let listening = listener[0]
        let writer = Thread {
            // The listener is non-blocking: wait for the connection, then take it.
            var pfd = pollfd(fd: listening, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 10_000) == 1 else { return }
            let fd = accept(listening, nil, nil)
            guard fd >= 0 else { return }
            // Blocking writes: TCP pushes back once the reader stops.
            let flags = fcntl(fd, F_GETFL)
            _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)
            let line = Array((":flood!f@h PRIVMSG #room :" + String(repeating: "x", count: 70) + "\r\n").utf8)
            var chunk: [UInt8] = []
            for _ in 0..<100 { chunk += line }
            for _ in 0..<(total / 100) {
                var offset = 0
                while offset < chunk.count {
                    let n = chunk.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
                    if n <= 0 { close(fd); return }
                    offset += n
                }
            }
            shutdown(fd, Int32(SHUT_WR))
            // Keep the socket until the reader has everything.
            var byte: UInt8 = 0
            _ = recv(fd, &byte, 1, 0)
            close(fd)
        }
        writer.start()
        let connection = try await LineConnection.open(host: "127.0.0.1", port: port, timeout: 5)
        // Take nothing until the reader has paused at its limit.
        let deadline = Monotonic.now() + 30
        while connection.pendingHighWater < LineConnection.inputLimit && Monotonic.now() < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        try #require(connection.pendingHighWater == LineConnection.inputLimit, "the reader never paused at its limit")
        var lines = 0
        for await input in connection.input {
            connection.taken()
            if case .line = input { lines += 1 }
            if case .closed = input { break }
        }
        #expect(lines == total, "every line arrives, in the end")
        #expect(connection.waitingLines == 0, "the count of waiting lines comes back to zero (it drifted when counted after handing out)")
        #expect(connection.pendingHighWater <= LineConnection.inputLimit, "never more than the limit waited")
        connection.close(reason: "done")
    }
}

@Suite("the non-blocking stream")
struct StreamTests {
    /// A listener on 127.0.0.1 and the socket it accepted from `connection`, never read.
    func silentPeer() async throws -> (LineConnection, Int32, [Int32]) {
        let listener = try Sockets.listen(bind: "127.0.0.1", port: 0)
        let connection = try await LineConnection.open(host: "127.0.0.1", port: Sockets.boundPort(listener[0]), timeout: 5)
        var pfd = pollfd(fd: listener[0], events: Int16(POLLIN), revents: 0)
        _ = poll(&pfd, 1, 10_000)
        let accepted = accept(listener[0], nil, nil)
        try #require(accepted >= 0)
        return (connection, accepted, listener)
    }

    @Test("writing to a peer that reads nothing never blocks: past the bound the write fails and the connection closes, saying why")
    func outputBounded() async throws {
        let (connection, peer, listener) = try await silentPeer()
        defer { close(peer); listener.forEach { close($0) } }
        let line = Array((String(repeating: "x", count: 500) + "\r\n").utf8)
        var failure: TransportError?
        var written = 0
        // Far more than socket buffers and the bound hold together: each call returns at once.
        while written < 64 << 20 {
            do { try connection.write(line); written += line.count } catch { failure = error; break }
        }
        guard case .outputFull = failure else { Issue.record("no bound: \(String(describing: failure)) after \(written) bytes"); return }
        #expect(connection.queuedBytes <= LineConnection.outputLimit)
        var ended: String?
        for await input in connection.input { if case .closed(let reason) = input { ended = reason } }
        #expect(ended?.hasPrefix("the server stopped reading") == true, "\(ended ?? "never closed")")
    }

    @Test("close with output stuck does not wait for it: input ends with our reason")
    func closeDoesNotWait() async throws {
        let (connection, peer, listener) = try await silentPeer()
        defer { close(peer); listener.forEach { close($0) } }
        let chunk = [UInt8](repeating: 65, count: 4096) + [13, 10]
        while connection.queuedBytes < 256 * 1024 { try connection.write(chunk) }
        connection.close(reason: "you quit")
        var ended: String?
        for await input in connection.input { if case .closed(let reason) = input { ended = reason } }
        #expect(ended == "you quit")
        #expect(throws: TransportError.closed) { try connection.write(chunk) }
    }

    @Test("a write after a long idle time is sent, not taken for a stuck peer")
    func writeAfterIdle() async throws {
        // The test's clock: the connection sits idle for an hour between two lines.
        let time = Mutex(0.0)
        let listener = try Sockets.listen(bind: "127.0.0.1", port: 0)
        defer { listener.forEach { close($0) } }
        let connection = try await LineConnection.open(host: "127.0.0.1", port: Sockets.boundPort(listener[0]), timeout: 5,
                                                       clock: { time.withLock { $0 } })
        var pfd = pollfd(fd: listener[0], events: Int16(POLLIN), revents: 0)
        _ = poll(&pfd, 1, 10_000)
        let peer = accept(listener[0], nil, nil)
        try #require(peer >= 0)
        defer { close(peer) }
        func readLine() -> String {
            var bytes: [UInt8] = []
            var byte: UInt8 = 0
            while recv(peer, &byte, 1, 0) == 1 { if byte == 10 { break }; bytes.append(byte) }
            return String(decoding: bytes, as: UTF8.self)
        }
        try connection.write(Array("PING :one\r\n".utf8))
        #expect(readLine() == "PING :one\r")
        time.withLock { $0 += 3600 }
        try connection.write(Array("PING :two\r\n".utf8))
        #expect(readLine() == "PING :two\r", "the line after the idle hour went out")
        // And the connection is still up: a line from the peer arrives.
        _ = "PONG :two\r\n".withCString { send(peer, $0, 11, 0) }
        for await input in connection.input {
            connection.taken()
            #expect(input == .line(Array("PONG :two".utf8)))
            break
        }
        connection.close(reason: "done")
    }

    @Test("a connect that hangs is given up when its task is cancelled")
    func cancelConnect() async throws {
        // A full backlog that is never accepted makes further connects wait (see timesOut).
        let fds = try Sockets.listen(bind: "127.0.0.1", port: 0, backlog: 0)
        defer { fds.forEach { close($0) } }
        let port = Sockets.boundPort(fds[0])
        var held: [Int32] = []
        defer { held.forEach { close($0) } }
        while let fd = try? Sockets.connect(host: "127.0.0.1", port: port, timeout: 0.5) { held.append(fd) }
        let attempt = Task { () throws(TransportError) -> LineConnection in
            try await LineConnection.open(host: "127.0.0.1", port: port, timeout: 600)
        }
        attempt.cancel()
        switch await attempt.result {
        case .failure(let error): #expect((error as? TransportError) == .cancelled, "\(error)")
        case .success: Issue.record("connected through a full backlog")
        }
    }
}
