import Testing
@testable import ChatClientKit
import IRCWire

/// The registration machine without sockets: each case is a settings, the server's lines, and
/// every action expected back, in order.
struct RegistrationCase: Sendable, CustomTestStringConvertible {
    let name: String
    var sasl: SASLLogin? = nil
    var password: String? = nil
    let received: [String]
    let expected: [Registration.Action]
    var phase: Registration.Phase? = nil
    var testDescription: String { name }
}

func send(_ line: String) -> Registration.Action { .send(try! IRCMessage(parsing: line)) }

let registrationCases: [RegistrationCase] = [
    RegistrationCase(name: "CAP LS on one line: REQ of what we want and is offered", received: [
        ":srv CAP * LS :multi-prefix server-time sasl=PLAIN unknown-cap",
    ], expected: [send("CAP REQ :server-time multi-prefix")], phase: .requesting),
    RegistrationCase(name: "CAP LS 302 continuation: nothing until the last line", received: [
        ":srv CAP * LS * :server-time",
        ":srv CAP * LS :echo-message",
    ], expected: [send("CAP REQ :server-time echo-message")]),
    RegistrationCase(name: "ACK ends negotiation with the acknowledged set", received: [
        ":srv CAP * LS :server-time", ":srv CAP * ACK :server-time",
    ], expected: [send("CAP REQ server-time"), .capabilities(["server-time"]), send("CAP END")], phase: .welcoming),
    RegistrationCase(name: "NAK ends negotiation without capabilities", received: [
        ":srv CAP * LS :server-time", ":srv CAP * NAK :server-time",
    ], expected: [send("CAP REQ server-time"), send("CAP END")], phase: .welcoming),
    RegistrationCase(name: "fuzz finding (client): entries with no name (=, =x) in LS and NEW are skipped, not a trap", received: [
        ":srv CAP * LS := =x server-time",
        ":srv CAP * NEW :=",
    ], expected: [send("CAP REQ server-time")], phase: .requesting),
    RegistrationCase(name: "nothing wanted is offered: CAP END at once", received: [
        ":srv CAP * LS :account-tag",
    ], expected: [send("CAP END")]),
    RegistrationCase(name: "a server without CAP (421) registers anyway", received: [
        ":srv 421 * CAP :Unknown command",
    ], expected: [send("CAP END")], phase: .welcoming),
    RegistrationCase(name: "SASL PLAIN over TLS: REQ sasl, AUTHENTICATE PLAIN, the payload, 900 (told), 903, CAP END",
                     sasl: SASLLogin(account: "alice", password: "secret", allowPlain: true), received: [
        ":srv CAP * LS :sasl=PLAIN,EXTERNAL",
        ":srv CAP * ACK :sasl",
        "AUTHENTICATE +",
        ":srv 900 * alice!a@h alice :You are now logged in as alice",
        ":srv 903 * :SASL authentication successful",
    ], expected: [send("CAP REQ sasl"), .capabilities(["sasl"]), send("AUTHENTICATE PLAIN"),
                  send("AUTHENTICATE YWxpY2UAYWxpY2UAc2VjcmV0"), .notice("Logged in as alice"), send("CAP END")], phase: .welcoming),
    RegistrationCase(name: "a server that keeps accounts present (it offers draft/persistence) is told our device: alice@laptop",
                     sasl: SASLLogin(account: "alice", password: "secret", allowPlain: true, device: "laptop"), received: [
        ":srv CAP * LS :sasl=PLAIN draft/persistence",
        ":srv CAP * ACK :sasl",
        "AUTHENTICATE +",
    ], expected: [send("CAP REQ sasl"), .capabilities(["sasl"]), send("AUTHENTICATE PLAIN"),
                  send("AUTHENTICATE YWxpY2VAbGFwdG9wAGFsaWNlQGxhcHRvcABzZWNyZXQ=")], phase: .authenticating),
    RegistrationCase(name: "any other server gets the account alone, device or not (it would read alice@laptop as an account)",
                     sasl: SASLLogin(account: "alice", password: "secret", allowPlain: true, device: "laptop"), received: [
        ":srv CAP * LS :sasl=PLAIN",
        ":srv CAP * ACK :sasl",
        "AUTHENTICATE +",
    ], expected: [send("CAP REQ sasl"), .capabilities(["sasl"]), send("AUTHENTICATE PLAIN"),
                  send("AUTHENTICATE YWxpY2UAYWxpY2UAc2VjcmV0")], phase: .authenticating),
    RegistrationCase(name: "a failed login (904) is a clear stop, with the server's reason, not a registration without the account",
                     sasl: SASLLogin(account: "alice", password: "wrong", allowPlain: true), received: [
        ":srv CAP * LS :sasl=PLAIN", ":srv CAP * ACK :sasl", "AUTHENTICATE +",
        ":srv 904 * :SASL authentication failed: wrong account name or password",
    ], expected: [send("CAP REQ sasl"), .capabilities(["sasl"]), send("AUTHENTICATE PLAIN"),
                  send("AUTHENTICATE YWxpY2UAYWxpY2UAd3Jvbmc="),
                  .refuse("login failed for alice: wrong account name or password")],
                     phase: .refused("login failed for alice: wrong account name or password")),
    RegistrationCase(name: "PLAIN alone over plain text is refused before the password is sent",
                     sasl: SASLLogin(account: "alice", password: "pw", allowPlain: false), received: [
        ":srv CAP * LS :sasl=PLAIN",
    ], expected: [.refuse("login failed for alice: the server offers only PLAIN, which would send your password in clear over this plain-text connection (use --tls, or --sasl-plain-insecure)")]),
    RegistrationCase(name: "SCRAM preferred; refused as a mechanism (908, 904) it falls back to PLAIN where allowed",
                     sasl: SASLLogin(account: "alice", password: "secret", allowPlain: true), received: [
        ":srv CAP * LS :sasl", ":srv CAP * ACK :sasl",
        ":srv 908 * PLAIN :are available SASL mechanisms", ":srv 904 * :SASL authentication failed", "AUTHENTICATE +",
    ], expected: [send("CAP REQ sasl"), .capabilities(["sasl"]), send("AUTHENTICATE SCRAM-SHA-256"), send("AUTHENTICATE PLAIN"),
                  send("AUTHENTICATE YWxpY2UAYWxpY2UAc2VjcmV0")]),
    RegistrationCase(name: "a server with no SASL when asked to log in: a clear stop", sasl: SASLLogin(account: "alice", password: "pw", allowPlain: true), received: [
        ":srv CAP * LS :server-time",
    ], expected: [.refuse("login failed for alice: the server offers no SASL login (join without --sasl-user, or ask its host)")]),
    RegistrationCase(name: "EXTERNAL with a client certificate: an empty answer", sasl: SASLLogin(account: "alice", password: nil, allowPlain: true, external: true), received: [
        ":srv CAP * LS :sasl=PLAIN,EXTERNAL", ":srv CAP * ACK :sasl", "AUTHENTICATE +", ":srv 903 * :SASL authentication successful",
    ], expected: [send("CAP REQ sasl"), .capabilities(["sasl"]), send("AUTHENTICATE EXTERNAL"), send("AUTHENTICATE +"), send("CAP END")]),
    RegistrationCase(name: "EXTERNAL refused after our answer (the certificate is nobody's): SCRAM next, with the password",
                     sasl: SASLLogin(account: "alice", password: "pw", allowPlain: true, external: true), received: [
        ":srv CAP * LS :sasl=EXTERNAL,SCRAM-SHA-256", ":srv CAP * ACK :sasl", "AUTHENTICATE +", ":srv 904 * :SASL authentication failed: no account",
    ], expected: [send("CAP REQ sasl"), .capabilities(["sasl"]), send("AUTHENTICATE EXTERNAL"), send("AUTHENTICATE +"),
                  send("AUTHENTICATE SCRAM-SHA-256")]),
    RegistrationCase(name: "903 in SCRAM before the server proved itself is refused (a fake server cannot skip the proof)",
                     sasl: SASLLogin(account: "alice", password: "pw", allowPlain: false), received: [
        ":srv CAP * LS :sasl=SCRAM-SHA-256", ":srv CAP * ACK :sasl", ":srv 903 * :SASL authentication successful",
    ], expected: [send("CAP REQ sasl"), .capabilities(["sasl"]), send("AUTHENTICATE SCRAM-SHA-256"),
                  .refuse("login failed for alice: the server said yes without proving it knows the password (not the real server?)")]),
    RegistrationCase(name: "433 before 001: an underscore, and again", received: [
        ":srv 433 * alice :Nickname is already in use",
        ":srv 433 * alice_ :Nickname is already in use",
    ], expected: [.nickInUse("alice", trying: "alice_"), send("NICK alice_"),
                  .nickInUse("alice_", trying: "alice__"), send("NICK alice__")]),
    RegistrationCase(name: "retries past NICKLEN use the start of the name and a number", received: [
        ":srv 005 * NICKLEN=6 :are supported",
        ":srv 433 * alice :in use", ":srv 433 * alice_ :in use",
    ], expected: [.nickInUse("alice", trying: "alice_"), send("NICK alice_"), .nickInUse("alice_", trying: "alice2"), send("NICK alice2")]),
    RegistrationCase(name: "432 is final", received: [":srv 432 * al!ce :Erroneous nickname"],
                     expected: [.refuse("the server refused the nickname al!ce: Erroneous nickname")],
                     phase: .refused("the server refused the nickname al!ce: Erroneous nickname")),
    RegistrationCase(name: "464 is final", password: "nope", received: [":srv 464 * :Password incorrect"],
                     expected: [.refuse("wrong password: Password incorrect")]),
    RegistrationCase(name: "465 is final even after registration", received: [
        ":srv 001 alice :Welcome", ":srv 465 alice :You are banned",
    ], expected: [.registered(nick: "alice"), .refuse("banned from this server: You are banned")]),
    RegistrationCase(name: "001 registers, under the nickname the server says", received: [
        ":srv CAP * LS :", ":srv 001 alice_ :Welcome",
    ], expected: [send("CAP END"), .registered(nick: "alice_")], phase: .registered),
    RegistrationCase(name: "433 after registration is not the machine's (a /nick refusal)", received: [
        ":srv 001 alice :Welcome", ":srv 433 alice bob :Nickname is already in use",
    ], expected: [.registered(nick: "alice")]),
    RegistrationCase(name: "CAP NEW after registration requests what we want; DEL removes it", received: [
        ":srv CAP * LS :server-time", ":srv CAP * ACK :server-time", ":srv 001 alice :Welcome",
        ":srv CAP alice NEW :away-notify batch", ":srv CAP alice ACK :away-notify", ":srv CAP alice DEL :server-time",
    ], expected: [send("CAP REQ server-time"), .capabilities(["server-time"]), send("CAP END"), .registered(nick: "alice"),
                  send("CAP REQ away-notify"), .capabilities(["server-time", "away-notify"]), .capabilities(["away-notify"])],
                     phase: .registered),
]

@Suite("registration machine")
struct RegistrationTests {
    @Test("start: CAP LS 302, PASS when set, NICK, USER")
    func start() {
        var machine = Registration(.init(nick: "alice", userName: "alice", realName: "Alice A", password: "pw", wantedCapabilities: []))
        #expect(machine.start() == [send("CAP LS 302"), send("PASS pw"), send("NICK alice"), send("USER alice 0 * :Alice A")])
        #expect(machine.phase == .listing)
    }

    @Test("each step of the dance", arguments: registrationCases)
    func dance(_ example: RegistrationCase) {
        var machine = Registration(.init(nick: "alice", userName: "alice", realName: "A", password: example.password,
                                         wantedCapabilities: ["server-time", "echo-message", "multi-prefix", "away-notify"],
                                         sasl: example.sasl))
        _ = machine.start()
        var actions: [Registration.Action] = []
        for line in example.received { actions += machine.received(try! IRCMessage(parsing: line)) }
        #expect(actions == example.expected)
        if let phase = example.phase { #expect(machine.phase == phase) }
    }

    @Test("SCRAM-SHA-256 step by step is RFC 7677's example exchange; a forged server signature aborts")
    func scram() {
        func machine() -> Registration {
            var machine = Registration(.init(nick: "user", userName: "u", realName: "u", wantedCapabilities: [],
                                             sasl: SASLLogin(account: "user", password: "pencil", allowPlain: false), nonce: "rOprNGfwEbeRWgbNEkqO"))
            _ = machine.start()
            _ = machine.received(try! IRCMessage(parsing: ":srv CAP * LS :sasl=SCRAM-SHA-256,PLAIN"))
            #expect(machine.received(try! IRCMessage(parsing: ":srv CAP * ACK :sasl")) == [.capabilities(["sasl"]), send("AUTHENTICATE SCRAM-SHA-256")])
            #expect(machine.received(try! IRCMessage(parsing: "AUTHENTICATE +")) == [send("AUTHENTICATE biwsbj11c2VyLHI9ck9wck5HZndFYmVSV2diTkVrcU8=")])
            #expect(machine.received(try! IRCMessage(parsing: "AUTHENTICATE cj1yT3ByTkdmd0ViZVJXZ2JORWtxTyVodllEcFdVYTJSYVRDQWZ1eEZJbGopaE5sRiRrMCxzPVcyMlphSjBTTlk3c29Fc1VFamI2Z1E9PSxpPTQwOTY=")) == [send("AUTHENTICATE Yz1iaXdzLHI9ck9wck5HZndFYmVSV2diTkVrcU8laHZZRHBXVWEyUmFUQ0FmdXhGSWxqKWhObEYkazAscD1kSHpiWmFwV0lrNGpVaE4rVXRlOXl0YWc5empmTUhnc3FtbWl6N0FuZFZRPQ==")])
            return machine
        }
        var good = machine()
        #expect(good.received(try! IRCMessage(parsing: "AUTHENTICATE dj02cnJpVFJCaTIzV3BSUi93dHVwK21NaFVaVW4vZEI1bkxUSlJzamw5NUc0PQ==")) == [send("AUTHENTICATE +")])
        #expect(good.received(try! IRCMessage(parsing: ":srv 903 * :SASL authentication successful")) == [send("CAP END")])
        var forged = machine()
        #expect(forged.received(try! IRCMessage(parsing: "AUTHENTICATE dj03cnJpVFJCaTIzV3BSUi93dHVwK21NaFVaVW4vZEI1bkxUSlJzamw5NUc0PQ==")) == [send("AUTHENTICATE *"),
            .refuse("login failed for user: the server could not prove it knows the password (not the real server?)")])
    }

    @Test("a SASL payload of 400 bytes or more goes in chunks, and a whole chunk is followed by +")
    func longPayload() {
        // 300 bytes of password make a 400+ byte base64 payload.
        let password = String(repeating: "p", count: 294)
        var machine = Registration(.init(nick: "a", userName: "a", realName: "a", wantedCapabilities: [], sasl: SASLLogin(account: "al", password: password, allowPlain: true)))
        _ = machine.start()
        _ = machine.received(try! IRCMessage(parsing: ":srv CAP * LS :sasl=PLAIN"))
        _ = machine.received(try! IRCMessage(parsing: ":srv CAP * ACK :sasl"))
        let chunks = machine.received(try! IRCMessage(parsing: "AUTHENTICATE +")).compactMap { action -> String? in
            if case .send(let message) = action { return message.params.first } else { return nil }
        }
        #expect(chunks.count == 2 && chunks[0].utf8.count == 400 && chunks[1] == "+", "\(chunks.map(\.count))")
    }

    @Test("the machine takes CAP, AUTHENTICATE and SASL numerics, and nick refusals only before 001")
    func consumes() {
        var machine = Registration(.init(nick: "alice", userName: "a", realName: "a", wantedCapabilities: []))
        #expect(machine.consumes(try! IRCMessage(parsing: ":srv CAP * LS :x")))
        #expect(machine.consumes(try! IRCMessage(parsing: ":srv 433 * alice :in use")))
        #expect(!machine.consumes(try! IRCMessage(parsing: ":srv 421 alice FOO :Unknown command")))
        _ = machine.received(try! IRCMessage(parsing: ":srv 001 alice :Welcome"))
        #expect(!machine.consumes(try! IRCMessage(parsing: ":srv 433 alice bob :in use")))
    }
}
