#if canImport(Glibc)
import Glibc
#endif
import IRCWire

/// Where a DCC offer asks us to connect, set against where its sender connects from.
enum OfferAddress {
    enum Kind: Equatable { case loopback, privateNetwork, publicNetwork, notAnAddress }

    static func kind(_ text: String) -> Kind {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            let value = UInt32(bigEndian: v4.s_addr)
            let a = value >> 24, b = (value >> 16) & 0xFF
            if a == 127 { return .loopback }
            if a == 10 || a == 0 || (a == 172 && (16...31).contains(b)) || (a == 192 && b == 168) || (a == 169 && b == 254)
                || (a == 100 && (64...127).contains(b)) {
                return .privateNetwork
            }
            return .publicNetwork
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            let bytes = withUnsafeBytes(of: v6) { Array($0) }
            if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return .loopback }
            // ::ffff:a.b.c.d is the IPv4 address a.b.c.d.
            if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
                return kind("\(bytes[12]).\(bytes[13]).\(bytes[14]).\(bytes[15])")
            }
            if bytes[0] & 0xFE == 0xFC || (bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80) { return .privateNetwork }
            return .publicNetwork
        }
        return .notAnAddress
    }

    /// Why an offer's address deserves a second look, or nil: it points somewhere other than the
    /// sender's own address, or inside our machine or network while the sender is outside it.
    static func warning(offered: String, sender: String?, nick: String) -> String? {
        let offeredKind = kind(offered)
        let shownOffer = PlainText.visible(offered)
        guard let sender, !sender.isEmpty else {
            return offeredKind == .loopback ? "it points at \(shownOffer), this machine" : nil
        }
        let senderKind = kind(sender)
        let shownSender = PlainText.visible(sender)
        let inward = (offeredKind == .loopback && senderKind != .loopback)
            || (offeredKind == .privateNetwork && senderKind == .publicNetwork)
        if inward {
            return "it points at \(shownOffer) (\(offeredKind == .loopback ? "this machine" : "a private network")), but \(nick) connects from \(shownSender)"
        }
        // Both on this machine (127.0.0.1 against ::1): nothing to tell.
        if offeredKind == .loopback && senderKind == .loopback { return nil }
        // A sender behind a host name or a cloak has no address to compare with.
        if senderKind != .notAnAddress && offeredKind != .notAnAddress && !sameAddress(offered, sender) {
            return "it points at \(shownOffer), but \(nick) connects from \(shownSender)"
        }
        return nil
    }

    static func sameAddress(_ a: String, _ b: String) -> Bool {
        func normalised(_ s: String) -> String { s.hasPrefix("0::") ? String(s.dropFirst()) : s.lowercased() }
        return normalised(a) == normalised(b)
    }
}
