/// The tokens of `005 RPL_ISUPPORT`, as a client reads them and a server advertises them.
public struct ISupport: Sendable, Equatable {
    /// Token name to value (empty for a token without one), in the order they arrived.
    public private(set) var tokens: [(name: String, value: String)] = []

    public init() {}

    public init(_ tokens: [(String, String)]) {
        for (name, value) in tokens { set(name, value) }
    }

    public static func == (a: ISupport, b: ISupport) -> Bool {
        a.tokens.elementsEqual(b.tokens) { $0.name == $1.name && $0.value == $1.value }
    }

    public subscript(name: String) -> String? {
        tokens.first(where: { $0.name == name })?.value
    }

    public mutating func set(_ name: String, _ value: String = "") {
        if let i = tokens.firstIndex(where: { $0.name == name }) {
            tokens[i].value = value
        } else {
            tokens.append((name, value))
        }
    }

    /// Folds in the parameters of one 005 line (`<client> TOKEN TOKEN=value -TOKEN :are supported`).
    public mutating func apply(_ message: IRCMessage) {
        guard message.params.count > 2 else { return }
        for raw in message.params.dropFirst().dropLast() {
            if raw.hasPrefix("-") {
                let name = String(raw.dropFirst())
                tokens.removeAll { $0.name == name }
            } else if let eq = raw.firstIndex(of: "=") {
                set(String(raw[..<eq]), ISupport.unescapeValue(String(raw[raw.index(after: eq)...])))
            } else {
                set(raw)
            }
        }
    }

    /// The tokens as 005 parameter strings, for a server to send (at most 13 to a line).
    public var parameterStrings: [String] {
        tokens.map { $0.value.isEmpty ? $0.name : "\($0.name)=\($0.value)" }
    }

    public var casemapping: Casemapping { Casemapping(token: self["CASEMAPPING"] ?? "rfc1459") }

    public var channelTypes: String { self["CHANTYPES"] ?? "#&" }

    /// `PREFIX=(ov)@+` as (mode, symbol) pairs, highest rank first.
    public var prefixes: [(mode: Character, symbol: Character)] {
        guard let raw = self["PREFIX"] else { return [("o", "@"), ("v", "+")] }
        guard raw.hasPrefix("("), let close = raw.firstIndex(of: ")") else { return [] }
        let modes = raw[raw.index(after: raw.startIndex)..<close]
        let symbols = raw[raw.index(after: close)...]
        return Array(zip(modes, symbols))
    }

    public var nickLength: Int? { self["NICKLEN"].flatMap { Int($0) } }

    /// ISUPPORT values escape unsafe bytes as `\xHH`.
    static func unescapeValue(_ value: String) -> String {
        guard value.contains("\\x") else { return value }
        var bytes: [UInt8] = []
        let raw = Array(value.utf8)
        var i = 0
        while i < raw.count {
            if raw[i] == 92, i + 3 < raw.count, raw[i + 1] == UInt8(ascii: "x"),
               let byte = UInt8(String(decoding: raw[(i + 2)...(i + 3)], as: UTF8.self), radix: 16) {
                bytes.append(byte)
                i += 4
            } else {
                bytes.append(raw[i])
                i += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
