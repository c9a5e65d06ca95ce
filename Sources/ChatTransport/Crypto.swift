import COpenSSL
import CSystem
#if canImport(Glibc)
import Glibc
#endif

/// Hashes and key derivation from OpenSSL: SHA-256 (file checksums, certificate fingerprints),
/// HMAC-SHA-256 and PBKDF2-HMAC-SHA-256 (password hashes, SCRAM), random bytes, and a
/// comparison that takes the same time whatever matches.
public struct SHA256Hasher: ~Copyable {
    private let context: OpaquePointer

    public init() {
        context = EVP_MD_CTX_new()
        EVP_DigestInit_ex(context, EVP_sha256(), nil)
    }

    deinit { EVP_MD_CTX_free(context) }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        EVP_DigestUpdate(context, base, bytes.count)
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The digest (32 bytes); the hasher starts over afterwards.
    public mutating func finalize() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var size: UInt32 = 0
        EVP_DigestFinal_ex(context, &digest, &size)
        EVP_DigestInit_ex(context, EVP_sha256(), nil)
        return digest
    }
}

public enum Crypto {
    /// SHA-1: only where a protocol names it (the WebSocket handshake's accept key), never for security.
    public static func sha1(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 20)
        var size: UInt32 = 0
        _ = bytes.withUnsafeBytes { b in EVP_Digest(b.baseAddress, b.count, &digest, &size, EVP_sha1(), nil) }
        return digest
    }

    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var hasher = SHA256Hasher()
        hasher.update(bytes)
        return hasher.finalize()
    }

    public static func hmacSHA256(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var size: UInt32 = 0
        _ = key.withUnsafeBytes { k in
            message.withUnsafeBytes { m in
                HMAC(EVP_sha256(), k.baseAddress, Int32(k.count), m.bindMemory(to: UInt8.self).baseAddress, m.count, &digest, &size)
            }
        }
        return digest
    }

    /// PBKDF2-HMAC-SHA-256 (RFC 8018), `length` bytes.
    public static func pbkdf2SHA256(password: [UInt8], salt: [UInt8], iterations: Int, length: Int = 32) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: length)
        password.withUnsafeBytes { p in
            salt.withUnsafeBytes { s in
                _ = PKCS5_PBKDF2_HMAC(p.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(p.count),
                                      s.bindMemory(to: UInt8.self).baseAddress, Int32(s.count), Int32(iterations), EVP_sha256(), Int32(length), &out)
            }
        }
        return out
    }

    /// From the kernel (getrandom(2)): the server asks for a secret as it starts, and a server
    /// without TLS need not bring up OpenSSL's generator (its providers and DRBG) for it. Where
    /// getrandom is missing (an old kernel, a seccomp sandbox), OpenSSL's generator fills the rest.
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return out }
        out.withUnsafeMutableBytes { buffer in
            var filled = 0
            while filled < count {
                let got = csystem_getrandom(buffer.baseAddress! + filled, UInt(count - filled))
                if got > 0 {
                    filled += Int(got)
                } else if got < 0 && errno == EINTR {
                    continue
                } else {
                    let rest = UnsafeMutableRawBufferPointer(rebasing: buffer[filled...])
                    guard RAND_bytes(rest.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(rest.count)) == 1 else {
                        fatalError("no random bytes: getrandom and OpenSSL both failed")
                    }
                    filled = count
                }
            }
        }
        return out
    }

    /// Equal bytes, compared in time that depends only on the length.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, a.count) == 0 } }
    }

    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func unhex(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        var index = 0
        while index < chars.count {
            guard let high = value(chars[index]), let low = value(chars[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    private static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
