/// Percent-encoding for the few URLs the client and server write (an uploaded file's name in its
/// link and in a Content-Disposition): everything but RFC 3986's unreserved characters is escaped.
public enum URLText {
    public static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let unreserved = (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == 0x2D || byte == 0x2E || byte == 0x5F || byte == 0x7E
            if unreserved { out.unicodeScalars.append(Unicode.Scalar(byte)) } else {
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out
    }
}
