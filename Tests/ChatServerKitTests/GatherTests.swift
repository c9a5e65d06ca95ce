import Foundation
import Testing
import IRCTestSupport
@testable import ChatServerKit
import IRCWire

/// The runtime gathers a room's deliveries in a row into one append per member. What each
/// member receives must not change: the same events, in the same order, from its own arrival on.
@Suite("room deliveries gathered by the runtime", .serialized)
struct GatherTests {
    struct Event: Equatable, CustomStringConvertible {
        let command: String
        let nick: String
        let text: String
        var description: String { "\(command) \(nick) \(text)" }
    }

    func events(_ messages: [IRCMessage]) -> [Event] {
        messages.compactMap { message in
            guard message.command == "JOIN" || (message.command == "PRIVMSG" && message.params.first == "#lobby"),
                  let nick = message.source?.split(separator: "!").first else { return nil }
            return Event(command: message.command, nick: String(nick), text: message.command == "PRIVMSG" ? message.params.last ?? "" : "")
        }
    }

    /// 40 arrive into a small room; 130 take it past the size at which join announcements are
    /// held back for a moment (`OutputOrder.crowd`), so the last arrivals' JOINs wait at the
    /// room (`HeldJoins`) for the deadline or the next line, and must still come in order.
    @Test("a crowd arriving at once, some speaking as they arrive, some with echo-message: each sees the first member's sequence from its own JOIN on",
          arguments: [40, 130])
    func crowd(size: Int) throws {
        let server = try TestServer()
        let first = try server.client()
        try first.register("first")
        // Connected first, then every registration written at once (with a line from every third,
        // echo-message for every fifth), so that many are handled in one turn of the loop.
        let crowd = try (0..<size).map { _ in try server.client() }
        // Every third of the first 60 says something as it arrives (a run with a message in it is
        // written at once; the later arrivals' runs are JOINs only).
        func speaks(_ n: Int) -> Bool { n % 3 == 0 && n < 60 }
        for (n, client) in crowd.enumerated() {
            var lines = n % 5 == 0 ? "CAP REQ :echo-message\r\n" : ""
            lines += "NICK c\(n)\r\nUSER u 0 * :crowd\r\n"
            if n % 5 == 0 { lines += "CAP END\r\n" }
            if speaks(n) { lines += "PRIVMSG #lobby :hello from c\(n)\r\n" }
            client.sendBytes(Array(lines.utf8))
        }
        for _ in crowd { _ = try first.expect("JOIN") }
        first.send("PRIVMSG #lobby :END")
        var views: [(Int, [Event])] = []
        for (n, client) in crowd.enumerated() {
            let lines = try client.readUntil { $0.command == "PRIVMSG" && $0.params.last == "END" }
            let seen = events(lines)
            // Whoever was there when it arrived is in its NAMES; whoever came later, it is told of once. Nobody both, nobody neither.
            let names = Set(lines.filter { $0.command == "353" }.flatMap { $0.params[3].split(separator: " ").map { String($0.drop { "@+".contains($0) }) } })
            let joinedLater = seen.filter { $0.command == "JOIN" && $0.nick != "c\(n)" }.map(\.nick)
            #expect(Set(joinedLater).isDisjoint(with: names), "c\(n) was told of arrivals it already had in NAMES")
            #expect(names.union(joinedLater) == Set(["first"] + (0..<crowd.count).map { "c\($0)" }), "c\(n) missed someone")
            #expect(joinedLater.count == Set(joinedLater).count)
            // Its own JOIN is where its view begins; what it said itself it sees only with echo-message.
            guard let own = seen.firstIndex(of: Event(command: "JOIN", nick: "c\(n)", text: "")) else {
                Issue.record("c\(n) never saw its own JOIN: \(seen)")
                continue
            }
            let after = Array(seen[(own + 1)...])
            #expect(after.last == Event(command: "PRIVMSG", nick: "first", text: "END"))
            #expect(!after.dropLast().contains { $0.nick == "first" })
            // Everyone's view, cut at its arrival, is the same sequence: the last arrival's is the shortest suffix.
            #expect(Set(after.map(\.description)).count == after.count, "c\(n) saw an event twice: \(after)")
            if speaks(n) && n % 5 != 0 { #expect(!after.contains { $0.nick == "c\(n)" }, "no echo of its own line") }
            if speaks(n) && n % 5 == 0 { #expect(after.filter { $0.nick == "c\(n)" } == [Event(command: "PRIVMSG", nick: "c\(n)", text: "hello from c\(n)")]) }
            views.append((n, after))
        }
        // Pairwise: of two members, the later arrival's view (without own lines) is a suffix of the earlier's.
        func others(_ view: [Event], _ a: Int, _ b: Int) -> [Event] { view.filter { $0.nick != "c\(a)" && $0.nick != "c\(b)" } }
        for i in views.indices {
            for j in views.indices where i != j {
                let (a, va) = views[i], (b, vb) = views[j]
                let ea = others(va, a, b), eb = others(vb, a, b)
                let (long, short) = ea.count >= eb.count ? (ea, eb) : (eb, ea)
                #expect(Array(long.suffix(short.count)) == short, "c\(a) and c\(b) disagree:\n\(ea)\n\(eb)")
            }
        }
        if size > 100 { #expect(server.handle.heldAnnouncementRuns > 0, "the crowd's announcements were held back at least once") }
    }

    /// A room past `OutputOrder.crowd`, two waves of arrivals, and between them a direct
    /// message, a room message and a departure: the announcements held at the room across turns
    /// (`HeldJoins`) come before anything sent after them was seen, and each exactly once.
    @Test("a crowd's announcements held across turns: what someone says after seeing the arrivals comes after them for everyone, each arrival told once")
    func heldAcrossTurns() throws {
        let server = try TestServer()
        let first = try server.client()
        try first.register("first")
        func arrive(_ names: [String]) throws -> [LineClient] {
            let clients = try names.map { _ in try server.client() }
            for (name, client) in zip(names, clients) { client.sendBytes(Array("NICK \(name)\r\nUSER u 0 * :crowd\r\n".utf8)) }
            return clients
        }
        func seen(_ names: [String]) throws {
            var waiting = Set(names)
            while !waiting.isEmpty {
                let join = try first.expect("JOIN")
                waiting.remove(String(join.source!.prefix { $0 != "!" }))
            }
        }
        let oldNames = (0..<110).map { "old\($0)" }
        let old = try arrive(oldNames)
        try seen(oldNames)
        let waveA = (0..<40).map { "a\($0)" }, waveB = (0..<40).map { "b\($0)" }
        let clientsA = try arrive(waveA)
        try seen(waveA)
        first.send("PRIVMSG old5 :after A")
        first.send("PRIVMSG #lobby :after A")
        old[7].send("QUIT :bye")
        let clientsB = try arrive(waveB)
        // One of them renames itself as soon as it is in, while its JOIN is still held for most
        // (for `announcementDelay`): a rename is not a room delivery, so each member must be
        // caught up with the JOIN before it.
        let b5Arrival = try clientsB[5].readUntil { $0.command == "366" }
        clientsB[5].send("NICK b5renamed")
        try seen(waveB)
        first.send("PRIVMSG #lobby :END")
        for (name, client) in zip(oldNames + waveA + waveB, old + clientsA + clientsB) where name != "old7" {
            let lines = (name == "b5" ? b5Arrival : []) + (try client.readUntil { $0.command == "PRIVMSG" && $0.params.last == "END" })
            let nick = { (m: IRCMessage) in String(m.source?.prefix { $0 != "!" } ?? "") }
            let joins = lines.filter { $0.command == "JOIN" }.map(nick)
            let own = try #require(joins.firstIndex(of: name), "\(name) saw its own JOIN")
            let later = Array(joins[(own + 1)...])
            #expect(later.count == Set(later).count, "\(name) was told of an arrival twice")
            let arrivals = oldNames + waveA + waveB
            let expected = Array(arrivals[(arrivals.firstIndex(of: name)! + 1)...])
            #expect(later == expected, "\(name) was told of \(later.count) arrivals, \(expected.count) in order expected")
            // Whatever first said after seeing wave A comes after wave A's JOINs, for everyone there.
            let said = lines.firstIndex { $0.command == "PRIVMSG" && $0.params == ["#lobby", "after A"] }
            if waveB.contains(name) {
                #expect(said == nil)
            } else {
                let after = try #require(said, "\(name) got first's room message")
                let lastA = lines.lastIndex { $0.command == "JOIN" && waveA.contains(nick($0)) }!
                #expect(lastA < after, "\(name) got first's message before an arrival first had seen")
                #expect(lines.filter { $0.command == "QUIT" && nick($0) == "old7" }.count == 1, "\(name) was told once that old7 left")
            }
            if name != "b5" {
                let rename = lines.firstIndex { $0.command == "NICK" && $0.params == ["b5renamed"] }
                let join = lines.firstIndex { $0.command == "JOIN" && nick($0) == "b5" }
                if let join, let rename {
                    #expect(join < rename, "\(name) was told b5 renamed itself before it was told b5 arrived")
                } else if let rename, waveB.firstIndex(of: name).map({ $0 > 5 }) != true {
                    Issue.record("\(name) was told of the rename at \(rename) but never of b5's arrival")
                }
            }
            if name == "old5" {
                let direct = try #require(lines.firstIndex { $0.command == "PRIVMSG" && $0.params == ["old5", "after A"] })
                #expect(lines.lastIndex { $0.command == "JOIN" && waveA.contains(nick($0)) }! < direct, "the direct message came before arrivals its sender had seen")
            }
        }
        #expect(server.handle.heldAnnouncementRuns > 0, "the crowd's announcements were held")
    }

    /// With history on, a sender's echo waits for its commit (`held`); the crowd's JOINs held
    /// before it must still come before it, and those held after it, after it: the speaker's
    /// view of arrivals and its own line is everyone else's.
    @Test("a member speaking while a crowd's JOINs are held, its echo waiting for the history commit: it sees its line where everyone else does")
    func echoAmongHeldJoins() throws {
        let server = try TestServer(history: HistoryOptions(path: NSTemporaryDirectory() + "chat-tui-gather-\(UUID().uuidString).db"))
        let first = try server.client()
        try first.register("first")
        let speaker = try server.client()
        _ = try speaker.register("speaker", caps: ["echo-message"])
        let old = try (0..<110).map { _ in try server.client() }
        for (n, client) in old.enumerated() { client.sendBytes(Array("NICK old\(n)\r\nUSER u 0 * :crowd\r\n".utf8)) }
        for _ in old { _ = try first.expect("JOIN") }
        func arrive(_ prefix: String, _ count: Int) throws -> [LineClient] {
            let clients = try (0..<count).map { _ in try server.client() }
            for (n, client) in clients.enumerated() { client.sendBytes(Array("NICK \(prefix)\(n)\r\nUSER u 0 * :crowd\r\n".utf8)) }
            return clients
        }
        // Wave a: all in (each has its NAMES), so their JOINs wait at the room for the others;
        // the speaker's line comes in a later turn, with none of them in it.
        let waveA = try arrive("wa", 40)
        for client in waveA { _ = try client.readUntil { $0.command == "366" } }
        speaker.send("PRIVMSG #lobby :one")
        // Wave b right behind a second line: their JOINs are held while its echo waits for the commit.
        speaker.send("PRIVMSG #lobby :two")
        let waveB = try arrive("wb", 40)
        for _ in 0..<80 { _ = try first.expect("JOIN") }
        first.send("PRIVMSG #lobby :END")
        func view(_ client: LineClient) throws -> [String] {
            try client.readUntil { $0.command == "PRIVMSG" && $0.params.last == "END" }.compactMap { message in
                let nick = String(message.source?.prefix { $0 != "!" } ?? "")
                if message.command == "JOIN" && nick.hasPrefix("w") { return nick }
                if message.command == "PRIVMSG" && nick == "speaker" { return "speaker: " + (message.params.last ?? "") }
                return nil
            }
        }
        let speakerView = try view(speaker)
        #expect(speakerView.contains("speaker: one") && speakerView.contains("speaker: two"), "the echoes came")
        _ = waveB
        for client in old.prefix(20) {
            #expect(try view(client) == speakerView, "a bystander's order of arrivals and the speaker's line is the speaker's own")
        }
    }
}
