import ChatTransport
import IRCWire

/// Who to log in as with SASL, and with what.
public struct SASLLogin: Sendable, Equatable {
    public var account: String
    /// nil: only EXTERNAL (a client certificate) can log in.
    public var password: String?
    /// PLAIN sends the password itself: only over TLS, unless the user allowed it (`--sasl-plain-insecure`).
    public var allowPlain: Bool
    /// A client certificate is presented (EXTERNAL).
    public var external: Bool
    /// This device's name (`ClientConfig.device`).
    public var device: String?

    public init(account: String, password: String?, allowPlain: Bool, external: Bool = false, device: String? = nil) {
        self.account = account
        self.password = password
        self.allowPlain = allowPlain
        self.external = external
        self.device = device.flatMap(Self.deviceName)
    }

    /// A device name as servers take it after `@`: letters, digits, `-`, `_` and `.`, at most
    /// 32 bytes (others dropped; nil when nothing is left).
    public static func deviceName(_ given: String) -> String? {
        let kept = given.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0)) }
        let name = String(String.UnicodeScalarView(kept.prefix(32)))
        return name.isEmpty ? nil : name
    }

    /// The name logged in with: the account, and this device after `@` where the server keeps
    /// each device's place (`persistent`); otherwise the account alone (another server would
    /// take `alice@laptop` for an account of that name).
    func loginName(persistent: Bool) -> String {
        guard persistent, let device else { return account }
        return account + "@" + device
    }

    /// The mechanisms we would use, best first: EXTERNAL with a certificate, SCRAM-SHA-256
    /// (the password never leaves us), PLAIN where allowed.
    var candidates: [String] {
        (external ? ["EXTERNAL"] : []) + (password != nil ? ["SCRAM-SHA-256"] + (allowPlain ? ["PLAIN"] : []) : [])
    }
}

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
        /// The account to log in to, when the user has one: registration does not finish without it.
        public var sasl: SASLLogin?
        /// The SCRAM nonce (random in use; fixed in tests, so the machine stays pure).
        public var nonce: String

        public init(nick: String, userName: String, realName: String, password: String? = nil,
                    wantedCapabilities: [String], sasl: SASLLogin? = nil, nonce: String = SCRAMClient.randomNonce()) {
            self.nonce = nonce
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
        /// Something for the user to read (logged in as whom).
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
    /// SASL: the mechanisms still to try, the one under way, how far it got, the chunks of the
    /// server's current message, and the SCRAM exchange.
    private var mechanisms: [String] = []
    public private(set) var mechanism: String?
    private var step = 0
    private var incoming = ""
    private var scram: SCRAMClient?

    public init(_ settings: Settings) {
        self.settings = settings
        nick = settings.nick
    }

    /// Registered already (a view that goes on reading a book, in tests).
    mutating func assumeRegistered() { phase = .registered }

    /// What to send on a fresh connection.
    public mutating func start() -> [Action] {
        phase = .listing
        offered = [:]
        acknowledged = []
        mechanisms = []
        mechanism = nil
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
            guard phase == .authenticating, let chunk = p.first else { return [] }
            if chunk != "+" { incoming += chunk }
            // A full chunk: more follow.
            if chunk.utf8.count == 400 { return [] }
            let text = incoming
            incoming = ""
            return authenticate(text.isEmpty ? [] : Base64.decode(text))
        case "903", "907":
            guard phase == .authenticating else { return [] }
            // With SCRAM, success counts only once the server has proved it knows the password.
            if mechanism == "SCRAM-SHA-256", message.command == "903", step < 3, let sasl = settings.sasl {
                return refuse("login failed for \(sasl.account): the server said yes without proving it knows the password (not the real server?)")
            }
            return endNegotiation()
        case "908":
            // The mechanisms the server has: the next attempt picks among them.
            let listed = Set((message.param(1) ?? "").uppercased().split(separator: ",").map(String.init))
            mechanisms.removeAll { !listed.contains($0) }
            return []
        case "904", "905":
            guard phase == .authenticating, let sasl = settings.sasl else { return [] }
            // Refused before anything was proved: the mechanism itself, so try the next one. (EXTERNAL
            // is refused after our empty answer, when the certificate names no account.)
            if step == 0 || mechanism == "EXTERNAL" && step <= 1 { return nextMechanism() }
            var reason = p.last ?? "SASL authentication failed"
            for prefix in ["SASL authentication failed: ", "SASL authentication failed"] where reason.hasPrefix(prefix) && reason != prefix {
                reason = String(reason.dropFirst(prefix.count))
            }
            if reason == "SASL authentication failed" { reason = "the server refused the login" }
            return refuse("login failed for \(sasl.account): \(reason)")
        case "902", "906":
            guard phase == .authenticating, let sasl = settings.sasl else { return [] }
            return refuse("login failed for \(sasl.account): \(p.last ?? "refused")")
        case "900":
            if let account = message.param(2) { return [.notice("Logged in as \(account)")] }
            return []
        case "901":
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
            record(offered: list)
            // A `*` before the list means more LS lines follow.
            if rest.count >= 2 && rest[0] == "*" { return [] }
            guard phase == .listing else { return [] }
            return request(from: Set(offered.keys))
        case "NEW":
            record(offered: list)
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
            let out: [Action] = [.capabilities(acknowledged)]
            guard phase == .requesting else { return out }
            if acknowledged.contains("sasl"), settings.sasl != nil {
                phase = .authenticating
                return out + nextMechanism()
            }
            if let sasl = settings.sasl {
                return out + refuse("login failed for \(sasl.account): the server did not grant SASL")
            }
            return out + endNegotiation()
        case "NAK":
            guard phase == .requesting else { return [] }
            if let sasl = settings.sasl { return refuse("login failed for \(sasl.account): the server did not grant SASL") }
            return endNegotiation()
        default:
            return []
        }
    }

    /// `name` or `name=value` entries of CAP LS and NEW; an entry with no name (`=`, `=x`) is
    /// nobody's (the client fuzz target found `CAP * LS :=` trapping here).
    mutating func record(offered list: [String]) {
        for entry in list {
            let parts = entry.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = parts.first, !name.isEmpty else { continue }
            offered[String(name)] = parts.count > 1 ? String(parts[1]) : ""
        }
    }

    mutating func request(from available: Set<String>) -> [Action] {
        var wanted = settings.wantedCapabilities.filter { available.contains($0) }
        if let sasl = settings.sasl {
            // Asked to log in: without a way to, registering would only look like success.
            guard available.contains("sasl") else {
                return refuse("login failed for \(sasl.account): the server offers no SASL login (join without --sasl-user, or ask its host)")
            }
            // `sasl=PLAIN,EXTERNAL` lists mechanisms; a bare `sasl` (CAP 301) promises nothing, so try ours in turn.
            let listed = (offered["sasl"] ?? "").uppercased().split(separator: ",").map(String.init)
            mechanisms = listed.isEmpty ? sasl.candidates : sasl.candidates.filter(listed.contains)
            if mechanisms.isEmpty {
                if listed.contains("PLAIN") && sasl.password != nil {
                    return refuse("login failed for \(sasl.account): the server offers only PLAIN, which would send your password "
                                  + "in clear over this plain-text connection (use --tls, or --sasl-plain-insecure)")
                }
                return refuse("login failed for \(sasl.account): the server offers \(listed.joined(separator: ", ")), none of which we can use"
                              + (sasl.external ? "" : " (EXTERNAL needs --tls-cert)"))
            }
            if !wanted.contains("sasl") { wanted.append("sasl") }
        }
        guard !wanted.isEmpty else { return endNegotiation() }
        phase = .requesting
        return [.send(IRCMessage("CAP", "REQ", wanted.joined(separator: " ")))]
    }

    /// The server keeps accounts present across devices, and so reads `account@device`.
    var offersPersistence: Bool { offered["draft/persistence"] != nil }

    /// Starts the next mechanism to try.
    mutating func nextMechanism() -> [Action] {
        guard !mechanisms.isEmpty, let sasl = settings.sasl else {
            return refuse("login failed for \(settings.sasl?.account ?? "?"): the server accepted none of our login mechanisms")
        }
        let next = mechanisms.removeFirst()
        mechanism = next
        step = 0
        incoming = ""
        scram = next == "SCRAM-SHA-256" ? SCRAMClient(user: sasl.loginName(persistent: offersPersistence), password: sasl.password ?? "", nonce: settings.nonce) : nil
        return [.send(IRCMessage("AUTHENTICATE", next))]
    }

    /// One whole message from the server in the exchange (nil: it was not base64).
    mutating func authenticate(_ payload: [UInt8]?) -> [Action] {
        guard let sasl = settings.sasl, let mechanism else { return [] }
        guard let payload else { return abort("login failed for \(sasl.account): the server sent a malformed SASL message") }
        defer { step += 1 }
        switch (mechanism, step) {
        case ("PLAIN", 0):
            let name = sasl.loginName(persistent: offersPersistence)
            return sendAuthenticate(Array("\(name)\u{0}\(name)\u{0}\(sasl.password ?? "")".utf8))
        case ("EXTERNAL", 0):
            // Empty: the account is the one the certificate belongs to.
            return [.send(IRCMessage("AUTHENTICATE", "+"))]
        case ("SCRAM-SHA-256", 0):
            return sendAuthenticate(Array((scram?.first ?? "").utf8))
        case ("SCRAM-SHA-256", 1):
            do {
                guard let final = try scram?.final(serverFirst: String(decoding: payload, as: UTF8.self)) else { return [] }
                return sendAuthenticate(Array(final.utf8))
            } catch {
                return abort("login failed for \(sasl.account): \(error)")
            }
        case ("SCRAM-SHA-256", 2):
            do {
                try scram?.verify(serverFinal: String(decoding: payload, as: UTF8.self))
            } catch {
                return abort("login failed for \(sasl.account): \(error)")
            }
            return [.send(IRCMessage("AUTHENTICATE", "+"))]
        default:
            return abort("login failed for \(sasl.account): the server's SASL exchange went on longer than \(mechanism) does")
        }
    }

    /// Tells the server we give up (`AUTHENTICATE *`) and stops.
    mutating func abort(_ reason: String) -> [Action] {
        [.send(IRCMessage("AUTHENTICATE", "*"))] + refuse(reason)
    }

    /// A message in 400-byte chunks; a whole last chunk is followed by `+`.
    func sendAuthenticate(_ bytes: [UInt8]) -> [Action] {
        let payload = Base64.encode(bytes)
        var out: [Action] = []
        var rest = Substring(payload)
        repeat {
            let chunk = rest.prefix(400)
            rest = rest.dropFirst(chunk.count)
            out.append(.send(IRCMessage("AUTHENTICATE", String(chunk))))
            if rest.isEmpty && chunk.count == 400 { out.append(.send(IRCMessage("AUTHENTICATE", "+"))) }
        } while !rest.isEmpty
        return out
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
