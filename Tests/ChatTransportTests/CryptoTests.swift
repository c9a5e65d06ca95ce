import Testing
import ChatTransport

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
}
