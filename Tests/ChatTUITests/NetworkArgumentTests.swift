import Foundation
import ChatClientKit
import Testing
import ChatUI
import ChatServerKit
import IRCWire
@testable import chat_tui

/// The config file `text` is refused with a message beginning with `message`.
func expectConfigRefused(_ text: String, _ message: String) {
    do {
        _ = try Arguments.parseConfig(text, path: "config")
        Issue.record("accepted: \(text)")
    } catch {
        #expect(error.description.hasPrefix(message), "\(error.description)")
    }
}

@Suite("several networks on the command line and in the config file")
struct NetworkArgumentTests {
    func networks(_ argv: [String]) throws -> [NetworkSettings] {
        try Arguments(argv).networks()
    }

    @Test("--join 'dev,#ops' means #dev and #ops, as /join dev does; a name no room can have is refused with why")
    func joinWithoutPrefix() throws {
        #expect(try Arguments(["--host", "a", "--join", "dev, #ops,"]).rooms == ["#dev", "#ops"])
        do {
            _ = try Arguments(["--host", "a", "--join", "#has space"])
            Issue.record("accepted a room name with a space")
        } catch {
            #expect(error.description.hasPrefix("--join: \"#has space\" is not a room name: Room names may not contain spaces"), "\(error.description)")
        }
    }

    @Test("--host twice: two networks, each named by its host, in order")
    func repeatedHost() throws {
        let found = try networks(["--host", "irc.example.org:6697", "--host", "127.0.0.1"])
        #expect(found.map(\.name) == ["irc.example.org", "127.0.0.1"])
        #expect(found.map(\.address) == [HostPort(host: "irc.example.org", port: 6697), HostPort(host: "127.0.0.1", port: nil)])
        #expect(try Arguments(["--host", "a", "--host", "b"]).mode == .connect)
    }

    @Test("two networks on one host are named host:port")
    func sharedHost() throws {
        let found = try networks(["--host", "127.0.0.1:7001", "--host", "127.0.0.1", "--port", "7002"])
        #expect(found.map(\.name) == ["127.0.0.1:7001", "127.0.0.1:7002"])
    }

    @Test("the same host and port twice is refused")
    func sameTwice() {
        #expect(throws: Arguments.Problem.self) { try networks(["--host", "a:7001", "--host", "a:7001"]) }
    }

    @Test("HOST[:PORT] forms", arguments: [
        ("irc.example.org", HostPort(host: "irc.example.org", port: nil)),
        ("irc.example.org:6697", HostPort(host: "irc.example.org", port: 6697)),
        ("10.0.0.1:1", HostPort(host: "10.0.0.1", port: 1)),
        ("[::1]:6697", HostPort(host: "::1", port: 6697)),
        ("[::1]", HostPort(host: "::1", port: nil)),
        ("::1", HostPort(host: "::1", port: nil)),
        ("fe80::1%eth0", HostPort(host: "fe80::1%eth0", port: nil)),
        ("2001:db8::7", HostPort(host: "2001:db8::7", port: nil)),
    ])
    func hostPortForms(_ text: String, _ expected: HostPort) throws {
        #expect(try HostPort.parse(text) == expected)
        #expect(try HostPort.parse(HostPort.parse(text).text) == expected, "written back as it parses")
    }

    @Test("malformed HOST[:PORT] says what is wrong", arguments: [
        ("irc.example.org:", "the port after the colon must be a number from 1 to 65535"),
        ("irc.example.org:0", "the port after the colon must be a number from 1 to 65535"),
        ("irc.example.org:65536", "the port after the colon must be a number from 1 to 65535"),
        ("irc.example.org:66a", "the port after the colon must be a number from 1 to 65535"),
        (":6697", "no host before the colon"),
        ("[::1", "no ] after the IPv6 address"),
        ("[::1]6697", "after ] comes :PORT or nothing"),
        ("[example.org]:6697", "brackets are for an IPv6 address, as in [::1]:6697"),
        ("[::1]:x", "the port after the colon must be a number from 1 to 65535"),
        ("irc example", "a host has no spaces"),
        ("host:name:6697", "an IPv6 address with a port is written [ADDRESS]:PORT"),
    ])
    func malformed(_ text: String, _ why: String) {
        #expect(throws: Arguments.Problem(description: "--host \(text): \(why)")) { try Arguments(["--host", text]) }
    }

    @Test("--host with nothing")
    func emptyHost() {
        #expect(throws: Arguments.Problem(description: "--host needs a host name or address (HOST, HOST:PORT or [IPV6]:PORT)")) {
            try Arguments(["--host", ""])
        }
    }

    static let sections = """
    nick = alice
    bell = off
    # the defaults above, the networks below
    [network libera]
    host = irc.libera.chat:6697
    nick = alice_lib
    sasl-user = alice
    sasl-password = secret
    join = #swift,#irc

    [network home]
    host = 127.0.0.1
    port = 7000
    tls = false
    """

    @Test("a taken port's hint names that port's flag: a taken --web-port no longer says --tls-port 0 (issue 42, item 7)")
    func portHints() throws {
        let arguments = try Arguments(["--serve", "--port", "7000", "--tls-port", "7001", "--web-port", "7002"])
        #expect(Arguments.portHint(7000, arguments, tls: true) == " (--port N picks another)")
        #expect(Arguments.portHint(7001, arguments, tls: true) == " (--tls-port N picks another; --tls-port 0 turns TLS off)")
        #expect(Arguments.portHint(7002, arguments, tls: true) == " (--web-port N picks another; --web-port 0 turns the web page off)")
        #expect(try Arguments(["--serve", "--casemapping", "ascii"]).casemapping == .ascii)
        #expect(throws: Arguments.Problem.self) { try Arguments(["--serve", "--casemapping", "strict-rfc1459"]) }
    }

    @Test("/ignore writes its line in the top part, before the sections: the file still starts, and the next /ignore replaces it (issue 42, item 7)")
    func ignoreBesideSections() throws {
        let path = NSTemporaryDirectory() + "chat-tui-config-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Self.sections.write(toFile: path, atomically: true, encoding: .utf8)
        try ChatClientKit.ConfigFile.set("ignore", to: "bob", in: path)
        try ChatClientKit.ConfigFile.set("ignore", to: "bob,mallory!*@*", in: path)
        let written = try String(contentsOfFile: path, encoding: .utf8)
        #expect(written.components(separatedBy: "ignore = ").count == 2, "one line, replaced: \(written)")
        #expect(written.range(of: "ignore = bob,mallory!*@*")!.lowerBound < written.range(of: "[network libera]")!.lowerBound)
        let file = try Arguments.fromConfigFile(path)
        #expect(try Arguments.merging(file: file, given: []).ignore == ["bob", "mallory!*@*"])
        #expect(file.networks.count == 2, "the sections unchanged")
        try ChatClientKit.ConfigFile.set("ignore", to: nil, in: path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == Self.sections + "\n")
    }

    @Test("[network NAME] sections: each with its settings, the top part the defaults")
    func configSections() throws {
        let file = try Arguments.parseConfig(Self.sections, path: "config")
        #expect(file.flags == ["--nick", "alice", "--bell", "off"])
        #expect(file.networks == [
            NetworkSettings(name: "libera", address: HostPort(host: "irc.libera.chat", port: 6697), nick: "alice_lib",
                            saslUser: "alice", saslPassword: "secret", rooms: ["#swift", "#irc"]),
            NetworkSettings(name: "home", address: HostPort(host: "127.0.0.1", port: nil), port: 7000, tls: false),
        ])
        // No flags: the file decides, and its networks are joined.
        let alone = try Arguments.merging(file: file, given: [])
        #expect(alone.mode == .connect && alone.nick == "alice" && alone.bell == false)
        #expect(try alone.networks().map(\.name) == ["libera", "home"])
        // Flags without a host join the file's networks too.
        let withFlags = try Arguments.merging(file: file, given: ["--lines"])
        #expect(withFlags.mode == .connect && withFlags.lines)
        #expect(try withFlags.networks().map(\.name) == ["libera", "home"])
        // --host on the command line replaces them.
        let replaced = try Arguments.merging(file: file, given: ["--host", "irc.example.org"])
        #expect(try replaced.networks().map(\.name) == ["irc.example.org"])
        // Hosting ignores them.
        #expect(try Arguments.merging(file: file, given: ["--serve"]).sections.isEmpty)
    }

    @Test("a file's host line and its sections are all networks")
    func hostAndSections() throws {
        let file = try Arguments.parseConfig("host = a.example\n[network b]\nhost = b.example\n", path: "config")
        #expect(try Arguments.merging(file: file, given: []).networks().map(\.name) == ["a.example", "b"])
    }

    @Test("bad sections say where and why", arguments: [
        ("[network]\nhost = a\n", "config line 1: a section is written [network NAME], [link NAME] (NAME without spaces) or [aliases]"),
        ("[server a]\nhost = a\n", "config line 1: a section is written [network NAME], [link NAME] (NAME without spaces) or [aliases]"),
        ("[network a b]\nhost = a\n", "config line 1: a section is written [network NAME], [link NAME] (NAME without spaces) or [aliases]"),
        ("[network a]\nport = 7000\n", "config line 1 [network a]: a network needs host = HOST"),
        ("[network a]\nhost = a\nbell = off\n", "config line 1 [network a]: bell is not a network setting (host, port, tls, tls-fingerprint, nick, sasl-user, sasl-password, join)"),
        ("[network a]\nhost = a:99999\n", "config line 1 [network a]: --host a:99999: the port after the colon must be a number from 1 to 65535"),
        ("[network a]\nhost = a\ntls = maybe\n", "config line 1 [network a]: tls needs true or false, not maybe"),
        ("[network a]\nhost = a\n[network A]\nhost = b\n", "config line 3: a second [network A]"),
        ("[network a]\nhost = a\nnick = 1bad\n", "config line 1 [network a]: --nick 1bad: "),
    ])
    func badSections(_ text: String, _ message: String) {
        expectConfigRefused(text, message)
    }

    @Test("/connect HOST[:PORT] names the new network by its host, or host:port when that name is taken")
    func connectNames() throws {
        #expect(try NetworkSettings.adding("irc.example.org", to: ["127.0.0.1"]).name == "irc.example.org")
        #expect(try NetworkSettings.adding("127.0.0.1:7002", to: ["127.0.0.1"]).name == "127.0.0.1:7002")
        #expect(throws: Arguments.Problem(description: "/connect :1: no host before the colon")) { try NetworkSettings.adding(":1", to: []) }
    }
}

@Suite("linking flags and [link NAME] sections")
struct LinkArgumentTests {
    @Test("--link NAME=HOST:PORT dials, NAME alone waits; password, fingerprint and TLS apply to each")
    func flags() throws {
        let arguments = try Arguments(["--serve", "--sid", "0AB", "--link-port", "7000", "--link", "hub.example=10.0.0.2:7001",
                                       "--link", "[v6]=[::1]:7002", "--link", "leaf.example", "--link-password", "s3cret",
                                       "--link-fingerprint", "leaf.example=" + String(repeating: "ab", count: 32), "--link-tls", "off"])
        let settings = try arguments.linkSettings()
        #expect(settings.sid == "0AB" && arguments.linkPort == 7000)
        #expect(settings.blocks == [
            LinkBlock(name: "hub.example", host: "10.0.0.2", port: 7001, password: "s3cret", tls: false),
            LinkBlock(name: "[v6]", host: "::1", port: 7002, password: "s3cret", tls: false),
            LinkBlock(name: "leaf.example", host: nil, port: 0, password: "s3cret", tls: false, fingerprint: String(repeating: "ab", count: 32)),
        ])
    }

    @Test("bad link flags say why", arguments: [
        (["--serve", "--sid", "AAB"], "--sid wants a digit and two of A-Z and 0-9, such as 0AB, not \"AAB\""),
        (["--serve", "--link", "hub=10.0.0.2"], "--link wants NAME=HOST:PORT (such as hub.example=10.0.0.2:7000), not \"hub=10.0.0.2\""),
        (["--serve", "--link", "hub=10.0.0.2:0"], "--link wants NAME=HOST:PORT"),
        (["--serve", "--link-fingerprint", "abc"], "--link-fingerprint wants a SHA-256: 64 hex digits, colons optional"),
        (["--serve", "--link-tls", "maybe"], "--link-tls is on or off"),
        (["--serve", "--link-port", "x"], "--link-port wants a port number, not \"x\""),
    ])
    func badFlags(_ argv: [String], _ message: String) {
        do {
            _ = try Arguments(argv)
            Issue.record("accepted: \(argv)")
        } catch {
            #expect(error.description.hasPrefix(message), "\(error.description)")
        }
    }

    @Test("a link needs a password")
    func passwordRequired() throws {
        let arguments = try Arguments(["--serve", "--link", "hub=10.0.0.2:7001"])
        #expect(throws: Arguments.Problem.self) { try arguments.linkSettings() }
    }

    @Test("[link NAME] sections: their own password, fingerprint and TLS, with the command line's --link")
    func sections() throws {
        let text = """
        link-password = shared
        [link hub.example]
        address = 10.0.0.2:7001
        fingerprint = \(String(repeating: "CD", count: 32))
        [link leaf.example]
        password = own
        tls = off
        """
        let file = try Arguments.parseConfig(text, path: "config")
        let arguments = try Arguments.merging(file: file, given: ["--serve", "--link", "b.example=10.0.0.3:7000"])
        #expect(try arguments.linkSettings().blocks == [
            LinkBlock(name: "b.example", host: "10.0.0.3", port: 7000, password: "shared", tls: true),
            LinkBlock(name: "hub.example", host: "10.0.0.2", port: 7001, password: "shared", tls: true, fingerprint: String(repeating: "CD", count: 32)),
            LinkBlock(name: "leaf.example", host: nil, port: 0, password: "own", tls: false),
        ])
        // Joining ignores them.
        #expect(try Arguments.merging(file: file, given: ["--host", "irc.example.org"]).linkSections.isEmpty)
        // One name twice is refused.
        let twice = try Arguments.merging(file: file, given: ["--serve", "--link", "hub.example=10.0.0.9:7001"])
        #expect(throws: Arguments.Problem.self) { try twice.linkSettings() }
    }

    @Test("bad [link] sections say where and why", arguments: [
        ("[link a]\nhost = x\n", "config line 1 [link a]: host is not a link setting (address, password, fingerprint, tls)"),
        ("[link a]\naddress = x\n", "config line 1 [link a]: --link wants NAME=HOST:PORT"),
        ("[link a]\nfingerprint = 12\n", "config line 1 [link a]: fingerprint wants a SHA-256, 64 hex digits"),
        ("[link a]\ntls = maybe\n", "config line 1 [link a]: tls needs on or off, not maybe"),
        ("[link a]\n[link A]\n", "config line 2: a second [link A]"),
    ])
    func badSections(_ text: String, _ message: String) {
        expectConfigRefused(text, message)
    }
}

@Suite("the config file's comments")
struct ConfigCommentTests {
    @Test("a # starts a comment at the line's start or after a blank, but not the # a value starts with", arguments: [
        ("# all of it", ""),
        ("nick = alice # me", "nick = alice "),
        ("join = #swift,#irc", "join = #swift,#irc"),
        ("join = #swift,#irc # my rooms", "join = #swift,#irc "),
        ("join=#a", "join=#a"),
        ("tls-fingerprint = ab#cd", "tls-fingerprint = ab#cd"),
    ])
    func comments(_ line: String, _ kept: String) {
        #expect(Arguments.withoutComment(Substring(line)) == kept)
    }
}

@Suite("the settings table is the flags', the config file's and --help's (issue 46)")
struct SettingsTableTests {
    @Test("every setting is a flag of the same name, value and help, in --help and the man page")
    func flags() {
        for setting in Setting.all {
            let flag = Arguments.flags.first { $0.name == setting.name }
            #expect(flag?.value == setting.placeholder, "--\(setting.name)")
            #expect(flag?.help.hasPrefix(setting.help) == true, "--\(setting.name)")
            #expect(Arguments.usage.contains("--\(setting.name) \(setting.placeholder)"))
            #expect(ManPages.config().contains(ManPages.roff(setting.name)))
        }
        #expect(Set(Arguments.flags.map(\.name)).count == Arguments.flags.count, "no flag twice")
    }

    @Test("flags and the config file set them, checked by the table; the command line wins")
    func reading() throws {
        let file = try Arguments.parseConfig("bell = off\nhighlights = deploy\ntimestamps = hh:mm:ss\n[aliases]\nj = /join #$1 # not a comment\n", path: "config")
        #expect(file.aliases == ["j": "/join #$1 # not a comment"])
        let arguments = try Arguments.merging(file: file, given: ["--host", "x", "--highlights", "a,b"])
        #expect(!arguments.bell && arguments.timestampSeconds)
        #expect(arguments.settings.words("highlights") == ["a", "b"])
        #expect(arguments.aliases == ["j": "/join #$1 # not a comment"])
        #expect(throws: Arguments.Problem(description: "--bell is on or off, not \"loud\"")) { try Arguments(["--host", "x", "--bell", "loud"]) }
        #expect(throws: Arguments.Problem(description: "--scrollback is a number from 100 to 1000000, not \"5\"")) { try Arguments(["--host", "x", "--scrollback", "5"]) }
    }

    @Test("/save then /reload: the file keeps its comments and sections and gives back what was saved")
    func roundTrip() throws {
        let directory = NSTemporaryDirectory() + "chat-tui-settings-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/config"
        try "# zoe's\nnick = zoe\nbell = on\ntyping = off\n\n[network libera]\nhost = irc.libera.chat:6697\n".write(toFile: path, atomically: true, encoding: .utf8)
        var settings = Settings()
        // As read from the file; then /set -default typing: its line goes.
        settings.set("bell", "on")
        settings.set("typing", "off")
        settings.reset("typing")
        settings.set("mouse", "off")
        // A value with a comment's ` #` in it is written quoted, and read back whole.
        settings.set("highlight-regex", "build #\\d+ failed")
        settings.set("highlights", "deploy,release")
        var aliases = Aliases()
        _ = aliases.set("hi", "/msg $1 hello")
        aliases.remove("wc")
        try Arguments.saveScreenSettings(settings, aliases, to: path)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text == """
        # zoe's
        nick = zoe
        bell = on
        highlights = deploy,release
        highlight-regex = "build #\\\\d+ failed"
        mouse = off

        [network libera]
        host = irc.libera.chat:6697

        [aliases]
        hi = /msg $1 hello
        wii = /whois $1 $1

        """)
        guard case .success(let values) = Arguments.screenSettings(fromConfig: path) else { Issue.record("not read"); return }
        #expect(values.settings == settings.setting("bell", "on"))
        #expect(values.aliases == aliases)
        try "bell = loud\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(Arguments.screenSettings(fromConfig: path) == .failure(SettingProblem(path + ": bell is on or off, not \"loud\"")))
    }
}

extension Settings {
    func setting(_ name: String, _ value: String) -> Settings {
        var copy = self
        copy.set(name, value)
        return copy
    }
}
