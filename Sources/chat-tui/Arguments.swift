import ChatLink
import ChatTransport
import ChatClientKit
import ChatServerKit
import ChatUI
import IRCWire

/// The command line, parsed. Every flag is documented in `usage`.
struct Arguments {
    enum Mode { case serve, connect, help, version, hashPassword }

    var mode: Mode = .help
    var headless = false
    var port = 6667
    /// --port was given (joining with --tls without it means 6697).
    var portGiven = false
    var bind: String?
    /// nil: `--room none`, no automatic join.
    var room: String? = "#lobby"
    var casemapping: Casemapping = .rfc1459
    /// `--oper NAME:HASH`, each an operator block.
    var operators: [(name: String, hash: String)] = []
    var serverName = "chat-tui.local"
    var networkIcon: String?
    /// The web port (0: none); 8097 unless given, and then skipped when another room has it.
    var webPort = 8097
    var webPortGiven = false
    /// Uploads through the web port (`--upload-max-size 0`: none).
    var uploadMaxSize = 100 << 20
    var uploadQuota = 500 << 20
    var uploadDays = 7
    var uploadTotal = 5 << 30
    var webURL: String?
    var webOrigins: [String] = []
    var motdPath: String?
    var password: String?
    /// nil: the mode's default (server 90 s and 60 s, client 30 s and 60 s).
    var pingInterval: Double?
    var pingTimeout: Double?
    var registrationTimeout: Double = 60
    var sendQueueBytes = 1 << 20
    /// The TLS port (0: no TLS).
    var tlsPort = 6697
    var tlsPortGiven = false
    var tlsCertificate: String?
    var tlsKey: String?
    var dataDirectory: String?
    var plaintext = true
    /// nil: the defaults; `off`: none.
    var limits: ConnectionLimits? = ConnectionLimits()
    /// `--host`, in order: one network each.
    var hosts: [HostPort] = []
    /// The config file's `[network NAME]` sections.
    var sections: [NetworkSettings] = []
    var nick: String?
    var rooms: [String] = []
    var lines = false
    var connectTimeout: Double = 10
    /// nil: TLS when the port is 6697.
    var tls: Bool?
    var tlsFingerprint: String?
    var saslUser: String?
    var device: String?
    var saslPassword: String?
    var saslPlainInsecure = false
    /// Keep the local log (`--no-logs` turns it off).
    var logs = true
    /// The chat screen's settings (`Setting.all`): flags and the config file; read below.
    var settings = Settings()
    /// The config file's `[aliases]` (nil: none, the defaults).
    var aliases: [String: String]?
    var bell: Bool { settings.isOn("bell") }
    var typing: Bool { settings.isOn("typing") }
    var timestampSeconds: Bool { settings["timestamps"] == "HH:MM:SS" }
    var scrollback: Int { settings.number("scrollback") }
    var downloadDirectory: String? { settings["download-dir"].isEmpty ? nil : settings["download-dir"] }
    var dccPorts: ClosedRange<Int>?
    var dccAddress: String?
    var dccMaxSize: UInt64?
    var dccAutoAccept: [String] { settings.words("dcc-auto-accept-from") }
    var ignore: [String] = []
    /// Where the server logs when the chat screen owns the terminal.
    var logPath: String?
    /// draft/account-registration: users may make accounts themselves.
    var registrationOpen = true
    /// History: days kept (0: off), SQLite synchronous (normal or full), lines replayed on join.
    var historyDays = 30
    var historySync = "NORMAL"
    var replayOnJoin = 20
    var historyBacklog = 1000
    var nickProtection = NickProtection.rename(after: 30)
    var multiclient = true
    var alwaysOn = AlwaysOnPolicy.optOut
    var alwaysOnExpireDays = 30.0
    /// Web Push: endpoints on private addresses allowed (tests), and who runs the server.
    var webPushAllowPrivate = false
    var webPushSubject: String?
    /// Linking with other servers (`--sid`, `--link-port`, `--link`, `--link-password`,
    /// `--link-fingerprint`, `--link-tls`): the blocks are completed by `linkSettings`.
    var sid: String?
    var linkPort: Int?
    var links: [(name: String, host: String?, port: Int)] = []
    var linkPassword: String?
    /// By link name; "" for every link not named.
    var linkFingerprints: [String: String] = [:]
    var linkTLS = true
    /// The config file's `[link NAME]` sections (hosting only).
    var linkSections: [LinkSection] = []

    /// `[link NAME]` in the config file: one server to link with, with its own password,
    /// fingerprint and TLS setting (what it leaves out is the flags').
    struct LinkSection: Equatable {
        var name: String
        var host: String?
        var port = 0
        var password: String?
        var fingerprint: String?
        var tls: Bool?

        static let keys = ["address", "password", "fingerprint", "tls"]

        static func parse(_ name: String, _ settings: [(key: String, value: String)], where place: String) throws(Problem) -> LinkSection {
            var section = LinkSection(name: name)
            for (key, value) in settings {
                switch key {
                case "address":
                    let link: (name: String, host: String?, port: Int)
                    do { link = try Arguments.parseLink(name + "=" + value) } catch { throw Problem(description: "\(place): \(error.description)") }
                    section.host = link.host
                    section.port = link.port
                case "password": section.password = value
                case "fingerprint":
                    guard Arguments.isFingerprint(value) else {
                        throw Problem(description: "\(place): fingerprint wants a SHA-256, 64 hex digits")
                    }
                    section.fingerprint = value
                case "tls":
                    guard let on = Arguments.truth(value) else { throw Problem(description: "\(place): tls needs on or off, not \(value)") }
                    section.tls = on
                default:
                    throw Problem(description: "\(place): \(key) is not a link setting (\(keys.joined(separator: ", ")))")
                }
            }
            return section
        }
    }

    struct Problem: Error, CustomStringConvertible, Equatable {
        let description: String
    }

    /// Where a flag belongs: choosing a mode, hosting, joining, or either.
    enum Scope { case mode, hosting, joining, both }

    /// One flag: its name, the placeholder of its value (nil for a bare flag), where it belongs,
    /// its help, and what it does. `--help` and the parser both read this table.
    struct Flag: Sendable {
        let name: String
        let value: String?
        let scope: Scope
        let help: String
        let apply: @Sendable (inout Arguments, String) throws(Problem) -> Void
    }

    /// A SHA-256 as hex, colons optional (the form the host screen shows).
    static func isFingerprint(_ text: String) -> Bool {
        let digits = text.filter { $0 != ":" }
        return digits.count == 64 && digits.allSatisfy(\.isHexDigit)
    }

    /// `NAME=HOST:PORT` (we dial), `NAME=[::1]:7000`, or `NAME` (it dials us).
    static func parseLink(_ text: String) throws(Problem) -> (name: String, host: String?, port: Int) {
        guard let equals = text.firstIndex(of: "=") else {
            guard !text.isEmpty, !text.contains(" ") else { throw Problem(description: "--link wants NAME=HOST:PORT or NAME") }
            return (text, nil, 0)
        }
        let name = String(text[..<equals])
        let address = String(text[text.index(after: equals)...])
        guard !name.isEmpty, let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]),
              (1...65535).contains(port) else {
            throw Problem(description: "--link wants NAME=HOST:PORT (such as hub.example=10.0.0.2:7000), not \"\(text)\"")
        }
        var host = String(address[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw Problem(description: "--link \(name) has no host") }
        return (name, host, port)
    }

    /// The link blocks the flags describe; a problem when links are asked for without a password.
    func linkSettings() throws(Problem) -> LinkSettings {
        var settings = LinkSettings()
        settings.sid = sid
        for link in links where linkSections.contains(where: { $0.name.lowercased() == link.name.lowercased() }) {
            throw Problem(description: "--link \(link.name) and a [link \(link.name)] section: name it once")
        }
        let all = links.map { LinkSection(name: $0.name, host: $0.host, port: $0.port) } + linkSections
        for link in all {
            guard let password = link.password ?? linkPassword, !password.isEmpty else {
                throw Problem(description: "--link \(link.name) needs --link-password (or password in its [link] section), the same on both servers")
            }
            settings.blocks.append(LinkBlock(name: link.name, host: link.host, port: link.port, password: password, tls: link.tls ?? linkTLS,
                                             fingerprint: link.fingerprint ?? linkFingerprints[link.name] ?? linkFingerprints[""]))
        }
        return settings
    }

    static func positive(_ flag: String, _ text: String) throws(Problem) -> Double {
        guard let number = Double(text), number > 0, number.isFinite else {
            throw Problem(description: "--\(flag) needs a positive number, not \"\(text)\"")
        }
        return number
    }

    /// The chat screen's settings (`Setting.all`) as flags: `--bell off`, the same names as in the
    /// config file and `/set`.
    static let settingFlags: [Flag] = Setting.all.map { setting in
        let shownDefault = setting.defaultValue.isEmpty ? "" : " (default \(setting.defaultValue))"
        return Flag(name: setting.name, value: setting.placeholder, scope: .both, help: setting.help + shownDefault) { a, v throws(Problem) in
            if let problem = a.settings.set(setting.name, v) { throw Problem(description: "--" + problem.description) }
        }
    }

    static let flags: [Flag] = baseFlags + settingFlags

    static let baseFlags: [Flag] = [
        Flag(name: "serve", value: nil, scope: .mode, help: "host a room: an IRC server, with the chat screen as your own user") { a, _ in a.mode = .serve },
        Flag(name: "host", value: "HOST[:PORT]", scope: .mode, help: "join the server at HOST (a name, an IPv4 or an IPv6 address; [::1]:6697 with a port); repeat it for several networks") { a, v throws(Problem) in
            a.hosts.append(try HostPort.parse(v))
            a.mode = .connect
        },
        Flag(name: "hash-password", value: nil, scope: .mode, help: "read a password on stdin and print the HASH for --oper") { a, _ in a.mode = .hashPassword },
        Flag(name: "help", value: nil, scope: .mode, help: "this text") { a, _ in a.mode = .help },
        Flag(name: "version", value: nil, scope: .mode, help: "the version") { a, _ in a.mode = .version },
        // Hosting
        Flag(name: "headless", value: nil, scope: .hosting, help: "no chat screen: log one line per event to stdout") { a, _ in a.headless = true },
        Flag(name: "bind", value: "ADDR", scope: .hosting, help: "listen on this address only (default: every IPv4 and IPv6 address)") { a, v in a.bind = v },
        Flag(name: "room", value: "#NAME", scope: .hosting, help: "the room everyone joins on arrival (default #lobby; none: no such room)") { a, v throws(Problem) in
            if v.lowercased() == "none" { a.room = nil; return }
            if let problem = IRCNames.channelProblem(v, maxBytes: 50) ?? NameSafety.channelProblem(v) {
                throw Problem(description: "--room needs a name like #lobby, or none: \(problem)")
            }
            a.room = v
        },
        Flag(name: "casemapping", value: "ascii|rfc1459", scope: .hosting, help: "how names fold: rfc1459 (default: { } | ~ are the lower case of [ ] \\ ^) or ascii (letters only, as InspIRCd 4 and many networks); linked servers must agree") { a, v throws(Problem) in
            guard let mapping = Casemapping(rawValue: v.lowercased()), mapping != .strictRFC1459 else {
                throw Problem(description: "--casemapping takes ascii or rfc1459")
            }
            a.casemapping = mapping
        },
        Flag(name: "name", value: "NAME", scope: .hosting, help: "the server's name in replies (default chat-tui.local)") { a, v throws(Problem) in
            guard !v.isEmpty, !v.contains(" ") else { throw Problem(description: "--name needs a server name without spaces") }
            a.serverName = v
        },
        Flag(name: "web-port", value: "N", scope: .hosting, help: "the web page, IRC over WebSocket and file uploads, HTTP and HTTPS on this one port (default 8097; 0: no web)") { a, v throws(Problem) in
            guard let port = Int(v), (0...65535).contains(port) else { throw Problem(description: "--web-port wants a port number, not \"\(v)\"") }
            guard ![6665, 6666, 6667, 6668, 6669, 6697].contains(port) else {
                throw Problem(description: "--web-port \(port): browsers refuse the IRC ports (6665–6669, 6697); pick another, such as 8097")
            }
            a.webPort = port
            a.webPortGiven = true
        },
        Flag(name: "upload-max-size", value: "SIZE", scope: .hosting, help: "the largest file people may upload through the web port; K, M, G suffixes (default 100M; 0: no uploads)") { a, v throws(Problem) in
            guard let size = Arguments.parseSize(v), size < 1 << 40 else { throw Problem(description: "--upload-max-size needs a size like 100M, not \"\(v)\"") }
            a.uploadMaxSize = Int(size)
        },
        Flag(name: "upload-quota", value: "SIZE", scope: .hosting, help: "bytes of uploads one account (or, for guests, one address) may keep (default 500M)") { a, v throws(Problem) in
            guard let size = Arguments.parseSize(v), size < 1 << 42 else { throw Problem(description: "--upload-quota needs a size like 1G, not \"\(v)\"") }
            a.uploadQuota = Int(size)
        },
        Flag(name: "upload-total", value: "SIZE", scope: .hosting, help: "bytes all uploads together may keep; a disk with under 1 GiB free takes none (default 5G)") { a, v throws(Problem) in
            guard let size = Arguments.parseSize(v), size < 1 << 50 else { throw Problem(description: "--upload-total needs a size like 20G, not \"\(v)\"") }
            a.uploadTotal = Int(size)
        },
        Flag(name: "web-url", value: "URL", scope: .hosting, help: "the web port as others reach it, for upload and file links (https://chat.example.org:8443; default: the address each client reached)") { a, v throws(Problem) in
            guard v.hasPrefix("https://") || v.hasPrefix("http://"), !v.contains(" "), !v.dropFirst(8).contains("/") || v.hasSuffix("/") else {
                throw Problem(description: "--web-url needs scheme://host[:port], such as https://chat.example.org:8443")
            }
            a.webURL = v.hasSuffix("/") ? String(v.dropLast()) : v
        },
        Flag(name: "upload-days", value: "N", scope: .hosting, help: "days an upload is kept (default 7; 0: until deleted from the data directory)") { a, v throws(Problem) in
            guard let days = Int(v), days >= 0, days <= 36_500 else { throw Problem(description: "--upload-days needs a number of days, not \"\(v)\"") }
            a.uploadDays = days
        },
        Flag(name: "web-origin", value: "URL", scope: .hosting, help: "another page allowed to open the WebSocket (https://example.org); repeat for more") { a, v throws(Problem) in
            guard v.hasPrefix("https://") || v.hasPrefix("http://"), !v.contains(" ") else { throw Problem(description: "--web-origin needs an http(s) origin") }
            a.webOrigins.append(v.hasSuffix("/") ? String(v.dropLast()) : v)
        },
        Flag(name: "network-icon", value: "URL", scope: .hosting, help: "an image URL clients may show for the network (draft/ICON)") { a, v throws(Problem) in
            guard v.hasPrefix("https://") || v.hasPrefix("http://"), !v.contains(" ") else {
                throw Problem(description: "--network-icon needs an http(s) URL without spaces")
            }
            a.networkIcon = v
        },
        Flag(name: "motd", value: "FILE", scope: .hosting, help: "message of the day, one line per line of FILE") { a, v in a.motdPath = v },
        Flag(name: "oper", value: "NAME:HASH", scope: .hosting, help: "an IRC operator (OPER NAME PASSWORD); repeat for more; your own user on the screen is always one") { a, v throws(Problem) in
            let parts = v.split(separator: ":", maxSplits: 1).map(String.init)
            let fields = parts.count == 2 ? parts[1].split(separator: ":").count : 0
            guard parts.count == 2, (parts[1].hasPrefix("pbkdf2-sha256:") && fields == 4) || (parts[1].hasPrefix("sha256:") && fields == 3) else {
                throw Problem(description: "--oper needs NAME:HASH, the hash from chat-tui --hash-password")
            }
            a.operators.append((parts[0], parts[1]))
        },
        Flag(name: "register-timeout", value: "SECS", scope: .hosting, help: "time a new connection has to register (default 60)") { a, v throws(Problem) in a.registrationTimeout = try positive("register-timeout", v) },
        Flag(name: "sendq", value: "BYTES", scope: .hosting, help: "bytes queued for a slow reader before it is dropped (default 1048576)") { a, v throws(Problem) in a.sendQueueBytes = Int(try positive("sendq", v)) },
        Flag(name: "tls-port", value: "N", scope: .hosting, help: "also listen with TLS on this port (default 6697; 0: no TLS)") { a, v throws(Problem) in
            guard let port = Int(v), (0...65535).contains(port) else { throw Problem(description: "--tls-port wants a port number from 0 to 65535, not \(v)") }
            a.tlsPort = port
            a.tlsPortGiven = true
        },

        Flag(name: "limits", value: "N:M|off", scope: .hosting, help: "connections per address at once and new ones per 10 minutes (default 16:32; loopback exempt; off: no limits and no pacing)") { a, v throws(Problem) in
            if v == "off" { a.limits = nil; return }
            let parts = v.split(separator: ":").compactMap { Int($0) }
            guard parts.count == 2, parts.allSatisfy({ $0 > 0 }) else { throw Problem(description: "--limits wants N:M (at once : new per 10 minutes) or off") }
            var limits = a.limits ?? ConnectionLimits()
            limits.perAddress = parts[0]
            limits.newPerWindow = parts[1]
            a.limits = limits
        },
        Flag(name: "pace", value: "BURST:RATE", scope: .hosting, help: "lines a client may send at once, then per second; more wait, never a disconnect (default 20:4)") { a, v throws(Problem) in
            let parts = v.split(separator: ":")
            guard parts.count == 2, let burst = Int(parts[0]), let rate = Double(parts[1]), burst > 0, rate > 0 else {
                throw Problem(description: "--pace wants BURST:RATE, such as 20:4")
            }
            var limits = a.limits ?? ConnectionLimits()
            limits.burst = burst
            limits.linesPerSecond = rate
            a.limits = limits
        },
        Flag(name: "tls-handshake-budget", value: "MS", scope: .hosting, help: "milliseconds of CPU the TLS handshakes from one address may cost per minute; past it its TLS connections are closed (default 1000)") { a, v throws(Problem) in
            guard let ms = Double(v), ms > 0 else { throw Problem(description: "--tls-handshake-budget wants milliseconds, more than 0") }
            var limits = a.limits ?? ConnectionLimits()
            limits.handshakeCPUPerMinute = ms / 1000
            a.limits = limits
        },
        Flag(name: "limit-loopback", value: nil, scope: .hosting, help: "apply the limits and the pacing to connections from this machine too") { a, _ in
            var limits = a.limits ?? ConnectionLimits()
            limits.exemptLoopback = false
            a.limits = limits
        },
        Flag(name: "no-plaintext", value: nil, scope: .hosting, help: "TLS only: no plain-text port (for a server facing the internet)") { a, _ in a.plaintext = false },
        Flag(name: "data-dir", value: "DIR", scope: .hosting, help: "where the server keeps its certificate and accounts (default ~/.local/share/chat-tui/server)") { a, v in a.dataDirectory = v },
        Flag(name: "history-days", value: "N", scope: .hosting, help: "days of history the server keeps (default 30; 0: no history)") { a, v throws(Problem) in
            guard let days = Int(v), days >= 0 else { throw Problem(description: "--history-days wants a number of days, 0 or more") }
            a.historyDays = days
        },
        Flag(name: "history-sync", value: "normal|full", scope: .hosting, help: "normal: a crash of the server loses nothing committed; full: a power loss neither (slower)") { a, v throws(Problem) in
            guard v == "normal" || v == "full" else { throw Problem(description: "--history-sync wants normal or full") }
            a.historySync = v.uppercased()
        },
        Flag(name: "history-backlog", value: "N", scope: .hosting, help: "rows that may wait while history cannot be stored (a full disk), their echoes held; past it new messages are refused (default 1000)") { a, v throws(Problem) in
            guard let rows = Int(v), rows >= 0 else { throw Problem(description: "--history-backlog wants a number of rows") }
            a.historyBacklog = rows
        },
        Flag(name: "replay-on-join", value: "N", scope: .hosting, help: "lines of a room's history sent on joining to clients that do not ask for it (default 20; 0: none)") { a, v throws(Problem) in
            guard let lines = Int(v), lines >= 0 else { throw Problem(description: "--replay-on-join wants a number of lines") }
            a.replayOnJoin = lines
        },
        Flag(name: "registration", value: "open|closed", scope: .hosting, help: "whether users may make accounts themselves with REGISTER (default open; closed: only chat-tui account add)") { a, v throws(Problem) in
            guard v == "open" || v == "closed" else { throw Problem(description: "--registration wants open or closed, not \(v)") }
            a.registrationOpen = v == "open"
        },
        Flag(name: "nick-protection", value: "rename|strict|off", scope: .hosting, help: "an account's nickname used without logging in: renamed after 30 s (default), refused at once, or allowed") { a, v throws(Problem) in
            switch v {
            case "rename": a.nickProtection = .rename(after: 30)
            case "strict": a.nickProtection = .strict
            case "off": a.nickProtection = .off
            default: throw Problem(description: "--nick-protection wants rename, strict or off, not \(v)")
            }
        },
        Flag(name: "multiclient", value: "on|off", scope: .hosting, help: "every connection logged in to an account is one more session of that account's one user, on every device (default on)") { a, v throws(Problem) in
            guard v == "on" || v == "off" else { throw Problem(description: "--multiclient wants on or off, not \(v)") }
            a.multiclient = v == "on"
        },
        Flag(name: "always-on", value: "opt-in|opt-out|off", scope: .hosting, help: "accounts stay in their rooms, away, with no device connected: unless they say otherwise (opt-out, default), only if they ask (opt-in), or never") { a, v throws(Problem) in
            guard let policy = AlwaysOnPolicy(rawValue: v) else { throw Problem(description: "--always-on wants opt-in, opt-out or off, not \(v)") }
            a.alwaysOn = policy
        },
        Flag(name: "always-on-expire", value: "DAYS", scope: .hosting, help: "an always-on account nobody connected as for this many days leaves (default 30)") { a, v throws(Problem) in
            guard let days = Double(v), days > 0 else { throw Problem(description: "--always-on-expire wants a number of days") }
            a.alwaysOnExpireDays = days
        },
        Flag(name: "webpush-subject", value: "mailto:ADDRESS|https://URL", scope: .hosting, help: "Web Push: how push services reach whoever runs this server (default mailto:webpush@ the server's name)") { a, v throws(Problem) in
            guard v.hasPrefix("mailto:") || v.hasPrefix("https://") else { throw Problem(description: "--webpush-subject wants a mailto: or https: address, not \"\(v)\"") }
            a.webPushSubject = v
        },
        Flag(name: "webpush-allow-private", value: nil, scope: .hosting, help: "Web Push: also send to push services on loopback, private and link-local addresses (a local push service; tests)") { a, _ in a.webPushAllowPrivate = true },
        Flag(name: "sid", value: "XYZ", scope: .hosting, help: "linking: this server's ID, a digit and two of A-Z, 0-9 (default: made from --name)") { a, v throws(Problem) in
            guard LinkIDs.isValidSID(v) else { throw Problem(description: "--sid wants a digit and two of A-Z and 0-9, such as 0AB, not \"\(v)\"") }
            a.sid = v
        },
        Flag(name: "link-port", value: "N", scope: .hosting, help: "linking: listen for other servers on this port (default: none)") { a, v throws(Problem) in
            guard let port = Int(v), (0...65535).contains(port) else { throw Problem(description: "--link-port wants a port number, not \"\(v)\"") }
            a.linkPort = port
        },
        Flag(name: "link", value: "NAME[=HOST:PORT]", scope: .hosting, help: "linking: link with the server NAME, connecting to HOST:PORT (without it, NAME connects to our --link-port); repeat for more") { a, v throws(Problem) in
            a.links.append(try Arguments.parseLink(v))
        },
        Flag(name: "link-password", value: "SECRET", scope: .hosting, help: "linking: the password both sides of a link give (both link blocks must say the same)") { a, v in a.linkPassword = v },
        Flag(name: "link-fingerprint", value: "[NAME=]HEX", scope: .hosting, help: "linking: accept only a peer whose certificate has this SHA-256 (as its host screen shows it)") { a, v throws(Problem) in
            var name = "", hex = v
            if let equals = v.firstIndex(of: "=") { name = String(v[..<equals]); hex = String(v[v.index(after: equals)...]) }
            guard Arguments.isFingerprint(hex) else { throw Problem(description: "--link-fingerprint wants a SHA-256: 64 hex digits, colons optional") }
            a.linkFingerprints[name] = hex
        },
        Flag(name: "link-tls", value: "on|off", scope: .hosting, help: "linking: TLS on links (default on; off only on a network you trust, as InspIRCd allows)") { a, v throws(Problem) in
            guard v == "on" || v == "off" else { throw Problem(description: "--link-tls is on or off") }
            a.linkTLS = v == "on"
        },
        Flag(name: "log", value: "FILE", scope: .hosting, help: "with the chat screen, where the server's log goes (default ~/.local/state/chat-tui/server.log)") { a, v in a.logPath = v },
        // Joining
        Flag(name: "lines", value: nil, scope: .joining, help: "no full screen: events print one per line; plain lines go to the room joined last") { a, _ in a.lines = true },
        Flag(name: "tls", value: nil, scope: .joining, help: "speak TLS (the default for port 6697); the certificate is checked against the system's trust store") { a, _ in a.tls = true },
        Flag(name: "tls-fingerprint", value: "HEX", scope: .joining, help: "accept only the server certificate with this SHA-256 (colons optional); implies --tls") { a, v throws(Problem) in
            guard KnownServers.normalise(v).count == 64 else { throw Problem(description: "--tls-fingerprint wants the certificate's SHA-256: 64 hex digits, colons optional") }
            a.tlsFingerprint = v
            a.tls = true
        },
        Flag(name: "device", value: "NAME", scope: .joining, help: "this device's name, sent as ACCOUNT@NAME to servers that keep an account present across devices, so each device is shown what it missed (default: the host name)") { a, v throws(Problem) in
            guard SASLLogin.deviceName(v) == v else { throw Problem(description: "--device wants letters, digits, -, _ and . (at most 32), not \"\(v)\"") }
            a.device = v
        },
        Flag(name: "sasl-user", value: "ACCOUNT", scope: .joining, help: "log in to this account (SASL: SCRAM-SHA-256, PLAIN only over TLS, EXTERNAL with --tls-cert); a failed login stops") { a, v in a.saslUser = v },
        Flag(name: "sasl-password", value: "SECRET", scope: .joining, help: "the account's password (else the config file's sasl-password, else asked for)") { a, v in a.saslPassword = v },
        Flag(name: "no-logs", value: nil, scope: .both, help: "keep no local log of what is shown (default: ~/.local/share/chat-tui/client/history.db, searched with /search and chat-tui search)") { a, _ in a.logs = false },
        Flag(name: "sasl-plain-insecure", value: nil, scope: .joining, help: "allow SASL PLAIN without TLS, sending the password in clear") { a, _ in a.saslPlainInsecure = true },
        Flag(name: "connect-timeout", value: "SECS", scope: .joining, help: "give up a connection attempt after this long (default 10)") { a, v throws(Problem) in a.connectTimeout = try positive("connect-timeout", v) },
        // Both
        Flag(name: "port", value: "N", scope: .both, help: "the port to listen on, or the server's port (default 6667)") { a, v throws(Problem) in
            guard let port = Int(v), (0...65535).contains(port) else {
                throw Problem(description: "--port needs a number from 0 to 65535, not \"\(v)\"")
            }
            a.port = port
            a.portGiven = true
        },
        Flag(name: "nick", value: "NAME", scope: .both, help: "your nickname (default: your login name); if taken, NAME_ is tried") { a, v throws(Problem) in
            if let problem = IRCNames.nickProblem(v, maxBytes: 30) { throw Problem(description: "--nick \(v): \(problem)") }
            a.nick = v
        },
        Flag(name: "tls-cert", value: "FILE", scope: .both, help: "hosting: the TLS certificate chain, PEM (default: a self-signed one in the data directory); joining: a client certificate to present (SASL EXTERNAL)") { a, v in a.tlsCertificate = v },
        Flag(name: "tls-key", value: "FILE", scope: .both, help: "the certificate's private key, PEM (joining: default, the certificate's own file)") { a, v in a.tlsKey = v },
        Flag(name: "password", value: "SECRET", scope: .both, help: "hosting: clients must send PASS SECRET; joining: the server's password") { a, v in a.password = v },
        Flag(name: "join", value: "'#a,#b'", scope: .both, help: "rooms to join after connecting") { a, v throws(Problem) in
            // `dev` means #dev, as /join's does.
            a.rooms = v.split(separator: ",").map { $0.trimmedOfWhitespace() }.filter { !$0.isEmpty }
                .map { $0.hasPrefix("#") || $0.hasPrefix("&") ? $0 : "#" + $0 }
            for room in a.rooms {
                if let problem = IRCNames.channelProblem(room, types: "#&", maxBytes: 50) {
                    throw Problem(description: "--join: \"\(room)\" is not a room name: \(problem)")
                }
            }
        },
        Flag(name: "ping-interval", value: "SECS", scope: .both, help: "silence before PING is sent (default: 90 hosting, 30 joining)") { a, v throws(Problem) in a.pingInterval = try positive("ping-interval", v) },
        Flag(name: "ping-timeout", value: "SECS", scope: .both, help: "no answer to that PING for this long means the connection is dead (default 60)") { a, v throws(Problem) in a.pingTimeout = try positive("ping-timeout", v) },
        Flag(name: "dcc-ports", value: "A-B", scope: .both, help: "ports to listen on for file transfers (default: any free port)") { a, v throws(Problem) in
            let bounds = v.split(separator: "-").compactMap { Int($0) }
            guard bounds.count == 2, bounds[0] > 0, bounds[0] <= bounds[1], bounds[1] <= 65535 else {
                throw Problem(description: "--dcc-ports needs a range like 50000-50100, not \"\(v)\"")
            }
            a.dccPorts = bounds[0]...bounds[1]
        },
        Flag(name: "dcc-address", value: "ADDR", scope: .both, help: "the address offered to peers (default: ours on the server connection)") { a, v in a.dccAddress = v },
        Flag(name: "dcc-max-size", value: "SIZE", scope: .both, help: "refuse larger offers; K, M, G suffixes (default 10G)") { a, v throws(Problem) in
            guard let size = Arguments.parseSize(v) else { throw Problem(description: "--dcc-max-size needs a size like 500M or 2G, not \"\(v)\"") }
            a.dccMaxSize = size
        },
        Flag(name: "ignore", value: "MASK,…", scope: .both, help: "hide these people's messages (nicknames or nick!user@host masks; /ignore keeps it here)") { a, v in a.ignore = v.split(separator: ",").map(String.init) },
    ]

    /// `--help`, made from the table.
    /// What to do about a port that is taken, named by which port it is.
    static func portHint(_ port: Int, _ arguments: Arguments, tls: Bool) -> String {
        if port == arguments.port { return " (--port N picks another)" }
        if tls && port == arguments.tlsPort { return " (--tls-port N picks another; --tls-port 0 turns TLS off)" }
        if port == arguments.webPort { return " (--web-port N picks another; --web-port 0 turns the web page off)" }
        return ""
    }

    static var usage: String {
        func rows(_ scope: Scope) -> String {
            flags.filter { $0.scope == scope }.map { flag in
                let left = "  --" + flag.name + (flag.value.map { " " + $0 } ?? "")
                return left + String(repeating: " ", count: max(2, 28 - left.count)) + flag.help
            }.joined(separator: "\n")
        }
        return """
        chat-tui — host a chat room, or join one, from the terminal.

        Usage:
          chat-tui --serve [hosting options]         host a room (make run does this)
          chat-tui --host HOST [joining options]     join any IRC server (--host again: several networks)
          chat-tui --hash-password                   make a HASH for --oper
          chat-tui account add|passwd|delete|list|cert add NAME …
                                                     the server's accounts (chat-tui account for more)
          chat-tui search WORDS                      search the local log of what was shown

        \(rows(.mode))

        Hosting (an IRC server; any IRC client, nc or telnet can join it):
        \(rows(.hosting))

        Joining (a client for any IRC server):
        \(rows(.joining))

        Both (the host's own chat screen is a client too):
        \(rows(.both))

        Every long flag can also be set in ~/.config/chat-tui/config, one per line as
        `name = value` (`nick = alice`, `bell = off`, `host = irc.example.org`); flags on the
        command line win. With no flags at all, the file alone decides (help when it names no mode).
        Hosting, a section `[link NAME]` is one more server to link with: address = HOST:PORT (to
        dial it; without, it dials us), password, fingerprint, tls = on|off.
        A section `[network NAME]` in the file is one more network to join, with its own host,
        port, tls, tls-fingerprint, nick, sasl-user, sasl-password and join (what it leaves out is
        the file's or the command line's); --host on the command line replaces the file's networks.
        Several networks share one sidebar: /network NAME shows one, /network lists them,
        /connect HOST[:PORT] adds one, /disconnect NAME closes one.

        Keys on the chat screen: with an empty input, Up/Down pick the room or person Enter sends
        to; with text, they recall earlier lines (Ctrl-P/N always do). PgUp/PgDn scroll; Home/End
        jump to the ends of the list (or of the input when it has text); Tab completes nicknames and
        commands; Ctrl-A/E/B/F/D/H/W/U/K/Y edit; Alt-B/F/D and Ctrl-Left/Right go by words; Ctrl-L
        redraws; Ctrl-C clears the line, or asks to quit. /help lists commands.
        """
    }

    /// `500`, `500K`, `20M`, `2G` as bytes.
    static func parseSize(_ text: String) -> UInt64? {
        let units: [Character: UInt64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40]
        let upper = text.uppercased().replacing("IB", with: "").replacing("B", with: "")
        if let last = upper.last, let unit = units[last], let number = UInt64(upper.dropLast()) { return number * unit }
        return UInt64(upper)
    }

    /// What a config file says: flags from its top part, and its `[network NAME]` sections.
    struct ConfigFile: Equatable {
        var flags: [String] = []
        var networks: [NetworkSettings] = []
        var links: [LinkSection] = []
        /// `[aliases]`: `NAME = EXPANSION` (nil: no such section, the default aliases).
        var aliases: [String: String]?
    }

    static func truth(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default: return nil
        }
    }

    /// Reads the config file (none: nothing in it).
    static func fromConfigFile(_ path: String) throws(Problem) -> ConfigFile {
        guard let text = Files.readText(path) else { return ConfigFile() }
        return try parseConfig(text, path: path)
    }

    /// A line without its comment: from a `#` that starts the line or follows a blank, except
    /// the `#` that starts a value (`join = #swift,#irc # my rooms`).
    static func withoutComment(_ raw: Substring) -> String {
        var previous: Character = " "
        var valueStarts = false
        for index in raw.indices {
            let character = raw[index]
            if character == "#" && previous.isWhitespace && !valueStarts { return String(raw[..<index]) }
            if character == "=" { valueStarts = true } else if !character.isWhitespace { valueStarts = false }
            previous = character
        }
        return String(raw)
    }

    /// Flags from a config file: `name = value` lines (the long flag names without `--`);
    /// `true` makes a bare flag, `false` leaves it out. `#` starts a comment (`withoutComment`). A line
    /// `[network NAME]` starts a section of one network's settings (`NetworkSettings.keys`);
    /// the lines above the first section are the defaults for every network.
    static func parseConfig(_ text: String, path: String) throws(Problem) -> ConfigFile {
        var file = ConfigFile()
        let bare: Set<String> = ["lines", "headless", "serve", "sasl-plain-insecure", "limit-loopback", "no-logs", "webpush-allow-private"]
        var section: (kind: String, name: String, line: Int, settings: [(key: String, value: String)])?
        func finish() throws(Problem) {
            guard let open = section else { return }
            let place = "\(path) line \(open.line) [\(open.kind) \(open.name)]"
            if open.kind == "link" {
                file.links.append(try LinkSection.parse(open.name, open.settings, where: place))
            } else {
                file.networks.append(try NetworkSettings.section(open.name, open.settings, where: place))
            }
            section = nil
        }
        var inAliases = false
        for (number, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            // In [aliases] a `#` is text (`j = /join #$1`): only a line that starts with one is a comment.
            var line = inAliases && !raw.trimmedOfWhitespace().hasPrefix("#") && !raw.trimmedOfWhitespace().hasPrefix("[") ? String(raw) : withoutComment(raw)
            // A value in double quotes is read whole, `#` and all (`ChatClientKit.ConfigFile.spelled`).
            if !inAliases, !raw.trimmedOfWhitespace().hasPrefix("#"), let eq = raw.firstIndex(of: "="),
               raw[raw.index(after: eq)...].drop(while: { $0 == " " || $0 == "\t" }).first == "\"" {
                let after = raw[raw.index(after: eq)...].drop(while: { $0 == " " || $0 == "\t" })
                guard let (value, rest) = ChatClientKit.ConfigFile.unquoted(after),
                      withoutComment(Substring(" " + rest)).trimmedOfWhitespace().isEmpty else {
                    throw Problem(description: "\(path) line \(number + 1): a quoted value ends with a quote (\\\" inside it), and only a comment may follow it")
                }
                line = String(raw[..<eq]) + "=" + value
            }
            let trimmed = line.trimmedOfWhitespace()
            if trimmed.isEmpty { continue }
            if trimmed == "[aliases]" {
                try finish()
                guard file.aliases == nil else { throw Problem(description: "\(path) line \(number + 1): a second [aliases]") }
                file.aliases = [:]
                inAliases = true
                continue
            }
            if inAliases && !trimmed.hasPrefix("[") {
                guard let eq = line.firstIndex(of: "=") else { throw Problem(description: "\(path) line \(number + 1): an alias is written `NAME = EXPANSION`") }
                let name = line[..<eq].trimmedOfWhitespace().lowercased()
                let expansion = line[line.index(after: eq)...].trimmedOfWhitespace()
                guard !name.isEmpty, !expansion.isEmpty else { throw Problem(description: "\(path) line \(number + 1): an alias is written `NAME = EXPANSION`") }
                file.aliases![name] = expansion
                continue
            }
            if trimmed.hasPrefix("[") {
                inAliases = false
                let words = trimmed.dropFirst().split(separator: "]", omittingEmptySubsequences: false)
                let inside = words.first.map { $0.split(separator: " ", omittingEmptySubsequences: true) } ?? []
                guard trimmed.hasSuffix("]"), words.count == 2, inside.count == 2, inside[0] == "network" || inside[0] == "link" else {
                    throw Problem(description: "\(path) line \(number + 1): a section is written [network NAME], [link NAME] (NAME without spaces) or [aliases]")
                }
                try finish()
                let kind = String(inside[0]), name = String(inside[1])
                if kind == "network" ? file.networks.contains(where: { $0.name.lowercased() == name.lowercased() })
                    : file.links.contains(where: { $0.name.lowercased() == name.lowercased() }) {
                    throw Problem(description: "\(path) line \(number + 1): a second [\(kind) \(name)]")
                }
                section = (kind, name, number + 1, [])
                continue
            }
            guard let eq = line.firstIndex(of: "=") else {
                throw Problem(description: "\(path) line \(number + 1): expected `name = value`")
            }
            let name = line[..<eq].trimmedOfWhitespace()
            let value = line[line.index(after: eq)...].trimmedOfWhitespace()
            if section != nil {
                section!.settings.append((name, value))
            } else if bare.contains(name) {
                if truth(value) == true { file.flags.append("--" + name) }
            } else {
                file.flags += ["--" + name, value]
            }
        }
        try finish()
        return file
    }

    /// The networks to join, in order: the command line's `--host`s, else the file's `host`
    /// and `[network]` sections (`merging` keeps the file's only when the command line has none).
    func networks() throws(Problem) -> [NetworkSettings] {
        let fromHosts = try NetworkSettings.fromHosts(hosts, defaultPort: port)
        for network in sections where fromHosts.contains(where: { $0.name.lowercased() == network.name.lowercased() }) {
            throw Problem(description: "two networks are called \(network.name): rename the [network \(network.name)] section")
        }
        let all = fromHosts + sections
        return all.isEmpty ? [NetworkSettings(name: "127.0.0.1", address: HostPort(host: "127.0.0.1", port: nil))] : all
    }

    init(_ argv: [String]) throws(Problem) {
        var rest = argv[...]
        var given: [Flag] = []
        while let word = rest.popFirst() {
            let name = word == "-h" ? "help" : String(word.drop(while: { $0 == "-" }))
            guard word.hasPrefix("-"), let flag = Arguments.flags.first(where: { $0.name == name }) else {
                throw Problem(description: "unknown option \(word) (try --help)")
            }
            var value = ""
            if let placeholder = flag.value {
                guard let next = rest.popFirst() else { throw Problem(description: "--\(flag.name) needs a value (\(placeholder))") }
                value = next
            }
            try flag.apply(&self, value)
            if flag.name == "help" || flag.name == "version" { return }
            given.append(flag)
        }
        try Arguments.checkConflicts(given, mode: mode)
    }

    /// The command line over the config file. With no flags the file alone decides (it may name a
    /// mode: `host = …` or `serve = true`); otherwise the file gives defaults for what fits the
    /// mode the command line chose, so `lines = true` in the file does not break `--serve`.
    /// The `[network]` sections count only when joining, and only when the command line names
    /// no `--host` (its hosts then replace the file's).
    static func merging(file: ConfigFile, given: [String]) throws(Problem) -> Arguments {
        if given.isEmpty {
            var arguments = try Arguments(file.flags)
            if arguments.mode == .help && !file.networks.isEmpty { arguments.mode = .connect }
            if arguments.mode == .connect { arguments.sections = file.networks }
            if arguments.mode == .serve { arguments.linkSections = file.links }
            arguments.aliases = file.aliases
            return arguments
        }
        let onCommandLine = try Arguments(given)
        let givenHosts = !onCommandLine.hosts.isEmpty
        // Flags without a mode (`--nick bob`) join the networks the file names.
        var chosen = onCommandLine.mode
        let asksHelp = given.contains { $0 == "--help" || $0 == "-h" }
        if chosen == .help && !asksHelp && (file.flags.contains("--host") || !file.networks.isEmpty) { chosen = .connect }
        var kept: [String] = []
        var rest = file.flags[...]
        while let word = rest.popFirst() {
            let name = String(word.drop(while: { $0 == "-" }))
            guard let flag = flags.first(where: { $0.name == name }) else {
                throw Problem(description: "config file: unknown setting \(name)")
            }
            let value = flag.value != nil ? rest.popFirst() : nil
            let fits = flag.scope == .both || (flag.scope == .hosting && chosen == .serve) || (flag.scope == .joining && chosen == .connect)
                // The file's host joins the command line's joining flags, unless it names hosts of its own.
                || (name == "host" && chosen == .connect && !givenHosts)
            if fits { kept.append(word); if let value { kept.append(value) } }
        }
        var arguments = try Arguments(kept + given)
        if chosen == .connect && arguments.mode == .help && !asksHelp { arguments.mode = .connect }
        if arguments.mode == .connect && !givenHosts { arguments.sections = file.networks }
        // The file's links count when hosting, with the command line's --link ones.
        if arguments.mode == .serve { arguments.linkSections = file.links }
        arguments.aliases = file.aliases
        return arguments
    }

    /// `/reload`: the config file's settings and aliases alone (the command line's flags are
    /// not read again), or why the file cannot be read.
    static func screenSettings(fromConfig path: String) -> Result<ConfigValues, SettingProblem> {
        let file: ConfigFile
        do { file = try fromConfigFile(path) } catch { return .failure(SettingProblem(error.description)) }
        var settings = Settings()
        var rest = file.flags[...]
        while let word = rest.popFirst() {
            let name = String(word.drop { $0 == "-" })
            let value = flags.first { $0.name == name }?.value != nil ? rest.popFirst() : nil
            guard Setting.named(name) != nil, let value else { continue }
            if let problem = settings.set(name, value) { return .failure(SettingProblem("\(path): \(problem.description)")) }
        }
        var aliases = Aliases()
        if let table = file.aliases {
            aliases = Aliases([:])
            for (name, expansion) in table {
                if let problem = aliases.set(name, expansion) { return .failure(SettingProblem("\(path) [aliases] \(name): \(problem)")) }
            }
        }
        return .success(ConfigValues(settings: settings, aliases: aliases))
    }

    /// `/save`: the screen's settings and aliases into the config file, through its one writer.
    static func saveScreenSettings(_ settings: Settings, _ aliases: Aliases, to path: String) throws {
        // A setting given (by the file, a flag or /set) is written, a default only over a line
        // that is there; one not given (never, or /set -default) loses its line: the default.
        let global = settings.all.map { setting, value in
            settings.given[setting.name] == nil ? ChatClientKit.ConfigFile.Entry(name: setting.name, value: nil)
                : ChatClientKit.ConfigFile.Entry(name: setting.name, value: value, onlyIfPresent: value == setting.defaultValue)
        }
        // Always written: a section replaces the default aliases, so one removed stays removed.
        let section = (name: "aliases", entries: aliases.table.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) })
        try ChatClientKit.ConfigFile.write(global: global, section: section, in: path)
    }

    /// Refuses flags that contradict each other: `--serve --host x`, `--lines` when hosting,
    /// hosting options when joining.
    static func checkConflicts(_ given: [Flag], mode: Mode) throws(Problem) {
        let modes = given.filter { $0.scope == .mode }
        if modes.count > 1, Set(modes.map(\.name)).count > 1 {
            throw Problem(description: modes.map { "--" + $0.name }.joined(separator: " and ") + " cannot be used together: choose one")
        }
        for flag in given {
            if flag.scope == .hosting && mode != .serve {
                throw Problem(description: "--\(flag.name) is a hosting option: it needs --serve")
            }
            if flag.scope == .joining && mode == .serve {
                throw Problem(description: "--\(flag.name) is for joining a server (--host), not for --serve")
            }
        }
    }
}
