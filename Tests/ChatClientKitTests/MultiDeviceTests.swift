import Foundation
import Testing
import ChatClientKit
import ChatServerKit
import ChatTransport
import IRCTestSupport
import IRCWire

/// Our client as two devices of one account on our server (issue 45): one person, each line on both.
@Suite("two devices of one account", .serialized)
struct MultiDeviceTests {
    @Test("over sockets: a laptop and a phone of alice are one alice; what is said to her or by one shows on both; the server says it keeps her")
    func laptopAndPhone() async throws {
        let server = try TestServer(accounts: try accountStore(["alice", "bob"]),
                                    history: HistoryOptions(path: NSTemporaryDirectory() + "chat-tui-devices-\(UUID().uuidString).db"))
        var laptopConfig = ClientDirectGapTests.alice(port: server.port)
        laptopConfig.device = "laptop"
        var phoneConfig = ClientDirectGapTests.alice(port: server.port)
        phoneConfig.device = "phone"
        phoneConfig.nick = "alice_phone"
        let laptop = ChatClient(config: laptopConfig), phone = ChatClient(config: phoneConfig)
        let laptopLog = EventLog.watching(laptop), phoneLog = EventLog.watching(phone)
        await laptop.start()
        try await laptopLog.line(in: "#lobby", containing: "You joined #lobby")
        await phone.start()
        try await phoneLog.line(in: "*", containing: "The server keeps you in your rooms")
        try await phoneLog.line(in: "#lobby", containing: "You joined #lobby")
        #expect(server.logLines.contains { $0.contains("registered as a session of alice (account alice, device phone") })

        let bob = try ClientDirectGapTests.loggedIn(server, "bob")
        bob.send("NAMES #lobby")
        let replies: [IRCMessage] = try bob.readUntil { $0.command == "353" }
        let names: String = replies.last?.params.last ?? ""
        let alices: [String] = names.split(separator: " ").map(String.init).filter { $0.contains("alice") }
        #expect(alices == ["@alice"], "\(names)")

        bob.send("PRIVMSG alice :hello, both of you")
        try await laptopLog.line(in: "bob", containing: "hello, both of you")
        try await phoneLog.line(in: "bob", containing: "hello, both of you")
        await laptop.send("said on the laptop", to: "#lobby")
        try await phoneLog.line(in: "#lobby", containing: "said on the laptop")
        _ = try bob.readUntil { $0.command == "PRIVMSG" && $0.params.last == "said on the laptop" }
        await laptop.quit()
        await phone.quit()
    }
}
