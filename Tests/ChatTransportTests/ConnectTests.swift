#if canImport(Glibc)
import Glibc
#endif
import Testing
import ChatTransport

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

    @Test("output buffer writes everything a reader takes, in order")
    func outputBuffer() throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        Sockets.setNonBlocking(pair[0])
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
}
