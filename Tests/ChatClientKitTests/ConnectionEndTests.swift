import Foundation
import Testing
import ChatClientKit
import ChatTransport
import ChatServerKit
import IRCTestSupport

@Suite("How a connection ended, in words")
struct ConnectionEndVectors {
    @Test("our plain-text port's ERROR names the TLS port")
    func ourPlainPort() {
        let reason = "TLS with 127.0.0.1 port 6667 failed: " + LineConnection.plainTextAnswer + "ERROR :This is the plain-text port; TLS is on port 6697"
        #expect(ConnectionEnd.afterTLSFailure(reason, plainTextMarker: LineConnection.plainTextAnswer)
                == .stop("this port speaks plain text: drop --tls (or use --port 6697 with --tls)"))
    }

    @Test("another server's plain text stops without a port")
    func otherPlainText() {
        let reason = "TLS with h port 6667 failed: " + LineConnection.plainTextAnswer + ":irc.example NOTICE * :*** Looking up your hostname"
        #expect(ConnectionEnd.afterTLSFailure(reason, plainTextMarker: LineConnection.plainTextAnswer) == .stop("this port speaks plain text: drop --tls"))
    }

    @Test("a TLS failure of another kind is not a port mismatch")
    func otherTLSFailure() {
        #expect(ConnectionEnd.afterTLSFailure("TLS with h port 1 failed: the TLS handshake timed out", plainTextMarker: LineConnection.plainTextAnswer) == nil)
    }

    @Test("the host closing the room is said with the interval and how to stop")
    func hostClosed() {
        #expect(ConnectionEnd.retrying(after: "closed by the server: the host closed the room (server shutting down)")
                == .retry(reason: "the host closed the room; /disconnect stops trying"))
        #expect(ConnectionEnd.retrying(after: "connection reset by the server") == .retry(reason: "connection reset by the server"))
    }

    @Test("TLS records are an alert or a handshake with a 3.x version")
    func records() {
        #expect(LineConnection.isTLSRecord([0x15, 0x03, 0x01]))
        #expect(LineConnection.isTLSRecord([0x16, 0x03]))
        #expect(!LineConnection.isTLSRecord(Array("ERROR".utf8)))
        #expect(!LineConnection.isTLSRecord([0x16]))
    }
}

@Suite("The wrong port for the protocol, against our server", .serialized)
struct WrongPortTests {
    static func attempts(_ events: [ClientEvent]) -> Int {
        events.filter { if case .status(.connecting) = $0 { return true } else { return false } }.count
    }

    @Test("plain text to the TLS port stops at once: this port speaks TLS")
    func plainToTLS() async throws {
        let certificate = try TestCertificate()
        let server = try TestServer(tls: certificate.context)
        let client = ChatClient(config: config(port: server.tlsPort!, nick: "plainfan"))
        let log = EventLog.watching(client)
        await client.start()
        #expect(try await log.stopReason() == ConnectionEnd.speaksTLS)
        await client.disconnect()
        // One attempt: the stop is final, and nothing after it connects again.
        #expect(Self.attempts(await log.all()) == 1)
    }

    @Test("TLS to the plain port stops at once: drop --tls, naming the TLS port")
    func tlsToPlain() async throws {
        let certificate = try TestCertificate()
        let server = try TestServer(tls: certificate.context)
        var settings = config(port: server.port, nick: "tlsfan")
        settings.tls = true
        settings.tlsFingerprint = certificate.fingerprint
        let client = ChatClient(config: settings)
        let log = EventLog.watching(client)
        await client.start()
        #expect(try await log.stopReason() == "this port speaks plain text: drop --tls (or use --port \(server.tlsPort!) with --tls)")
        await client.disconnect()
        #expect(Self.attempts(await log.all()) == 1)
        #expect(server.logLines.filter { $0.contains("spoke TLS to the plain port") }.count == 1)
    }

    @Test("the host closing the room: the status says we keep trying and how to stop (how soon is counted down beside it)")
    func hostClosedRoom() async throws {
        // A handle of its own (no history, nothing on disk), stopped once: the host ending it.
        var settings = ServerConfig()
        settings.name = "test.server"
        let server = try ServerHandle.start(config: settings, bind: "127.0.0.1", port: 0) { _ in }
        let client = ChatClient(config: config(port: server.port, nick: "waiter"))
        let log = EventLog.watching(client)
        await client.start()
        _ = try await log.registered()
        server.stop()
        let event = try await log.next("reconnecting") { if case .status(.reconnecting) = $0 { return true } else { return false } }
        guard case .status(.reconnecting(_, let reason)) = event else { return }
        #expect(reason == "the host closed the room; /disconnect stops trying")
        // It keeps trying, and the next try (refused: nobody listens now) still says why.
        try await log.next("another attempt") { if case .status(.connecting) = $0 { return true } else { return false } }
        let again = try await log.next("reconnecting again") { if case .status(.reconnecting) = $0 { return true } else { return false } }
        guard case .status(.reconnecting(_, let reasonAgain)) = again else { return }
        #expect(reasonAgain == "the host closed the room; /disconnect stops trying")
        await client.disconnect()
        #expect(try await log.stopReason() == "disconnected by you")
    }
}
