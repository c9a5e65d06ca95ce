import Testing
@testable import ChatClientKit
import IRCWire

/// The actor's book and the screen's agree on every unread count and mention, whatever the
/// server repeats: replays of a msgid, history pages overlapping what was shown live, lines
/// without msgids, reads, a scrollback that trims.
@Suite("the owner's book and the screen's")
struct OwnerBookTests {
    /// A small deterministic generator (SplitMix64), so a failing seed can be replayed.
    struct Seeded {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(bound))
        }
    }

    static func stamp(_ time: Double) -> String { ServerTime.format(time) }

    @Test("random replays, overlapping history and reads: equal counts after every line", arguments: 1...12)
    func agree(seed: Int) {
        var config = ClientConfig(host: "127.0.0.1", port: 6667, nick: "alice")
        config.scrollbackLimit = 40
        var owner = ClientState(config: config)
        var screen = ConversationBook(nick: "alice", scrollbackLimit: config.scrollbackLimit)
        var random = Seeded(state: UInt64(seed))
        var said: [(msgid: String?, time: Double, line: String)] = []
        var clock = 1_000.0
        var batch = 0
        func feed(_ raw: String) {
            let reduction = owner.receive(try! IRCMessage(parsing: raw), now: clock)
            for event in reduction.events { screen.apply(event) }
        }
        feed(":srv 001 alice :Welcome alice!al@h")
        feed(":srv 005 alice CASEMAPPING=rfc1459 CHANTYPES=# :are supported")
        feed(":alice!al@h JOIN #lobby")
        for step in 0..<400 {
            clock += 0.5
            switch random.next(8) {
            case 0, 1, 2:
                // Live, with a msgid, to the room or to us; some mention us.
                let target = random.next(3) == 0 ? "alice" : "#lobby"
                let text = random.next(4) == 0 ? "alice: look \(step)" : "line \(step)"
                let msgid = "m\(step)"
                let line = "@msgid=\(msgid);time=\(Self.stamp(clock)) :bob!b@h PRIVMSG \(target) :\(text)"
                said.append((msgid, clock, line))
                feed(line)
            case 3:
                // The same message again (a replay on rejoin, a bouncer), live.
                if let old = said.randomElement(using: &random) { feed(old.line) }
            case 4:
                // A history page overlapping what was shown, with one line never seen.
                batch += 1
                feed(":srv BATCH +h\(batch) chathistory #lobby")
                for old in said.suffix(3) where old.line.contains("#lobby") { feed("@batch=h\(batch);" + old.line.dropFirst()) }
                let fresh = "@batch=h\(batch);msgid=x\(step);time=\(Self.stamp(clock - 0.25)) :carol!c@h PRIVMSG #lobby :missed \(step)"
                feed(fresh)
                feed(":srv BATCH -h\(batch)")
            case 5:
                // No msgid (a server notice to the room, a NOTICE from a bot).
                feed("@time=\(Self.stamp(clock)) :dave!d@h NOTICE #lobby :notice \(step)")
            case 6:
                // The user reads one of the conversations.
                let id: ConversationID = random.next(2) == 0 ? .room("#lobby") : .direct("bob")
                for event in owner.userRead(id, connected: true).events { screen.apply(event) }
            default:
                // Another account's connection read up to a while ago (draft/read-marker).
                feed("MARKREAD #lobby timestamp=\(Self.stamp(clock - 2))")
            }
            for id in owner.book.order {
                let mine = owner.book[id], theirs = screen[id]
                #expect(mine?.unread == theirs?.unread && mine?.mentioned == theirs?.mentioned,
                        "seed \(seed), step \(step): \(id) counts \(mine?.unread ?? -1) in the client, \(theirs?.unread ?? -1) on the screen")
            }
        }
        // The same conversations, the same lines kept (the client keeps their keys), the same msgids known.
        func withoutLines(_ book: ConversationBook) -> [ConversationID: Conversation] {
            book.conversations.mapValues { conversation in
                var conversation = conversation
                conversation.clearLines()
                conversation.keepsOnlyKeys = false
                conversation.lastSpoke = [:] // the screen's smart filter only
                return conversation
            }
        }
        #expect(withoutLines(owner.book) == withoutLines(screen), "seed \(seed): the two books hold the same")
        for id in screen.order {
            #expect(owner.book[id]?.keptCount == screen[id]?.keptCount, "seed \(seed): \(id) keeps as many lines")
            for said in said where said.msgid != nil {
                #expect(owner.book[id]?.contains(msgid: said.msgid) == screen[id]?.contains(msgid: said.msgid))
            }
        }
        #expect(owner.book[.room("#lobby")]?.lines.isEmpty == true && screen[.room("#lobby")]?.lines.isEmpty == false)
    }
}

extension OwnerBookTests.Seeded: RandomNumberGenerator {
    mutating func next() -> UInt64 { UInt64(next(Int.max)) }
}
