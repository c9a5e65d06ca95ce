import Foundation
import IRCWire

/// Registration with a server as a pure state machine: it says what to send at the start and
/// answers each message of the registration dance (CAP LS/REQ/ACK/NAK/NEW/DEL, SASL PLAIN,
/// nickname retries, 001, fatal refusals) with actions. No I/O, no clock, no randomness.
public struct Registration: Sendable {
    public struct Settings: Sendable {
        public var nick: String
        public var userName: String
        public var realName: String
        public var password: String?
        public var wantedCapabilities: [String]
        /// SASL PLAIN credentials, when the user has an account.
        public var sasl: (account: String, password: String)?

        public init(nick: String, userName: String, realName: String, password: String? = nil,
                    wantedCapabilities: [String], sasl: (account: String, password: String)? = nil) {
            self.nick = nick
            self.userName = userName
            self.realName = realName
            self.password = password
            self.wantedCapabilities = wantedCapabilities
            self.sasl = sasl
        }
    }

    public enum Phase: Sendable, Equatable {
        /// CAP LS sent, the list (perhaps over several lines) not complete yet.
        case listing
        /// CAP REQ sent, waiting for ACK or NAK.
        case requesting
        /// AUTHENTICATE under way.
        case authenticating
        /// CAP END sent (or no CAP at all): waiting for 001.
        case welcoming
        case registered
        /// Refused for good: do not reconnect.
        case refused(String)
    }

    public enum Action: Sendable, Equatable {
        case send(IRCMessage)
        /// The nickname was taken (or unavailable); `trying` is sent next.
        case nickInUse(String, trying: String)
        /// The acknowledged capability set changed.
        case capabilities(Set<String>)
        /// 001 arrived: registered as this nickname.
        case registered(nick: String)
        /// SASL did not log us in; registration goes on without an account.
        case notice(String)
        /// Stop, and do not reconnect: the reason is for the user.
        case refuse(String)
    }

    public let settings: Settings
    public private(set) var phase: Phase = .listing
    /// The nickname we asked for last.
    public private(set) var nick: String
    /// Capabilities the server offers (name to value), across LS continuation lines and NEW.
    public private(set) var offered: [String: String] = [:]
    public private(set) var acknowledged: Set<String> = []
    /// NICKLEN, once 005 said it (a retry never passes it).
    public var nickLength = 30
    private var retries = 0

    public init(_ settings: Settings) {
        self.settings = settings
        nick = settings.nick
    }

    /// What to send on a fresh connection.
    public mutating func start() -> [Action] {
        phase = .listing
        offered = [:]
        acknowledged = []
        var out: [Action] = [.send(IRCMessage("CAP", "LS", "302"))]
        if let password = settings.password { out.append(.send(IRCMessage("PASS", password))) }
        out.append(.send(IRCMessage("NICK", nick)))
        out.append(.send(IRCMessage(command: "USER", params: [settings.userName, "0", "*", settings.realName])))
        return out
    }

    /// Whether a message is the machine's alone (not shown as a line): CAP, AUTHENTICATE,
    /// SASL numerics, and the nickname refusals it answers before registration.
    public func consumes(_ message: IRCMessage) -> Bool {
        switch message.command {
        case "CAP", "AUTHENTICATE", "900", "901", "902", "903", "904", "905", "906", "907", "908": return true
        case "410": return true
        case "421": return message.param(1)?.uppercased() == "CAP"
        case "432", "433", "436", "437": return phase != .registered
        default: return false
        }
    }

    public mutating func received(_ message: IRCMessage) -> [Action] {
        let p = message.params
        switch message.command {
        case "CAP":
            guard p.count >= 2 else { return [] }
            return cap(p[1].uppercased(), Array(p.dropFirst(2)))
        case "410", "421":
            // The server knows no CAP (or not this subcommand): register without.
            return endNegotiation()
        case "AUTHENTICATE":
            guard phase == .authenticating, p.first == "+", let sasl = settings.sasl else { return [] }
            let payload = Data("\(sasl.account)\u{0}\(sasl.account)\u{0}\(sasl.password)".utf8).base64EncodedString()
            // Chunks of 400 bytes; a payload of exactly a multiple of 400 ends with "+".
            var out: [Action] = []
            var rest = Substring(payload)
            repeat {
                let chunk = rest.prefix(400)
                rest = rest.dropFirst(chunk.count)
                out.append(.send(IRCMessage("AUTHENTICATE", String(chunk))))
                if rest.isEmpty && chunk.count == 400 { out.append(.send(IRCMessage("AUTHENTICATE", "+"))) }
            } while !rest.isEmpty
            return out
        case "903", "907":
            return phase == .authenticating ? endNegotiation() : []
        case "902", "904", "905", "906", "908":
            guard phase == .authenticating else { return [] }
            let reason = p.last ?? "SASL authentication failed"
            return [.notice("Not logged in (\(reason)); going on without an account")] + endNegotiation()
        case "900", "901":
            return []
        case "433", "436", "437":
            guard phase != .registered else { return [] }
            let taken = message.param(1) ?? nick
            nick = alternative(to: taken)
            return [.nickInUse(taken, trying: nick), .send(IRCMessage("NICK", nick))]
        case "432":
            guard phase != .registered else { return [] }
            return refuse("the server refused the nickname \(message.param(1) ?? nick): \(p.last ?? "erroneous nickname")")
        case "464":
            guard phase != .registered else { return [] }
            return refuse("wrong password: \(p.last ?? "password incorrect")")
        case "465":
            return refuse("banned from this server: \(p.last ?? "")")
        case "001":
            phase = .registered
            nick = p.first ?? nick
            return [.registered(nick: nick)]
        case "005":
            var isupport = ISupport()
            isupport.apply(message)
            if let length = isupport.nickLength { nickLength = length }
            return []
        case "NICK" where phase == .registered:
            return []
        default:
            return []
        }
    }

    // CAP <me> LS [*] :<caps> | ACK :<caps> | NAK :<caps> | NEW :<caps> | DEL :<caps>
    mutating func cap(_ subcommand: String, _ rest: [String]) -> [Action] {
        let list = (rest.last ?? "").split(separator: " ").map(String.init)
        switch subcommand {
        case "LS":
            for entry in list {
                let parts = entry.split(separator: "=", maxSplits: 1)
                offered[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
            }
            // A `*` before the list means more LS lines follow.
            if rest.count >= 2 && rest[0] == "*" { return [] }
            guard phase == .listing else { return [] }
            return request(from: Set(offered.keys))
        case "NEW":
            for entry in list {
                let parts = entry.split(separator: "=", maxSplits: 1)
                offered[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
            }
            let fresh = settings.wantedCapabilities.filter { name in list.contains { $0.hasPrefix(name) } && !acknowledged.contains(name) }
            return fresh.isEmpty ? [] : [.send(IRCMessage("CAP", "REQ", fresh.joined(separator: " ")))]
        case "DEL":
            for name in list { offered[name] = nil }
            let before = acknowledged
            acknowledged.subtract(list)
            return acknowledged == before ? [] : [.capabilities(acknowledged)]
        case "ACK":
            for name in list {
                if name.hasPrefix("-") { acknowledged.remove(String(name.dropFirst())) } else { acknowledged.insert(name) }
            }
            var out: [Action] = [.capabilities(acknowledged)]
            guard phase == .requesting else { return out }
            if acknowledged.contains("sasl"), settings.sasl != nil {
                phase = .authenticating
                out.append(.send(IRCMessage("AUTHENTICATE", "PLAIN")))
                return out
            }
            return out + endNegotiation()
        case "NAK":
            return phase == .requesting ? endNegotiation() : []
        default:
            return []
        }
    }

    mutating func request(from available: Set<String>) -> [Action] {
        var wanted = settings.wantedCapabilities.filter { available.contains($0) }
        if settings.sasl != nil, available.contains("sasl"), offersPlain, !wanted.contains("sasl") { wanted.append("sasl") }
        guard !wanted.isEmpty else { return endNegotiation() }
        phase = .requesting
        return [.send(IRCMessage("CAP", "REQ", wanted.joined(separator: " ")))]
    }

    /// `sasl=PLAIN,EXTERNAL` lists mechanisms; a bare `sasl` (CAP 301) promises nothing, so try.
    var offersPlain: Bool {
        guard let value = offered["sasl"], !value.isEmpty else { return true }
        return value.split(separator: ",").contains { $0.uppercased() == "PLAIN" }
    }

    mutating func endNegotiation() -> [Action] {
        guard phase == .listing || phase == .requesting || phase == .authenticating else { return [] }
        phase = .welcoming
        return [.send(IRCMessage("CAP", "END"))]
    }

    mutating func refuse(_ reason: String) -> [Action] {
        phase = .refused(reason)
        return [.refuse(reason)]
    }

    /// `nick_`, `nick__`, … and, when that would pass NICKLEN, the start of our nickname with
    /// a number for each further try (`alic1`, `alic2`).
    mutating func alternative(to taken: String) -> String {
        retries += 1
        let candidate = taken + "_"
        if candidate.utf8.count <= nickLength && retries <= 3 { return candidate }
        let digits = String(retries)
        return UTF8Boundary.prefix(settings.nick, maxBytes: max(1, nickLength - digits.utf8.count)) + digits
    }
}
