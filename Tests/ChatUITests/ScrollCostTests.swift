import Testing
@testable import ChatUI
@testable import ChatClientKit
import IRCWire

@Suite("PgUp far back costs what it costs at the bottom (issue 46)")
struct ScrollCostTests {
    func longRoom() -> ChatModel {
        var model = lobbyModel(width: 80, height: 24, scrollback: 5_000)
        for n in 0..<600 {
            let text = n % 3 == 0 ? "a line long enough to wrap onto a second row of the pane when the pane is eighty wide, \(n)" : "line \(n)"
            model.receive("@msgid=m\(n) :bob!b@h PRIVMSG #lobby :\(text)", now: 36400 + Double(n))
            if n % 50 == 0 { model.receive(":guest\(n)!g@h JOIN #lobby", now: 36400 + Double(n)) }
        }
        model.receive("@msgid=r1;+draft/reply=m10 :carol!c@h PRIVMSG #lobby :a reply", now: 37100)
        model.receive("@+draft/react=👍;+draft/reply=m20 :carol!c@h TAGMSG #lobby", now: 37101)
        return model
    }

    @Test("the rows below the view are counted from the cache, and the screen is the one drawn by formatting every line")
    func sameScreen() {
        var model = longRoom()
        let conversation = model.viewedConversation!
        let width = model.layout.paneWidth
        for skip in [0, 7, 100, 513] {
            let full = model.paneRows(conversation, width: width, needed: skip + 21, skip: 0)
            let counted = model.paneRows(conversation, width: width, needed: skip + 21, skip: skip)
            #expect(full.count == counted.count, "skip \(skip)")
            #expect(full.dropFirst(skip).map { $0.spans.map(\.text).joined() } == counted.dropFirst(skip).map { $0.spans.map(\.text).joined() }, "skip \(skip)")
            #expect(full.map(\.line) == counted.map(\.line), "skip \(skip)")
        }
        // Paging all the way up and back draws each page as a fresh model would.
        for _ in 0..<30 { _ = model.update(.key(.pageUp)) }
        var fresh = longRoom()
        fresh.scroll[.room("#lobby")] = model.scroll[.room("#lobby")]
        #expect(draw(model).lines == draw(fresh).lines)
        #expect(model.rowCache.count > 0)
    }

    @Test("the cache is bounded: past 50,000 entries it starts again")
    func bound() {
        let cache = RowCache()
        for n in 0..<(RowCache.limit + 10) {
            _ = cache.rows(RowCache.Key(width: 80, seconds: false, time: Double(n), kind: .message, sender: "bob", text: "x", held: 0,
                                        deletedBy: nil, isReply: false, reactions: "")) { 1 }
        }
        #expect(cache.count == 10)
    }
}
