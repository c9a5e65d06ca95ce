import Foundation
import Testing
@testable import ChatServerKit
import ChatStore
import ChatTransport
import IRCWire
import IRCTestSupport

let aliceCertificate = String(repeating: "AB", count: 32)

func plain(_ user: String, _ password: String, as authzid: String = "") -> String {
    Base64.encode(Array("\(authzid)\u{0}\(user)\u{0}\(password)".utf8))
}

extension Harness {
    init(accountsOf store: AccountStore, configure: (inout ServerConfig) -> Void = { _ in }) {
        self.init(accounts: store) {
            $0.accountIterations = 4096
            configure(&$0)
        }
    }

    /// Connects and starts SASL: CAP REQ sasl, NICK, USER; registration waits for CAP END.
    mutating func saslClient(_ nick: String, from host: String = "127.0.0.1", caps: String = "sasl") -> ConnectionID {
        let id = connect(from: host)
        send(id, "CAP LS 302", "CAP REQ :\(caps)", "NICK \(nick)", "USER \(nick) 0 * :Real \(nick)")
        return id
    }
}

@Suite("server state: accounts and SASL")
struct StateAccountTests {
    @Test("with accounts, CAP LS offers sasl with its mechanisms and account registration; without, neither")
    func offered() throws {
        var h = Harness(accountsOf: try accountStore())
        let id = h.connect()
        h.send(id, "CAP LS 302")
        let offered = h.out.messages(to: id).flatMap { $0.params.last!.split(separator: " ").map(String.init) }
        #expect(offered.contains("sasl=PLAIN,EXTERNAL,SCRAM-SHA-256"))
        #expect(offered.contains("draft/account-registration=before-connect"))
        h.send(id, "CAP LS")
        #expect(h.out.messages(to: id).last!.params.last!.split(separator: " ").contains("sasl"), "CAP 301: no values")

        var closed = Harness(accountsOf: try accountStore()) { $0.accountRegistration = false }
        let other = closed.connect()
        closed.send(other, "CAP LS 302")
        let words = closed.out.messages(to: other).flatMap { $0.params.last!.split(separator: " ").map(String.init) }
        #expect(words.contains("sasl=PLAIN,EXTERNAL,SCRAM-SHA-256") && !words.contains { $0.hasPrefix("draft/account-registration") })
        closed.send(other, "CAP REQ :draft/account-registration")
        #expect(closed.commands(to: other) == ["CAP"] && closed.out.messages(to: other)[0].params[1] == "NAK")

        var none = Harness()
        let bare = none.connect()
        none.send(bare, "CAP REQ :sasl")
        #expect(none.out.messages(to: bare)[0].params[1] == "NAK", "no database, no sasl")
    }

    @Test("PLAIN before registration: AUTHENTICATE +, 900 and 903, then the account shows in WHOIS, extended-join and account-tag")
    func plainLogin() throws {
        var h = Harness(accountsOf: try accountStore())
        let watcher = h.register("bob", caps: ["extended-join", "account-tag"])
        let id = h.saslClient("alice")
        h.send(id, "AUTHENTICATE PLAIN")
        #expect(h.lines(to: id) == ["AUTHENTICATE +"])
        h.send(id, "AUTHENTICATE " + plain("alice", "correct horse"))
        #expect(h.lines(to: id) == [":test.server 900 alice alice!alice@127.0.0.1 alice :You are now logged in as alice",
                                    ":test.server 903 alice :SASL authentication successful"])
        #expect(h.out.logs.contains { $0.contains("alice logged in as alice") })
        h.send(id, "CAP END")
        #expect(h.commands(to: id).first == "001")
        #expect(h.lines(to: watcher).contains("@account=alice :alice!alice@127.0.0.1 JOIN #lobby alice :Real alice"))
        h.send(watcher, "WHOIS alice")
        #expect(h.lines(to: watcher).contains(":test.server 330 bob alice alice :is logged in as"))
        h.send(watcher, "WHO alice %na")
        #expect(h.out.messages(to: watcher).first { $0.command == "354" }?.params == ["bob", "alice", "alice"])
        h.send(id, "AUTHENTICATE PLAIN")
        #expect(h.commands(to: id) == ["907"])
    }

    @Test("a wrong password and an unknown account get the same 904; registration then goes on without an account")
    func plainFailures() throws {
        var h = Harness(accountsOf: try accountStore())
        let id = h.saslClient("alice")
        h.send(id, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "wrong"))
        #expect(h.lines(to: id) == ["AUTHENTICATE +", ":test.server 904 alice :SASL authentication failed: wrong account name or password"])
        #expect(h.out.logs.contains { $0.contains("login failed for alice: wrong password") })
        h.send(id, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("nobody", "correct horse"))
        #expect(h.lines(to: id) == ["AUTHENTICATE +", ":test.server 904 alice :SASL authentication failed: wrong account name or password"])
        #expect(h.out.logs.contains { $0.contains("login failed for nobody: no such account") })
        h.send(id, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "correct horse", as: "bob"))
        #expect(h.lines(to: id).last == ":test.server 904 alice :SASL authentication failed: cannot log in as another account")
        h.send(id, "CAP END")
        #expect(h.commands(to: id).first == "001")
    }

    @Test("failed logins are throttled per address (five a minute) and per account (ten), never successful ones")
    func throttled() throws {
        var h = Harness(accountsOf: try accountStore(["alice", "carol"]))
        let id = h.saslClient("mallory", from: "203.0.113.9")
        for _ in 0..<5 { h.send(id, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "guess")) }
        h.send(id, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("carol", "correct horse"))
        #expect(h.lines(to: id).last == ":test.server 904 mallory :SASL authentication failed: too many failed logins from your address; try again in a minute",
                "even the right password is refused unchecked from there")
        // Another address, the same account: five more failures reach the account's limit of ten.
        let other = h.saslClient("eve", from: "198.51.100.7")
        for _ in 0..<5 { h.send(other, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "guess")) }
        // A third guesser gets one try; after it, even the right password from there is refused.
        let third = h.saslClient("trent", from: "192.0.2.1")
        h.send(third, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "guess"))
        h.send(third, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "correct horse"))
        #expect(h.lines(to: third).last == ":test.server 904 trent :SASL authentication failed: too many failed logins for alice from your address; try again in a minute")
        // The owner, from an address that has not been failing, logs in: the guessers never lock them out.
        let owner = h.saslClient("alice", from: "192.0.2.200")
        h.send(owner, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "correct horse"))
        #expect(h.commands(to: owner) == ["AUTHENTICATE", "900", "903"])
        // Nor from loopback (the host's own address), whose failures are counted but never limit it.
        let host = h.saslClient("alice_", from: "127.0.0.1")
        h.send(host, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "correct horse"))
        #expect(h.commands(to: host) == ["AUTHENTICATE", "900", "903"])
        // A minute later both limits have lapsed (the unregistered connections timed out meanwhile).
        _ = h.tick(advance: 61)
        let later = h.saslClient("alice", from: "203.0.113.9")
        h.send(later, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "correct horse"))
        #expect(h.commands(to: later) == ["AUTHENTICATE", "900", "903"])
        // Successes are not counted: ten logins in a row from one address all work.
        var ok = Harness(accountsOf: try accountStore())
        for n in 0..<10 {
            let id = ok.saslClient("a\(n)", from: "203.0.113.50")
            ok.send(id, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "correct horse"))
            #expect(ok.commands(to: id) == ["AUTHENTICATE", "900", "903"])
        }
    }

    @Test("AUTHENTICATE framing: 400-byte chunks with +, 905 for an oversized chunk, 906 on *, 908 for an unknown mechanism")
    func framing() throws {
        var h = Harness(accountsOf: try accountStore())
        let id = h.saslClient("alice")
        // A password that makes the base64 exactly 400 bytes: the message ends with "+".
        let password = String(repeating: "p", count: 300 - "\u{0}alice\u{0}".utf8.count)
        let payload = plain("alice", password)
        #expect(payload.utf8.count == 400)
        h.send(id, "AUTHENTICATE PLAIN", "AUTHENTICATE " + payload)
        #expect(h.commands(to: id) == ["AUTHENTICATE"], "a full chunk waits for more")
        h.send(id, "AUTHENTICATE +")
        #expect(h.commands(to: id) == ["904"], "the whole message was read (and the password is wrong)")
        h.send(id, "AUTHENTICATE PLAIN", "AUTHENTICATE " + String(repeating: "A", count: 401))
        #expect(h.commands(to: id) == ["AUTHENTICATE", "905"], "one chunk over 400 bytes: too long")
        // 1,000 full chunks: past 4096 bytes in all the authentication fails (904), the rest ignored as a new exchange's.
        h.send(id, "AUTHENTICATE PLAIN")
        for _ in 0..<11 { h.send(id, "AUTHENTICATE " + String(repeating: "A", count: 400)) }
        #expect(h.lines(to: id) == [":test.server 904 alice :SASL authentication failed: the message is longer than 4096 bytes"])
        h.send(id, "AUTHENTICATE PLAIN", "AUTHENTICATE *")
        #expect(h.commands(to: id) == ["AUTHENTICATE", "906"])
        h.send(id, "AUTHENTICATE DIGEST-MD5")
        #expect(h.lines(to: id) == [":test.server 908 alice PLAIN,EXTERNAL,SCRAM-SHA-256 :are available SASL mechanisms",
                                    ":test.server 904 alice :SASL authentication failed"])
        h.send(id, "AUTHENTICATE PLAIN", "AUTHENTICATE not-base64!")
        #expect(h.lines(to: id).last == ":test.server 904 alice :SASL authentication failed: the message was not base64")
        // CAP END in the middle of an exchange aborts it and registers without an account.
        h.send(id, "AUTHENTICATE PLAIN", "CAP END")
        #expect(Array(h.commands(to: id).prefix(3)) == ["AUTHENTICATE", "906", "001"])
        // Without CAP REQ sasl, AUTHENTICATE is refused.
        let bare = h.connect()
        h.send(bare, "AUTHENTICATE PLAIN")
        #expect(h.lines(to: bare) == [":test.server 904 * :SASL authentication failed: request the sasl capability first"])
    }

    @Test("SCRAM-SHA-256 with our client: logged in, and the server's signature verifies; a wrong password fails the proof")
    func scram() throws {
        var h = Harness(accountsOf: try accountStore())
        let id = h.saslClient("alice")
        var client = SCRAMClient(user: "alice", password: "correct horse", nonce: SCRAMClient.randomNonce())
        h.send(id, "AUTHENTICATE SCRAM-SHA-256")
        #expect(h.lines(to: id) == ["AUTHENTICATE +"])
        h.send(id, "AUTHENTICATE " + Base64.encode(Array(client.first.utf8)))
        let serverFirst = String(decoding: Base64.decode(h.out.messages(to: id)[0].params[0])!, as: UTF8.self)
        #expect(serverFirst.contains(",i=4096"))
        h.send(id, "AUTHENTICATE " + Base64.encode(Array(try client.final(serverFirst: serverFirst).utf8)))
        let serverFinal = String(decoding: Base64.decode(h.out.messages(to: id)[0].params[0])!, as: UTF8.self)
        try client.verify(serverFinal: serverFinal)
        h.send(id, "AUTHENTICATE +")
        #expect(h.commands(to: id) == ["900", "903"])

        let other = h.saslClient("mallory", from: "203.0.113.9")
        var wrong = SCRAMClient(user: "alice", password: "guess", nonce: SCRAMClient.randomNonce())
        h.send(other, "AUTHENTICATE SCRAM-SHA-256", "AUTHENTICATE " + Base64.encode(Array(wrong.first.utf8)))
        let first = String(decoding: Base64.decode(h.out.messages(to: other)[1].params[0])!, as: UTF8.self)
        h.send(other, "AUTHENTICATE " + Base64.encode(Array(try wrong.final(serverFirst: first).utf8)))
        #expect(h.lines(to: other) == [":test.server 904 mallory :SASL authentication failed: wrong account name or password"])
        // An unknown name gets a salt all the same, the same one each time: nothing tells it apart.
        func saltFor(_ name: String) -> String {
            let id = h.saslClient("x\(Int(h.now))", from: "192.0.2.\(Int(h.now) % 200)")
            h.send(id, "AUTHENTICATE SCRAM-SHA-256", "AUTHENTICATE " + Base64.encode(Array(SCRAMClient(user: name, password: "", nonce: "n0nce").first.utf8)))
            h.now += 1
            let text = String(decoding: Base64.decode(h.out.messages(to: id)[1].params[0])!, as: UTF8.self)
            return String(text.split(separator: ",")[1])
        }
        #expect(saltFor("nobody") == saltFor("nobody"))
        #expect(saltFor("nobody") != saltFor("someone"))
    }

    @Test("EXTERNAL: the TLS client certificate registered to an account logs in; another certificate or none does not")
    func external() throws {
        let store = try accountStore()
        try store.addCertificate(key: "alice", fingerprint: aliceCertificate)
        var h = Harness(accountsOf: store)
        let id = h.saslClient("alice")
        h.state.secured(id, clientCertificate: Array(repeating: 0xAB, count: 32))
        h.send(id, "AUTHENTICATE EXTERNAL", "AUTHENTICATE +")
        #expect(h.commands(to: id) == ["AUTHENTICATE", "900", "903"])
        let stranger = h.saslClient("bob")
        h.state.secured(stranger, clientCertificate: Array(repeating: 0xCD, count: 32))
        h.send(stranger, "AUTHENTICATE EXTERNAL", "AUTHENTICATE +")
        #expect(h.lines(to: stranger).last?.hasPrefix(":test.server 904 bob :SASL authentication failed: the certificate CDCDCDCDCDCDCDCD… belongs to no account") == true)
        let plainText = h.saslClient("carol")
        h.send(plainText, "AUTHENTICATE EXTERNAL", "AUTHENTICATE +")
        #expect(h.lines(to: plainText).last == ":test.server 904 carol :SASL authentication failed: no client certificate was presented")
    }

    @Test("while a password is checked off the loop, registration and the client's next lines wait, in order")
    func heldWhileChecking() throws {
        var h = Harness(accountsOf: try accountStore())
        h.holdingChecks = true
        let id = h.saslClient("alice")
        h.send(id, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "correct horse"), "CAP END", "PING :after")
        #expect(h.commands(to: id) == ["AUTHENTICATE"], "nothing after the check until its answer")
        #expect(h.heldChecks.count == 1)
        h.releaseChecks()
        let commands = h.commands(to: id)
        #expect(Array(commands.prefix(3)) == ["900", "903", "001"])
        #expect(commands.last == "PONG", "the PING sent after the login is answered after it")
    }

    @Test("account-notify: logging in after registration tells those who share a room")
    func accountNotify() throws {
        var h = Harness(accountsOf: try accountStore())
        let watcher = h.register("bob", caps: ["account-notify"])
        let id = h.register("alice", caps: ["sasl"])
        h.send(id, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "correct horse"))
        #expect(h.lines(to: watcher) == [":alice!u@127.0.0.1 ACCOUNT alice"])
    }

    @Test("REGISTER makes an account named after the nickname and logs in; the name, look-alikes and weak passwords are refused")
    func register() throws {
        let store = try accountStore()
        var h = Harness(accountsOf: store)
        let id = h.saslClient("dave", caps: "sasl standard-replies")
        h.send(id, "REGISTER * * short")
        #expect(h.lines(to: id) == [":test.server FAIL REGISTER WEAK_PASSWORD dave :Use a password of at least 8 characters"])
        h.send(id, "REGISTER erin * long enough")
        #expect(h.commands(to: id) == ["FAIL"] && h.out.messages(to: id)[0].params[1] == "ACCOUNT_NAME_MUST_BE_NICK")
        h.send(id, "REGISTER * * :long enough")
        #expect(h.lines(to: id) == [":test.server REGISTER SUCCESS dave :Account created; you are logged in",
                                    ":test.server 900 dave dave!dave@127.0.0.1 dave :You are now logged in as dave"], "no 903: no SASL took place")
        #expect(try store.lookup("dave")?.credential.matches(password: "long enough") == true)
        h.send(id, "REGISTER * * :long enough")
        #expect(h.out.messages(to: id)[0].params[1] == "ALREADY_AUTHENTICATED")
        let copy = h.saslClient("ALICE")
        h.send(copy, "REGISTER * * :another one")
        #expect(h.lines(to: copy) == [":test.server FAIL REGISTER ACCOUNT_EXISTS ALICE :ALICE is an account already; log in with SASL, or pick another nickname"])
        // A look-alike of an account cannot even be the nickname an account would be named after.
        let lookalike = h.saslClient("aIice")
        h.send(lookalike, "REGISTER * * :another one")
        #expect(h.lines(to: lookalike) == [":test.server FAIL REGISTER NEED_NICK * :Send NICK first: the account is named after it"])
        h.send(id, "VERIFY dave 1234")
        #expect(h.out.messages(to: id).first?.params[1] == "ALREADY_AUTHENTICATED")
    }

    @Test("REGISTER before NICK (before-connect): NEED_NICK; after NICK and before CAP END: the account, and registration completes logged in")
    func registerBeforeConnect() throws {
        var h = Harness(accountsOf: try accountStore(["alice"]))
        let id = h.connect()
        h.send(id, "CAP LS 302", "CAP REQ :draft/account-registration")
        h.send(id, "REGISTER * * :long enough")
        #expect(h.lines(to: id) == [":test.server FAIL REGISTER NEED_NICK * :Send NICK first: the account is named after it"])
        h.send(id, "REGISTER erin * :long enough")
        #expect(h.lines(to: id) == [":test.server FAIL REGISTER NEED_NICK * :Send NICK first: the account is named after it"])
        h.send(id, "NICK erin", "REGISTER * * :long enough")
        #expect(h.lines(to: id) == [":test.server REGISTER SUCCESS erin :Account created; you are logged in",
                                    ":test.server 900 erin erin!unknown@127.0.0.1 erin :You are now logged in as erin"])
        h.send(id, "USER u 0 * :Erin", "CAP END")
        #expect(h.commands(to: id).first == "001")
        // An account's name, asked for by name while holding another nickname: the nickname rule first.
        let other = h.connect()
        h.send(other, "CAP LS 302", "NICK zed")
        h.send(other, "REGISTER alice * :long enough")
        #expect(h.out.messages(to: other).map { $0.params.prefix(2) } == [["REGISTER", "ACCOUNT_NAME_MUST_BE_NICK"]])
    }

    @Test("REGISTER: three accounts per address per hour; closed registration says who makes accounts")
    func registerLimits() throws {
        var h = Harness(accountsOf: try accountStore())
        for n in 0..<3 {
            let id = h.saslClient("user\(n)", from: "203.0.113.9")
            h.send(id, "REGISTER * * :long enough")
            #expect(h.out.messages(to: id).first?.params.first == "SUCCESS")
        }
        let fourth = h.saslClient("user3", from: "203.0.113.9")
        h.send(fourth, "REGISTER * * :long enough")
        #expect(h.lines(to: fourth) == [":test.server FAIL REGISTER TEMPORARILY_UNAVAILABLE user3 :Too many accounts made from your address; try again in an hour"])
        var closed = Harness(accountsOf: try accountStore()) { $0.accountRegistration = false }
        let id = closed.saslClient("frank")
        closed.send(id, "REGISTER * * :long enough")
        #expect(closed.lines(to: id) == [":test.server FAIL REGISTER TEMPORARILY_UNAVAILABLE * :Accounts are made by the host on this server (chat-tui account add)"])
    }

    @Test("an account's nickname without logging in: warned, renamed to a guest after 30 s; logging in in time keeps it")
    func nickProtection() throws {
        var h = Harness(accountsOf: try accountStore(["alice", "carol"]))
        let watcher = h.register("bob")
        let squatter = h.register("alice")
        #expect(h.lines(to: squatter).contains(":test.server NOTICE alice :alice is a registered account's nickname: log in to it (SASL) within 30 seconds, or you will be renamed"))
        _ = h.tick(advance: 29)
        #expect(h.commands(to: squatter).isEmpty)
        _ = h.tick(advance: 1)
        #expect(h.lines(to: squatter).contains(":test.server NOTICE alice :You did not log in to the account alice: you are now Guest2"))
        #expect(h.lines(to: watcher) == [":alice!u@127.0.0.1 NICK Guest2"])
        // The real carol logs in within the grace period: nothing happens to her.
        let carol = h.register("carol", caps: ["sasl"])
        h.send(carol, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("carol", "correct horse"))
        _ = h.tick(advance: 31)
        #expect(h.commands(to: carol).isEmpty)
        // A look-alike of an account's name is refused, whether or not the account is online.
        let id = h.register("mallory")
        h.send(id, "NICK aIice")
        #expect(h.lines(to: id) == [":test.server 432 mallory aIice :Nickname looks too much like the account alice"])
        // A renamed user taking an account's name is warned the same way.
        h.send(id, "NICK Alice")
        #expect(h.lines(to: id).contains(":test.server NOTICE Alice :alice is a registered account's nickname: log in to it (SASL) within 30 seconds, or you will be renamed"))
    }

    @Test("--nick-protection strict: an account's name is refused at once, before and after registration")
    func strictProtection() throws {
        var h = Harness(accountsOf: try accountStore()) { $0.nickProtection = .strict }
        let id = h.connect()
        h.send(id, "NICK alice", "USER a 0 * :A")
        #expect(h.lines(to: id) == [":test.server 433 alice alice :Nickname is reserved by an account; log in to it with SASL to use it"])
        h.send(id, "NICK alice2")
        #expect(h.commands(to: id).first == "001")
        h.send(id, "NICK ALICE")
        #expect(h.commands(to: id) == ["433"])
        // With SASL the owner registers under it.
        let owner = h.saslClient("alice")
        h.send(owner, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "correct horse"), "CAP END")
        #expect(h.commands(to: owner).contains("001"))
    }

    @Test("OPER's password hashing runs off the loop and its answer keeps its place before later replies")
    func operOffLoop() {
        var h = Harness { $0.operators = [OperatorBlock(name: "root", passwordHash: OperatorBlock.hash("hunter2", salt: "s", iterations: 1000))] }
        let id = h.register("alice")
        h.holdingChecks = true
        h.send(id, "OPER root hunter2", "PING :x")
        #expect(h.commands(to: id).isEmpty)
        h.releaseChecks()
        #expect(h.commands(to: id).prefix(2) == ["MODE", "381"])
        #expect(h.commands(to: id).last == "PONG")
    }
}

@Suite("server state: accounts under attack")
struct StateAccountAttackTests {
    @Test("parallel guesses from one address cannot all pass the throttle: each is counted as it starts, at most two wait at once")
    func parallelGuesses() throws {
        var h = Harness(accountsOf: try accountStore())
        h.holdingChecks = true
        var ids: [ConnectionID] = []
        for n in 0..<8 {
            let id = h.saslClient("g\(n)", from: "203.0.113.9")
            h.send(id, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "guess\(n)"))
            ids.append(id)
        }
        #expect(h.heldChecks.count == 2, "two checks per address wait at once; the rest are told the server is busy")
        h.releaseChecks()
        // Two more may start now; after five counted attempts the address is throttled.
        for id in ids.prefix(6) { h.send(id, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "again")) }
        #expect(h.heldChecks.count == 2)
        h.releaseChecks()
        let late = h.saslClient("late", from: "203.0.113.9")
        h.send(late, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "x"))
        h.releaseChecks()
        h.send(late, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "x"))
        #expect(h.lines(to: late).last?.contains("too many failed logins from your address") == true)
    }

    @Test("a SCRAM guess at an unknown name is counted like one at a real account")
    func scramUnknownCounted() throws {
        var h = Harness(accountsOf: try accountStore())
        for n in 0..<10 {
            let id = h.saslClient("s\(n)", from: "198.51.100.\(n)")
            var client = SCRAMClient(user: "nobody", password: "x", nonce: "n\(n)")
            h.send(id, "AUTHENTICATE SCRAM-SHA-256", "AUTHENTICATE " + Base64.encode(Array(client.first.utf8)))
            let first = String(decoding: Base64.decode(h.out.messages(to: id)[1].params[0])!, as: UTF8.self)
            h.send(id, "AUTHENTICATE " + Base64.encode(Array(try client.final(serverFirst: first).utf8)))
        }
        // A guesser that has failed (the last address above) is refused unchecked once the name has ten failures.
        let id = h.saslClient("s10", from: "198.51.100.9")
        h.send(id, "AUTHENTICATE SCRAM-SHA-256", "AUTHENTICATE " + Base64.encode(Array(SCRAMClient(user: "nobody", password: "x", nonce: "z").first.utf8)))
        #expect(h.lines(to: id).last == ":test.server 904 s10 :SASL authentication failed: too many failed logins for nobody from your address; try again in a minute")
    }

    @Test("one grace period per account name: back and forth does not renew it, and after the rename it is refused")
    func graceOnce() throws {
        var h = Harness(accountsOf: try accountStore())
        let id = h.register("mallory")
        h.send(id, "NICK alice")
        _ = h.tick(advance: 20)
        h.send(id, "NICK bob", "NICK alice")
        #expect(h.lines(to: id).contains(":test.server 433 bob alice :Nickname is reserved by an account; log in to it with SASL to use it"),
                "taking it back is refused, not a new grace period")
    }

    @Test("REGISTER needs all three parameters: an e-mail address is never taken for the password")
    func registerArity() throws {
        var h = Harness(accountsOf: try accountStore())
        let id = h.saslClient("erin")
        h.send(id, "REGISTER erin erin@example.com")
        #expect(h.commands(to: id) == ["461"])
    }
}
