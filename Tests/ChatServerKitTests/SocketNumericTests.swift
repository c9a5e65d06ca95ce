import Testing
import IRCTestSupport
@testable import ChatServerKit
import IRCWire

/// One numeric (or reply) shown over a real socket: alice runs #room, bob has registered,
/// each setup line is answered before the next (a PING marks the end of its replies), then
/// `by` sends `line` and gets exactly `replies` (commands, in order) before the marker.
struct WireCase: CustomTestStringConvertible, Sendable {
    let name: String
    var alice: [String] = []
    var bob: [String] = []
    var byBob = false
    let line: String
    let replies: [String]
    var testDescription: String { name }
}

let wireCases: [WireCase] = [
    WireCase(name: "341 INVITE and the invite list 336/337", alice: ["MODE #room +i", "INVITE bob #room"], byBob: true, line: "INVITE", replies: ["336", "337"]),
    WireCase(name: "341 to the inviter", line: "INVITE bob #room", replies: ["341"]),
    WireCase(name: "443 already on channel", bob: ["JOIN #room"], line: "INVITE bob #room", replies: ["443"]),
    WireCase(name: "442 inviter not on channel", byBob: true, line: "INVITE alice #room", replies: ["442"]),
    WireCase(name: "482 not an operator in a +i room", alice: ["MODE #room +i", "INVITE bob #room"], bob: ["JOIN #room"], byBob: true, line: "INVITE alice #room", replies: ["482"]),
    WireCase(name: "401 invitee unknown", line: "INVITE ghost #room", replies: ["401"]),
    WireCase(name: "403 no such room", line: "INVITE bob #nowhere", replies: ["403"]),
    WireCase(name: "473 invite only", alice: ["MODE #room +i"], byBob: true, line: "JOIN #room", replies: ["473"]),
    WireCase(name: "475 bad key", alice: ["MODE #room +k sesame"], byBob: true, line: "JOIN #room nope", replies: ["475"]),
    WireCase(name: "JOIN with the key", alice: ["MODE #room +k sesame"], byBob: true, line: "JOIN #room sesame", replies: ["JOIN", "353", "366"]),
    WireCase(name: "471 full", alice: ["MODE #room +l 1"], byBob: true, line: "JOIN #room", replies: ["471"]),
    WireCase(name: "474 banned", alice: ["MODE #room +b bob"], byBob: true, line: "JOIN #room", replies: ["474"]),
    WireCase(name: "404 moderated", alice: ["MODE #room +m"], bob: ["JOIN #room"], byBob: true, line: "PRIVMSG #room :hi", replies: ["404"]),
    WireCase(name: "404 banned member", alice: ["MODE #room +b bob"], bob: ["JOIN #room"], byBob: true, line: "PRIVMSG #room :hi", replies: ["404"]),
    WireCase(name: "367/368 ban list", alice: ["MODE #room +b x!*@*"], line: "MODE #room +b", replies: ["367", "368"]),
    WireCase(name: "348/349 exception list", alice: ["MODE #room +e x!*@*"], line: "MODE #room e", replies: ["348", "349"]),
    WireCase(name: "346/347 invite exception list", alice: ["MODE #room +I x!*@*"], line: "MODE #room I", replies: ["346", "347"]),
    WireCase(name: "324/329 modes", line: "MODE #room", replies: ["324", "329"]),
    WireCase(name: "472 unknown mode", line: "MODE #room +Q", replies: ["472"]),
    WireCase(name: "696 bad key", line: "MODE #room +k a,b", replies: ["696"]),
    WireCase(name: "696 bad limit", line: "MODE #room +l -3", replies: ["696"]),
    WireCase(name: "441 not in the room", line: "MODE #room +o bob", replies: ["441"]),
    WireCase(name: "401 before 441", line: "MODE #room +o ghost", replies: ["401"]),
    WireCase(name: "482 MODE by a member", bob: ["JOIN #room"], byBob: true, line: "MODE #room +m", replies: ["482"]),
    WireCase(name: "221 user modes", line: "MODE alice", replies: ["221"]),
    WireCase(name: "501 unknown user mode", line: "MODE alice +Z", replies: ["501"]),
    WireCase(name: "502 other user", line: "MODE bob +i", replies: ["502"]),
    WireCase(name: "314/312/369 WHOWAS", line: "WHOWAS carol", replies: ["314", "312", "369"]),
    WireCase(name: "406/369 WHOWAS unknown", line: "WHOWAS nobody", replies: ["406", "369"]),
    WireCase(name: "391 TIME", line: "TIME", replies: ["391"]),
    WireCase(name: "351 VERSION", line: "VERSION", replies: ["351", "005", "005", "005"]),
    WireCase(name: "LUSERS 251 252 254 255 265 266", alice: ["OPER root hunter2"], line: "LUSERS", replies: ["251", "252", "254", "255", "265", "266"]),
    WireCase(name: "256-259 ADMIN", line: "ADMIN", replies: ["256", "257", "258", "259"]),
    WireCase(name: "371/374 INFO", line: "INFO", replies: ["371", "371", "371", "374"]),
    WireCase(name: "704-706 HELP", line: "HELP PRIVMSG", replies: ["704", "705", "705", "706"]),
    WireCase(name: "524 HELP unknown", line: "HELP XYZZY", replies: ["524"]),
    WireCase(name: "354 WHOX", line: "WHO bob %nuhr,7", replies: ["354", "315"]),
    WireCase(name: "352 WHO", line: "WHO bob", replies: ["352", "315"]),
    WireCase(name: "731 MONITOR offline", line: "MONITOR + ghost", replies: ["731"]),
    WireCase(name: "730 MONITOR online", line: "MONITOR + bob", replies: ["730"]),
    WireCase(name: "732/733 MONITOR L", alice: ["MONITOR + ghost"], line: "MONITOR L", replies: ["732", "733"]),
    WireCase(name: "734 MONITOR full", line: "MONITOR + " + (0..<101).map { "n\($0)" }.joined(separator: ","), replies: ["734", "731"]),
    WireCase(name: "381 OPER", line: "OPER root hunter2", replies: ["MODE", "381"]),
    WireCase(name: "464 OPER wrong password", line: "OPER root nope", replies: ["464"]),
    WireCase(name: "464 OPER unknown name, as for a wrong password", line: "OPER nobody hunter2", replies: ["464"]),
    WireCase(name: "481 KILL without OPER", line: "KILL bob :x", replies: ["481"]),
    WireCase(name: "483 KILL the server", alice: ["OPER root hunter2"], line: "KILL test.server :x", replies: ["483"]),
    WireCase(name: "313 and 335 in WHOIS", alice: ["OPER root hunter2", "MODE alice +B"], byBob: true, line: "WHOIS alice",
             replies: ["311", "319", "312", "313", "335", "317", "318"]),
    WireCase(name: "462 USER after registering", line: "USER a 0 * :A", replies: ["462"]),
    WireCase(name: "432 look-alike", line: "NICK ｂｏｂ", replies: ["432"]),
    WireCase(name: "433 in use", line: "NICK BOB", replies: ["433"]),
    WireCase(name: "407 too many targets", line: "PRIVMSG a,b,c,d,e :x", replies: ["407"]),
    WireCase(name: "407 for two WHOIS targets (WHOIS:1)", line: "WHOIS alice,bob", replies: ["407"]),
    WireCase(name: "407 for two NAMES targets (NAMES:1)", line: "NAMES #room,#other", replies: ["407"]),
    WireCase(name: "417 over-long line", line: "PRIVMSG bob :" + String(repeating: "y", count: 700), replies: ["417"]),
    WireCase(name: "FAIL SETNAME", alice: ["CAP REQ :standard-replies setname"], line: "SETNAME :", replies: ["FAIL"]),
    WireCase(name: "ACK for a labelled command without replies", alice: ["CAP REQ :labeled-response batch"], line: "@label=q PONG x", replies: ["ACK"]),
    WireCase(name: "a labeled-response batch", alice: ["CAP REQ :labeled-response batch"], line: "@label=q TIME", replies: ["391"]),
    WireCase(name: "NOTICE to nobody is not answered", line: "NOTICE ghost :x", replies: []),
    WireCase(name: "FAIL BATCH without draft/multiline (as a NOTICE)", line: "BATCH +x draft/multiline bob", replies: ["NOTICE"]),
    WireCase(name: "a draft/multiline batch echoed", alice: ["CAP REQ :draft/multiline batch echo-message", "BATCH +x draft/multiline bob",
                                                          "@batch=x PRIVMSG bob :one"], line: "BATCH -x", replies: ["PRIVMSG"]),
    // Issue 26: modern messaging, one numeric or FAIL per case.
    WireCase(name: "FAIL MARKREAD NEED_MORE_PARAMS", line: "MARKREAD", replies: ["FAIL"]),
    WireCase(name: "761 METADATA SET", alice: ["CAP REQ :draft/metadata-2"], line: "METADATA * SET display-name :Alice", replies: ["761"]),
    WireCase(name: "766 METADATA GET of a key not set", line: "METADATA bob GET pronouns", replies: ["766"]),
    WireCase(name: "FAIL METADATA KEY_INVALID", line: "METADATA * SET $bad :x", replies: ["FAIL"]),
    WireCase(name: "FAIL METADATA KEY_NO_PERMISSION", line: "METADATA bob SET display-name :Bob", replies: ["FAIL"]),
    WireCase(name: "FAIL METADATA INVALID_TARGET", line: "METADATA ghost LIST", replies: ["FAIL"]),
    WireCase(name: "770 METADATA SUB", line: "METADATA * SUB display-name avatar", replies: ["770"]),
    WireCase(name: "771 METADATA UNSUB", line: "METADATA * UNSUB avatar", replies: ["771"]),
    WireCase(name: "772 METADATA SUBS", alice: ["METADATA * SUB avatar"], line: "METADATA * SUBS", replies: ["772"]),
    WireCase(name: "760 in WHOIS", alice: ["METADATA * SET pronouns :she/her"], byBob: true, line: "WHOIS alice", replies: ["311", "319", "312", "760", "317", "318"]),
    WireCase(name: "RENAME by the operator", alice: ["CAP REQ :draft/channel-rename"], line: "RENAME #room #hall :better", replies: ["RENAME"]),
    WireCase(name: "RENAME fallback: PART and JOIN (the JOIN is left out by the exchange)", line: "RENAME #room #hall", replies: ["PART", "353", "366"]),
    WireCase(name: "FAIL RENAME CHANNEL_NAME_IN_USE", alice: ["JOIN #other"], line: "RENAME #room #other", replies: ["FAIL"]),
    WireCase(name: "482 RENAME by a member", bob: ["JOIN #room"], byBob: true, line: "RENAME #room #mine", replies: ["482"]),
    WireCase(name: "REDACT by the room operator", alice: ["CAP REQ :message-tags draft/message-redaction echo-message"],
             line: "REDACT #room 0001vkb500161 :spam", replies: ["REDACT"]),
    WireCase(name: "FAIL REDACT REDACT_FORBIDDEN (no history: only operators)", bob: ["JOIN #room"], byBob: true,
             line: "REDACT #room 0001vkb500161", replies: ["FAIL"]),
    WireCase(name: "FAIL REDACT INVALID_TARGET", byBob: true, line: "REDACT #room 0001vkb500161", replies: ["FAIL"]),
    WireCase(name: "404 CTCP in a +C room", alice: ["MODE #room +C"], bob: ["JOIN #room"], byBob: true, line: "PRIVMSG #room :\u{1}VERSION\u{1}", replies: ["404"]),
    WireCase(name: "696 a bad extban", line: "MODE #room +b $q:x", replies: ["696"]),
    WireCase(name: "005 in a draft/isupport batch", line: "CAP REQ :batch draft/extended-isupport", replies: ["CAP", "005", "005", "005"]),
]

@Suite("numerics over sockets")
struct SocketNumericTests {
    @Test("each numeric family over a real socket", arguments: wireCases)
    func numeric(_ c: WireCase) throws {
        let server = try TestServer {
            $0.room = nil
            $0.operators = [OperatorBlock(name: "root", passwordHash: OperatorBlock.hash("hunter2", salt: "s"))]
        }
        // carol came and went, for WHOWAS.
        let carol = try LineClient(port: server.port, nick: "carol")
        try Self.register(carol, "carol")
        carol.send("QUIT")
        _ = carol.waitForClose()
        let alice = try LineClient(port: server.port, nick: "alice"), bob = try LineClient(port: server.port, nick: "bob")
        try Self.register(alice, "alice")
        try Self.register(bob, "bob")
        _ = try Self.exchange(alice, "JOIN #room", marker: "setup")
        for line in c.alice { _ = try Self.exchange(alice, line, marker: "setup") }
        for line in c.bob { _ = try Self.exchange(bob, line, marker: "setup") }
        let replies = try Self.exchange(c.byBob ? bob : alice, c.line, marker: "done")
        let commands = replies.map(\.command).filter { $0 != "BATCH" }
        #expect(commands == c.replies, "\(replies.map(\.line).joined(separator: "\n"))")
        if c.line.hasPrefix("@label") && c.replies.count == 1 {
            #expect(replies.first?.tag("label") == "q")
        }
    }

    static func register(_ client: LineClient, _ nick: String) throws {
        client.send("NICK \(nick)")
        client.send("USER \(nick) 0 * :Test \(nick)")
        try client.readUntil { $0.command == "422" || $0.command == "376" }
    }

    /// Sends `line` and a PING, and returns what arrived before the PONG, other people's
    /// messages (JOIN, MODE, INVITE from others) left out.
    static func exchange(_ client: LineClient, _ line: String, marker: String) throws -> [IRCMessage] {
        client.send(line)
        client.send("PING :\(marker)")
        let seen = try client.readUntil { $0.command == "PONG" && $0.params.last == marker }
        return seen.dropLast().filter { message in
            guard let source = message.source else { return true }
            return source == "test.server" || source.hasPrefix(client.nick + "!") && message.command != "JOIN" || message.command == "JOIN" && line.hasPrefix("JOIN")
        }
    }
}
