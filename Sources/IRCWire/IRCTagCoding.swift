/// Escaping of tag values as the message-tags specification defines it.
public enum IRCTagCoding {
    /// Parses the tags section without its leading `@`.
    public static func parse(_ raw: some Collection<UInt8>) -> [IRCTag] {
        var tags: [IRCTag] = []
        for item in raw.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: true) {
            if let eq = item.firstIndex(of: UInt8(ascii: "=")) {
                guard isValidKey(item[item.startIndex..<eq]) else { continue }
                let key = String(decoding: item[item.startIndex..<eq], as: UTF8.self)
                tags.append(IRCTag(key, unescape(item[item.index(after: eq)...])))
            } else if isValidKey(item) {
                tags.append(IRCTag(String(decoding: item, as: UTF8.self)))
            }
        }
        return tags
    }

    /// A key is `[+][vendor/]name`: the name letters, digits and hyphens, the vendor a host
    /// name. Anything else (a CR, an ESC, a space's escape) is dropped with its value.
    public static func isValidKey(_ key: some Collection<UInt8>) -> Bool {
        var bytes = Array(key)[...]
        if bytes.first == UInt8(ascii: "+") { bytes = bytes.dropFirst() }
        guard !bytes.isEmpty else { return false }
        var slashes = 0
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"): continue
            case UInt8(ascii: "."): continue
            case UInt8(ascii: "/"): slashes += 1
            default: return false
            }
        }
        // A dot belongs to the vendor only; the name after the last slash has none.
        guard slashes <= 1, bytes.last != UInt8(ascii: "/") else { return false }
        let name = bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).last ?? bytes
        return !name.isEmpty && !name.contains(UInt8(ascii: "."))
    }

    /// `\:` is `;`, `\s` a space, `\\` a backslash, `\r` and `\n` CR and LF; any other escaped
    /// character stands for itself and a trailing lone backslash is dropped.
    public static func unescape(_ raw: some Collection<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var escaping = false
        for byte in raw {
            if escaping {
                switch byte {
                case UInt8(ascii: ":"): out.append(UInt8(ascii: ";"))
                case UInt8(ascii: "s"): out.append(UInt8(ascii: " "))
                case UInt8(ascii: "r"): out.append(13)
                case UInt8(ascii: "n"): out.append(10)
                default: out.append(byte)
                }
                escaping = false
            } else if byte == UInt8(ascii: "\\") {
                escaping = true
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func escape(_ value: String) -> String {
        var out: [UInt8] = []
        appendEscaped(value, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    static func appendEscaped(_ value: String, to out: inout [UInt8]) {
        // Most values (times, msgids, accounts) need no escape: their bytes go as they are.
        let plain: Bool? = value.utf8.withContiguousStorageIfAvailable { bytes in
            guard !bytes.contains(where: { $0 == UInt8(ascii: ";") || $0 == UInt8(ascii: " ") || $0 == 92 || $0 == 13 || $0 == 10 || $0 == 0 })
            else { return false }
            out.append(contentsOf: bytes)
            return true
        }
        if plain == true { return }
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: ";"): out.append(92); out.append(UInt8(ascii: ":"))
            case UInt8(ascii: " "): out.append(92); out.append(UInt8(ascii: "s"))
            case 92: out.append(92); out.append(92)
            case 13: out.append(92); out.append(UInt8(ascii: "r"))
            case 10: out.append(92); out.append(UInt8(ascii: "n"))
            case 0: break
            default: out.append(byte)
            }
        }
    }
}
