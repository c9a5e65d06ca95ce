import Testing
@testable import ChatUI
@testable import ChatClientKit
import IRCWire

/// Where news for the user goes: the screen tells its client which conversation is on screen,
/// and an invitation lands there, unread and ringing.
@Suite("where the user is looking")
struct LookingTests {
    static func twoRooms() -> ChatModel {
        lobbyModel(width: 60, height: 12, extra: [
            ":alice!a@h JOIN #dev", ":srv 353 alice = #dev :alice dave", ":srv 366 alice #dev :End",
        ])
    }

    @Test("moving the selection to another conversation tells the client once; a key that moves nothing tells it nothing")
    func told() {
        var model = Self.twoRooms()
        // From #lobby down its members (the pane still shows #lobby: no conversation with them yet) to #dev.
        var told: [UICommand] = []
        for _ in 0..<4 { told += model.handle(.key(.down)).filter { if case .on(_, .looking) = $0 { return true } else { return false } } }
        #expect(told == [.on(network: 0, .looking(.room("#dev")))])
        #expect(model.handle(.key(.character("y"))) == [.typing("active", to: "#dev")], "typing does not move the view (it says it is typing)")
        let back = model.handle(.key(.up)).filter { if case .on(_, .looking) = $0 { return true } else { return false } }
        #expect(back == [], "with a line being typed, Up does not move the view")
    }

    @Test("an invitation where the invitee is looking: the whole screen, the line highlighted, the room counted and marked")
    func invitationOnScreen() {
        var model = Self.twoRooms()
        model.selection = .conversation(.room("#dev"))
        model.currentRoom = "#dev"
        var client = ClientState(continuing: model.state, registered: true)
        client.replyConversation = .room("#lobby") // typed last in #lobby
        client.lookingAt = .room("#dev")           // but looking at #dev
        var commands: [UICommand] = []
        for event in client.apply(try! IRCMessage(parsing: "@time=1970-01-01T10:06:00.000Z :carol!c@h INVITE alice #secret"), now: 36_360) {
            commands += model.update(.client(event))
        }
        #expect(commands.contains(.bell), "it rings, though it is in view")
        #expect(model.state[.room("#dev")]?.unread == 1 && model.state[.room("#dev")]?.mentioned == true)
        #expect(model.state[.room("#lobby")]?.lines.contains { $0.text.contains("invites you") } == false)
        expectScreen(model, [
            " #dev (2)                                                   ",
            "                                               │1 (server)  ",
            "                                               │2 #lobby    ",
            "                                               │ @alice…    ",
            "                                               │ +bob       ",
            "                                               │  carol     ",
            "                                               │  小明      ",
            "10:05 -!- You joined #dev                      │3 #dev    1!",
            "10:06 -carol- carol invites you to #secret —   │  alice…    ",
            "              /join #secret                    │  dave      ",
            " alice │ connected │ Enter sends to #dev                    ",
            ">                                                           ",
        ], styles: [
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "                                               ddddddddddd  ",
            "                                               dbbbbbbbb    ",
            "                                               dAAAAAAAA    ",
            "                                               dBBBBB       ",
            "                                               dCCCCCCC     ",
            "                                               dXXXXXX      ",
            "ddddddddddddddddddddddddd                      dRRRRRRrrrrHH",
            "ddddddCCCCCCCChhhhhhhhhhhhhhhhhhhhhhhhhhhhhh   dAAAAAAAA    ",
            "              hhhhhhhhhhhhh                    dVVVVVV      ",
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "dd                                                          ",
        ], legend: Self.legend)
    }

    /// The lobby's people, dave (V), and H: the unread badge of the selected row (highlight, reversed).
    static let legend: [Character: Style] = {
        var badge = Palette.highlight
        badge.reverse = true
        return StyleLegend.lobby.merging(StyleLegend.nicks(["dave": "V"])) { a, _ in a }.merging(["H": badge]) { a, _ in a }
    }()

    @Test("/cancel: a number stops a transfer, a name gives up what is held for that person, nothing in a direct conversation means its person")
    func cancel() {
        var model = lobbyModel()
        #expect(model.type("/cancel 3") == [.cancelTransfer(3)])
        #expect(model.type("/cancel #4") == [.cancelTransfer(4)])
        #expect(model.type("/cancel bob") == [.cancelHeld("bob")])
        let usage = model.type("/cancel")
        #expect(usage.contains(.note("Usage: /cancel ID|NICK", conversation: .room("#lobby"), isError: true)), "\(usage)")
        var client = ClientState(continuing: model.state, registered: true)
        for event in client.open("Bob", now: 1).events { _ = model.update(.client(event)) }
        model.selection = .conversation(.direct("bob"))
        #expect(model.type("/cancel").contains(.cancelHeld("Bob")))
    }

    @Test("irssi's short forms: /j, /q, /m, /w and /leave are /join, /query, /msg, /whois and /part")
    func aliases() {
        var model = lobbyModel()
        #expect(model.type("/j #dev") == model.type("/join #dev"))
        #expect(model.type("/m bob hi") == model.type("/msg bob hi"))
        #expect(model.type("/w bob") == model.type("/whois bob"))
        #expect(model.type("/leave") == model.type("/part"))
        #expect(model.type("/j #dev").contains(.irc(IRCMessage("JOIN", "#dev"))))
        #expect(model.type("/join #club secret").contains(.irc(IRCMessage("JOIN", "#club", "secret"))), "the key goes with it (issue 42's tour)")
        #expect(model.type("/register").contains(.irc(IRCMessage("PRIVMSG", "ChanServ", "REGISTER #lobby"))))
        #expect(model.type("/send-held bob").contains(.sendHeld("bob")))
        #expect(model.type("/help register") == [.note("/register [#ROOM]  keep a room you run across restarts, registered to your account (ChanServ)", conversation: .room("#lobby"), isError: false)],
                "/help COMMAND: the words of its man page entry")
        #expect(model.type("/help /nosuch").first.map { if case .note(_, _, let isError) = $0 { isError } else { false } } == true)
    }

    @Test("the host closing the room is said once in the server window, without the status line's words on stopping")
    func closedOnce() {
        var model = lobbyModel()
        let first = model.update(.client(.status(.disconnected(reason: "the host closed the room; /disconnect stops trying"))))
        #expect(first.contains(.note("Disconnected: the host closed the room", conversation: .server, isError: true)), "\(first)")
        let again = model.update(.client(.status(.reconnecting(inSeconds: 2, reason: "the host closed the room; /disconnect stops trying"))))
        #expect(!again.contains { if case .note = $0 { return true } else { return false } })
    }

    @Test("a room restored from the log that we are not in comes after the rooms we are in")
    func leftRoomsLast() {
        var client = ClientState(nick: "alice")
        var old = ChatLine(time: 10, kind: .message, sender: "bob", text: "from last week")
        old.isHistory = true
        old.isOldNews = true
        _ = client.line(old, to: .room("#old"), name: "#old")   // restored first, as the log does
        for line in [":srv 001 alice :Welcome", ":alice!a@h JOIN #lobby", ":srv 353 alice = #lobby :alice bob", ":srv 366 alice #lobby :End"] {
            _ = client.apply(try! IRCMessage(parsing: line), now: 20)
        }
        let model = ChatModel(state: client.book, width: 60, height: 12)
        #expect(model.sidebar == [.conversation(.server), .conversation(.room("#lobby")), .user("alice", room: .room("#lobby")),
                                  .user("bob", room: .room("#lobby")), .conversation(.room("#old"))])
    }
}
