#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import ChatClientKit
import ChatServerKit
import ChatTransport
import IRCTestSupport
import IRCWire

/// The same conversation against any server: register, member list, direct messages both
/// ways, a room message, a nickname collision, a rename seen by the other side.
func chatScenario(port: Int, rooms: [String]) async throws {
    let room = "#lobby"
    let alice = ChatClient(config: config(port: port, nick: "alice", rooms: rooms))
    let bob = ChatClient(config: config(port: port, nick: "bob", rooms: rooms))
    let aliceLog = EventLog.watching(alice)
    let bobLog = EventLog.watching(bob)
    await alice.start()
    #expect(try await aliceLog.registered() == "alice")
    try await aliceLog.line(in: room, containing: "You joined")
    await bob.start()
    #expect(try await bobLog.registered() == "bob")
    try await bobLog.line(in: room, containing: "You joined")
    try await aliceLog.line(in: room, containing: "bob joined")
    let members = await Set(alice.state.conversation(room)!.members.values.map(\.nick))
    #expect(members == ["alice", "bob"])

    await alice.send("hello bob, 你好 😀", to: "bob")
    let direct = try await bobLog.line(in: "alice", containing: "hello bob")
    #expect(direct.sender == "alice" && direct.text == "hello bob, 你好 😀" && direct.kind == .message)
    await bob.send("hi alice", to: "alice")
    #expect(try await aliceLog.line(in: "bob", containing: "hi alice").sender == "bob")
    await alice.send("morning, room", to: room)
    #expect(try await bobLog.line(in: room, containing: "morning, room").sender == "alice")
    // Our own message appears once on our side: echoed by the server or added locally.
    try await aliceLog.line(in: room, containing: "morning, room")

    let alice2 = ChatClient(config: config(port: port, nick: "ALICE", rooms: rooms))
    let alice2Log = EventLog.watching(alice2)
    await alice2.start()
    try await alice2Log.next(timeout: 10, "nick in use") { $0 == .nickInUse("ALICE", trying: "ALICE_") }
    #expect(try await alice2Log.registered() == "ALICE_")

    await bob.sendCommand(IRCMessage("NICK", "robert"))
    try await aliceLog.line(in: room, containing: "bob is now known as robert")
    let renamed = await alice.state.conversation(room)!.members.values.map(\.nick)
    #expect(renamed.contains("robert") && !renamed.contains("bob"))

    await alice.quit(reason: "done")
    try await aliceLog.next(timeout: 10, "stopped") { $0 == .status(.stopped(reason: "you quit")) }
    try await bobLog.line(in: room, containing: "alice quit")
    await bob.quit()
    await alice2.quit()
}

@Suite("ChatClient against real servers", .serialized)
struct ChatClientTests {
    @Test("against our server")
    func ourServer() async throws {
        let server = try TestServer()
        try await chatScenario(port: server.port, rooms: [])
    }

    @Test("against ngircd, unchanged")
    func ngircd() async throws {
        let server = try ServerProcess.ngircd()
        try await chatScenario(port: server.port, rooms: ["#lobby"])
    }

    @Test("a wrong password stops the client with the reason, no reconnect")
    func wrongPassword() async throws {
        let server = try TestServer { $0.password = "sesame" }
        var settings = config(port: server.port, nick: "intruder")
        settings.password = "guess"
        let client = ChatClient(config: settings)
        let log = EventLog.watching(client)
        await client.start()
        #expect(try await log.stopReason() == "wrong password: Password incorrect")
        // Stopped is the loop's last word: one attempt before it, and no retry was scheduled.
        let events = await log.all()
        #expect(events.filter { if case .status(.connecting) = $0 { return true } else { return false } }.count == 1)
        #expect(!events.contains { if case .status(.reconnecting) = $0 { return true } else { return false } })
        await client.disconnect()
    }

    @Test("an invalid nickname is an error with the server's reason")
    func invalidNick() async throws {
        let server = try TestServer()
        let client = ChatClient(config: config(port: server.port, nick: "9lives"))
        let log = EventLog.watching(client)
        await client.start()
        let reason = try await log.stopReason()
        #expect(reason.contains("9lives") && reason.contains("digit"))
        await client.disconnect()
    }

    @Test("CTCP VERSION and PING get answers, as other clients give them")
    func ctcpReplies() async throws {
        let server = try TestServer()
        let alice = ChatClient(config: config(port: server.port, nick: "alice"))
        let log = EventLog.watching(alice)
        await alice.start()
        _ = try await log.registered()
        let bob = try server.client()
        try bob.register("bob")
        bob.send("PRIVMSG alice :\u{1}VERSION\u{1}")
        let version = try bob.expect("NOTICE")
        #expect(version.params[1].hasPrefix("\u{1}VERSION chat-tui"))
        bob.send("PRIVMSG alice :\u{1}PING 12345\u{1}")
        #expect(try bob.expect("NOTICE").params[1] == "\u{1}PING 12345\u{1}")
        await alice.quit()
    }

    @Test("long messages arrive whole, split at character boundaries")
    func longMessage() async throws {
        let server = try TestServer()
        let alice = ChatClient(config: config(port: server.port, nick: "alice"))
        let aliceLog = EventLog.watching(alice)
        await alice.start()
        _ = try await aliceLog.registered()
        let bob = try server.client()
        try bob.register("bob")
        let text = String(repeating: "長い文章です。", count: 100)
        await alice.send(text, to: "bob")
        var received = ""
        while received.count < text.count {
            let message = try bob.expect("PRIVMSG")
            #expect(message.serialized().count <= 512)
            received += message.params[1]
        }
        #expect(received == text)
        await alice.quit()
    }
}

@Suite("ignoring people")
struct IgnoreTests {
    @Test("/ignore drops an ignored person's messages and file offers; others still arrive; /unignore undoes it")
    func ignoreMasks() async throws {
        let server = try TestServer()
        var settings = config(port: server.port, nick: "alice")
        settings.ignoreMasks = ["mallory"]
        let alice = ChatClient(config: settings)
        let log = EventLog.watching(alice)
        await alice.start()
        _ = try await log.registered()
        _ = try await log.line(in: "#lobby", containing: "You joined")
        #expect(await alice.ignoreMasks == ["mallory!*@*"])
        let mallory = try server.client()
        try mallory.register("mallory")
        let bob = try server.client()
        try bob.register("bob")
        mallory.send("PRIVMSG #lobby :spam")
        mallory.send("PRIVMSG alice :spam in private")
        // The server relays mallory's lines before it answers this PING, so they reach alice before bob's.
        mallory.send("PING :after-spam")
        _ = try mallory.readUntil { $0.command == "PONG" }
        bob.send("PRIVMSG #lobby :real message")
        _ = try await log.line(in: "#lobby", containing: "real message")
        let lobby = await log.view().conversation("#lobby")!.lines.map(\.text)
        #expect(lobby.contains("real message") && !lobby.contains("spam"))
        #expect(await alice.state.conversation("mallory") == nil, "no conversation from an ignored person")
        _ = await alice.unignore("mallory")
        mallory.send("PRIVMSG #lobby :heard now")
        _ = try await log.line(in: "#lobby", containing: "heard now")
        #expect(await alice.ignore("not a mask!") == nil)
        await alice.quit()
    }
}

@Test("the config file keeps its other lines when a setting is written back")
func configFileWrite() throws {
    let path = NSTemporaryDirectory() + "chat-tui-config-\(UUID().uuidString)/config"
    try ConfigFile.set("ignore", to: "a!*@*", in: path)
    #expect(String(decoding: FileManager.default.contents(atPath: path)!, as: UTF8.self) == "ignore = a!*@*\n")
    try Data("# mine\nnick = alice\nignore = old\nbell = off\n".utf8).write(to: URL(fileURLWithPath: path))
    try ConfigFile.set("ignore", to: "a!*@*,b!*@*", in: path)
    #expect(String(decoding: FileManager.default.contents(atPath: path)!, as: UTF8.self) == "# mine\nnick = alice\nignore = a!*@*,b!*@*\nbell = off\n")
    try ConfigFile.set("ignore", to: nil, in: path)
    #expect(String(decoding: FileManager.default.contents(atPath: path)!, as: UTF8.self) == "# mine\nnick = alice\nbell = off\n")
    // A file written on Windows (CR LF): its lines are lines (Swift reads CR LF as one
    // character, so splitting at "\n" alone saw one long line), and its mode is kept.
    try Data("# mine\r\nnick = alice\r\nignore = old\r\n".utf8).write(to: URL(fileURLWithPath: path))
    chmod(path, 0o600)
    try ConfigFile.set("ignore", to: "c!*@*", in: path)
    #expect(String(decoding: FileManager.default.contents(atPath: path)!, as: UTF8.self) == "# mine\nnick = alice\nignore = c!*@*\n")
    #expect((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) == 0o600, "a config that may hold a password stays private")
    #expect(try FileManager.default.contentsOfDirectory(atPath: (path as NSString).deletingLastPathComponent) == ["config"], "no temporary file left beside it")
}

@Test("known servers read from a CR LF file")
func knownServersCRLF() throws {
    let path = NSTemporaryDirectory() + "chat-tui-known-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: path) }
    try Data("a.example:6697 AB12\r\nb.example:6697 CD34\r\n".utf8).write(to: URL(fileURLWithPath: path))
    #expect(KnownServers.fingerprint(for: "a.example:6697", in: path) == "AB12")
    #expect(KnownServers.fingerprint(for: "b.example:6697", in: path) == "CD34")
    try KnownServers.remember("a.example:6697", "EF56", in: path)
    #expect(KnownServers.fingerprint(for: "a.example:6697", in: path) == "EF56")
    #expect(KnownServers.fingerprint(for: "b.example:6697", in: path) == "CD34")
}

@Test("a note about someone opens their conversation under their spelling, not the folded key")
func noteKeepsSpelling() async throws {
    let server = try TestServer()
    let alice = ChatClient(config: config(port: server.port, nick: "alice"))
    let log = EventLog.watching(alice)
    await alice.start()
    _ = try await log.registered()
    await alice.sendFile("/nonexistent/file", to: "Foo[X]")
    let opened = try await log.next("opened") { if case .opened = $0 { return true } else { return false } }
    #expect(opened == .opened(.direct("foo{x}"), name: "Foo[X]"))
    await alice.quit()
}

@Suite("TLS from the client", .serialized)
struct ClientTLSTests {
    func tlsConfig(_ server: TestServer, nick: String, known: String) -> ClientConfig {
        var settings = config(port: server.tlsPort!, nick: nick)
        settings.tls = true
        settings.knownServersPath = known
        return settings
    }

    func knownFile() -> String { NSTemporaryDirectory() + "known-servers-" + UUID().uuidString }

    @Test("the pinned certificate registers over TLS and chats with a plain-text user")
    func pinned() async throws {
        let certificate = try TestCertificate()
        let server = try TestServer(tls: certificate.context)
        var settings = tlsConfig(server, nick: "secure", known: knownFile())
        settings.tlsFingerprint = certificate.fingerprint.replacingOccurrences(of: ":", with: "").lowercased()
        let client = ChatClient(config: settings)
        let log = EventLog.watching(client)
        await client.start()
        #expect(try await log.registered() == "secure")
        let plain = try server.client()
        try plain.register("plain")
        await client.send("over TLS", to: "#lobby")
        _ = try plain.readUntil { $0.command == "PRIVMSG" && $0.params.last == "over TLS" }
        await client.quit()
    }

    @Test("a wrong pin is refused with both fingerprints, and no retry")
    func wrongPin() async throws {
        let certificate = try TestCertificate()
        let server = try TestServer(tls: certificate.context)
        var settings = tlsConfig(server, nick: "pinned", known: knownFile())
        settings.tlsFingerprint = String(repeating: "AB", count: 32)
        let client = ChatClient(config: settings)
        let log = EventLog.watching(client)
        await client.start()
        let reason = try await log.stopReason()
        #expect(reason.contains("is \(certificate.fingerprint), not the pinned"), "\(reason)")
        #expect(await log.all().filter { if case .status(.connecting) = $0 { return true } else { return false } }.count == 1, "no retry")
        await client.disconnect()
    }

    @Test("an unknown self-signed certificate stops with its fingerprint; trusted, it is remembered and used")
    func trustOnFirstUse() async throws {
        let certificate = try TestCertificate()
        let server = try TestServer(tls: certificate.context)
        let known = knownFile()
        let client = ChatClient(config: tlsConfig(server, nick: "tofu", known: known))
        let log = EventLog.watching(client)
        await client.start()
        let asked = try await log.next("unknown certificate") { if case .unknownCertificate = $0 { return true } else { return false } }
        #expect(asked == .unknownCertificate(server: "127.0.0.1:\(server.tlsPort!)", fingerprint: certificate.fingerprint, problem: "self-signed certificate"))
        #expect(try await log.stopReason().contains("pin it with --tls-fingerprint \(certificate.fingerprint)"))
        await client.trustCertificate(certificate.fingerprint)
        #expect(try await log.registered() == "tofu")
        #expect(KnownServers.fingerprint(for: "127.0.0.1:\(server.tlsPort!)", in: known) == certificate.fingerprint)
        await client.quit()
    }

    @Test("our client joins ngircd over TLS, its certificate pinned")
    func ngircdOverTLS() async throws {
        let certificate = try TestCertificate(name: "irc.ngircd.test")
        let server = try ServerProcess.ngircd(tls: certificate)
        var settings = config(port: server.tlsPort, nick: "tlsfan", rooms: ["#secure"])
        settings.tls = true
        settings.tlsFingerprint = certificate.fingerprint
        settings.knownServersPath = knownFile()
        let client = ChatClient(config: settings)
        let log = EventLog.watching(client)
        await client.start()
        #expect(try await log.registered() == "tlsfan")
        try await log.line(in: "#secure", containing: "You joined #secure")
        await client.quit()
    }

    @Test("a known server whose certificate changed is refused, both fingerprints shown")
    func changedCertificate() async throws {
        let certificate = try TestCertificate()
        let server = try TestServer(tls: certificate.context)
        let known = knownFile()
        let old = String(repeating: "01:", count: 31) + "01"
        try KnownServers.remember("127.0.0.1:\(server.tlsPort!)", old, in: known)
        let client = ChatClient(config: tlsConfig(server, nick: "wary", known: known))
        let log = EventLog.watching(client)
        await client.start()
        let reason = try await log.stopReason()
        #expect(reason.contains("changed: it was \(old), now it is \(certificate.fingerprint)"), "\(reason)")
        #expect(!(await log.all()).contains { if case .unknownCertificate = $0 { return true } else { return false } }, "not offered for trust again")
        await client.disconnect()
    }
}

@Suite("SASL from the client", .serialized)
struct ClientSASLTests {
    @Test("SCRAM-SHA-256 against our server: logged in before registering (told so), the account on WHOIS")
    func scram() async throws {
        let server = try TestServer(accounts: try accountStore())
        var settings = config(port: server.port, nick: "alice")
        settings.saslAccount = "alice"
        settings.saslPassword = "correct horse"
        let client = ChatClient(config: settings)
        let log = EventLog.watching(client)
        await client.start()
        try await log.line(in: "*", containing: "Logged in as alice")
        #expect(try await log.registered() == "alice")
        let other = try server.client()
        try other.register("bob")
        other.send("WHOIS alice")
        let account = try other.expect("330")
        #expect(account.params[2] == "alice")
        await client.quit()
    }

    @Test("a wrong password is a clear stop, with no reconnect")
    func wrongPassword() async throws {
        let server = try TestServer(accounts: try accountStore())
        var settings = config(port: server.port, nick: "alice")
        settings.saslAccount = "alice"
        settings.saslPassword = "battery staple"
        let client = ChatClient(config: settings)
        let log = EventLog.watching(client)
        await client.start()
        #expect(try await log.stopReason() == "login failed for alice: wrong account name or password")
        #expect(!(await log.all()).contains { if case .status(.reconnecting) = $0 { return true } else { return false } })
        await client.disconnect()
    }

    @Test("EXTERNAL over TLS: the client certificate registered to the account logs in")
    func external() async throws {
        let serverCertificate = try TestCertificate()
        let clientCertificate = try TestCertificate(name: "alice")
        let accounts = try accountStore()
        try accounts.addCertificate(key: "alice", fingerprint: KnownServers.normalise(clientCertificate.fingerprint))
        let server = try TestServer(tls: serverCertificate.context, accounts: accounts)
        var settings = config(port: server.tlsPort!, nick: "alice")
        settings.tls = true
        settings.tlsFingerprint = serverCertificate.fingerprint
        settings.knownServersPath = NSTemporaryDirectory() + "known-" + UUID().uuidString
        settings.saslAccount = "alice"
        settings.tlsClientCertificate = clientCertificate.directory + "/cert.pem"
        settings.tlsClientKey = clientCertificate.directory + "/key.pem"
        let client = ChatClient(config: settings)
        let log = EventLog.watching(client)
        await client.start()
        try await log.line(in: "*", containing: "Logged in as alice")
        #expect(try await log.registered() == "alice")
        #expect(server.logLines.contains { $0.contains("alice logged in as alice") })
        await client.quit()
    }
}

@Suite("history from the client", .serialized)
struct ClientHistoryTests {
    func historyServer() throws -> TestServer {
        try TestServer(history: HistoryOptions(path: NSTemporaryDirectory() + "chat-tui-client-history-\(UUID().uuidString).db"))
    }

    @Test("joining a room shows its last lines from history, once each, without ringing")
    func latestOnJoin() async throws {
        let server = try historyServer()
        let bob = try server.client()
        try bob.register("bob")
        for n in 0..<3 { bob.send("PRIVMSG #lobby :earlier \(n)") }
        bob.send("PING :said")
        _ = try bob.readUntil { $0.command == "PONG" }
        let client = ChatClient(config: config(port: server.port, nick: "alice"))
        let log = EventLog.watching(client)
        await client.start()
        try await log.line(in: "#lobby", containing: "earlier 2")
        let lines = await log.view().conversation("#lobby")?.lines ?? []
        #expect(lines.filter { $0.text.hasPrefix("earlier") }.map(\.text) == ["earlier 0", "earlier 1", "earlier 2"])
        #expect(!lines.contains { $0.isHighlight })
        await client.quit()
    }

    @Test("a drop in the middle of a conversation: every missed line shown once, in order, after the marker saying how many")
    func gapFilled() async throws {
        let (server, proxy, bob, client, log) = try await alicePastAProxy()
        _ = server
        bob.send("PRIVMSG #lobby :before the drop")
        try await log.line(in: "#lobby", containing: "before the drop")
        proxy.cutAll()
        try await log.next("connection lost") { if case .connectionLost = $0 { return true } else { return false } }
        for n in 1...3 { bob.send("PRIVMSG #lobby :missed \(n)") }
        bob.send("PING :said")
        _ = try bob.readUntil { $0.command == "PONG" }
        proxy.restore()
        try await log.line(in: "#lobby", timeout: 30, containing: "3 messages you missed while away follow")
        let texts = (await log.view().conversation("#lobby")?.lines ?? []).map(\.text)
        let lost = try #require(texts.firstIndex { $0.hasPrefix("── connection lost") })
        let missed = texts.indices.filter { texts[$0].hasPrefix("missed ") }
        #expect(missed.map { texts[$0] } == ["missed 1", "missed 2", "missed 3"], "\(texts)")
        let timed = (await log.view().conversation("#lobby")?.lines ?? []).map { "\($0.time) \($0.text)" }
        #expect(texts[lost + 1] == "── 3 messages you missed while away follow ──", "\(timed)")
        #expect(missed.allSatisfy { $0 > lost + 1 }, "\(timed)")
        #expect(texts.filter { $0 == "before the drop" }.count == 1, "what we had is not shown twice")
        await client.quit()
    }
}

@Suite("the client's local log", .serialized)
struct ClientLogBookTests {
    /// alice with a local log at `logPath`, joined to #lobby.
    static func firstSession(_ server: TestServer, logPath: String) async throws -> (ClientConfig, ChatClient, EventLog) {
        var settings = config(port: server.port, nick: "alice")
        settings.logPath = logPath
        let first = ChatClient(config: settings)
        let log = EventLog.watching(first)
        await first.start()
        try await log.line(in: "#lobby", containing: "You joined #lobby")
        return (settings, first, log)
    }

    @Test("what was shown is kept, and the next start opens each conversation with its last lines, not as unread")
    func restoredOnStart() async throws {
        let server = try TestServer()
        let path = NSTemporaryDirectory() + "chat-tui-log-\(UUID().uuidString).db"
        let (settings, first, log) = try await Self.firstSession(server, logPath: path)
        let bob = try server.client()
        try bob.register("bob")
        bob.send("PRIVMSG #lobby :remember this 记住")
        bob.send("PRIVMSG alice :and this, privately")
        try await log.line(in: "bob", containing: "and this, privately")
        // Quitting writes what the log still holds.
        await first.quit()
        let second = ChatClient(config: settings)
        let again = EventLog.watching(second)
        await second.start()
        try await again.line(in: "#lobby", containing: "remember this 记住")
        let view = await again.view()
        #expect(view.conversation("bob")?.lines.map(\.text) == ["and this, privately", ChatClient.earlierMarker])
        #expect(view.conversation("bob")?.unread == 0, "restored lines are not news")
        #expect(view.conversation("#lobby")?.lines.filter { $0.text == "remember this 记住" }.count == 1)
        await second.quit()
    }

    @Test("what was not read before quitting is unread again after a restart (a DM keeps its count and !), what was read is not")
    func unreadKept() async throws {
        let server = try TestServer()
        let path = NSTemporaryDirectory() + "chat-tui-log-\(UUID().uuidString).db"
        let positions = NSTemporaryDirectory() + "chat-tui-read-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: path); try? FileManager.default.removeItem(atPath: positions) }
        var settings = config(port: server.port, nick: "alice")
        settings.logPath = path
        settings.readPositionsPath = positions
        let first = ChatClient(config: settings)
        let log = EventLog.watching(first)
        await first.start()
        try await log.line(in: "#lobby", containing: "You joined #lobby")
        let bob = try server.client()
        try bob.register("bob")
        bob.send("PRIVMSG #lobby :seen this one")
        try await log.line(in: "#lobby", containing: "seen this one")
        await first.markRead(.room("#lobby"))
        bob.send("PRIVMSG alice :read me when you are back")
        try await log.line(in: "bob", containing: "read me when you are back")
        await first.quit()
        #expect(ReadPositions(text: (try? String(contentsOfFile: positions, encoding: .utf8)) ?? "").until["#lobby"] != nil)
        let second = ChatClient(config: settings)
        let again = EventLog.watching(second)
        await second.start()
        // Both are restored, in whichever order the log gives them (by their newest line: here
        // often the same millisecond, so either may come first).
        var restored = Set<String>()
        while restored.count < 2 {
            let event = try await again.next(timeout: 10, "the earlier markers") {
                if case .line(_, let line) = $0, line.text == ChatClient.earlierMarker { return true } else { return false }
            }
            if case .line(let conversation, _) = event { restored.insert(conversation.key) }
        }
        #expect(restored == ["#lobby", "bob"])
        let view = await again.view()
        #expect(view.conversation("bob")?.unread == 1 && view.conversation("bob")?.mentioned == true)
        #expect(view.conversation("#lobby")?.unread == 0)
        await second.quit()
    }

    @Test("read positions: each conversation's latest, read back from the file, malformed lines skipped, at most 1,000 (the oldest go)")
    func readPositionsFile() {
        var positions = ReadPositions()
        positions.read("#a", at: 10)
        positions.read("#a", at: 5)
        positions.read("@bob", at: 20)
        #expect(positions.until == ["#a": 10, "@bob": 20])
        #expect(ReadPositions(text: positions.text + "junk\n#c\tnan\n") == positions)
        for n in 0..<(ReadPositions.limit + 3) { positions.read("#r\(n)", at: 100 + Double(n)) }
        #expect(positions.until.count == ReadPositions.limit && positions.until["#a"] == nil && positions.until["#r\(ReadPositions.limit + 2)"] != nil)
    }

    @Test("after a restart the restored lines end with '── earlier ──', before this session's join")
    func restoredMarked() async throws {
        let server = try TestServer()
        let path = NSTemporaryDirectory() + "chat-tui-log-\(UUID().uuidString).db"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (settings, first, _) = try await Self.firstSession(server, logPath: path)
        await first.quit()
        let second = ChatClient(config: settings)
        let again = EventLog.watching(second)
        await second.start()
        try await again.line(in: "#lobby", containing: ChatClient.earlierMarker)
        try await again.line(in: "#lobby", containing: "You joined #lobby")
        let texts = await again.view().conversation("#lobby")?.lines.map(\.text) ?? []
        #expect(texts.filter { $0 == ChatClient.earlierMarker }.count == 1)
        let marker = try #require(texts.firstIndex(of: ChatClient.earlierMarker))
        #expect(texts[..<marker].contains { $0.hasPrefix("You joined #lobby") }, "the restored join above the marker: \(texts)")
        #expect(texts[(marker + 1)...].contains { $0.hasPrefix("You joined #lobby") }, "this session's join below it: \(texts)")
        await second.quit()
    }
}

/// A server with history, bob on it directly, and alice's ChatClient through a proxy that
/// can cut the line, joined to #lobby; `accounts`: both logged in to accounts of theirs.
func alicePastAProxy(accounts: Bool = false) async throws -> (TestServer, CuttableProxy, LineClient, ChatClient, EventLog) {
    let history = HistoryOptions(path: NSTemporaryDirectory() + "chat-tui-proxied-\(UUID().uuidString).db")
    let server = accounts ? try TestServer(accounts: try accountStore(["alice", "bob"]), history: history) : try TestServer(history: history)
    let proxy = try CuttableProxy(to: server.port)
    let bob: LineClient
    if accounts {
        bob = try ClientDirectGapTests.loggedIn(server, "bob")
    } else {
        bob = try server.client()
        try bob.register("bob")
    }
    let client = ChatClient(config: accounts ? ClientDirectGapTests.alice(port: proxy.port) : config(port: proxy.port, nick: "alice"))
    let log = EventLog.watching(client)
    await client.start()
    try await log.line(in: "#lobby", containing: "You joined #lobby")
    return (server, proxy, bob, client, log)
}

@Suite("a long gap", .serialized)
struct ClientLongGapTests {
    @Test("a line deleted while we were away: the deletion comes with what we missed, and the client forgets the line (issue 43, item 10)")
    func deletionMissed() async throws {
        let (server, proxy, bob, client, log) = try await alicePastAProxy()
        _ = server
        bob.send("CAP REQ :draft/message-redaction echo-message message-tags")
        _ = try bob.readUntil { $0.command == "CAP" }
        bob.send("PRIVMSG #lobby :regrettable words")
        let said = try bob.readUntil { $0.command == "PRIVMSG" && $0.params.last == "regrettable words" }
        let msgid = try #require(said.last?.tag("msgid"))
        try await log.line(in: "#lobby", containing: "regrettable words")
        proxy.cutAll()
        try await log.next("connection lost") { if case .connectionLost = $0 { return true } else { return false } }
        bob.send("REDACT #lobby \(msgid) :sorry")
        _ = try bob.readUntil { $0.command == "REDACT" }
        proxy.restore()
        try await log.next(timeout: 30, "the deletion, from what was missed") {
            if case .redacted(.room("#lobby"), msgid: msgid, _) = $0 { return true } else { return false }
        }
        let line = await log.view().conversation("#lobby")?.lines.first { $0.msgid == msgid }
        #expect(line?.deletedBy != nil, "shown as deleted")
        await client.quit()
    }

    @Test("a gap longer than a page of history is fetched page after page: 150 missed lines, all shown, the marker says 150")
    func longGap() async throws {
        let (server, proxy, bob, client, log) = try await alicePastAProxy()
        _ = server
        bob.send("PRIVMSG #lobby :before the drop")
        try await log.line(in: "#lobby", containing: "before the drop")
        proxy.cutAll()
        try await log.next("connection lost") { if case .connectionLost = $0 { return true } else { return false } }
        for n in 0..<150 { bob.send("PRIVMSG #lobby :missed \(n)") }
        bob.send("PING :said")
        _ = try bob.readUntil(timeout: 30) { $0.command == "PONG" }
        proxy.restore()
        try await log.line(in: "#lobby", timeout: 30, containing: "150 messages you missed while away follow")
        let texts = (await log.view().conversation("#lobby")?.lines ?? []).map(\.text).filter { $0.hasPrefix("missed ") }
        #expect(texts == (0..<150).map { "missed \($0)" })
        await client.quit()
    }

    @Test("chaos soak: joined, then dropped before any line reached us: everything said since our join is read, not the last 50 lines only")
    func droppedBeforeAnyLine() async throws {
        let (server, proxy, bob, client, log) = try await alicePastAProxy()
        _ = server
        proxy.cutAll()
        try await log.next("connection lost") { if case .connectionLost = $0 { return true } else { return false } }
        for n in 0..<60 { bob.send("PRIVMSG #lobby :missed \(n)") }
        bob.send("PING :said")
        _ = try bob.readUntil(timeout: 30) { $0.command == "PONG" }
        proxy.restore()
        try await log.line(in: "#lobby", timeout: 30, containing: "60 messages you missed while away follow")
        let texts = (await log.view().conversation("#lobby")?.lines ?? []).map(\.text).filter { $0.hasPrefix("missed ") }
        #expect(texts == (0..<60).map { "missed \($0)" })
        await client.quit()
    }
}

@Suite("lines typed across a drop", .serialized)
struct ClientUnconfirmedTests {
    @Test("a line the server got but whose echo was lost is not sent twice; one that never arrived is sent after the reconnect, once")
    func nothingLostOrDoubled() async throws {
        let (server, proxy, bob, client, log) = try await alicePastAProxy()
        _ = server
        var bobSaw: [String] = []
        func bobReads(until text: String) throws {
            try bob.readUntil(timeout: 30) { message in
                if message.command == "PRIVMSG", let said = message.params.last { bobSaw.append(said) }
                return message.command == "PRIVMSG" && message.params.last == text
            }
        }
        // The server has it, the echo is lost with the line.
        proxy.hold(downstream: true)
        await client.send("reached the server", to: "#lobby")
        try bobReads(until: "reached the server")
        proxy.cutAll()
        try await log.next("connection lost") { if case .connectionLost = $0 { return true } else { return false } }
        proxy.restore()
        // History has it (our own line, confirmed): it comes back as an ordinary line.
        try await log.next(timeout: 30, "the line from history") {
            if case .line(_, let line) = $0, line.text == "reached the server", !line.isPending, line.msgid != nil { return true }
            return false
        }
        // It never reached the server.
        proxy.hold(upstream: true)
        await client.send("never arrived", to: "#lobby")
        // The client wrote it; the proxy holds it back.
        var waited = 0
        while proxy.upstreamHeld == 0 && waited < 5000 { try await Task.sleep(for: .milliseconds(1)); waited += 1 }
        proxy.cutAll()
        try await log.next("connection lost") { if case .connectionLost = $0 { return true } else { return false } }
        proxy.restore()
        try bobReads(until: "never arrived")
        await client.send("after both", to: "#lobby")
        try bobReads(until: "after both")
        #expect(bobSaw.filter { $0 == "reached the server" }.count == 1, "\(bobSaw)")
        #expect(bobSaw.filter { $0 == "never arrived" }.count == 1, "\(bobSaw)")
        let lines = (await log.view().conversation("#lobby")?.lines ?? []).filter { $0.isOwn }.map(\.text)
        #expect(lines.filter { $0 == "reached the server" }.count == 1, "shown once: \(lines)")
        await client.quit()
    }
}

@Suite("older lines from the server", .serialized)
struct ClientOlderHistoryTests {
    @Test("scrolling past the oldest line fetches the hundred before it: in their place, not unread")
    func before() async throws {
        let server = try TestServer(history: HistoryOptions(path: NSTemporaryDirectory() + "chat-tui-older-\(UUID().uuidString).db"))
        let bob = try server.client()
        try bob.register("bob")
        for n in 0..<120 { bob.send("PRIVMSG #lobby :line \(n)") }
        bob.send("PING :said")
        _ = try bob.readUntil(timeout: 30) { $0.command == "PONG" }
        let client = ChatClient(config: config(port: server.port, nick: "alice"))
        let log = EventLog.watching(client)
        await client.start()
        try await log.line(in: "#lobby", containing: "line 119")
        var view = await log.view()
        let oldest = try #require(view.conversation("#lobby")?.lines.first { $0.msgid != nil })
        #expect(oldest.text == "line 70", "LATEST 50 on joining")
        await client.fetchOlder("#lobby", before: oldest.msgid!)
        try await log.line(in: "#lobby", containing: "line 69")
        view = await log.view()
        let texts = view.conversation("#lobby")?.lines.filter { $0.text.hasPrefix("line ") }.map(\.text) ?? []
        #expect(texts == (0..<120).map { "line \($0)" }, "every line once, in order")
        #expect(view.conversation("#lobby")?.unread == 0, "old news is not unread")
        await client.quit()
    }
}

@Suite("read markers across windows", .serialized)
struct ClientReadMarkerTests {
    @Test("two windows of one account agree: reading in one clears the unread count in the other")
    func twoWindows() async throws {
        let server = try TestServer(accounts: try accountStore(["alice"]),
                                    history: HistoryOptions(path: NSTemporaryDirectory() + "chat-tui-markers-\(UUID().uuidString).db"))
        func window(_ nick: String) -> ChatClient {
            var settings = config(port: server.port, nick: nick)
            settings.saslAccount = "alice"
            settings.saslPassword = "correct horse"
            return ChatClient(config: settings)
        }
        let laptop = window("alice"), phone = window("alice_phone")
        let laptopLog = EventLog.watching(laptop), phoneLog = EventLog.watching(phone)
        await laptop.start()
        await phone.start()
        try await laptopLog.line(in: "#lobby", containing: "You joined #lobby")
        try await phoneLog.line(in: "#lobby", containing: "You joined #lobby")
        let bob = try server.client()
        try bob.register("bob")
        bob.send("PRIVMSG #lobby :news for both")
        try await laptopLog.line(in: "#lobby", containing: "news for both")
        try await phoneLog.line(in: "#lobby", containing: "news for both")
        #expect(await phoneLog.view().conversation("#lobby")?.unread == 1)
        await laptop.markRead(.room("#lobby"))
        try await phoneLog.next("the marker") { if case .markedRead(.room("#lobby")) = $0 { return true } else { return false } }
        #expect(await phoneLog.view().conversation("#lobby")?.unread == 0)
        await laptop.quit()
        await phone.quit()
    }
}

@Suite("direct conversations across a drop", .serialized)
struct ClientDirectGapTests {
    @Test("with accounts, what a person said to us while our side was gone (the server still thought we were there) comes back, once, after the marker")
    func directGap() async throws {
        let (server, proxy, bob, client, log) = try await alicePastAProxy(accounts: true)
        _ = server
        bob.send("PRIVMSG alice :before the drop")
        try await log.line(in: "bob", containing: "before the drop")
        try await Self.cut(proxy, log, thenBobSays: ["missed dm 1", "missed dm 2"], bob)
        proxy.restore()
        try await log.line(in: "bob", timeout: 30, containing: "2 messages you missed while away follow")
        let texts = (await log.view().conversation("bob")?.lines ?? []).map(\.text)
        #expect(texts.filter { $0.hasPrefix("missed dm") } == ["missed dm 1", "missed dm 2"], "\(texts)")
        #expect(texts.filter { $0 == "before the drop" }.count == 1)
        await client.quit()
    }
}

extension ClientDirectGapTests {
    /// A raw client logged in to the account `name` (password "correct horse") on `server`.
    static func loggedIn(_ server: TestServer, _ name: String) throws -> LineClient {
        let client = try server.client()
        client.send("CAP REQ :sasl")
        client.send("AUTHENTICATE PLAIN")
        client.send("AUTHENTICATE " + Base64.encode(Array("\(name)\u{0}\(name)\u{0}correct horse".utf8)))
        client.send("CAP END")
        try client.register(name)
        return client
    }

    /// The connection cut (the server still thinks alice is there), and bob's lines to alice
    /// said and taken by the server meanwhile.
    static func cut(_ proxy: CuttableProxy, _ log: EventLog, thenBobSays lines: [String], _ bob: LineClient) async throws {
        proxy.cutAll(keepServerSide: true)
        try await log.next("connection lost") { if case .connectionLost = $0 { return true } else { return false } }
        for line in lines { bob.send("PRIVMSG alice :" + line) }
        bob.send("PING :said")
        _ = try bob.readUntil { $0.command == "PONG" }
    }

    /// Our client as alice, logging in to her account.
    static func alice(port: Int) -> ClientConfig {
        var settings = config(port: port, nick: "alice")
        settings.saslAccount = "alice"
        settings.saslPassword = "correct horse"
        return settings
    }

    @Test("chaos soak (CI): a person's first line to us, sent while our side was gone, is found after the reconnect (CHATHISTORY TARGETS) though we had no conversation with them")
    func firstLineWhileAway() async throws {
        let (server, proxy, bob, client, log) = try await alicePastAProxy(accounts: true)
        _ = server
        try await Self.cut(proxy, log, thenBobSays: ["hello, first words", "and a second"], bob)
        #expect(await log.view().conversation("bob") == nil, "nothing of bob's reached us")
        proxy.restore()
        try await log.line(in: "bob", timeout: 30, containing: "and a second")
        try await log.line(in: "bob", timeout: 30, containing: "2 messages you missed while away follow")
        let texts = (await log.view().conversation("bob")?.lines ?? []).filter { $0.kind == .message || $0.kind == .info }.map(\.text)
        #expect(texts == ["── 2 messages you missed while away follow ──", "hello, first words", "and a second"], "\(texts)")
        #expect(await log.view().conversation("bob")?.unread == 2, "news, not old lines")
        await client.quit()
    }

    @Test("chaos soak (seed 42): a person's line said while we were away, in a conversation we opened offline by typing to them, is read after the reconnect though our own line's echo came first")
    func missedBeforeOwnResentLine() async throws {
        let (server, proxy, bob, client, log) = try await alicePastAProxy(accounts: true)
        _ = server
        try await Self.cut(proxy, log, thenBobSays: ["said while you were away"], bob)
        // Typed while the connection is down: held, and the conversation made (no drop marked in it).
        await client.send("typed while offline", to: "bob")
        proxy.restore()
        // Our line goes first at the welcome and its echo comes before TARGETS names bob: our
        // newest line there is then newer than bob's, and reading on from it skipped his.
        try await log.line(in: "bob", timeout: 30, containing: "said while you were away")
        try await log.line(in: "bob", timeout: 30, containing: "1 message you missed while away follows")
        let texts = (await log.view().conversation("bob")?.lines ?? []).filter { $0.kind == .message && !$0.isPending }.map(\.text)
        #expect(texts == ["said while you were away", "typed while offline"], "\(texts)")
        await client.quit()
    }

    @Test("what a person said to our account while this client was not running (another of our clients was) is read at the start, from the newest line in the local log")
    func writtenWhileNotRunning() async throws {
        let server = try TestServer(accounts: try accountStore(["alice", "bob"]),
                                    history: HistoryOptions(path: NSTemporaryDirectory() + "chat-tui-dm-start-\(UUID().uuidString).db"))
        let bob = try Self.loggedIn(server, "bob")
        var settings = Self.alice(port: server.port)
        settings.logPath = NSTemporaryDirectory() + "chat-tui-dm-start-log-\(UUID().uuidString).db"
        let first = ChatClient(config: settings)
        let firstLog = EventLog.watching(first)
        await first.start()
        try await firstLog.line(in: "#lobby", containing: "You joined #lobby")
        bob.send("PRIVMSG #lobby :logged before")
        try await firstLog.line(in: "#lobby", containing: "logged before")
        await first.quit()
        // alice's phone: the account is online, so bob's lines are taken and kept.
        let phone = try Self.loggedIn(server, "alice")
        bob.send("PRIVMSG alice :while your laptop was off")
        _ = try phone.readUntil { $0.command == "PRIVMSG" && $0.params.last == "while your laptop was off" }
        phone.send("QUIT")
        _ = try phone.readUntil { $0.command == "ERROR" }
        let second = ChatClient(config: settings)
        let secondLog = EventLog.watching(second)
        await second.start()
        try await secondLog.line(in: "bob", timeout: 30, containing: "while your laptop was off")
        await second.quit()
    }
}
