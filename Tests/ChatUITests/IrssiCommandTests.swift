import Testing
@testable import ChatUI
@testable import ChatClientKit
import IRCWire

@Suite("the rest an irssi user types (issue 46)")
struct IrssiCommandTests {
    @Test("/notice sends a NOTICE; /ctcp asks a client (PING with the time in ms); the answer says the round trip")
    func noticeAndCTCP() {
        var model = lobbyModel()
        model.now = 1_800_000_000.25
        #expect(model.type("/notice bob the build is green") == [.irc(IRCMessage("NOTICE", "bob", "the build is green")),
                                                                  .note("-> -bob- the build is green", conversation: .room("#lobby"), isError: false)])
        #expect(model.type("/ctcp bob version") == [.irc(IRCMessage("PRIVMSG", "bob", "\u{1}VERSION\u{1}")),
                                                    .note("CTCP VERSION sent to bob; the answer will show here", conversation: .room("#lobby"), isError: false)])
        #expect(model.type("/ctcp bob PING").first == .irc(IRCMessage("PRIVMSG", "bob", "\u{1}PING 1800000000250\u{1}")))
        #expect(notes(model.type("/ctcp bob ACTION waves")) == ["Usage: /ctcp NICK VERSION|PING|TIME|CLIENTINFO (/me for an action)"])
        var state = ClientState(nick: "alice")
        _ = state.receive(try! IRCMessage(parsing: ":srv 001 alice :Welcome"), now: 1)
        _ = state.receive(try! IRCMessage(parsing: ":alice!a@h JOIN #lobby"), now: 1)
        // Our own request echoed (echo-message) shows nowhere: the note above said it went.
        _ = state.receive(try! IRCMessage(parsing: ":alice!a@h PRIVMSG bob :\u{1}PING 1800000000250\u{1}"), now: 2)
        #expect(state.book[.direct("bob")] == nil)
        // Answers go where /ctcp was typed, as plain lines: no unread count, no `!`.
        state.replyConversation = .room("#lobby")
        _ = state.receive(try! IRCMessage(parsing: "@time=2027-01-15T08:00:00.370Z :bob!b@h NOTICE alice :\u{1}PING 1800000000250\u{1}"), now: 2)
        _ = state.receive(try! IRCMessage(parsing: ":bob!b@h NOTICE alice :\u{1}VERSION irssi 1.4.5\u{1}"), now: 2)
        #expect(state.book[.room("#lobby")]?.lines.suffix(2).map(\.text) == ["CTCP PING reply from bob: 120 ms", "CTCP VERSION reply from bob: irssi 1.4.5"])
        #expect(state.book[.room("#lobby")]?.unread == 0 && state.book[.direct("bob")] == nil)
        // Someone asking us: a line in the server window, no conversation opened with them.
        _ = state.receive(try! IRCMessage(parsing: ":carol!c@h PRIVMSG alice :\u{1}VERSION\u{1}"), now: 3)
        #expect(state.book[.server]?.lines.last?.text == "CTCP VERSION from carol" && state.book[.direct("carol")] == nil)
    }

    @Test("room commands act on the room in view or named, never on a room viewed earlier (tour, wave 4)")
    func roomCommandsWhereTyped() {
        var model = lobbyModel(extra: [":alice!a@h JOIN #dev", ":srv 353 alice = #dev :@alice", ":srv 366 alice #dev :End",
                                       ":bob!b@h PRIVMSG alice :hi"])
        model.currentRoom = "#dev"
        model.selection = .conversation(.direct("bob"))
        // In bob's window, as irssi's "Not joined to any channel": nothing sent, the error here.
        for command in ["/topic set from a DM", "/part", "/names", "/kick carol"] {
            let commands = model.type(command)
            #expect(commands.allSatisfy { if case .irc = $0 { false } else { true } }, "\(command) sends nothing")
            #expect(commands.contains { if case .note(_, .direct("bob"), true) = $0 { true } else { false } }, "\(command) says why, in bob's window")
        }
        // A room named works from anywhere (irssi's /topic #dev TEXT, /names #dev).
        #expect(model.type("/topic #dev builds are green") == [.irc(IRCMessage("TOPIC", "#dev", "builds are green"))])
        #expect(model.type("/topic #dev") == [.irc(IRCMessage("TOPIC", "#dev"))])
        #expect(notes(model.type("/names #dev")) == ["#dev: 1 person: @alice"])
        #expect(model.type("/names #elsewhere") == [.irc(IRCMessage("NAMES", "#elsewhere"))])
        #expect(model.type("/part #dev") == [.irc(IRCMessage("PART", "#dev"))])
        // In the room's window, or with someone in its member list picked: that room.
        model.selection = .user("carol", room: .room("#lobby"))
        #expect(model.type("/topic hello") == [.irc(IRCMessage("TOPIC", "#lobby", "hello"))])
        model.selection = .conversation(.room("#lobby"))
        #expect(notes(model.type("/names")) == ["#lobby: 4 people: @alice +bob carol 小明"])
        // The server window is no room either.
        model.selection = .conversation(.server)
        #expect(notes(model.type("/topic hi")) == ["Not in a room here: /topic #ROOM [TEXT], or go to the room"])
    }

    @Test("/join dev means #dev; /bye and /exit quit, as in irssi")
    func joinWithoutPrefix() {
        var model = lobbyModel()
        #expect(model.type("/join dev") == [.irc(IRCMessage("JOIN", "#dev"))])
        #expect(model.type("/join dev,#ops key") == [.irc(IRCMessage("JOIN", "#dev,#ops", "key"))])
        model.selection = .conversation(.server)
        _ = model.type("/j lobby")
        #expect(model.viewedID == .room("#lobby"), "already in it: go there")
        #expect(SlashCommands.named("bye")?.name == "quit" && SlashCommands.named("exit")?.name == "quit")
    }

    @Test("/lastlog searches the log and shows this conversation's hits only, the words as one phrase")
    func lastlog() {
        var model = lobbyModel()
        #expect(model.type("/lastlog deploy") == [.search(["deploy"], alsoSender: true)])
        #expect(model.type("/lastlog deploy at") == [.search(["deploy", "at"])])
        let here = SearchHit(conversation: .room("#lobby"), name: "#lobby", line: ChatLine(time: 36400, kind: .message, sender: "bob", text: "deploy at 5"))
        let elsewhere = SearchHit(conversation: .room("#dev"), name: "#dev", line: ChatLine(time: 36401, kind: .message, sender: "bob", text: "deploy done"))
        _ = model.receive(.searchResults(query: "deploy", [elsewhere, here], failure: nil))
        #expect(model.searchPicker?.hits == [here])
        #expect(draw(model).lines[1].hasPrefix("1 line with deploy in #lobby — Up/Down"))
        // Several words are one phrase, as in irssi: "line 7" is not "line 17".
        model.searchPicker = nil
        _ = model.type("/lastlog chatter line 7")
        let seven = SearchHit(conversation: .room("#lobby"), name: "#lobby", line: ChatLine(time: 36402, kind: .message, sender: "bob", text: "chatter line 7"))
        let seventeen = SearchHit(conversation: .room("#lobby"), name: "#lobby", line: ChatLine(time: 36403, kind: .message, sender: "bob", text: "chatter line 17"))
        _ = model.receive(.searchResults(query: "chatter line 7", [seventeen, seven], failure: nil))
        #expect(model.searchPicker?.hits == [seven])
        // One word may be who said it (irssi matches the `<bob>` of the line as shown); a join
        // reads as one, not as something bob said.
        model.searchPicker = nil
        _ = model.type("/lastlog BOB")
        let said = SearchHit(conversation: .room("#lobby"), name: "#lobby", line: ChatLine(time: 36404, kind: .message, sender: "bob", text: "lunch?"))
        let joined = SearchHit(conversation: .room("#lobby"), name: "#lobby", line: ChatLine(time: 36405, kind: .join, sender: "bob", text: "bob joined #lobby"))
        let carol = SearchHit(conversation: .room("#lobby"), name: "#lobby", line: ChatLine(time: 36406, kind: .message, sender: "carol", text: "lunch!"))
        _ = model.receive(.searchResults(query: "BOB", [joined, carol, said], failure: nil))
        #expect(model.searchPicker?.hits == [joined, said])
        let rows = draw(model).lines
        #expect(rows[2].contains(" -!- bob joined #lobby") && rows[3].contains(" <bob> lunch?"), "\(rows)")
    }

    @Test("d on a highlighted message asks first: y deletes, anything else keeps it")
    func deleteAsks() {
        var model = lobbyModel(width: 60, height: 12)
        model.receive("@msgid=m1 :alice!a@h PRIVMSG #lobby :oops, wrong room", now: 36400)
        _ = model.update(.key(.messageUp))
        #expect(model.update(.key(.character("d"))) == [])
        #expect(draw(model).lines[11].hasPrefix("Delete your message \"oops, wrong room\"? y/n"))
        #expect(notes(model.update(.key(.character("n")))) == ["Not deleted"])
        _ = model.update(.key(.messageUp))
        _ = model.update(.key(.character("d")))
        #expect(model.update(.key(.character("y"))) == [.irc(IRCMessage("REDACT", "#lobby", "m1"))])
        #expect(model.confirmingDelete == nil)
        // Someone else's message, and we are not an operator here: no d in the hints, and d says why.
        var guest = lobbyModel(width: 60, height: 12)
        guest.receive(":srv MODE #lobby -o alice", now: 36400)
        guest.receive("@msgid=m2 :bob!b@h PRIVMSG #lobby :mine, not yours", now: 36401)
        _ = guest.update(.key(.messageUp))
        #expect(draw(guest).lines[10].contains("r reply · e react · y copy"))
        #expect(notes(guest.update(.key(.character("d")))) == ["Only your own messages can be deleted here (a room's operators may delete others')"])
        #expect(guest.confirmingDelete == nil)
    }

    @Test("with several networks the title names the network shown")
    func networkInTitle() {
        var model = lobbyModel(width: 60, height: 12)
        model.networks[0].name = "home"
        model.addNetwork(name: "libera", key: "irc.libera.chat:6697", state: ConversationBook(nick: "alice"))
        #expect(draw(model).lines[0].hasPrefix(" [home] #lobby (4)"))
    }
}
