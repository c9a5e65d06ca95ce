#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import ChatClientKit
import ChatTransport
import IRCTestSupport
import IRCWire

/// Two of our clients on our server, each with its own download folder.
struct Pair {
    let server: TestServer
    let alice: ChatClient
    let bob: ChatClient
    let aliceLog: EventLog
    let bobLog: EventLog
    let folder: String

    init(configure: (inout ClientConfig) -> Void = { _ in }) async throws {
        server = try TestServer()
        folder = NSTemporaryDirectory() + "chat-tui-dcc-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder + "/bob", withIntermediateDirectories: true)
        var a = config(port: server.port, nick: "alice")
        a.downloadDirectory = folder + "/alice"
        configure(&a)
        var b = config(port: server.port, nick: "bob")
        b.downloadDirectory = folder + "/bob"
        configure(&b)
        alice = ChatClient(config: a)
        bob = ChatClient(config: b)
        aliceLog = EventLog.watching(alice)
        bobLog = EventLog.watching(bob)
        await alice.start()
        await bob.start()
        _ = try await aliceLog.registered()
        _ = try await bobLog.registered()
    }

    /// Ends both clients and every transfer they still run (an offer nobody took keeps its
    /// worker, and with it the client, until it expires: minutes after the test).
    func stop() async {
        for client in [alice, bob] {
            for info in client.transfers.snapshot() where !info.state.isFinished { await client.cancelTransfer(info.id) }
        }
        let deadline = Monotonic.now() + 30
        while [alice, bob].contains(where: { $0.transfers.snapshot().contains { !$0.state.isFinished } }), Monotonic.now() < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        await alice.quit()
        await bob.quit()
        try? FileManager.default.removeItem(atPath: folder)
    }
}

/// A file of random bytes from /dev/urandom; returns its SHA-256 as coreutils' sha256sum
/// computes it, an implementation independent of ours.
func randomFile(_ path: String, mebibytes: Int) throws -> String {
    let random = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/dev/urandom"))
    let data = random.readData(ofLength: mebibytes << 20)
    try random.close()
    try data.write(to: URL(fileURLWithPath: path))
    let child = try ChildProcess(executable: "/usr/bin/sha256sum", arguments: [path], output: path + ".sha256")
    child.wait(timeout: 30)
    let line = try String(contentsOfFile: path + ".sha256", encoding: .utf8)
    try FileManager.default.removeItem(atPath: path + ".sha256")
    return String(line.prefix(64))
}

func waitForTransfer(_ client: ChatClient, timeout: Double = 60, _ match: @escaping (TransferInfo) -> Bool) async throws -> TransferInfo {
    let deadline = Monotonic.now() + timeout
    while Monotonic.now() < deadline {
        if let found = client.transfers.snapshot().first(where: match) { return found }
        try await Task.sleep(for: .milliseconds(20))
    }
    throw EventLog.Timeout(description: "no such transfer; have: \(client.transfers.snapshot())")
}

func isDone(_ info: TransferInfo) -> Bool { if case .done = info.state { return true } else { return false } }

/// Whether anything listens on `port`, read from /proc (connecting to find out would be
/// taken as the peer accepting the offer).
func isListening(_ port: Int) -> Bool {
    let hexPort = String(format: ":%04X", port)
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            if fields.count > 3, fields[1].hasSuffix(hexPort), fields[3] == "0A" { return true }
        }
    }
    return false
}

@Suite("DCC file transfer between two clients", .serialized)
struct DCCTransferTests {
    @Test("50 MiB arrive byte-identical, active and passive", arguments: [false, true])
    func fiftyMebibytes(passive: Bool) async throws {
        let pair = try await Pair()
        let source = pair.folder + "/source.bin"
        let digest = try randomFile(source, mebibytes: 50)
        await pair.alice.sendFile(source, to: "bob", passive: passive)
        let offer = try await waitForTransfer(pair.bob) { $0.state == .pending }
        #expect(offer.size == 50 << 20 && offer.passive == passive)
        await pair.bob.acceptTransfer(offer.id)
        let received = try await waitForTransfer(pair.bob) { isDone($0) || $0.state.isFinished }
        guard case .done(let sha, let seconds) = received.state else { Issue.record("transfer ended \(received.state)"); return }
        #expect(sha == digest)
        #expect(received.localPath == pair.folder + "/bob/source.bin")
        let sent = try await waitForTransfer(pair.alice) { $0.state.isFinished }
        guard case .done(let senderSha, _) = sent.state else { Issue.record("sender ended \(sent.state)"); return }
        #expect(senderSha == digest)
        print("DCC \(passive ? "passive" : "active") 50 MiB: sha256 \(digest) -> \(sha), \(String(format: "%.0f", 50 / seconds)) MiB/s")
        await pair.stop()
    }

    @Test("an interrupted transfer resumes from the partial file and ends identical")
    func resume() async throws {
        let pair = try await Pair()
        let source = pair.folder + "/big.bin"
        let digest = try randomFile(source, mebibytes: 20)
        // What an interrupted attempt leaves behind: the first 7 MiB as big.bin.part.
        let partial = try Data(contentsOf: URL(fileURLWithPath: source)).prefix(7 << 20)
        _ = FileManager.default.createFile(atPath: pair.folder + "/bob/big.bin.part", contents: partial)
        await pair.alice.sendFile(source, to: "bob")
        let offer = try await waitForTransfer(pair.bob) { $0.state == .pending }
        await pair.bob.acceptTransfer(offer.id)
        let done = try await waitForTransfer(pair.bob) { $0.state.isFinished }
        guard case .done(let sha, _) = done.state else { Issue.record("ended \(done.state)"); return }
        #expect(done.startOffset == 7 << 20)
        #expect(sha == digest)
        #expect(!FileManager.default.fileExists(atPath: pair.folder + "/bob/big.bin.part"))
        try await pair.bobLog.line(in: "alice", containing: "Resuming big.bin from 7.0 MiB")
        await pair.stop()
    }

    @Test("a rejected offer closes the sender's port and says so")
    func rejected() async throws {
        let pair = try await Pair()
        let source = pair.folder + "/note.txt"
        _ = FileManager.default.createFile(atPath: source, contents: Data("hello".utf8))
        await pair.alice.sendFile(source, to: "bob")
        let offered = try await waitForTransfer(pair.alice) { $0.state == .offered }
        #expect(isListening(offered.port))
        let offer = try await waitForTransfer(pair.bob) { $0.state == .pending }
        await pair.bob.rejectTransfer(offer.id)
        _ = try await waitForTransfer(pair.alice) { $0.state == .rejected }
        try await pair.aliceLog.line(in: "bob", containing: "bob rejected note.txt")
        // The listener closes when the worker sees the rejection: wait for that, not for a time.
        let deadline = Monotonic.now() + 10
        while isListening(offered.port) && Monotonic.now() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(!isListening(offered.port))
        await pair.stop()
    }

    @Test("an offer nobody takes expires and its port is closed")
    func expired() async throws {
        let pair = try await Pair { $0.dccOfferTimeout = 1 }
        let source = pair.folder + "/note.txt"
        _ = FileManager.default.createFile(atPath: source, contents: Data("hello".utf8))
        await pair.alice.sendFile(source, to: "bob")
        let offered = try await waitForTransfer(pair.alice) { $0.state == .offered }
        _ = try await waitForTransfer(pair.alice, timeout: 5) { $0.state == .expired }
        #expect(!isListening(offered.port))
        try await pair.aliceLog.line(in: "bob", containing: "expired")
        await pair.stop()
    }

    @Test("an offer over --dcc-max-size is refused with a message")
    func tooBig() async throws {
        let pair = try await Pair { $0.dccMaxSize = 1000 }
        let source = pair.folder + "/big.txt"
        _ = FileManager.default.createFile(atPath: source, contents: Data(repeating: 65, count: 5000))
        await pair.alice.sendFile(source, to: "bob")
        let line = try await pair.bobLog.line(in: "alice", containing: "refused, larger than the limit")
        #expect(line.text.contains("4.9 KiB"))
        _ = try await waitForTransfer(pair.alice) { $0.state == .rejected }
        await pair.stop()
    }

    @Test("a hostile offered name is saved under a plain name in the download folder")
    func hostileName() async throws {
        let pair = try await Pair()
        // Offer by hand, as a malicious peer would, with a path in the name.
        let listener = try Sockets.listen(bind: "127.0.0.1", port: 0)
        let port = Sockets.boundPort(listener[0])
        let peer = try pair.server.client()
        try peer.register("mallory")
        let payload = Array("owned\n".utf8)
        peer.send("PRIVMSG bob :" + DCCMessage.send(fileName: "../../.bashrc", address: "127.0.0.1", port: port, size: UInt64(payload.count), token: nil).ctcp)
        let offer = try await waitForTransfer(pair.bob) { $0.state == .pending }
        #expect(offer.localPath == pair.folder + "/bob/bashrc")
        await pair.bob.acceptTransfer(offer.id)
        var pfd = pollfd(fd: listener[0], events: Int16(POLLIN), revents: 0)
        #expect(poll(&pfd, 1, 5000) == 1)
        let connection = accept(listener[0], nil, nil)
        _ = payload.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, 0) }
        let done = try await waitForTransfer(pair.bob) { $0.state.isFinished }
        #expect(isDone(done))
        #expect(FileManager.default.contents(atPath: pair.folder + "/bob/bashrc") == Data(payload))
        close(connection)
        listener.forEach { close($0) }
        await pair.stop()
    }

    @Test("an offer naming a system port (SSH's 22) is refused before anyone can accept it")
    func systemPortRefused() async throws {
        let pair = try await Pair()
        let peer = try pair.server.client()
        try peer.register("mallory")
        peer.send("PRIVMSG bob :" + DCCMessage.send(fileName: "banner.txt", address: "127.0.0.1", port: 22, size: 100, token: nil).ctcp)
        let line = try await pair.bobLog.line(in: "mallory", containing: "refused")
        #expect(line.text.contains("port 22") && line.text.contains("above 1023"))
        #expect(pair.bob.transfers.snapshot().isEmpty, "nothing to /accept")
        await pair.stop()
    }
}

@Suite("DCC offer addresses")
struct OfferAddressTests {
    @Test("address kinds", arguments: [
        ("127.0.0.1", OfferAddress.Kind.loopback), ("::1", .loopback), ("0::1", .loopback), ("::ffff:127.0.0.1", .loopback),
        ("10.1.2.3", .privateNetwork), ("172.20.0.1", .privateNetwork), ("192.168.1.9", .privateNetwork), ("fd00::1", .privateNetwork),
        ("fe80::1", .privateNetwork), ("203.0.113.5", .publicNetwork), ("2001:db8::1", .publicNetwork), ("cloak.example", .notAnAddress),
    ])
    func kinds(_ c: (String, OfferAddress.Kind)) {
        #expect(OfferAddress.kind(c.0) == c.1)
    }

    @Test("warnings put the sender's address beside the offered one")
    func warnings() {
        #expect(OfferAddress.warning(offered: "127.0.0.1", sender: "203.0.113.5", nick: "bob")
                == "it points at 127.0.0.1 (this machine), but bob connects from 203.0.113.5")
        #expect(OfferAddress.warning(offered: "192.168.1.9", sender: "203.0.113.5", nick: "bob")
                == "it points at 192.168.1.9 (a private network), but bob connects from 203.0.113.5")
        #expect(OfferAddress.warning(offered: "198.51.100.7", sender: "203.0.113.5", nick: "bob")
                == "it points at 198.51.100.7, but bob connects from 203.0.113.5")
        #expect(OfferAddress.warning(offered: "192.168.1.9", sender: "192.168.1.9", nick: "bob") == nil)
        #expect(OfferAddress.warning(offered: "127.0.0.1", sender: "0::1", nick: "bob") == nil, "both on this machine")
        #expect(OfferAddress.warning(offered: "198.51.100.7", sender: "cloak.example", nick: "bob") == nil)
    }
}
