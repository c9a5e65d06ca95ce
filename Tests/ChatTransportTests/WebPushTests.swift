import Testing
@testable import ChatTransport

@Suite("Web Push crypto: RFC 8291 encryption, RFC 8292 VAPID, with OpenSSL")
struct WebPushTests {
    func bytes(_ text: String) -> [UInt8] { Base64URL.decode(text)! }

    @Test("RFC 8291's own example: the same keys, secret and salt give the RFC's body byte for byte")
    func rfc8291Example() throws {
        let sender = try #require(P256KeyPair(privateKey: bytes("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw")))
        #expect(sender.publicKey == bytes("BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"))
        let body = WebPushEncryption.encrypt(Array("When I grow up, I want to be a watermelon".utf8),
                                             subscriberKey: bytes("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"),
                                             authSecret: bytes("BTBZMqHH6r4Tts7J_aSIgg"), sender: sender, salt: bytes("DGv6ra1nlYgDCS1FRnbzlw"))
        #expect(body.map(Base64URL.encode) == "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN")
    }

    @Test("a subscription key that is not a point, or a short secret, encrypts nothing")
    func badKeys() {
        let key = P256KeyPair.generate()!
        #expect(WebPushEncryption.encrypt([1], subscriberKey: [4] + [UInt8](repeating: 7, count: 64), authSecret: [UInt8](repeating: 0, count: 16)) == nil)
        #expect(WebPushEncryption.encrypt([1], subscriberKey: key.publicKey, authSecret: [1, 2, 3]) == nil)
        #expect(P256KeyPair(privateKey: [UInt8](repeating: 0, count: 32)) == nil, "zero is not a private key")
    }

    @Test("ECDH agrees both ways; an ES256 signature verifies, and not for another message or key")
    func keys() throws {
        let a = try #require(P256KeyPair.generate()), b = try #require(P256KeyPair.generate())
        #expect(a.sharedSecret(with: b.publicKey) == b.sharedSecret(with: a.publicKey))
        #expect(P256KeyPair(privateKey: a.privateKey) == a)
        let signature = try #require(a.sign(Array("hello".utf8)))
        #expect(P256KeyPair.verify(signature, of: Array("hello".utf8), publicKey: a.publicKey))
        #expect(!P256KeyPair.verify(signature, of: Array("hellO".utf8), publicKey: a.publicKey))
        #expect(!P256KeyPair.verify(signature, of: Array("hello".utf8), publicKey: b.publicKey))
    }

    @Test("a VAPID JWT: ES256 header, the audience, expiry and subject, signed by the server's key")
    func vapid() throws {
        let key = try #require(P256KeyPair.generate())
        let token = try #require(VAPID.token(audience: "https://push.example:8443", expires: 1_800_000_000, subject: "mailto:host@example.org", key: key))
        let parts = token.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        #expect(String(decoding: bytes(parts[0]), as: UTF8.self) == "{\"typ\":\"JWT\",\"alg\":\"ES256\"}")
        #expect(String(decoding: bytes(parts[1]), as: UTF8.self) == "{\"aud\":\"https://push.example:8443\",\"exp\":1800000000,\"sub\":\"mailto:host@example.org\"}")
        #expect(P256KeyPair.verify(bytes(parts[2]), of: Array((parts[0] + "." + parts[1]).utf8), publicKey: key.publicKey))
        #expect(VAPID.authorization(token: token, key: key) == "vapid t=\(token), k=\(Base64URL.encode(key.publicKey))")
    }

    @Test("base64url: no padding out, padding optional in, the standard alphabet's + and / refused")
    func base64url() {
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.decode("-_8") == [0xFB, 0xFF] && Base64URL.decode("-_8=") == [0xFB, 0xFF])
        #expect(Base64URL.decode("+/8") == nil)
    }
}

@Suite("Web Push endpoints and the addresses a push may go to")
struct PushEndpointTests {
    @Test("an endpoint is a plain https URL: host, port, path and the VAPID audience read from it")
    func endpoints() throws {
        let e = try #require(PushEndpoint("https://fcm.googleapis.com/fcm/send/abc:def"))
        #expect(e.host == "fcm.googleapis.com" && e.port == 443 && e.path == "/fcm/send/abc:def" && e.origin == "https://fcm.googleapis.com")
        let local = try #require(PushEndpoint("https://127.0.0.1:8443/sub?x=1"))
        #expect(local.port == 8443 && local.path == "/sub?x=1" && local.origin == "https://127.0.0.1:8443")
        let v6 = try #require(PushEndpoint("https://[2001:db8::1]:9000/p"))
        #expect(v6.host == "2001:db8::1" && v6.origin == "https://[2001:db8::1]:9000")
        for bad in ["http://push.example/x", "https://user@push.example/x", "https://push.example/a b", "https://:443/x",
                    "https://push.example:0/x", "https://push.example/x#frag", "https://" + String(repeating: "a", count: 2100)] {
            #expect(PushEndpoint(bad) == nil, "\(bad.prefix(40))")
        }
    }

    @Test("public addresses only: loopback, private, shared, link-local, unique-local and mapped ones are not")
    func addresses() {
        func v4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> Bool { NetworkAddress.isPublicIPv4(UInt32(a) << 24 | UInt32(b) << 16 | UInt32(c) << 8 | UInt32(d)) }
        #expect(v4(8, 8, 8, 8) && v4(142, 250, 1, 1))
        #expect(!v4(127, 0, 0, 1) && !v4(10, 1, 2, 3) && !v4(172, 16, 0, 1) && !v4(172, 31, 255, 255) && !v4(192, 168, 1, 1))
        #expect(!v4(169, 254, 169, 254) && !v4(100, 64, 0, 1) && !v4(0, 0, 0, 0) && !v4(224, 0, 0, 1) && !v4(198, 18, 0, 1))
        #expect(v4(172, 32, 0, 1), "just past 172.16/12")
        func v6(_ bytes: [UInt8]) -> Bool { NetworkAddress.isPublicIPv6(bytes) }
        let zero = [UInt8](repeating: 0, count: 16)
        #expect(!v6(zero) && !v6(Array(zero.dropLast()) + [1]))
        #expect(!v6([0xFE, 0x80] + zero.dropFirst(2)) && !v6([0xFD, 0x12] + zero.dropFirst(2)) && !v6([0xFF, 0x02] + zero.dropFirst(2)))
        #expect(v6([0x20, 0x01, 0x48, 0x60] + zero.dropFirst(4)))
        #expect(!v6(zero.prefix(10) + [0xFF, 0xFF, 127, 0, 0, 1]), "IPv4-mapped loopback")
        #expect(NetworkAddress.isLiteral("127.0.0.1") && NetworkAddress.isLiteral("::1") && !NetworkAddress.isLiteral("push.example"))
    }
}
