import Testing
@testable import ChatServerKit
import ChatStore
import ChatTransport
import IRCTestSupport
import IRCWire

@Suite("server state: Web Push subscriptions and what is pushed (issue 47)")
struct WebPushStateTests {
    func harness() throws -> Harness {
        try Harness(accountsOf: accountStore()) { $0.webPush = WebPushSettings(key: P256KeyPair.generate()!, subject: "mailto:t@example.org") }
    }

    func keys() -> String {
        "p256dh=" + Base64URL.encode(P256KeyPair.generate()!.publicKey) + ";auth=" + Base64URL.encode([UInt8](repeating: 7, count: 16))
    }

    /// alice logged in with one subscription.
    func subscribed(_ h: inout Harness) -> ConnectionID {
        let alice = h.saslClient("alice", caps: "sasl draft/webpush")
        h.send(alice, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "correct horse"), "CAP END")
        h.send(alice, "WEBPUSH REGISTER https://push.example/a \(keys())")
        return alice
    }

    func pushes(_ outbox: Outbox) -> [PushJob] {
        outbox.items.compactMap { if case .webPush(let job) = $0 { return job } else { return nil } }
    }

    @Test("an account keeps at most 4 subscriptions (a fifth replaces the least recently used); a guest may not subscribe; bad keys are refused")
    func bound() throws {
        var h = try harness()
        let alice = h.saslClient("alice", caps: "sasl draft/webpush")
        h.send(alice, "AUTHENTICATE PLAIN", "AUTHENTICATE " + plain("alice", "correct horse"), "CAP END")
        for n in 1...5 {
            h.now += 1
            h.send(alice, "WEBPUSH REGISTER https://push.example/\(n) \(keys())")
            #expect(h.lines(to: alice) == [":test.server WEBPUSH REGISTER https://push.example/\(n)"])
        }
        #expect(h.state.pushBook.subscriptions["alice"]?.map(\.endpoint) == (2...5).map { "https://push.example/\($0)" })
        h.send(alice, "WEBPUSH REGISTER https://push.example/x p256dh=AAAA;auth=BBBB")
        #expect(h.lines(to: alice).first?.hasPrefix(":test.server FAIL WEBPUSH INVALID_PARAMS") == true)
        h.send(alice, "WEBPUSH UNREGISTER https://push.example/3")
        #expect(h.state.pushBook.subscriptions["alice"]?.count == 3)
        let guest = h.register("guest", caps: ["draft/webpush"])
        h.send(guest, "WEBPUSH REGISTER https://push.example/g \(keys())")
        #expect(h.lines(to: guest).first?.contains("FAIL WEBPUSH ACCOUNT_REQUIRED") == true)
        #expect(h.out.messages(to: guest).isEmpty == false)
    }

    @Test("pushed only while no session is connected: a direct message, not a TAGMSG; a dismissal for a MARKREAD; 14 days unused ends a subscription")
    func whenPushed() throws {
        var h = try harness()
        let alice = subscribed(&h)
        let bob = h.register("bob", caps: ["message-tags"])
        #expect(pushes(h.send(bob, "PRIVMSG alice :you are here")).isEmpty, "connected: no push")
        h.state.disconnected(alice, reason: "Connection reset", now: h.now)
        _ = h.state.takeOutbox()
        let pushed = pushes(h.send(bob, "PRIVMSG alice :now you are not"))
        #expect(pushed.count == 1 && pushed[0].urgency == "high" && pushed[0].ttl == 7 * 86_400)
        let text = String(decoding: pushed[0].payload, as: UTF8.self)
        #expect(text.hasPrefix("@msgid=") && text.hasSuffix(":bob!u@127.0.0.1 PRIVMSG alice :now you are not"), "\(text)")
        #expect(pushes(h.send(bob, "@+typing=active TAGMSG alice")).isEmpty)
        // A push service that says the subscription is gone: forgotten.
        h.state.webPushAnswered(pushed[0], .gone(status: 410), now: h.now)
        #expect(h.state.pushBook.subscriptions["alice"] == nil)
        #expect(pushes(h.send(bob, "PRIVMSG alice :anyone?")).isEmpty)
    }

    @Test("subscriptions unused for 14 days expire at the next minute's check")
    func expiry() throws {
        var h = try harness()
        _ = subscribed(&h)
        h.state.expireWebPush(now: h.now + 13 * 86_400)
        #expect(h.state.pushBook.subscriptions["alice"]?.count == 1)
        h.state.expireWebPush(now: h.now + 15 * 86_400)
        #expect(h.state.pushBook.subscriptions["alice"] == nil)
    }
}
