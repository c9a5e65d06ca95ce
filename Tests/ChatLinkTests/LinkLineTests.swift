import Testing
@testable import ChatLink
import IRCWire

/// One case per line shape of protocol 1205, most of them copied from what Debian's InspIRCd
/// 3.15 sent us (`docs/inspircd-link-notes.md`).
private func parse(_ line: String) throws -> IRCMessage {
    try IRCMessage(serverLine: Array(line.utf8), maxBodyBytes: LinkLimits.maxLine)
}

struct UIDCase: CustomTestStringConvertible, Sendable {
    let line: String
    let expected: UIDLine?
    var testDescription: String { line }
}

let uidCases: [UIDCase] = [
    UIDCase(line: ":1AA UID 1AAAAAAAB 1796242016 alice 127.0.0.1 127.0.0.1 alice 127.0.0.1 1796242016 + :Real alice",
            expected: UIDLine(uuid: "1AAAAAAAB", nickTS: 1_796_242_016, nick: "alice", host: "127.0.0.1", displayedHost: "127.0.0.1",
                              ident: "alice", ip: "127.0.0.1", signon: 1_796_242_016, modes: "+", realname: "Real alice")),
    UIDCase(line: ":0AB UID 0ABAAAAAA 1796242015 peeruser peer.host peer.host peer 192.0.2.1 1796242015 +i :Peer User",
            expected: UIDLine(uuid: "0ABAAAAAA", nickTS: 1_796_242_015, nick: "peeruser", host: "peer.host", displayedHost: "peer.host",
                              ident: "peer", ip: "192.0.2.1", signon: 1_796_242_015, modes: "+i", realname: "Peer User")),
    // A mode with a parameter (snomask) comes before the real name.
    UIDCase(line: ":1AA UID 1AAAAAAAC 5 oper h d o 0::1 6 +os +cC :An Operator",
            expected: UIDLine(uuid: "1AAAAAAAC", nickTS: 5, nick: "oper", host: "h", displayedHost: "d", ident: "o", ip: "0::1",
                              signon: 6, modes: "+os", modeParameters: ["+cC"], realname: "An Operator")),
    UIDCase(line: ":1AA UID NOTAUUID 5 n h d o 1.2.3.4 6 + :x", expected: nil),
    UIDCase(line: ":1AA UID 1AAAAAAAB notanumber n h d o 1.2.3.4 6 + :x", expected: nil),
    UIDCase(line: ":1AA UID 1AAAAAAAB 5 n h d o 1.2.3.4 6 :x", expected: nil),
]

@Test(arguments: uidCases)
func uidLines(_ c: UIDCase) throws {
    let parsed = UIDLine(try parse(c.line))
    #expect(parsed == c.expected)
    if let uid = parsed {
        // Made again, it is the line it came from (the parser's form of it).
        #expect(uid.message(source: LinkIDs.sid(of: uid.uuid)) == (try parse(c.line)))
    }
}

struct FJOINCase: CustomTestStringConvertible, Sendable {
    let line: String
    let expected: FJOINLine?
    var testDescription: String { line }
}

let fjoinCases: [FJOINCase] = [
    FJOINCase(line: ":0AB FJOIN #lobby 1796241015 +nt :o,0ABAAAAAA",
              expected: FJOINLine(room: "#lobby", timestamp: 1_796_241_015, modes: ["+nt"], members: [.init(status: "o", uuid: "0ABAAAAAA")])),
    FJOINCase(line: ":1AA FJOIN #dev 100 +ntk secret :ov,1AAAAAAAB:3 ,1AAAAAAAC:4",
              expected: FJOINLine(room: "#dev", timestamp: 100, modes: ["+ntk", "secret"],
                                  members: [.init(status: "ov", uuid: "1AAAAAAAB", membershipID: 3), .init(status: "", uuid: "1AAAAAAAC", membershipID: 4)])),
    FJOINCase(line: ":1AA FJOIN #empty 100 + :", expected: FJOINLine(room: "#empty", timestamp: 100, modes: ["+"], members: [])),
    FJOINCase(line: ":1AA FJOIN #bad 100 +nt :o,nope", expected: nil),
    FJOINCase(line: ":1AA FJOIN #bad 100 +nt :o1AAAAAAAB", expected: nil),
    FJOINCase(line: ":1AA FJOIN #bad soon +nt :,1AAAAAAAB", expected: nil),
]

@Test(arguments: fjoinCases)
func fjoinLines(_ c: FJOINCase) throws {
    #expect(FJOINLine(try parse(c.line)) == c.expected)
}

@Test func fjoinSplitsMembersUnderTheLineLimit() throws {
    let members = (0..<200).map { FJOINLine.Member(status: $0 == 0 ? "o" : "", uuid: LinkIDs.uuid(sid: "0AB", number: UInt64($0))) }
    let line = FJOINLine(room: "#lobby", timestamp: 1, modes: ["+nt"], members: members)
    let messages = line.messages(source: "0AB")
    #expect(messages.count > 1)
    var seen: [FJOINLine.Member] = []
    for message in messages {
        #expect(message.serialized(maxBodyBytes: LinkLimits.maxLine).count <= LinkLimits.preferredLine + 2)
        let back = try #require(FJOINLine(try parse(String(decoding: message.serialized().dropLast(2), as: UTF8.self))))
        #expect(back.room == "#lobby" && back.timestamp == 1 && back.modes == ["+nt"])
        seen += back.members
    }
    #expect(seen == members)
}

@Test func serverLines() throws {
    let line = try #require(ServerLine(try parse("SERVER irc.test linkpass 0 1AA :Test InspIRCd")))
    #expect(line == ServerLine(name: "irc.test", password: "linkpass", hops: 0, sid: "1AA", description: "Test InspIRCd"))
    #expect(line.message() == (try parse("SERVER irc.test linkpass 0 1AA :Test InspIRCd")))
    #expect(ServerLine(try parse("SERVER irc.test linkpass 0 AAA :bad sid")) == nil)
    #expect(ServerLine(try parse("SERVER irc.test linkpass")) == nil)
}

@Test func capabCollectsEachKind() throws {
    var capab = Capab()
    for line in [
        "CAPAB START 1205",
        "CAPAB CHANMODES :list:ban=b param-set:limit=l param:key=k prefix:10000:voice=+v prefix:30000:op=@o simple:inviteonly=i",
        "CAPAB USERMODES :param-set:snomask=s simple:invisible=i simple:oper=o simple:wallops=w",
        "CAPAB CAPABILITIES :NICKMAX=30 CHANMAX=64 CASEMAPPING=rfc1459 GLOBOPS=0",
        "CAPAB EXTBANS :whatever",
    ] {
        #expect(capab.take(try parse(line)))
        #expect(!capab.ended)
    }
    #expect(capab.take(try parse("CAPAB END")))
    #expect(capab.ended)
    #expect(capab.protocolVersion == 1205)
    #expect(capab.channelModes.count == 6 && capab.channelModes.contains("prefix:30000:op=@o"))
    #expect(capab.userModes == ["param-set:snomask=s", "simple:invisible=i", "simple:oper=o", "simple:wallops=w"])
    #expect(capab.capabilities == ["NICKMAX": "30", "CHANMAX": "64", "CASEMAPPING": "rfc1459", "GLOBOPS": "0"])
    #expect(!capab.take(try parse("PING 1AA")))
}

@Test func capabLinesStayShort() {
    let words = (0..<100).map { "simple:mode\($0)=x" }
    let lines = Capab.lines("CHANMODES", words)
    #expect(lines.count > 1)
    #expect(lines.allSatisfy { $0.serialized().count <= LinkLimits.preferredLine + 2 })
    #expect(lines.flatMap { $0.params[1].split(separator: " ").map(String.init) } == words)
}

@Test func identities() {
    #expect(LinkIDs.isValidSID("0AB") && LinkIDs.isValidSID("9Z9"))
    #expect(!LinkIDs.isValidSID("AAB") && !LinkIDs.isValidSID("0ab") && !LinkIDs.isValidSID("0A") && !LinkIDs.isValidSID("0ABC"))
    #expect(LinkIDs.uuid(sid: "0AB", number: 0) == "0ABAAAAAA")
    #expect(LinkIDs.uuid(sid: "0AB", number: 1) == "0ABAAAAAB")
    #expect(LinkIDs.uuid(sid: "0AB", number: 36) == "0ABAAAABA")
    #expect(LinkIDs.isValidUUID("0ABAAAAAA") && !LinkIDs.isValidUUID("0ABAAAAA") && !LinkIDs.isValidUUID("ABCAAAAAA"))
    #expect(LinkIDs.sid(of: "1AAAAAAAB") == "1AA")
    let derived = LinkIDs.sid(fromName: "a.example")
    #expect(LinkIDs.isValidSID(derived))
    #expect(derived == LinkIDs.sid(fromName: "a.example"))
    #expect(derived != LinkIDs.sid(fromName: "b.example"))
}

@Test func roomTimestampRules() {
    #expect(RoomMerge.decide(ours: 100, theirs: 200) == .keepOurs)
    #expect(RoomMerge.decide(ours: 200, theirs: 100) == .takeTheirs)
    #expect(RoomMerge.decide(ours: 100, theirs: 100) == .merge)
    #expect(RoomMerge.mergeParameter("l", ours: "9", theirs: "10") == "10")
    #expect(RoomMerge.mergeParameter("k", ours: "apple", theirs: "pear") == "pear")
    #expect(RoomMerge.mergeParameter("k", ours: "pear", theirs: "apple") == "pear")
}

@Test func nickCollisionRules() {
    // Different people: the older name keeps it.
    #expect(NickCollision.decide(oursTS: 100, oursIdentity: "a@1", theirsTS: 200, theirsIdentity: "b@2") == .renameTheirs)
    #expect(NickCollision.decide(oursTS: 200, oursIdentity: "a@1", theirsTS: 100, theirsIdentity: "b@2") == .renameOurs)
    // The same person (a reconnect racing its ghost): the newer keeps it.
    #expect(NickCollision.decide(oursTS: 100, oursIdentity: "a@1", theirsTS: 200, theirsIdentity: "a@1") == .renameOurs)
    #expect(NickCollision.decide(oursTS: 200, oursIdentity: "a@1", theirsTS: 100, theirsIdentity: "a@1") == .renameTheirs)
    #expect(NickCollision.decide(oursTS: 100, oursIdentity: "a@1", theirsTS: 100, theirsIdentity: "b@2") == .renameBoth)
}

@Test func longServerLinesParse() throws {
    let long = ":1AA FJOIN #r 1 +nt :" + (0..<100).map { ",\(LinkIDs.uuid(sid: "1AA", number: UInt64($0))):\($0)" }.joined(separator: " ")
    #expect(long.utf8.count > 512)
    #expect(throws: IRCParseError.self) { try IRCMessage(parsing: long) }
    #expect(FJOINLine(try parse(long))?.members.count == 100)
}
