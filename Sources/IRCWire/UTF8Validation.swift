/// Whether bytes are well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
public enum UTF8Validation {
    public static func isValid(_ bytes: [UInt8]) -> Bool {
        // Nearly every line is ASCII: one pass finds out.
        guard bytes.contains(where: { $0 >= 0x80 }) else { return true }
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }
}
