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
