/// How nicknames and room names compare, as the `CASEMAPPING` ISUPPORT token names it.
public enum Casemapping: String, Sendable, CaseIterable {
    /// Only A–Z fold to a–z.
    case ascii
    /// A–Z and also `[]\^` fold to `{}|~`, as in RFC 1459.
    case rfc1459
    /// As `rfc1459` for ASCII, and Unicode lower-casing for every other letter, so that
    /// `Zoë` and `ZOË` (in any Unicode normalisation) are one name. This is what our server uses;
    /// it advertises `rfc1459`, which agrees with it on every ASCII name.
    case unicode

    public init(token: String) {
        self = Casemapping(rawValue: token.lowercased()) ?? .rfc1459
    }

    /// The folded form of `name`: two names are the same when their folded forms are equal.
    public func fold(_ name: String) -> String {
        var isASCII = true
        var bytes: [UInt8] = []
        bytes.reserveCapacity(name.utf8.count)
        for byte in name.utf8 {
            if byte >= 0x80 { isASCII = false; break }
            bytes.append(foldASCII(byte))
        }
        if isASCII { return String(decoding: bytes, as: UTF8.self) }
        // Swift strings compare and hash by canonical equivalence, so a composed and a
        // decomposed `ë` are already one key; only case is left to fold.
        switch self {
        case .ascii, .rfc1459:
            return String(String.UnicodeScalarView(name.unicodeScalars.map { scalar in
                scalar.isASCII ? Unicode.Scalar(foldASCII(UInt8(scalar.value))) : scalar
            }))
        case .unicode:
            var folded = ""
            for scalar in name.unicodeScalars {
                if scalar.isASCII {
                    folded.unicodeScalars.append(Unicode.Scalar(foldASCII(UInt8(scalar.value))))
                } else {
                    folded += scalar.properties.lowercaseMapping
                }
            }
            return folded
        }
    }

    public func equal(_ a: String, _ b: String) -> Bool { fold(a) == fold(b) }

    @inline(__always)
    private func foldASCII(_ byte: UInt8) -> UInt8 {
        switch byte {
        case 65...90: return byte + 32
        case 91...94 where self != .ascii: return byte + 32 // [ \ ] ^ -> { | } ~
        default: return byte
        }
    }
}
