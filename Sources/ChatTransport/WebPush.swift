import COpenSSL
import IRCWire

/// Base64 with the URL-safe alphabet and no padding (RFC 4648 §5), as Web Push spells keys.
public enum Base64URL {
    public static func encode(_ bytes: [UInt8]) -> String {
        var text = Base64.encode(bytes)
        while text.last == "=" { text.removeLast() }
        return String(text.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
    }

    /// Padding is optional; `+` and `/` are refused (a standard base64 string is not this).
    public static func decode(_ text: String) -> [UInt8]? {
        guard !text.contains("+"), !text.contains("/"), !text.contains("=") || text.hasSuffix("=") else { return nil }
        var standard = String(text.filter { $0 != "=" }.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return Base64.decode(standard)
    }
}

/// A P-256 key pair as bytes: the private scalar (32) and the public point, uncompressed (65).
public struct P256KeyPair: Sendable, Equatable {
    public let privateKey: [UInt8]
    public let publicKey: [UInt8]

    /// A new random key pair (nil only if OpenSSL fails).
    public static func generate() -> P256KeyPair? {
        var scalar = [UInt8](repeating: 0, count: 32), point = [UInt8](repeating: 0, count: 65)
        guard chat_p256_generate(&scalar, &point) == 1 else { return nil }
        return P256KeyPair(privateKey: scalar, publicKey: point)
    }

    /// The pair of a private scalar (nil when it is not one).
    public init?(privateKey: [UInt8]) {
        guard privateKey.count == 32 else { return nil }
        var point = [UInt8](repeating: 0, count: 65)
        guard chat_p256_public(privateKey, &point) == 1 else { return nil }
        self.init(privateKey: privateKey, publicKey: point)
    }

    init(privateKey: [UInt8], publicKey: [UInt8]) {
        self.privateKey = privateKey
        self.publicKey = publicKey
    }

    /// ECDH with a peer's public point (nil when it is not a point of the curve).
    public func sharedSecret(with peer: [UInt8]) -> [UInt8]? {
        guard peer.count == 65, peer.first == 4 else { return nil }
        var secret = [UInt8](repeating: 0, count: 32)
        guard chat_p256_ecdh(privateKey, publicKey, peer, &secret) == 1 else { return nil }
        return secret
    }

    /// ES256: an ECDSA signature over SHA-256, r and s of 32 bytes each.
    public func sign(_ message: [UInt8]) -> [UInt8]? {
        var signature = [UInt8](repeating: 0, count: 64)
        guard chat_p256_sign(privateKey, message, message.count, &signature) == 1 else { return nil }
        return signature
    }

    /// Whether `signature` (r || s) signs `message` for the public point `publicKey`.
    public static func verify(_ signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        signature.count == 64 && publicKey.count == 65 && chat_p256_verify(publicKey, message, message.count, signature) == 1
    }
}

/// Message encryption for Web Push (RFC 8291): the `aes128gcm` content coding (RFC 8188) of one
/// record, keyed by ECDH between a fresh sender key and the subscription's key, and its
/// authentication secret.
public enum WebPushEncryption {
    /// HKDF-SHA-256 (RFC 5869), at most 32 bytes out.
    static func hkdf(salt: [UInt8], ikm: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        let prk = Crypto.hmacSHA256(key: salt, ikm)
        return Array(Crypto.hmacSHA256(key: prk, info + [1]).prefix(length))
    }

    /// The body to POST: salt, record size, the sender's public key, then the sealed record
    /// (the plaintext, the last-record delimiter 2, and `padding` zero bytes). Nil when the
    /// subscription's key or secret is not usable.
    public static func encrypt(_ plaintext: [UInt8], subscriberKey: [UInt8], authSecret: [UInt8],
                               sender: P256KeyPair? = P256KeyPair.generate(), salt: [UInt8] = Crypto.randomBytes(16),
                               padding: Int = 0) -> [UInt8]? {
        guard let sender, authSecret.count == 16, salt.count == 16, let secret = sender.sharedSecret(with: subscriberKey) else { return nil }
        let keyInfo = Array("WebPush: info".utf8) + [0] + subscriberKey + sender.publicKey
        let ikm = hkdf(salt: authSecret, ikm: secret, info: keyInfo, length: 32)
        let key = hkdf(salt: salt, ikm: ikm, info: Array("Content-Encoding: aes128gcm".utf8) + [0], length: 16)
        let nonce = hkdf(salt: salt, ikm: ikm, info: Array("Content-Encoding: nonce".utf8) + [0], length: 12)
        let record = plaintext + [2] + [UInt8](repeating: 0, count: max(0, padding))
        let recordSize = UInt32(4096)
        guard record.count + 16 <= Int(recordSize) else { return nil }
        var sealed = [UInt8](repeating: 0, count: record.count + 16)
        guard chat_aes128gcm_seal(key, nonce, record, Int32(record.count), &sealed) == 1 else { return nil }
        let size = [UInt8(recordSize >> 24), UInt8(recordSize >> 16 & 0xFF), UInt8(recordSize >> 8 & 0xFF), UInt8(recordSize & 0xFF)]
        return salt + size + [UInt8(sender.publicKey.count)] + sender.publicKey + sealed
    }
}

/// Voluntary Application Server Identification (RFC 8292): a JWT signed with ES256 for the
/// push service's origin, and the `Authorization: vapid t=…, k=…` header that carries it.
public enum VAPID {
    /// The JWT: audience the push service's origin (`https://host[:port]`), expiry in Unix
    /// seconds (at most 24 hours ahead), subject a contact (`mailto:` or `https:`).
    public static func token(audience: String, expires: Int, subject: String, key: P256KeyPair) -> String? {
        let header = Base64URL.encode(Array("{\"typ\":\"JWT\",\"alg\":\"ES256\"}".utf8))
        let claims = "{\"aud\":\(JSONString.quoted(audience)),\"exp\":\(expires),\"sub\":\(JSONString.quoted(subject))}"
        let signingInput = header + "." + Base64URL.encode(Array(claims.utf8))
        guard let signature = key.sign(Array(signingInput.utf8)) else { return nil }
        return signingInput + "." + Base64URL.encode(signature)
    }

    public static func authorization(token: String, key: P256KeyPair) -> String {
        "vapid t=\(token), k=\(Base64URL.encode(key.publicKey))"
    }
}

/// A JSON string literal (quotes, backslashes and controls escaped).
enum JSONString {
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
