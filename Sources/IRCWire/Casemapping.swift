/// How nicknames and room names compare, as the `CASEMAPPING` ISUPPORT token names it.
///
/// The tokens define only the ASCII range. Letters beyond it fold by their Unicode lowercase
/// mapping under every mapping, as servers that allow them (ours, ergo with PRECIS) fold them:
/// `Zoë` and `ZOË`, composed or decomposed, are one name. Our server advertises `rfc1459`
/// and folds exactly as `Casemapping.rfc1459.fold` does; our client reads the token and
/// folds the same way, so both sides agree on every name.
public enum Casemapping: String, Sendable, CaseIterable {
    /// Only A–Z fold to a–z.
    case ascii
    /// A–Z and also `[]\^` fold to `{}|~`, as in RFC 1459 (the default of most servers).
    case rfc1459
    /// A–Z and `[]\` fold to `{}|`, but `^` and `~` stay apart.
    case strictRFC1459 = "strict-rfc1459"

    public init(token: String) {
        self = Casemapping(rawValue: token.lowercased()) ?? .rfc1459
    }

    /// The folded form of `name`: two names are the same when their folded forms are equal.
    public func fold(_ name: String) -> String {
        // Most names are already folded (lookups of names as the server keeps them): the name
        // itself, with nothing made.
        // Over the string's own bytes where it has them: through its UTF-8 view this check
        // cost 370 instructions for `#lobby`, twice for every message to a room.
        let isFolded = name.utf8.withContiguousStorageIfAvailable { $0.allSatisfy { $0 < 0x80 && foldASCII($0) == $0 } }
            ?? name.utf8.allSatisfy { $0 < 0x80 && foldASCII($0) == $0 }
        if isFolded { return name }
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

    public func equal(_ a: String, _ b: String) -> Bool { fold(a) == fold(b) }

    /// False when no run of `text` can fold to `folded` (an already folded name): `text`'s bytes,
    /// folded, do not hold it. A test over bytes before a walk over the text's words by
    /// character (a client's "does this line mention me", 41,000 instructions a line walked).
    /// Always true for a name that is not ASCII, and for a text holding the one character that
    /// folds to an ASCII letter from outside ASCII (U+212A KELVIN SIGN, to `k`).
    public func mayHold(_ folded: String, in text: String) -> Bool {
        let needle = Array(folded.utf8)
        guard !needle.isEmpty, needle.allSatisfy({ $0 < 0x80 }) else { return true }
        func search(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
            guard bytes.count >= needle.count else { return false }
            for start in 0...(bytes.count - needle.count) {
                if bytes[start] == 0xE2 && start + 2 < bytes.count && bytes[start + 1] == 0x84 && bytes[start + 2] == 0xAA { return true }
                var matched = true
                for offset in 0..<needle.count where foldASCII(bytes[start + offset]) != needle[offset] {
                    matched = false
                    break
                }
                if matched { return true }
            }
            // (The Kelvin sign in the last bytes, past the last start a match could have.)
            for start in (bytes.count - needle.count + 1)..<bytes.count where bytes[start] == 0xE2 {
                if start + 2 < bytes.count && bytes[start + 1] == 0x84 && bytes[start + 2] == 0xAA { return true }
            }
            return false
        }
        if let found = text.utf8.withContiguousStorageIfAvailable(search) { return found }
        return Array(text.utf8).withUnsafeBufferPointer(search)
    }

    @inline(__always)
    private func foldASCII(_ byte: UInt8) -> UInt8 {
        switch byte {
        case 65...90: return byte + 32
        case 91...93 where self != .ascii: return byte + 32 // [ \ ] -> { | }
        case 94 where self == .rfc1459: return byte + 32 // ^ -> ~
        default: return byte
        }
    }
}
