import Testing
import ChatServerKit

@Suite("command pacing")
struct PacerTests {
    @Test("a burst of 20 at once, then 4 a second; waiting refills, never past the burst")
    func burstThenRate() {
        var pacer = Pacer(burst: 20, perSecond: 4, now: 100)
        for _ in 0..<20 { let taken = pacer.take(1, now: 100); #expect(taken) }
        let extra = pacer.take(1, now: 100)
        #expect(!extra, "the 21st waits")
        #expect(pacer.readyAt(1) == 100.25)
        let early = pacer.take(1, now: 100.2)
        #expect(!early)
        let onTime = pacer.take(1, now: 100.25)
        #expect(onTime)
        // An idle minute refills to the burst, not beyond.
        for _ in 0..<20 { let taken = pacer.take(1, now: 160); #expect(taken) }
        let beyond = pacer.take(1, now: 160)
        #expect(!beyond)
    }

    @Test("a 20-line paste goes at once; a 100-line flood is spread over 20 seconds, nothing dropped")
    func pasteAndFlood() {
        var pacer = Pacer(burst: 20, perSecond: 4, now: 0)
        var now = 0.0, sent = 0
        while sent < 100 {
            if pacer.take(1, now: now) { sent += 1 } else { now = pacer.readyAt(1) }
        }
        #expect(now == 20)
    }

    @Test("PONG costs nothing; a line inside a multiline batch costs one, as every line delivered does (issue 43, item 9)", arguments: [
        ("PONG :x", 0), ("@batch=m1 PRIVMSG #a :line", 1), ("@label=q;batch=m1 PRIVMSG #a :x", 1),
        ("PRIVMSG #a :PONG", 1), ("@+batchy=1 PRIVMSG #a :x", 1), ("@label=batch=x PRIVMSG #a :x", 1), ("PING :x", 1), ("PONGX :x", 1),
        ("CHATHISTORY LATEST #a * 100", Pacer.historyCost), ("@label=1 chathistory latest #a * 1", Pacer.historyCost),
        ("CHATHISTORY", Pacer.historyCost), (":me CHATHISTORY LATEST #a * 1", Pacer.historyCost),
        ("@a=b  :me  CHATHISTORY LATEST #a * 1", Pacer.historyCost), ("CHATHISTORYX #a", 1), ("PRIVMSG #a :CHATHISTORY LATEST", 1),
    ])
    func costs(_ line: String, _ cost: Int) {
        #expect(Pacer.cost(of: Array(line.utf8)) == cost)
    }

    @Test("a line waiting for two tokens is ready when two are there, not at the first: the loop wakes once for it")
    func readyWhenCovered() {
        var pacer = Pacer(burst: 2, perSecond: 4, now: 0)
        let first = pacer.take(2, now: 0)
        #expect(first)
        let refused = pacer.take(2, now: 0)
        #expect(!refused)
        #expect(pacer.readyAt(1) == 0.25 && pacer.readyAt(2) == 0.5)
        let atFirstToken = pacer.take(2, now: pacer.readyAt(1))
        #expect(!atFirstToken, "woken at the first token, it would fail again: the busy loop")
        let covered = pacer.take(2, now: 0.5)
        #expect(covered)
    }
}
