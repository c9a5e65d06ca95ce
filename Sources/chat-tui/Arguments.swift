import Foundation
import IRCWire

/// The command line, parsed. Every flag is documented in `usage`.
struct Arguments {
    enum Mode { case serve, connect, help, version, hashPassword }

    var mode: Mode = .help
    var headless = false
    var port = 6667
    var bind: String?
    /// nil: `--room none`, no automatic join.
    var room: String? = "#lobby"
    /// `--oper NAME:HASH`, each an operator block.
    var operators: [(name: String, hash: String)] = []
    var serverName = "chat-tui.local"
    var motdPath: String?
    var password: String?
    /// nil: the mode's default (server 90 s and 60 s, client 30 s and 60 s).
    var pingInterval: Double?
    var pingTimeout: Double?
    var registrationTimeout: Double = 60
    var sendQueueBytes = 1 << 20
    var host: String?
    var nick: String?
    var rooms: [String] = []
    var lines = false
    var connectTimeout: Double = 10
    var bell = true
    var timestampSeconds = false
    var scrollback = 10_000
    var downloadDirectory: String?
    var dccPorts: ClosedRange<Int>?
    var dccAddress: String?
    var dccMaxSize: UInt64?
    var dccAutoAccept: [String] = []
    /// Where the server logs when the chat screen owns the terminal.
    var logPath: String?

    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    static let usage = """
    chat-tui — host a chat room, or join one, from the terminal.

    Usage:
      chat-tui --serve [--headless] [--port N] [--bind ADDR] [--room #NAME|none] [--name NAME]
                       [--motd FILE] [--password SECRET] [--oper NAME:HASH]
      chat-tui --hash-password  (reads a password on stdin, prints the HASH for --oper)
      chat-tui --host HOST [--port N] [--nick NAME] [--join '#a,#b'] [--password SECRET] [--lines]

    Hosting (an IRC server; any IRC client, nc or telnet can join it):
      --serve                 host a room
      --headless              no chat screen: log one line per event to stdout
                              (until the chat screen exists, --serve always runs this way)
      --port N                TCP port to listen on (default 6667)
      --bind ADDR             listen on this address only (default: every IPv4 and IPv6 address)
      --room #NAME            the room everyone joins on arrival (default #lobby; none: no such room)
      --name NAME             the server's name in replies (default chat-tui.local)
      --motd FILE             message of the day, one line per line of FILE
      --ping-interval SECS    silence before the server sends PING (default 90)
      --ping-timeout SECS     wait for an answer to that PING before dropping (default 60)
      --password SECRET       clients must send PASS SECRET to get in
      --oper NAME:HASH        an IRC operator (OPER NAME PASSWORD); repeat for more. The host's
                              own user on the chat screen is always an operator
      --register-timeout SECS time a new connection has to register (default 60)
      --sendq BYTES           bytes queued for a slow reader before it is dropped (default 1048576)

    Joining (a client for any IRC server):
      --host HOST             server to connect to (a name, an IPv4 or an IPv6 address)
      --port N                its port (default 6667)
      --nick NAME             your nickname (default: your login name); if taken, NAME_ is tried
      --join '#a,#b'          rooms to join after connecting (our server puts you in its room anyway)
      --password SECRET       the server's password (sent with PASS)
      --lines                 no full screen: events print one per line, lines you type go to the
                              room; /msg NICK text, /me text, /join #room, /part #room, /nick NAME,
                              /quote RAW LINE, /quit [reason]
      --connect-timeout SECS  give up connecting after this long (default 10)
      --ping-interval SECS    silence before the client sends PING (default 30)
      --ping-timeout SECS     no answer for this long means the connection is dead (default 60)

    Other:
      --help                  this text
      --version               the version

    Every long flag can also be set in ~/.config/chat-tui/config, one per line as
    `name = value` (`nick = alice`, `bell = off`, `lines = true`); flags on the command line win.

    Keys on the chat screen: Up/Down pick the room or person Enter sends to; PgUp/PgDn scroll;
    Home/End jump to the ends of the list (or of the input when it has text); Tab completes
    nicknames and commands; Ctrl-A/E/B/F/D/H/W/U/K/Y edit; Ctrl-P/N recall input; Ctrl-C quits.
    """

    /// `500`, `500K`, `20M`, `2G` as bytes.
    static func parseSize(_ text: String) -> UInt64? {
        let units: [Character: UInt64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40]
        let upper = text.uppercased().replacingOccurrences(of: "IB", with: "").replacingOccurrences(of: "B", with: "")
        if let last = upper.last, let unit = units[last], let number = UInt64(upper.dropLast()) { return number * unit }
        return UInt64(upper)
    }

    /// Flags from a config file: `name = value` lines (the long flag names without `--`);
    /// `true` makes a bare flag, `false` leaves it out. `#` starts a comment.
    static func fromConfigFile(_ path: String) throws(Problem) -> [String] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        var flags: [String] = []
        let bare: Set<String> = ["lines", "headless", "serve"]
        for (number, raw) in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            if line.trimmingCharacters(in: .whitespaces).isEmpty { continue }
            guard let eq = line.firstIndex(of: "=") else {
                throw Problem(description: "\(path) line \(number + 1): expected `name = value`")
            }
            let name = line[..<eq].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            if bare.contains(name) {
                if ["true", "yes", "on"].contains(value.lowercased()) { flags.append("--" + name) }
            } else {
                flags += ["--" + name, value]
            }
        }
        return flags
    }

    init(_ argv: [String]) throws(Problem) {
        var rest = argv[...]
        func value(_ flag: String) throws(Problem) -> String {
            guard let next = rest.popFirst() else { throw Problem(description: "\(flag) needs a value") }
            return next
        }
        func number(_ flag: String) throws(Problem) -> Double {
            let text = try value(flag)
            guard let number = Double(text), number > 0, number.isFinite else {
                throw Problem(description: "\(flag) needs a positive number, not \"\(text)\"")
            }
            return number
        }
        var sawMode = false
        while let flag = rest.popFirst() {
            switch flag {
            case "--serve": mode = .serve; sawMode = true
            case "--host": host = try value(flag); mode = .connect; sawMode = true
            case "--headless": headless = true
            case "--port":
                let text = try value(flag)
                guard let port = Int(text), (0...65535).contains(port) else {
                    throw Problem(description: "--port needs a number from 0 to 65535, not \"\(text)\"")
                }
                self.port = port
            case "--bind": bind = try value(flag)
            case "--room":
                let name = try value(flag)
                if name.lowercased() == "none" {
                    room = nil
                } else if let problem = IRCNames.channelProblem(name, maxBytes: 50) ?? NameSafety.channelProblem(name) {
                    throw Problem(description: "--room needs a name like #lobby, or none: \(problem)")
                } else {
                    room = name
                }
            case "--oper":
                let text = try value(flag)
                let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
                guard parts.count == 2, parts[1].hasPrefix("sha256:"), parts[1].split(separator: ":").count == 3 else {
                    throw Problem(description: "--oper needs NAME:HASH, the hash from chat-tui --hash-password")
                }
                operators.append((parts[0], parts[1]))
            case "--hash-password": mode = .hashPassword; sawMode = true
            case "--name":
                serverName = try value(flag)
                guard !serverName.isEmpty, !serverName.contains(" ") else {
                    throw Problem(description: "--name needs a server name without spaces")
                }
            case "--motd": motdPath = try value(flag)
            case "--password": password = try value(flag)
            case "--ping-interval": pingInterval = try number(flag)
            case "--ping-timeout": pingTimeout = try number(flag)
            case "--register-timeout": registrationTimeout = try number(flag)
            case "--sendq": sendQueueBytes = Int(try number(flag))
            case "--nick":
                nick = try value(flag)
                if let problem = IRCNames.nickProblem(nick!, maxBytes: 30) {
                    throw Problem(description: "--nick \(nick!): \(problem)")
                }
            case "--join":
                rooms = try value(flag).split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
                for room in rooms where IRCNames.channelProblem(room, types: "#&", maxBytes: 50) != nil {
                    throw Problem(description: "--join: \"\(room)\" is not a room name (rooms start with #)")
                }
            case "--lines": lines = true
            case "--connect-timeout": connectTimeout = try number(flag)
            case "--bell":
                let text = try value(flag).lowercased()
                guard ["on", "off", "true", "false", "yes", "no"].contains(text) else {
                    throw Problem(description: "--bell needs on or off, not \"\(text)\"")
                }
                bell = ["on", "true", "yes"].contains(text)
            case "--timestamps":
                let text = try value(flag).uppercased()
                guard text == "HH:MM" || text == "HH:MM:SS" else {
                    throw Problem(description: "--timestamps needs HH:MM or HH:MM:SS, not \"\(text)\"")
                }
                timestampSeconds = text == "HH:MM:SS"
            case "--scrollback": scrollback = max(100, Int(try number(flag)))
            case "--log": logPath = try value(flag)
            case "--download-dir": downloadDirectory = try value(flag)
            case "--dcc-ports":
                let text = try value(flag)
                let bounds = text.split(separator: "-").compactMap { Int($0) }
                guard bounds.count == 2, bounds[0] > 0, bounds[0] <= bounds[1], bounds[1] <= 65535 else {
                    throw Problem(description: "--dcc-ports needs a range like 50000-50100, not \"\(text)\"")
                }
                dccPorts = bounds[0]...bounds[1]
            case "--dcc-address": dccAddress = try value(flag)
            case "--dcc-max-size":
                let text = try value(flag)
                guard let size = Arguments.parseSize(text) else {
                    throw Problem(description: "--dcc-max-size needs a size like 500M or 2G, not \"\(text)\"")
                }
                dccMaxSize = size
            case "--dcc-auto-accept-from":
                dccAutoAccept = try value(flag).split(separator: ",").map(String.init)
            case "--help", "-h": mode = .help; return
            case "--version": mode = .version; return
            default: throw Problem(description: "unknown option \(flag) (try --help)")
            }
        }
        if !sawMode { mode = .help }
    }
}
