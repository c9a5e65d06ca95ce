extension IRCMessage {
    /// The line as bytes, ending in CR LF. The part after the tags is cut to 512 bytes
    /// at a UTF-8 character boundary; CR, LF and NUL inside the source, the command or a
    /// parameter become spaces, so nothing can smuggle in a second line.
    public func serialized() -> [UInt8] { serialized(maxBodyBytes: IRCLimits.lineBytes - 2) }

    /// The same with another cut: lines between servers may be longer than a client's.
    public func serialized(maxBodyBytes: Int) -> [UInt8] {
        var out: [UInt8] = []
        // Room for the whole line (an estimate that fell short grew every line's array once).
        var size = 16 + (source?.utf8.count ?? 0) + command.utf8.count
        for param in params { size += param.utf8.count + 2 }
        for tag in tags { size += tag.key.utf8.count + tag.value.utf8.count + 4 }
        out.reserveCapacity(size)
        IRCMessage.appendTags(tags, to: &out)
        let bodyStart = out.count
        if let source {
            out.append(UInt8(ascii: ":"))
            IRCMessage.appendOneLine(source, to: &out)
            out.append(UInt8(ascii: " "))
        }
        IRCMessage.appendOneLine(command, to: &out)
        let textLast = !params.isEmpty && lastParamIsText
        for (i, param) in params.enumerated() {
            out.append(UInt8(ascii: " "))
            let isLast = i == params.count - 1
            // CR, LF and NUL become spaces below, so they too call for the trailing form.
            // One scan for what matters: a space (the trailing form) and CR, LF or NUL (replaced).
            var hasSpace = false
            var hasBreak = false
            func scan(_ bytes: some Sequence<UInt8>) {
                for byte in bytes where byte <= 32 {
                    if byte == 32 { hasSpace = true } else if byte == 13 || byte == 10 || byte == 0 { hasBreak = true }
                }
            }
            // A message's text takes the trailing form anyway: only a CR, LF or NUL matters there,
            // looked for eight bytes at a time first (byte by byte it was ~5 instructions a byte).
            // The scan goes over the string's own bytes when it has them contiguous, as native
            // strings do: far cheaper than stepping through its UTF-8 view.
            if !(isLast && textLast) || IRCMessage.mayHoldBreak(param),
               param.utf8.withContiguousStorageIfAvailable({ scan($0) }) == nil {
                scan(param.utf8)
            }
            if isLast && (textLast || param.isEmpty || param.utf8.first == UInt8(ascii: ":") || hasSpace || hasBreak) {
                out.append(UInt8(ascii: ":"))
            }
            // An empty parameter before the last would shift every later one: it is written `*`.
            if param.isEmpty && !isLast { out.append(UInt8(ascii: "*")) }
            if hasBreak {
                for byte in param.utf8 {
                    out.append(byte == 13 || byte == 10 || byte == 0 ? UInt8(ascii: " ") : byte)
                }
            } else {
                IRCMessage.appendUTF8(param, to: &out)
            }
        }
        IRCMessage.endLine(&out, bodyStart: bodyStart, maxBodyBytes: maxBodyBytes)
        return out
    }

    /// Whether `text` may hold a CR, LF or NUL: false when none of its bytes is below 14 (eight
    /// bytes at a time; `(x - 0x0E…) & ~x & 0x80…` is non-zero exactly when some byte of x is).
    static func mayHoldBreak(_ text: String) -> Bool {
        let found: Bool? = text.utf8.withContiguousStorageIfAvailable { bytes in
            let raw = UnsafeRawBufferPointer(bytes)
            let count = raw.count
            var i = 0
            while i + 8 <= count {
                let word = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                if (word &- 0x0E0E_0E0E_0E0E_0E0E) & ~word & 0x8080_8080_8080_8080 != 0 { return true }
                i += 8
            }
            while i < count {
                if raw[i] < 14 { return true }
                i += 1
            }
            return false
        }
        return found ?? true
    }

    /// A source or a command, with CR, LF and NUL made spaces like a parameter's: whatever a
    /// message holds, it is written as one line (the irc fuzz target found a source with LF).
    static func appendOneLine(_ text: String, to out: inout [UInt8]) {
        // Over the string's own bytes (a native string's, small ones too): stepping through its
        // UTF-8 view cost some 800 instructions for a 30-byte source.
        let done: Bool? = text.utf8.withContiguousStorageIfAvailable { bytes in
            guard !bytes.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) else { return false }
            out.append(contentsOf: bytes)
            return true
        }
        if done == true { return }
        for byte in text.utf8 { out.append(byte == 13 || byte == 10 || byte == 0 ? UInt8(ascii: " ") : byte) }
    }

    /// A string's UTF-8 appended from its contiguous bytes when it has them (native strings do).
    @inline(__always)
    public static func appendUTF8(_ text: String, to out: inout [UInt8]) {
        if text.utf8.withContiguousStorageIfAvailable({ out.append(contentsOf: $0) }) == nil { out.append(contentsOf: text.utf8) }
    }

    /// Cuts the body (from `bodyStart`) to 512 bytes with its line ending, at a UTF-8 character
    /// boundary, and ends the line with CR LF.
    public static func endLine(_ out: inout [UInt8], bodyStart: Int, maxBodyBytes: Int = IRCLimits.lineBytes - 2) {
        let limit = bodyStart + maxBodyBytes
        if out.count > limit { out.removeSubrange(UTF8Boundary.cut(out, at: limit)...) }
        out.append(13)
        out.append(10)
    }

    /// `@key=value;key ` (escaped, with the space before the body); nothing for no tags.
    public static func appendTags(_ tags: [IRCTag], to out: inout [UInt8]) {
        guard !tags.isEmpty else { return }
        out.append(UInt8(ascii: "@"))
        for (i, tag) in tags.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ";")) }
            appendUTF8(tag.key, to: &out)
            if !tag.value.isEmpty {
                out.append(UInt8(ascii: "="))
                IRCTagCoding.appendEscaped(tag.value, to: &out)
            }
        }
        out.append(UInt8(ascii: " "))
    }

    /// Numerics and text-carrying commands always send their last parameter in the trailing
    /// form, as most servers do; naive clients that split on " :" then read them right.
    var lastParamIsText: Bool {
        guard params.count >= 2 || command == "QUIT" || command == "ERROR" || command == "AWAY" else { return false }
        switch command {
        case "PRIVMSG", "NOTICE", "PART", "QUIT", "KICK", "TOPIC", "AWAY", "ERROR", "KILL", "WALLOPS", "SETNAME": return true
        default:
            return command.utf8.count == 3 && command.utf8.allSatisfy { $0 >= 48 && $0 <= 57 }
                && !IRCMessage.numericsEndingInAWord.contains(command)
        }
    }

    /// Numerics whose last parameter is a mode string, a number or a word, not a sentence.
    static let numericsEndingInAWord: Set<String> = ["004", "221", "324", "329", "333", "336", "341", "346", "348", "367"]

    /// The line as text without the line ending, for logs and tests.
    public var line: String {
        let bytes = serialized()
        return String(decoding: bytes.dropLast(2), as: UTF8.self)
    }
}

/// Cutting byte strings without splitting a UTF-8 character.
public enum UTF8Boundary {
    /// The largest index `<= limit` that does not fall inside a multi-byte character of `bytes`.
    public static func cut(_ bytes: [UInt8], at limit: Int) -> Int {
        guard limit < bytes.count else { return bytes.count }
        var index = max(limit, 0)
        // bytes[index] is the first byte left out; while it continues a character, leave that character out whole.
        while index > 0 && (bytes[index] & 0xC0) == 0x80 { index -= 1 }
        return index
    }

    /// The longest prefix of `text` that fits in `maxBytes` bytes of UTF-8, cut between characters.
    public static func prefix(_ text: String, maxBytes: Int) -> String {
        if text.utf8.count <= maxBytes { return text }
        var count = 0
        var result = ""
        for character in text {
            let size = character.utf8.count
            if count + size > maxBytes { break }
            count += size
            result.append(character)
        }
        return result
    }
}
