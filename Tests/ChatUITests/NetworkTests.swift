import Testing
@testable import ChatUI
@testable import ChatClientKit
import IRCWire

/// The lobby model (network "home", our server) and a second network, "libera", where alice is
/// in #swift with dave and erin.
func twoNetworks(width: Int = 100, height: Int = 30) -> ChatModel {
    var model = lobbyModel(width: width, height: height)
    model.networks[0].name = "home"
    model.networks[0].key = "127.0.0.1:6667"
    let libera = model.addNetwork(name: "libera", key: "irc.libera.chat:6697", state: ConversationBook(nick: "alice"))
    model.receive(network: libera, .status(.registered(nick: "alice")))
    model.receive(network: libera, ":irc 001 alice :Welcome", ":irc 005 alice PREFIX=(ov)@+ CHANTYPES=# :are supported",
                  ":alice!a@h JOIN #swift", ":irc 353 alice = #swift :alice @dave erin", ":irc 366 alice #swift :End", now: 36300)
    return model
}

extension ChatModel {
    /// Server lines read by network `index`'s client, each event applied as that network's.
    @discardableResult
    mutating func receive(network index: Int, _ lines: String..., now: Double) -> [UICommand] {
        var client = ClientState(continuing: networks[index].state, registered: networks[index].everRegistered)
        var commands: [UICommand] = []
        for line in lines {
            for event in client.apply(try! IRCMessage(parsing: line), now: now) { commands += update(.fromNetwork(index, event)) }
        }
        return commands
    }

    @discardableResult
    mutating func receive(network index: Int, _ event: ClientEvent) -> [UICommand] { update(.fromNetwork(index, event)) }

    /// Network `index`'s connection dropped.
    mutating func lose(network index: Int, reason: String, now: Double) {
        var client = ClientState(continuing: networks[index].state, registered: networks[index].everRegistered)
        for event in client.connectionLost(reason: reason, now: now).events { _ = update(.fromNetwork(index, event)) }
    }
}

@Suite("several networks")
struct NetworkTests {
    /// home's people and libera's: D dave, E erin.
    static let legend = StyleLegend.lobby.merging(StyleLegend.nicks(["dave": "V", "erin": "E"])) { a, _ in a }

    @Test("two networks at 100×30: each network's rows under its name; joining on libera does not take the view from home")
    func goldenTwoNetworks() {
        let model = twoNetworks()
        #expect(model.selectedNetwork == 0 && model.viewedID == .room("#lobby"))
        expectScreen(model, [
            " [home] #lobby (4)                                                                                  ",
            "                                                                               │[home]              ",
            "                                                                               │1 (server)          ",
            "                                                                               │2 #lobby            ",
            "                                                                               │ @alice (you)       ",
            "                                                                               │ +bob               ",
            "                                                                               │  carol             ",
            "                                                                               │  小明              ",
            "                                                                               │[libera]            ",
            "                                                                               │3 (server)          ",
            "                                                                               │4 #swift            ",
            "                                                                               │ @dave              ",
            "                                                                               │  alice (you)       ",
            "                                                                               │  erin              ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "10:05 -!- You joined #lobby                                                    │                    ",
            " alice │ home: connected │ Enter sends to #lobby                                                    ",
            ">                                                                                                   ",
        ], styles: [
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "                                                                               dbbbbbb              ",
            "                                                                               ddddddddddd          ",
            "                                                                               dRRRRRRRRrrrrrrrrrrrr",
            "                                                                               dAAAAAAAAAAAAA       ",
            "                                                                               dBBBBB               ",
            "                                                                               dCCCCCCC             ",
            "                                                                               dXXXXXX              ",
            "                                                                               dbbbbbbbb            ",
            "                                                                               ddddddddddd          ",
            "                                                                               dbbbbbbbb            ",
            "                                                                               dVVVVVV              ",
            "                                                                               dAAAAAAAAAAAAA       ",
            "                                                                               dEEEEEE              ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "ddddddddddddddddddddddddddd                                                    d                    ",
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "dd                                                                                                  ",
        ], legend: Self.legend)
    }

    /// libera's connection lost and waiting to reconnect.
    static func liberaDown(_ model: inout ChatModel) {
        model.now = 36400
        model.lose(network: 1, reason: "connection reset by peer", now: 36400)
        model.receive(network: 1, .status(.reconnecting(inSeconds: 4, reason: "connection reset by peer")))
    }

    @Test("a network that is down at 100×30: its heading says so and only its rows are grey; the status line is still home's")
    func goldenOneDown() {
        var model = twoNetworks()
        Self.liberaDown(&model)
        expectScreen(model, [
            " [home] #lobby (4)                                                                                  ",
            "                                                                               │[home]              ",
            "                                                                               │1 (server)          ",
            "                                                                               │2 #lobby            ",
            "                                                                               │ @alice (you)       ",
            "                                                                               │ +bob               ",
            "                                                                               │  carol             ",
            "                                                                               │  小明              ",
            "                                                                               │[libera] down       ",
            "                                                                               │3 (server)          ",
            "                                                                               │4 #swift            ",
            "                                                                               │ @dave              ",
            "                                                                               │  alice (you)       ",
            "                                                                               │  erin              ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "10:05 -!- You joined #lobby                                                    │                    ",
            " alice │ home: connected │ Enter sends to #lobby                                                    ",
            ">                                                                                                   ",
        ], styles: [
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "                                                                               dbbbbbb              ",
            "                                                                               ddddddddddd          ",
            "                                                                               dRRRRRRRRrrrrrrrrrrrr",
            "                                                                               dAAAAAAAAAAAAA       ",
            "                                                                               dBBBBB               ",
            "                                                                               dCCCCCCC             ",
            "                                                                               dXXXXXX              ",
            "                                                                               dddddddddddddd       ",
            "                                                                               ddddddddddd          ",
            "                                                                               ddddddddd            ",
            "                                                                               ddddddd              ",
            "                                                                               dddddddddddddd       ",
            "                                                                               ddddddd              ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "ddddddddddddddddddddddddddd                                                    d                    ",
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "dd                                                                                                  ",
        ], legend: Self.legend)
        // Shown, libera's state is the status line's.
        #expect(model.type("/network libera") == [])
        #expect(model.selectedNetwork == 1 && model.viewedID == .room("#swift"))
        expectScreen(model, [
            " [libera] #swift (3)                                                                                ",
            "                                                                               │[home]              ",
            "                                                                               │1 (server)          ",
            "                                                                               │2 #lobby            ",
            "                                                                               │ @alice (you)       ",
            "                                                                               │ +bob               ",
            "                                                                               │  carol             ",
            "                                                                               │  小明              ",
            "                                                                               │[libera] down       ",
            "                                                                               │3 (server)          ",
            "                                                                               │4 #swift            ",
            "                                                                               │ @dave              ",
            "                                                                               │  alice (you)       ",
            "                                                                               │  erin              ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "10:05 -!- You joined #swift                                                    │                    ",
            "10:06 -!- ── connection lost: connection reset by peer — what you type is held │                    ",
            "          until it is back ──                                                  │                    ",
            " alice │ libera: reconnecting in 4 s (connection reset by peer) │ Enter sends to #swift             ",
            ">                                                                                                   ",
        ], styles: [
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "                                                                               dbbbbbb              ",
            "                                                                               ddddddddddd          ",
            "                                                                               dbbbbbbbb            ",
            "                                                                               dAAAAAAAAAAAAA       ",
            "                                                                               dBBBBB               ",
            "                                                                               dCCCCCCC             ",
            "                                                                               dXXXXXX              ",
            "                                                                               dddddddddddddd       ",
            "                                                                               ddddddddddd          ",
            "                                                                               dDDDDDDDDrrrrrrrrrrrr",
            "                                                                               ddddddd              ",
            "                                                                               dddddddddddddd       ",
            "                                                                               ddddddd              ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "ddddddddddddddddddddddddddd                                                    d                    ",
            "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd d                    ",
            "          ddddddddddddddddddd                                                  d                    ",
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "dd                                                                                                  ",
        ], legend: Self.legend)
    }

    @Test("unread counts per network at 60×15: libera's lines are not read while home is shown, even in a room of the same name")
    func goldenUnreadPerNetwork() {
        var model = twoNetworks(width: 60, height: 15)
        model.receive(network: 1, ":alice!a@h JOIN #lobby", ":irc 353 alice = #lobby :alice erin", ":irc 366 alice #lobby :End", now: 36310)
        #expect(model.selectedNetwork == 0 && model.viewedID == .room("#lobby"), "a join elsewhere does not take the view")
        let commands = model.receive(network: 1, ":erin!e@h PRIVMSG #lobby :over here", ":dave!d@h PRIVMSG #swift :alice: ping", now: 36320)
        #expect(!commands.contains(.markRead(.room("#lobby"))), "home's #lobby is in view, libera's is not")
        #expect(model.networks[1].state[.room("#lobby")]?.unread == 1)
        model.receive(":carol!c@h PRIVMSG alice :psst", now: 36330)
        #expect(model.totalUnread == 2, "the title counts lines for you on every network: carol's and dave's")
        expectScreen(model, [
            " [home] #lobby (4)                                          ",
            "                                               │[home]    1!",
            "                                               │1 (server)  ",
            "                                               │2 #lobby    ",
            "                                               │ @alice…    ",
            "                                               │ +bob       ",
            "                                               │  carol   1!",
            "                                               │  小明      ",
            "                                               │3 carol   1!",
            "                                               │[libera]  2!",
            "                                               │4 (server)  ",
            "                                               │5 #swift  1!",
            "10:05 -!- You joined #lobby                    │ @dave      ",
            " alice │ home: connected │ [3!,5!,6] │ Enter sends to #lobby",
            ">                                                           ",
        ], styles: [
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "                                               dbbbbbb    hh",
            "                                               ddddddddddd  ",
            "                                               dRRRRRRRRrrrr",
            "                                               dAAAAAAAA    ",
            "                                               dBBBBB       ",
            "                                               dCCCCCCC   hh",
            "                                               dXXXXXX      ",
            "                                               d          hh",
            "                                               dbbbbbbbb  hh",
            "                                               ddddddddddd  ",
            "                                               dbbbbbbbb  hh",
            "ddddddddddddddddddddddddddd                    dVVVVVV      ",
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "dd                                                          ",
        ], legend: Self.legend)
        // libera drops: its heading says so, its rows grey, its counts stay; home's rows are as they were.
        Self.liberaDown(&model)
        expectScreen(model, [
            " [home] #lobby (4)                                          ",
            "                                               │[home]    1!",
            "                                               │1 (server)  ",
            "                                               │2 #lobby    ",
            "                                               │ @alice…    ",
            "                                               │ +bob       ",
            "                                               │  carol   1!",
            "                                               │  小明      ",
            "                                               │3 carol   1!",
            "                                               │[libe…] down",
            "                                               │4 (server)  ",
            "                                               │5 #swift  1!",
            "10:05 -!- You joined #lobby                    │ @dave      ",
            " alice │ home: connected │ [3!,5!,6] │ Enter sends to #lobby",
            ">                                                           ",
        ], styles: [
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "                                               dbbbbbb    hh",
            "                                               ddddddddddd  ",
            "                                               dRRRRRRRRrrrr",
            "                                               dAAAAAAAA    ",
            "                                               dBBBBB       ",
            "                                               dCCCCCCC   hh",
            "                                               dXXXXXX      ",
            "                                               d          hh",
            "                                               ddddddddddddd",
            "                                               ddddddddddd  ",
            "                                               ddddddddd  hh",
            "ddddddddddddddddddddddddddd                    ddddddd      ",
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "dd                                                          ",
        ], legend: Self.legend)
    }

    @Test("the arrows walk from one network's rows into the next, over its heading; Enter then sends on that network")
    func arrowsAcrossNetworks() {
        var model = twoNetworks(width: 60, height: 15)
        _ = model.update(.key(.home))
        #expect(model.selectedNetwork == 0 && model.selection == .conversation(.server), "Home passes over the first heading")
        model.selection = .user("小明", room: .room("#lobby"))
        _ = model.update(.key(.down))
        #expect(model.selectedNetwork == 1 && model.selection == .conversation(.server), "over libera's heading")
        _ = model.update(.key(.down))
        #expect(model.selectedNetwork == 1 && model.selection == .conversation(.room("#swift")))
        expectScreen(model, [
            " [libera] #swift (3)                                        ",
            "                                               │1 (server)  ",
            "                                               │2 #lobby    ",
            "                                               │ @alice…    ",
            "                                               │ +bob       ",
            "                                               │  carol     ",
            "                                               │  小明      ",
            "                                               │[libera]    ",
            "                                               │3 (server)  ",
            "                                               │4 #swift    ",
            "                                               │ @dave      ",
            "                                               │  alice…    ",
            "10:05 -!- You joined #swift                    │  erin      ",
            " alice │ libera: connected │ Enter sends to #swift          ",
            ">                                                           ",
        ], styles: [
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "                                               ddddddddddd  ",
            "                                               dbbbbbbbb    ",
            "                                               dAAAAAAAA    ",
            "                                               dBBBBB       ",
            "                                               dCCCCCCC     ",
            "                                               dXXXXXX      ",
            "                                               dbbbbbbbb    ",
            "                                               ddddddddddd  ",
            "                                               dRRRRRRRRrrrr",
            "                                               dVVVVVV      ",
            "                                               dAAAAAAAA    ",
            "ddddddddddddddddddddddddddd                    dEEEEEE      ",
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "dd                                                          ",
        ], legend: Self.legend)
        _ = model.update(.key(.down))
        #expect(model.selection == .user("dave", room: .room("#swift")), "past alice's own row")
        #expect(model.type("hello dave") == [.open("dave"), .send(text: "hello dave", to: "dave")])
        _ = model.update(.key(.up))
        _ = model.update(.key(.up))
        #expect(model.selectedNetwork == 1 && model.selection == .conversation(.server))
        #expect(model.update(.key(.up)) == [] && model.selectedNetwork == 0 && model.selection == .user("小明", room: .room("#lobby")), "back up into home")
    }

    @Test("keys make commands for the network shown; a client's event makes them for its own network")
    func routing() {
        var model = twoNetworks()
        _ = model.type("/network libera")
        let typed = model.type("hi all")
        #expect(typed == [.send(text: "hi all", to: "#swift")])
        #expect(typed.map { $0.routed(defaultNetwork: model.selectedNetwork).network } == [1])
        #expect(UICommand.on(network: 0, .disconnect).routed(defaultNetwork: 1) == (0, .disconnect))
    }

    @Test("/network lists the networks, switches to one by name or host:port; /connect and /disconnect NAME go to that network")
    func networkCommands() {
        var model = twoNetworks()
        Self.liberaDown(&model)
        #expect(model.type("/network") == [
            .note("home (127.0.0.1:6667): connected as alice (shown)", conversation: .room("#lobby"), isError: false),
            .note("libera (irc.libera.chat:6697): down: connection reset by peer", conversation: .room("#lobby"), isError: false),
        ])
        #expect(model.type("/network efnet") == [.note("No network efnet: /network lists them", conversation: .room("#lobby"), isError: true)])
        // Each says what it does where it was typed.
        #expect(model.type("/connect libera") == [.note("Connecting to libera again", conversation: .room("#lobby"), isError: false),
                                                  .on(network: 1, .reconnect)])
        #expect(model.type("/connect irc.example.org:6697") == [
            .note("Connecting to irc.example.org:6697: a new network in the sidebar", conversation: .room("#lobby"), isError: false),
            .connect("irc.example.org:6697")])
        #expect(model.type("/disconnect LIBERA") == [.note("Disconnecting from libera (/connect libera to come back)", conversation: .room("#lobby"), isError: false),
                                                     .on(network: 1, .disconnect)])
        #expect(NetworkView.describe(name: "127.0.0.1:6667", key: "127.0.0.1:6667", status: .registered(nick: "mia"), shown: true)
                == "127.0.0.1:6667: connected as mia (shown)", "a name that is its address is said once")
        // Cut to fit a heading: a host:port name keeps its port, any other its start.
        #expect(ChatModel.cut("127.0.0.1:17667", width: 8) == "…1:17667" && ChatModel.cut("127.0.0.1:17668", width: 8) == "…1:17668")
        #expect(ChatModel.cut("libera", width: 5) == "libe…" && ChatModel.cut("home", width: 5) == "home")
        #expect(model.type("/disconnect") == [.disconnect])
        #expect(model.type("/network irc.libera.chat:6697") == [] && model.selectedNetwork == 1)
        #expect(model.type("/network home") == [] && model.selectedNetwork == 0 && model.viewedID == .room("#lobby"),
                "back where home was left")
    }

    @Test("/search asks every network; the hits of all, once each, labelled with their network; Enter opens one in its network")
    func searchEveryNetwork() {
        var model = twoNetworks()
        #expect(model.type("/search cake") == [.on(network: 0, .search(["cake"])), .on(network: 1, .search(["cake"]))])
        // One log: each network's client answers with every network's lines.
        let hits = [
            SearchHit(conversation: .room("#swift"), name: "#swift", line: ChatLine(time: 36350, kind: .message, sender: "dave", text: "cake at four"),
                      network: "irc.libera.chat:6697"),
            SearchHit(conversation: .room("#lobby"), name: "#lobby", line: ChatLine(time: 36200, kind: .message, sender: "bob", text: "any cake left?"),
                      network: "127.0.0.1:6667"),
        ]
        #expect(model.receive(network: 1, .searchResults(query: "cake", hits)) == [])
        #expect(model.searchPicker == nil, "waiting for home's answer")
        #expect(model.receive(.searchResults(query: "cake", hits)) == [])
        #expect(model.searchPicker?.hits == hits && model.searchHitNetworks == [1, 0])
        expectScreen(model, [
            " [home] #lobby (4)                                                                                  ",
            "2 lines with cake — Up/Down, Enter opens, Esc closes                           │[home]              ",
            "[libera] #swift 01-01 10:05 <dave> cake at four                                │1 (server)          ",
            "[home] #lobby 01-01 10:03 <bob> any cake left?                                 │2 #lobby            ",
            "                                                                               │ @alice (you)       ",
            "                                                                               │ +bob               ",
            "                                                                               │  carol             ",
            "                                                                               │  小明              ",
            "                                                                               │[libera]            ",
            "                                                                               │3 (server)          ",
            "                                                                               │4 #swift            ",
            "                                                                               │ @dave              ",
            "                                                                               │  alice (you)       ",
            "                                                                               │  erin              ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            "                                                                               │                    ",
            " alice │ home: connected │ Enter sends to #lobby                                                    ",
            ">                                                                                                   ",
        ], styles: [
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh                           dbbbbbb              ",
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrddddddddddd          ",
            "                                                                               dRRRRRRRRrrrrrrrrrrrr",
            "                                                                               dAAAAAAAAAAAAA       ",
            "                                                                               dBBBBB               ",
            "                                                                               dCCCCCCC             ",
            "                                                                               dXXXXXX              ",
            "                                                                               dbbbbbbbb            ",
            "                                                                               ddddddddddd          ",
            "                                                                               dbbbbbbbb            ",
            "                                                                               dVVVVVV              ",
            "                                                                               dAAAAAAAAAAAAA       ",
            "                                                                               dEEEEEE              ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "                                                                               d                    ",
            "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
            "dd                                                                                                  ",
        ], legend: Self.legend)
        #expect(model.update(.key(.enter)) == [.showAround(hits[0])])
        #expect(model.selectedNetwork == 1 && model.viewedID == .room("#swift"))
    }

    @Test("a search nobody has a line for says so once, on the network shown")
    func searchNothing() {
        var model = twoNetworks()
        _ = model.type("/search nope")
        #expect(model.receive(.searchResults(query: "nope", [])) == [])
        #expect(model.receive(network: 1, .searchResults(query: "nope", [])) == [
            .on(network: 0, .note("Nothing in your log has nope", conversation: .room("#lobby"), isError: false)),
        ])
    }

    @Test("a certificate question from a network not shown is answered to that network")
    func trustOtherNetwork() {
        var model = twoNetworks()
        model.receive(network: 1, .unknownCertificate(server: "irc.libera.chat:6697", fingerprint: "AB", problem: "self-signed certificate"))
        #expect(model.update(.key(.character("y"))) == [.on(network: 1, .trustCertificate("AB"))])
    }
}
