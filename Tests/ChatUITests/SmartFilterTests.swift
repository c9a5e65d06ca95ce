import Testing
@testable import ChatUI
@testable import ChatClientKit
import IRCWire

@Suite("the smart filter (issue 46)")
struct SmartFilterTests {
    /// A restart of a big room: twelve people quit and come back, two renames, while bob (who
    /// spoke) quits and joins with lines of his own.
    func restart() -> ChatModel {
        var model = lobbyModel(width: 60, height: 14)
        model.receive(":bob!b@h PRIVMSG #lobby :back in five", now: 36400)
        for n in 1...12 { model.receive(":guest\(n)!g@h JOIN #lobby", now: 36500 + Double(n)) }
        model.receive(":guest1!g@h NICK :visitor", now: 36590)
        model.receive(":bob!b@h QUIT :restart", now: 36600)
        for n in 1...12 { model.receive(":\(n == 1 ? "visitor" : "guest\(n)")!g@h QUIT :restart", now: 36600 + Double(n)) }
        model.receive(":bob!b@h JOIN #lobby", now: 36630)
        model.receive(":guest2!g@h JOIN #lobby", now: 36640)
        model.receive(":guest2!g@h PRIVMSG #lobby :hello all", now: 36650)
        return model
    }

    @Test("quiet joins, quits and renames fold into one dim line per burst; bob, who spoke, keeps his; a join whose person then speaks shows again")
    func folded() {
        expectScreen(restart(), [
            " #lobby (5)                                                 ",
            "                                               │1 (server)  ",
            "                                               │2 #lobby   2",
            "                                               │ @alice…    ",
            "10:05 -!- You joined #lobby                    │  bob       ",
            "10:06 <bob> back in five                       │  carol     ",
            "10:09 -!- 12 joined, 1 renamed                 │  guest2    ",
            "10:10 -!- bob quit (restart)                   │  小明      ",
            "10:10 -!- 12 quit                              │            ",
            "10:10 -!- bob joined #lobby                    │            ",
            "10:10 -!- guest2 joined #lobby                 │            ",
            "10:10 <guest2> hello all                       │            ",
            " alice │ connected │ Enter sends to #lobby                  ",
            ">                                                           ",
        ])
    }

    @Test("/set smart-filter off shows every line again")
    func off() {
        var model = restart()
        _ = model.type("/set smart-filter off")
        let lines = draw(model).lines
        #expect(lines[11].hasPrefix("10:10 <guest2> hello all"))
        #expect(lines[10].hasPrefix("10:10 -!- guest2 joined #lobby"))
        #expect(lines[9].hasPrefix("10:10 -!- bob joined #lobby"))
        #expect(lines[8].hasPrefix("10:10 -!- guest12 quit (restart)"))
    }

    @Test("a short run (one quit and one join: someone reconnecting) shows its lines, in the order they came")
    func shortRun() {
        var model = lobbyModel(width: 60, height: 12)
        model.receive(":carol!c@h QUIT :ping timeout", ":carol!c@h JOIN #lobby", now: 36400)
        let lines = draw(model).lines
        #expect(lines[8].hasPrefix("10:06 -!- carol quit") && lines[9].hasPrefix("10:06 -!- carol joined #lobby"), "\(lines)")
        model.receive(":x1!x@h JOIN #lobby", ":x2!x@h QUIT :bye", ":x3!x@h JOIN #lobby", now: 36410)
        #expect(draw(model).lines[9].hasPrefix("10:06 -!- 1 quit, 3 joined"), "the run goes on (carol too), in the order the kinds came: \(draw(model).lines)")
    }
}

@Suite("the smart filter counts people (issue 46, second tour)")
struct SmartFilterPeopleTests {
    @Test("someone flapping in a burst is one who joined and one who quit, not six events")
    func flapping() {
        var model = lobbyModel(width: 60, height: 12)
        for n in 0..<3 {
            model.receive(":flappy!f@h JOIN #lobby", now: 36400 + Double(n) * 2)
            model.receive(":flappy!f@h QUIT :ping timeout", now: 36401 + Double(n) * 2)
        }
        model.receive(":other!o@h JOIN #lobby", now: 36410)
        let lines = draw(model).lines
        #expect(lines.contains { $0.hasPrefix("10:06 -!- 2 joined, 1 quit ") }, "\(lines)")
    }
}
