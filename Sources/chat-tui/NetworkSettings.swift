import ChatTransport

/// `HOST`, `HOST:PORT`, `[IPV6]:PORT` as `--host` and `/connect` take them. A bare IPv6
/// address (two colons or more, no brackets) is a host without a port.
struct HostPort: Equatable, Sendable {
    var host: String
    var port: Int?

    static func parse(_ text: String, what: String = "--host") throws(Arguments.Problem) -> HostPort {
        func problem(_ why: String) -> Arguments.Problem { Arguments.Problem(description: "\(what) \(text): \(why)") }
        func port(_ digits: Substring) throws(Arguments.Problem) -> Int {
            guard let number = Int(digits), (1...65535).contains(number), digits.allSatisfy(\.isASCII) else {
                throw problem("the port after the colon must be a number from 1 to 65535")
            }
            return number
        }
        guard !text.isEmpty else { throw Arguments.Problem(description: "\(what) needs a host name or address (HOST, HOST:PORT or [IPV6]:PORT)") }
        guard !text.contains(where: { $0.isWhitespace }) else { throw problem("a host has no spaces") }
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw problem("no ] after the IPv6 address") }
            let address = text[text.index(after: text.startIndex)..<close]
            guard address.contains(":") else { throw problem("brackets are for an IPv6 address, as in [::1]:6697") }
            let after = text[text.index(after: close)...]
            if after.isEmpty { return HostPort(host: String(address), port: nil) }
            guard after.hasPrefix(":") else { throw problem("after ] comes :PORT or nothing") }
            return HostPort(host: String(address), port: try port(after.dropFirst()))
        }
        let colons = text.count { $0 == ":" }
        if colons >= 2 {
            // An IPv6 address alone; with a port it needs brackets.
            let zone = text.firstIndex(of: "%") ?? text.endIndex
            guard text[..<zone].allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }),
                  text[zone...].dropFirst().allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." }) else {
                throw problem("an IPv6 address with a port is written [ADDRESS]:PORT")
            }
            return HostPort(host: text, port: nil)
        }
        guard colons == 1 else { return HostPort(host: text, port: nil) }
        let colon = text.firstIndex(of: ":")!
        guard colon != text.startIndex else { throw problem("no host before the colon") }
        return HostPort(host: String(text[..<colon]), port: try port(text[text.index(after: colon)...]))
    }

    /// As typed: `host`, `host:port`, `[v6]:port`.
    var text: String {
        guard let port else { return host }
        return (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
    }
}

/// One network to join: from a `--host` or a `[network NAME]` section of the config file. What
/// it leaves nil is the command line's (or the file's top part's) default for every network.
struct NetworkSettings: Equatable, Sendable {
    var name: String
    var address: HostPort
    var port: Int?
    var tls: Bool?
    var tlsFingerprint: String?
    var nick: String?
    var saslUser: String?
    var saslPassword: String?
    var rooms: [String]?

    /// The settings a `[network NAME]` section may have (the flags' names).
    static let keys = ["host", "port", "tls", "tls-fingerprint", "nick", "sasl-user", "sasl-password", "join"]

    /// A section's `name = value` lines, each checked as its flag is.
    static func section(_ name: String, _ settings: [(key: String, value: String)], where place: String) throws(Arguments.Problem) -> NetworkSettings {
        var flags: [String] = []
        var tls: Bool?
        for (key, value) in settings {
            guard keys.contains(key) else {
                throw Arguments.Problem(description: "\(place): \(key) is not a network setting (\(keys.joined(separator: ", ")))")
            }
            if key == "tls" {
                guard let on = Arguments.truth(value) else { throw Arguments.Problem(description: "\(place): tls needs true or false, not \(value)") }
                tls = on
            } else {
                flags += ["--" + key, value]
            }
        }
        guard flags.contains("--host") else { throw Arguments.Problem(description: "\(place): a network needs host = HOST") }
        let parsed: Arguments
        do {
            parsed = try Arguments(flags)
        } catch {
            throw Arguments.Problem(description: "\(place): \(error.description)")
        }
        guard parsed.hosts.count == 1 else { throw Arguments.Problem(description: "\(place): one host per network") }
        return NetworkSettings(name: name, address: parsed.hosts[0], port: parsed.portGiven ? parsed.port : nil,
                               tls: tls ?? (parsed.tlsFingerprint != nil ? true : nil), tlsFingerprint: parsed.tlsFingerprint,
                               nick: parsed.nick, saslUser: parsed.saslUser, saslPassword: parsed.saslPassword,
                               rooms: flags.contains("--join") ? parsed.rooms : nil)
    }

    /// The network `/connect HOST[:PORT]` adds, named by its host (or `host:port` when a network
    /// already has that name).
    static func adding(_ word: String, to names: [String]) throws(Arguments.Problem) -> NetworkSettings {
        let address = try HostPort.parse(word, what: "/connect")
        let taken = names.contains { $0.lowercased() == address.host.lowercased() }
        let name = taken ? HostPort(host: address.host, port: address.port ?? 6667).text : address.host
        return NetworkSettings(name: name, address: address)
    }

    /// Networks for the `--host` flags: each named by its host, or `host:port` when two share a host.
    static func fromHosts(_ hosts: [HostPort], defaultPort: Int) throws(Arguments.Problem) -> [NetworkSettings] {
        var seen = Set<String>()
        var networks: [NetworkSettings] = []
        for address in hosts {
            let full = HostPort(host: address.host, port: address.port ?? defaultPort)
            guard seen.insert(full.text.lowercased()).inserted else {
                throw Arguments.Problem(description: "--host \(address.text) is given twice")
            }
            let shared = hosts.count { $0.host.lowercased() == address.host.lowercased() } > 1
            networks.append(NetworkSettings(name: shared ? full.text : address.host, address: address))
        }
        return networks
    }
}
