import Testing
import ChatTransport
import IRCWire

/// Known answers for the OpenSSL primitives chat-tui uses (the vectors the hand-written
/// SHA-256 was tested with, kept now that OpenSSL computes it).
@Suite("crypto known answers")
struct CryptoTests {
    @Test("SHA-256, FIPS 180 vectors", arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func sha256(_ text: String, _ digest: String) {
        #expect(Crypto.hex(Crypto.sha256(Array(text.utf8))) == digest)
    }

    @Test("SHA-256 of a million a's, fed in uneven pieces")
    func million() {
        var hasher = SHA256Hasher()
        var fed = 0
        var piece = 1
        while fed < 1_000_000 {
            let count = min(piece, 1_000_000 - fed)
            hasher.update([UInt8](repeating: UInt8(ascii: "a"), count: count))
            fed += count
            piece = piece * 3 % 1000 + 1
        }
        #expect(Crypto.hex(hasher.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("HMAC-SHA-256, RFC 4231 test case 2")
    func hmac() {
        #expect(Crypto.hex(Crypto.hmacSHA256(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8)))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test("PBKDF2-HMAC-SHA-256, RFC 7914 section 11 vectors", arguments: [
        ("passwd", "salt", 1, "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783"),
        ("Password", "NaCl", 80000, "4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56a1d425a1225833549adb841b51c9b3176a272bdebba1d078478f62b397f33c8d"),
    ])
    func pbkdf2(_ password: String, _ salt: String, _ iterations: Int, _ expected: String) {
        #expect(Crypto.hex(Crypto.pbkdf2SHA256(password: Array(password.utf8), salt: Array(salt.utf8), iterations: iterations, length: 64)) == expected)
    }

    @Test("constant-time comparison, hex round trip")
    func helpers() {
        #expect(Crypto.constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!Crypto.constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!Crypto.constantTimeEqual([1, 2], [1, 2, 3]))
        #expect(Crypto.unhex("00ff7A") == [0, 255, 122])
        #expect(Crypto.unhex("0g") == nil)
        #expect(Crypto.randomBytes(16).count == 16)
    }

    @Test("the SCRAM client reproduces RFC 7677's example exchange, and refuses a forged server signature")
    func scramClient() throws {
        var client = SCRAMClient(user: "user", password: "pencil", nonce: "rOprNGfwEbeRWgbNEkqO")
        #expect(client.first == "n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
        let final = try client.final(serverFirst: "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
        #expect(final == "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
        try client.verify(serverFinal: "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
        #expect(throws: SCRAMClient.Problem.serverNotVerified) { try client.verify(serverFinal: "v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=") }
        // A nonce that does not extend ours, or an absurd iteration count, is refused before any work.
        var other = SCRAMClient(user: "user", password: "pencil", nonce: "abc")
        #expect(throws: SCRAMClient.Problem.malformed("its nonce")) { try other.final(serverFirst: "r=xyz123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096") }
        #expect(throws: SCRAMClient.Problem.malformed("the iteration count")) { try other.final(serverFirst: "r=abc123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=999999999") }
        // Fuzz finding (sasl): 4,094,096 iterations passed the old bound and stalled the client for seconds.
        #expect(throws: SCRAMClient.Problem.malformed("the iteration count")) { try other.final(serverFirst: "r=abc123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4094096") }
    }

    @Test("base64 both ways, strictly", arguments: [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")])
    func base64(_ plain: String, _ encoded: String) {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(Base64.decode(encoded) == Array(plain.utf8))
    }

    @Test("base64 that is not: wrong length, foreign letters, padding in the middle")
    func base64Refusals() {
        for bad in ["Zg=", "Zm9v!A==", "Zg==Zm9v", "Z===", "Zm9v\n"] { #expect(Base64.decode(bad) == nil, "\(bad)") }
    }
}
