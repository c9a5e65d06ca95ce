import Testing
@testable import ChatUI
@testable import ChatClientKit
import IRCWire

/// The notes among commands, as text.
func notes(_ commands: [UICommand]) -> [String] {
    commands.compactMap { if case .note(let text, _, _) = $0 { return text } else { return nil } }
}

@Suite("settings at run time: /set, /alias, Tab (issue 46)")
struct SettingsTests {
    @Test("/set lists every setting of the table with its value, and marks what differs from the default")
    func list() {
        var model = lobbyModel()
        model.settings.set("bell", "off")
        let said = notes(model.type("/set"))
        #expect(said.count == Setting.all.count + 1)
        #expect(said.contains("  bell                 = off   (default on)"))
        #expect(said.contains("  mouse                = on"))
        #expect(said.contains("  highlights           = (none)"))
    }

    @Test("/set NAME VALUE applies at once, says when a restart is needed, refuses a bad value and keeps the old one")
    func change() {
        var model = lobbyModel()
        #expect(notes(model.type("/set timestamps HH:MM:SS")) == ["timestamps = HH:MM:SS"])
        #expect(model.showSeconds)
        #expect(notes(model.type("/set bell no")) == ["bell = off"])
        #expect(!model.bellEnabled)
        #expect(notes(model.type("/set scrollback 9000")) == ["scrollback = 9000 — takes effect at the next start (/save keeps it)"])
        #expect(notes(model.type("/set sidebar-width 30")) == ["sidebar-width = 30"])
        #expect(model.layout.sidebarWidth == 30)
        #expect(notes(model.type("/set bell maybe")) == ["bell is on or off, not \"maybe\""])
        #expect(!model.bellEnabled)
        #expect(notes(model.type("/set highlight-regex (unclosed")) == ["highlight-regex: \"(unclosed\" is not a regular expression"])
        #expect(model.settings["highlight-regex"] == "")
        #expect(notes(model.type("/set highlights deploy, Alice ,")) == ["highlights = deploy,Alice"])
        #expect(notes(model.type("/set -default highlights")) == ["highlights = (none)"])
        #expect(notes(model.type("/set belll on")) == ["No setting called belll (perhaps bell); /set lists them"])
        #expect(notes(model.type("/set notify")).first?.hasPrefix("notify = osc  (off|bell|osc|command; default osc) — ") == true)
    }

    @Test("/set typing off applies at once: no more typing notices are sent")
    func typingOff() {
        var model = lobbyModel()
        #expect(model.update(.key(.character("h"))) == [.typing("active", to: "#lobby")])
        _ = model.update(.key(.control("u")))
        #expect(notes(model.type("/set typing off")) == ["typing = off"])
        #expect(model.update(.key(.character("h"))) == [])
    }

    @Test("/set display-name still sets the name shown beside your nickname")
    func displayName() {
        var model = lobbyModel()
        #expect(model.type("/set display-name Alice Liddell") == [.irc(IRCMessage(command: "METADATA", params: ["*", "SET", "display-name", "Alice Liddell"]))])
    }

    @Test("Tab completes setting names, then a setting's values")
    func completion() {
        var model = lobbyModel()
        model.editor.set("/set smar")
        _ = model.update(.key(.tab))
        #expect(model.editor.text == "/set smart-filter ")
        model.editor.set("/set smart-filter o")
        _ = model.update(.key(.tab))
        #expect(model.editor.text == "/set smart-filter off ")
        _ = model.update(.key(.tab))
        #expect(model.editor.text == "/set smart-filter on ")
        model.editor.set("/set notify c")
        _ = model.update(.key(.tab))
        #expect(model.editor.text == "/set notify command ")
        // Nothing typed of the value yet: Tab offers the values from the first.
        model.editor.set("/set mouse ")
        _ = model.update(.key(.tab))
        #expect(model.editor.text == "/set mouse off ")
        // /window completes conversations' names, a room's with or without its `#` (tour 2).
        model.receive(":alice!a@h JOIN #dev", ":bob!b@h PRIVMSG alice :hi", now: 36400)
        let completed = ["/window de", "/buffer #d", "/window b"].map { typed in
            model.editor.set(typed)
            _ = model.update(.key(.tab))
            return model.editor.text
        }
        #expect(completed == ["/window dev ", "/buffer #dev ", "/window bob "])
    }

    @Test("nick-colors off draws every nickname in the default colour")
    func nickColors() {
        var model = lobbyModel(extra: [":bob!b@h PRIVMSG #lobby :hi"])
        let coloured = draw(model)
        model.settings.set("nick-colors", "off")
        let plain = draw(model)
        let row = (0..<model.height).first { coloured.line($0).contains("<bob>") }!
        let column = Array(coloured.line(row)).firstIndex(of: "b")!
        #expect(coloured[column, row].style.foreground != nil)
        #expect(plain[column, row].style.foreground == nil)
    }

    @Test("aliases: $1, $2-, $*, $nick, $target; none typed after one without $ go at its end; ; separates commands")
    func expansion() {
        var aliases = Aliases([:])
        #expect(aliases.set("hi", "/msg $1 hello $2-, from $nick in $target") == nil)
        #expect(aliases.expand("/hi bob you there", nick: "alice", target: "#lobby") == ["/msg bob hello you there, from alice in #lobby"])
        #expect(aliases.set("k", "kick") == nil)
        #expect(aliases.expand("/k bob go", nick: "a", target: "#x") == ["/kick bob go"])
        #expect(aliases.set("both", "/join $1; /msg $1 hi; there") == nil)
        #expect(aliases.expand("/both #dev", nick: "a", target: "") == ["/join #dev", "/msg #dev hi", "/there"])
        #expect(aliases.set("all", "/msg #ops $*") == nil)
        #expect(aliases.expand("/all a;b c", nick: "a", target: "") == ["/msg #ops a;b c"], "a ; typed is text")
        #expect(aliases.set("join", "/part") == "/join is a command of its own: pick another name")
        #expect(aliases.set("two words", "/x") == "An alias is one word of letters and digits")
        #expect(aliases.expand("/nothing", nick: "a", target: "") == nil)
    }

    @Test("/alias makes, lists and shows one; /unalias forgets it; the defaults irssi users type are there; aliases nest four deep")
    func aliasCommands() {
        var model = lobbyModel()
        #expect(model.type("/wii bob") == [.irc(IRCMessage("WHOIS", "bob", "bob"))])
        // Too few words for its $1: said, not run with the words shifted.
        #expect(notes(model.type("/wii")) == ["/wii needs 1 word after it (it runs /whois $1 $1)"])
        #expect(notes(model.type("/alias hello /msg $1 hello!")) == ["/hello = /msg $1 hello! (/save keeps it)"])
        #expect(model.type("/hello bob") == [.send(text: "hello!", to: "bob"), .note("-> bob: hello!", conversation: .room("#lobby"), isError: false)])
        #expect(notes(model.type("/alias")).contains("  /hello = /msg $1 hello!"))
        #expect(notes(model.type("/unalias hello")) == ["/hello forgotten (/save keeps that)"])
        #expect(notes(model.type("/hello bob")) == ["Unknown command /hello: /help lists the commands"])
        _ = model.type("/alias loop /loop")
        #expect(notes(model.type("/loop")) == ["Aliases within aliases go four deep at most: /loop"])
    }

    @Test("/reload replaces the settings and aliases with the file's; a file that cannot be read changes nothing")
    func reload() {
        var model = lobbyModel()
        var settings = Settings()
        settings.set("bell", "off")
        let said = notes(model.update(.settingsLoaded(.success(ConfigValues(settings: settings, aliases: Aliases([:]))))))
        #expect(said == ["Settings and aliases read from the config file"])
        #expect(!model.bellEnabled && model.aliases.table.isEmpty)
        #expect(notes(model.update(.settingsLoaded(.failure(SettingProblem("config line 3: expected `name = value`"))))) == ["Not reloaded: config line 3: expected `name = value`"])
        #expect(!model.bellEnabled)
    }
}

@Suite("the config file's one writer (issue 46)")
struct ConfigWriterTests {
    let file = """
    # my settings
    nick = zoe   # that's me
    bell = on

    [network libera]
    host = irc.libera.chat:6697
    # libera's rooms
    join = #swift

    [aliases]
    # mine
    j = /join #$1
    old = /quit
    """

    @Test("a setting is replaced in place, a new one goes before the first section, comments and sections stay")
    func global() {
        let text = ConfigFile.updated(file, global: [.init(name: "bell", value: "off"), .init(name: "mouse", value: "off"),
                                                     .init(name: "timestamps", value: "HH:MM", onlyIfPresent: true)])
        #expect(text == """
        # my settings
        nick = zoe   # that's me
        bell = off
        mouse = off

        [network libera]
        host = irc.libera.chat:6697
        # libera's rooms
        join = #swift

        [aliases]
        # mine
        j = /join #$1
        old = /quit

        """)
    }

    @Test("[aliases] is rewritten entry by entry: changed in place, removed, added at its end; made at the end when missing")
    func section() {
        let text = ConfigFile.updated(file, global: [], section: (name: "aliases", entries: [(key: "j", value: "/join $*"), (key: "wc", value: "/close")]))
        #expect(text.hasSuffix("[aliases]\n# mine\nj = /join $*\nwc = /close\n"))
        #expect(!text.contains("old ="))
        let fresh = ConfigFile.updated("nick = zoe\n", global: [.init(name: "bell", value: "off")], section: (name: "aliases", entries: [(key: "wc", value: "/close")]))
        #expect(fresh == "nick = zoe\nbell = off\n\n[aliases]\nwc = /close\n")
        #expect(ConfigFile.updated("", global: [.init(name: "bell", value: "on", onlyIfPresent: true)]) == "")
    }

    @Test("removing a setting removes every line of it in the global part only")
    func removal() {
        let text = ConfigFile.updated("ignore = a\nbell = on\nignore = b\n[network x]\nignore = c\n", global: [.init(name: "ignore", value: nil)])
        #expect(text == "bell = on\n[network x]\nignore = c\n")
    }
}
