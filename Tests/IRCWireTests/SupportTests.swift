import Testing
@testable import IRCWire

@Test("ISUPPORT lines fold into tokens")
func isupportParsing() throws {
    var support = ISupport()
    support.apply(try IRCMessage(parsing: ":s 005 me CASEMAPPING=ascii PREFIX=(qaohv)~&@%+ CHANTYPES=#& NICKLEN=16 UTF8ONLY :are supported"))
    support.apply(try IRCMessage(parsing: ":s 005 me NETWORK=Example\\x20Net -UTF8ONLY :are supported"))
    #expect(support.casemapping == .ascii)
    #expect(support.prefixes.map(\.mode) == ["q", "a", "o", "h", "v"])
    #expect(support.prefixes.map(\.symbol) == ["~", "&", "@", "%", "+"])
    #expect(support.channelTypes == "#&")
    #expect(support.nickLength == 16)
    #expect(support["NETWORK"] == "Example Net")
    #expect(support["UTF8ONLY"] == nil)
}

@Test("ISUPPORT defaults when a server says nothing")
func isupportDefaults() {
    let support = ISupport()
    #expect(support.casemapping == .rfc1459)
    #expect(support.prefixes.map(\.symbol) == ["@", "+"])
}

@Test("server-time formats and parses", arguments: [
    (0.0, "1970-01-01T00:00:00.000Z"),
    (951_782_400.5, "2000-02-29T00:00:00.500Z"),
    (1_795_966_225.123, "2026-11-29T15:30:25.123Z"),
    (4_102_444_799.999, "2099-12-31T23:59:59.999Z"),
])
func serverTime(_ seconds: Double, _ text: String) throws {
    #expect(ServerTime.format(seconds) == text)
    let parsed = try #require(ServerTime.parse(text))
    #expect(abs(parsed - seconds) < 0.001)
}

@Test("server-time without fraction, and garbage", arguments: [
    ("2026-11-29T15:30:25Z", true), ("2026-11-29 15:30:25Z", false), ("yesterday", false), ("2026-13-01T00:00:00Z", false),
    // A fraction too long to be a time (it overflowed, and crashed the server, before).
    ("2026-11-29T15:30:25." + String(repeating: "9", count: 40) + "Z", false), ("2026-11-29T15:30:25.123456789Z", true),
])
func serverTimeLenient(_ text: String, _ ok: Bool) {
    #expect((ServerTime.parse(text) != nil) == ok)
}

@Test("numerics carry their codes")
func numerics() {
    #expect(Numeric.nicknameInUse.rawValue == "433")
    let reply = IRCMessage.numeric(.noSuchNick, server: "s", target: "me", "bob", "No such nick/channel")
    #expect(reply.line == ":s 401 me bob :No such nick/channel")
    #expect(reply.numeric == .noSuchNick)
}
