/// Server and user identities on a linked network, in InspIRCd's scheme: a server ID (SID) is
/// a digit and two letters or digits (`0AB`), a user's UUID its server's SID and six more
/// (`0ABAAAAAC`), so every node names a user the same way and knows which server it lives on.
public enum LinkIDs {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)

    /// A digit, then two of A–Z and 0–9.
    public static func isValidSID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 3, bytes[0] >= 48 && bytes[0] <= 57 else { return false }
        return bytes[1...].allSatisfy(isIDCharacter)
    }

    /// A SID and six of A–Z and 0–9.
    public static func isValidUUID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 9, isValidSID(String(decoding: bytes[0..<3], as: UTF8.self)) else { return false }
        return bytes[3...].allSatisfy(isIDCharacter)
    }

    static func isIDCharacter(_ byte: UInt8) -> Bool { (byte >= 65 && byte <= 90) || (byte >= 48 && byte <= 57) }

    /// The SID a server takes when none is configured, made from its name as InspIRCd makes
    /// one from its name and description: stable across restarts, different between names.
    /// (Not InspIRCd's exact hash: two servers deriving the same one refuse to link, and the
    /// log says to set `--sid`.)
    public static func sid(fromName name: String) -> String {
        // FNV-1a over the name, then a digit and two characters from the hash.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        let digit = UInt8(48 + hash % 10)
        let second = alphabet[Int((hash / 10) % 36)]
        let third = alphabet[Int((hash / 360) % 36)]
        return String(decoding: [digit, second, third], as: UTF8.self)
    }

    /// The UUID of a server's `number`th user: `AAAAAA`, `AAAAAB`, … (A–Z then 0–9, as InspIRCd counts).
    public static func uuid(sid: String, number: UInt64) -> String {
        var value = number
        var digits = [UInt8](repeating: alphabet[0], count: 6)
        for i in stride(from: 5, through: 0, by: -1) {
            digits[i] = alphabet[Int(value % 36)]
            value /= 36
        }
        return sid + String(decoding: digits, as: UTF8.self)
    }

    /// A byte that differs between most SIDs (the SID as a number, modulo 256): chat-tui puts it
    /// in the msgids it mints. Two linked chat-tui servers whose SIDs give the same byte are told
    /// to pick another (`sidsShareNodeByte`).
    public static func nodeByte(_ sid: String) -> UInt8 {
        var value = 0
        for byte in sid.utf8 {
            let digit = byte >= 65 ? Int(byte - 65) + 10 : Int(byte - 48)
            value = value * 36 + digit
        }
        return UInt8(value % 256)
    }

    /// The SID part of a UUID (or the SID itself).
    public static func sid(of uuid: String) -> String { String(uuid.prefix(3)) }
}
