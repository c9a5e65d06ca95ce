import Testing
@testable import ChatClientKit
import IRCWire

@Suite("conversation book")
struct ConversationBookTests {
    func message(_ text: String, at time: Double, msgid: String? = nil) -> ChatLine {
        var line = ChatLine(time: time, kind: .message, sender: "bob", text: text)
        line.msgid = msgid
        return line
    }

    @Test("a history line arriving late is inserted at its place by time; a live one at the bottom")
    func insertedByTime() {
        var book = ConversationBook(nick: "alice")
        let room = ConversationID.room("#lobby")
        book.apply(.joined(room, name: "#lobby", again: false))
        for (text, time) in [("one", 10.0), ("three", 30), ("two", 20), ("zero", 5), ("four", 40)] {
            var line = message(text, at: time)
            line.isHistory = true
            book.apply(.line(room, line))
        }
        #expect(book[room]!.lines.map(\.text) == ["zero", "one", "two", "three", "four"])
        // A live line goes at the end even when its clock is behind (the server's and ours differ).
        book.apply(.line(room, message("live, stamped early", at: 1)))
        #expect(book[room]!.lines.last?.text == "live, stamped early")
    }

    @Test("lines fetched before the oldest are kept while read back (up to twice the limit), cut once the view is at the bottom")
    func readingBackKeepsFetchedLines() {
        var book = ConversationBook(nick: "alice", scrollbackLimit: 100)
        let room = ConversationID.room("#lobby")
        book.apply(.joined(room, name: "#lobby", again: false))
        for n in 1000..<1100 { book.apply(.line(room, message("live \(n)", at: Double(n), msgid: "m\(n)"))) }
        book.setReadingBack(room, true)
        // Two pages of 50 fetched by scrolling up, each before the oldest: all kept.
        for page in 0..<2 {
            for n in (1000 - 50 * (page + 1))..<(1000 - 50 * page) {
                var line = message("old \(n)", at: Double(n), msgid: "m\(n)")
                line.isHistory = true
                book.apply(.line(room, line))
            }
        }
        #expect(book[room]!.lines.count == 200)
        #expect(book[room]!.lines.first?.text == "old 900")
        #expect(book[room]!.lines.last?.text == "live 1099")
        // A flood while reading back is cut at twice the limit, to the limit.
        for n in 1100..<1200 { book.apply(.line(room, message("live \(n)", at: Double(n), msgid: "m\(n)"))) }
        #expect(book[room]!.lines.count <= 200)
        #expect(book[room]!.lines.first.map { $0.time >= 1000 } == true)
        #expect(book[room]!.lines.last?.text == "live 1199")
        // Back at the bottom: the next lines cut to the limit as before (in chunks of an eighth).
        book.setReadingBack(room, false)
        for n in 1200..<1220 { book.apply(.line(room, message("live \(n)", at: Double(n), msgid: "m\(n)"))) }
        #expect(book[room]!.lines.count <= 112)
        #expect(book[room]!.lines.first.map { $0.time > 1100 } == true)
        #expect(book[room]!.contains(msgid: "m1000") == false, "a cut line's msgid goes with it")
    }

    @Test("a line's rare fields live in a shared box: 80 bytes a line, and a changed copy leaves the original as it was")
    func rareFieldsBoxed() {
        // Every conversation of both books holds up to the scrollback of these (the client flood's memory).
        #expect(MemoryLayout<ChatLine>.stride <= 80)
        var line = message("hi", at: 1, msgid: "a1")
        #expect(line.serial == 0 && line.replyTo == nil && line.reactions.isEmpty && line.deletedBy == nil)
        line.replyTo = "a0"
        line.serial = 7
        let copy = line
        line.reactions = [Reaction(emoji: "👍", nicks: ["bob"])]
        line.deletedBy = "carol"
        #expect(copy.replyTo == "a0" && copy.serial == 7 && copy.reactions.isEmpty && copy.deletedBy == nil)
        #expect(line.replyTo == "a0" && line.serial == 7 && line.reactions.count == 1 && line.deletedBy == "carol")
        #expect(line != copy)
        var same = copy
        same.reactions = []
        #expect(same == copy)
        // Cleared fields leave no box behind: equal to a line that never had them.
        same.replyTo = nil
        same.serial = 0
        #expect(same == message("hi", at: 1, msgid: "a1"))
    }

    @Test("a front end's book numbers messages; the client's own keeps no numbers")
    func numbering() {
        let room = ConversationID.room("#lobby")
        var front = ConversationBook(nick: "alice")
        var own = ClientState(config: ClientConfig(host: "127.0.0.1", nick: "alice")).book
        for n in 1...3 {
            front.apply(.line(room, message("m\(n)", at: Double(n), msgid: "id\(n)")))
            own.apply(.line(room, message("m\(n)", at: Double(n), msgid: "id\(n)")))
        }
        #expect(front.referenceOf == ["id1": 1, "id2": 2, "id3": 3])
        #expect(front.references[2]?.msgid == "id2")
        #expect(own.references.isEmpty && own.referenceOf.isEmpty)
        // It keeps the lines' keys, not the lines: a repeat is known, the texts are the screen's.
        #expect(own[room]?.lines.isEmpty == true)
        #expect(own[room]?.contains(msgid: "id2") == true && own[room]?.unread == 3)
    }

    @Test("keys only (the client's own book) take and refuse exactly the lines a screen's book does")
    func keysAgreeWithLines() {
        let room = ConversationID.room("#lobby")
        var screen = ConversationBook(nick: "alice", scrollbackLimit: 16)
        var own = ConversationBook(nick: "alice", scrollbackLimit: 16, keepsOnlyKeys: true)
        var refused = 0, agreed = true
        func both(_ line: ChatLine) {
            let before = screen[room]!.keptCount
            screen.apply(.line(room, line))
            own.apply(.line(room, line))
            if screen[room]!.keptCount == before { refused += 1 }
            agreed = agreed && own[room]!.keptCount == screen[room]!.keptCount && own[room]!.unread == screen[room]!.unread
        }
        screen.apply(.joined(room, name: "#lobby", again: false))
        own.apply(.joined(room, name: "#lobby", again: false))
        for n in 0..<40 {
            // Live lines, history without msgids (the same text twice at one time is one line,
            // another sender or text is not), replays, and a held line sent later.
            both(message("live \(n)", at: Double(100 + n), msgid: "m\(n)"))
            var old = message("joined \(n % 3)", at: Double(90 + n % 5))
            old.isHistory = true
            both(old)
            var other = old
            other.sender = "carol"
            both(other)
            if n % 4 == 0 { both(message("live \(n / 2)", at: Double(100 + n / 2), msgid: "m\(n / 2)")) }
            if n % 7 == 0 {
                var held = ChatLine(time: Double(100 + n), kind: .message, sender: "alice", text: "held \(n)", isOwn: true)
                held.isPending = true
                held.serial = UInt64(n + 1)
                both(held)
                screen.apply(.pendingDone(room, serial: UInt64(n + 1)))
                own.apply(.pendingDone(room, serial: UInt64(n + 1)))
                agreed = agreed && own[room]!.keptCount == screen[room]!.keptCount
            }
        }
        #expect(refused > 0, "some lines were refused")
        #expect(agreed)
        #expect(own[room]!.lines.isEmpty && screen[room]!.lines.count <= 18)
        for n in 0..<40 { #expect(own[room]!.contains(msgid: "m\(n)") == screen[room]!.contains(msgid: "m\(n)")) }
        #expect(own[room]!.unread == screen[room]!.unread)
    }

    @Test("the same msgid twice is kept once; its unread counts once")
    func deduplicated() {
        var book = ConversationBook(nick: "alice")
        let room = ConversationID.room("#lobby")
        book.apply(.joined(room, name: "#lobby", again: false))
        book.apply(.line(room, message("hi", at: 10, msgid: "a1")))
        book.apply(.line(room, message("other", at: 10, msgid: "a2")))
        book.apply(.line(room, message("hi", at: 10, msgid: "a1")))
        #expect(book[room]!.lines.map(\.text) == ["hi", "other"])
        #expect(book[room]!.unread == 2)
    }

    @Test("a held line goes by its serial, not its text: of two equal lines the right one leaves")
    func pendingBySerial() {
        var book = ConversationBook(nick: "alice")
        let bob = ConversationID.direct("bob")
        for serial: UInt64 in [1, 2] {
            var line = ChatLine(time: Double(serial), kind: .message, sender: "alice", text: "same", isOwn: true)
            line.isPending = true
            line.serial = serial
            book.apply(.line(bob, line))
        }
        book.apply(.pendingDone(bob, serial: 1))
        #expect(book[bob]!.lines.map(\.serial) == [2])
    }

    @Test("a person called server and the server window are two conversations")
    func serverIsNotANick() {
        var book = ConversationBook(nick: "alice")
        book.apply(.line(.direct("server"), ChatLine(time: 1, kind: .message, sender: "server", text: "I am a person")))
        book.apply(.line(.server, ChatLine(time: 1, kind: .info, text: "MOTD")))
        #expect(book[.server]!.lines.map(\.text) == ["MOTD"])
        #expect(book[.direct("server")]!.lines.map(\.text) == ["I am a person"])
        #expect(book.conversation("server")?.id == .direct("server"))
    }

    @Test("a rename moves member rows in every room and the direct conversation, keeping its lines and unread")
    func rename() {
        var book = ConversationBook(nick: "alice")
        for room in ["#a", "#b"] {
            book.apply(.joined(.room(room), name: room, again: false))
            book.apply(.members(.room(room), [Member(nick: "alice"), Member(nick: "Bob", prefixes: "+")]))
        }
        book.apply(.line(.direct("bob"), message("hi", at: 1)))
        book.apply(.renamed(old: "Bob", new: "Robert"))
        #expect(book[.direct("bob")] == nil)
        #expect(book[.direct("robert")]?.name == "Robert" && book[.direct("robert")]?.unread == 1)
        #expect(book[.room("#a")]!.members["robert"] == Member(nick: "Robert", prefixes: "+"))
        #expect(book[.room("#b")]!.members["bob"] == nil)
        #expect(book.order.last == .direct("robert"))
    }

    @Test("a view that keeps no lines still counts unread the same")
    func countsWithoutLines() {
        var owner = ConversationBook(nick: "alice", keepsLines: false)
        var view = ConversationBook(nick: "alice")
        let events: [ClientEvent] = [.line(.direct("bob"), message("a", at: 1)), .line(.direct("bob"), message("b", at: 2)),
                                     .markedRead(.direct("bob")), .line(.direct("bob"), message("c", at: 3))]
        for event in events { owner.apply(event); view.apply(event) }
        #expect(owner[.direct("bob")]!.lines.isEmpty && owner[.direct("bob")]!.unread == 1)
        #expect(view[.direct("bob")]!.lines.count == 3 && view[.direct("bob")]!.unread == 1)
    }
}

@Suite("transfer machine")
struct TransferMachineTests {
    func offer(_ direction: TransferInfo.Direction, _ state: TransferInfo.State, passive: Bool = false) -> TransferInfo {
        TransferInfo(id: 1, direction: direction, peer: "bob", offeredName: "a.txt", localPath: "/tmp/a.txt", size: 100,
                     state: state, passive: passive, offeredAt: 0)
    }

    @Test("receiving: pending, connecting, active with progress, done")
    func receive() {
        var info = offer(.receiving, .pending)
        let step1 = info.apply(.progress(10))
        #expect(!step1, "no progress before the start")
        let step2 = info.apply(.connecting)
        #expect(step2 && info.state == .connecting)
        let step3 = info.apply(.started(position: 0, time: 5))
        #expect(step3 && info.state == .active && info.startedAt == 5)
        let step4 = info.apply(.progress(60))
        #expect(step4 && info.transferred == 60)
        let step5 = info.apply(.ended(.done(sha256: "x", seconds: 1), time: 6))
        #expect(step5 && info.finishedAt == 6)
        let step6 = info.apply(.progress(99))
        #expect(!step6 && info.transferred == 60, "nothing after the end")
        let step7 = info.apply(.ended(.failed("late"), time: 7))
        #expect(!step7 && info.state == .done(sha256: "x", seconds: 1))
    }

    @Test("resuming: asked from an offset, the sender's ACCEPT, then connecting")
    func resume() {
        var info = offer(.receiving, .pending)
        let step8 = info.apply(.resumeAsked(from: 40))
        #expect(step8 && info.state == .resuming && info.startOffset == 40)
        let step9 = info.apply(.resumeFrom(40))
        #expect(step9 && info.transferred == 40)
        let step10 = info.apply(.connecting)
        #expect(step10)
        let step11 = info.apply(.resumeFrom(10))
        #expect(!step11, "no resume once connecting")
    }

    @Test("/reject ends at once; the worker's later cancel keeps it rejected")
    func rejectThenCancel() {
        var info = offer(.sending, .offered)
        let step12 = info.apply(.ended(.rejected, time: 1))
        #expect(step12 && info.cancelRequested)
        let step13 = info.apply(.ended(.cancelled, time: 2))
        #expect(!step13 && info.state == .rejected)
    }

    @Test("a passive answer is only for our passive offer")
    func passive() {
        var active = offer(.sending, .offered)
        let step14 = active.apply(.connectTo(address: "10.0.0.2", port: 5000))
        #expect(!step14)
        var passive = offer(.sending, .offered, passive: true)
        let step15 = passive.apply(.connectTo(address: "10.0.0.2", port: 5000))
        #expect(step15 && passive.state == .connecting && passive.port == 5000)
    }

    @Test("the table publishes each change, and progress once per percent")
    func publishes() {
        let seen = Collected()
        let table = FileTransfers(publish: { seen.add($0) })
        let info = table.add { TransferInfo(id: $0, direction: .receiving, peer: "bob", offeredName: "f", localPath: "/tmp/f",
                                            size: 1000, state: .pending, offeredAt: 0) }
        table.record(info.id, .connecting)
        table.record(info.id, .started(position: 0, time: 1))
        for byte in stride(from: 1, through: 1000, by: 1) { table.record(info.id, .progress(UInt64(byte))) }
        table.record(info.id, .progress(1000))
        // add, connecting, started, then 100 percent steps (1 % … 100 %).
        #expect(seen.items.count == 3 + 100)
        #expect(seen.items.last?.transferred == 1000)
    }
}

final class Collected: @unchecked Sendable {
    private var list: [TransferInfo] = []
    func add(_ info: TransferInfo) { list.append(info) }
    var items: [TransferInfo] { list }
}
