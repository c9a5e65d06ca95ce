import IRCWire

/// The longest line a link sends or takes after its tags: InspIRCd's own limit for server
/// lines is far above a client's 512 (it cuts nothing it relays), and a burst's FJOIN and a
/// CAPAB list are made to stay under `LinkLimits.preferredLine`.
public enum LinkLimits {
    public static let maxLine = 16 * 1024
    /// What a line this side makes is kept under (InspIRCd splits its own FJOINs alike).
    public static let preferredLine = 500

    /// `words` joined by spaces into as few texts as keep each line, with `overhead` bytes of
    /// the line around the text, under `preferredLine` (a word longer than that goes alone).
    static func pack(_ words: [String], overhead: Int) -> [String] {
        var texts: [String] = []
        var current = ""
        for word in words {
            if !current.isEmpty && overhead + current.utf8.count + 1 + word.utf8.count > preferredLine {
                texts.append(current)
                current = ""
            }
            current += current.isEmpty ? word : " " + word
        }
        texts.append(current)
        return texts
    }
}

/// `SERVER` during the handshake: `SERVER <name> <password> <hops> <sid> :<description>`
/// (protocol 1205; a later server introduced after the burst is `:<parent> SERVER <name> * <hops> <sid> :<description>`).
public struct ServerLine: Equatable, Sendable {
    public var name: String
    public var password: String
    public var hops: Int
    public var sid: String
    public var description: String

    public init(name: String, password: String, hops: Int = 0, sid: String, description: String) {
        self.name = name
        self.password = password
        self.hops = hops
        self.sid = sid
        self.description = description
    }

    public init?(_ message: IRCMessage) {
        guard message.command == "SERVER", message.params.count >= 5, let hops = Int(message.params[2]),
              LinkIDs.isValidSID(message.params[3]) else { return nil }
        self.init(name: message.params[0], password: message.params[1], hops: hops, sid: message.params[3],
                  description: message.params[4])
    }

    public func message(source: String? = nil) -> IRCMessage {
        IRCMessage(source: source, command: "SERVER", params: [name, password, String(hops), sid, description])
    }
}

/// One user introduced to the network (protocol 1205):
/// `:<sid> UID <uuid> <nick-ts> <nick> <host> <displayed-host> <ident> <ip> <signon> +<modes> [params] :<realname>`.
public struct UIDLine: Equatable, Sendable {
    public var uuid: String
    /// When the nickname was taken: the older one keeps a name two users collide on.
    public var nickTS: Int
    public var nick: String
    public var host: String
    public var displayedHost: String
    public var ident: String
    public var ip: String
    public var signon: Int
    /// `+iw`, then the parameters of those that take one.
    public var modes: String
    public var modeParameters: [String]
    public var realname: String

    public init(uuid: String, nickTS: Int, nick: String, host: String, displayedHost: String, ident: String, ip: String,
                signon: Int, modes: String, modeParameters: [String] = [], realname: String) {
        self.uuid = uuid
        self.nickTS = nickTS
        self.nick = nick
        self.host = host
        self.displayedHost = displayedHost
        self.ident = ident
        self.ip = ip
        self.signon = signon
        self.modes = modes
        self.modeParameters = modeParameters
        self.realname = realname
    }

    public init?(_ message: IRCMessage) {
        let p = message.params
        guard message.command == "UID", p.count >= 10, LinkIDs.isValidUUID(p[0]), let nickTS = Int(p[1]),
              let signon = Int(p[7]), p[8].hasPrefix("+") else { return nil }
        self.init(uuid: p[0], nickTS: nickTS, nick: p[2], host: p[3], displayedHost: p[4], ident: p[5], ip: p[6],
                  signon: signon, modes: p[8], modeParameters: Array(p[9..<(p.count - 1)]), realname: p[p.count - 1])
    }

    public func message(source sid: String) -> IRCMessage {
        IRCMessage(source: sid, command: "UID",
                   params: [uuid, String(nickTS), nick, host, displayedHost, ident, ip, String(signon), modes]
                       + modeParameters + [realname])
    }

    /// The flag letters among `modes`.
    public var modeLetters: Set<Character> { Set(modes.dropFirst()) }
}

/// A room's state and members in one line (protocol 1205):
/// `:<sid> FJOIN <room> <ts> +<modes> [params] :<status>,<uuid>:<membership-id> …`,
/// `<status>` being mode letters (`o`, `ov`, or nothing).
public struct FJOINLine: Equatable, Sendable {
    public struct Member: Equatable, Sendable {
        public var status: String
        public var uuid: String
        /// InspIRCd numbers each membership (1205); 0 when the peer gave none.
        public var membershipID: UInt64

        public init(status: String, uuid: String, membershipID: UInt64 = 0) {
            self.status = status
            self.uuid = uuid
            self.membershipID = membershipID
        }

        var text: String { "\(status),\(uuid):\(membershipID)" }
    }

    public var room: String
    /// The room's creation time: the older side's modes win a merge.
    public var timestamp: Int
    /// `+ntk`, then the parameters (`secret`).
    public var modes: [String]
    public var members: [Member]

    public init(room: String, timestamp: Int, modes: [String], members: [Member]) {
        self.room = room
        self.timestamp = timestamp
        self.modes = modes.isEmpty ? ["+"] : modes
        self.members = members
    }

    public init?(_ message: IRCMessage) {
        let p = message.params
        guard message.command == "FJOIN", p.count >= 4, let timestamp = Int(p[1]), p[2].hasPrefix("+") else { return nil }
        var members: [Member] = []
        for entry in p[p.count - 1].split(separator: " ") {
            guard let comma = entry.firstIndex(of: ",") else { return nil }
            let status = String(entry[..<comma])
            var rest = entry[entry.index(after: comma)...]
            var id: UInt64 = 0
            if let colon = rest.firstIndex(of: ":") {
                id = UInt64(rest[rest.index(after: colon)...]) ?? 0
                rest = rest[..<colon]
            }
            guard LinkIDs.isValidUUID(String(rest)) else { return nil }
            members.append(Member(status: status, uuid: String(rest), membershipID: id))
        }
        self.init(room: p[0], timestamp: timestamp, modes: Array(p[2..<(p.count - 1)]), members: members)
    }

    /// As lines of at most `LinkLimits.preferredLine` bytes: the members spread over as many as it takes.
    public func messages(source sid: String) -> [IRCMessage] {
        let head = [room, String(timestamp)] + modes
        let headBytes = sid.utf8.count + 8 + head.reduce(0) { $0 + $1.utf8.count + 1 }
        return LinkLimits.pack(members.map(\.text), overhead: headBytes).map {
            IRCMessage(source: sid, command: "FJOIN", params: head + [$0])
        }
    }
}

/// `CAPAB` as a peer sends it between `CAPAB START <protocol>` and `CAPAB END`.
public struct Capab: Equatable, Sendable {
    public var protocolVersion = 0
    public var modules: [String] = []
    public var modSupport: [String] = []
    public var channelModes: [String] = []
    public var userModes: [String] = []
    /// `CAPAB CAPABILITIES :KEY=VALUE …`.
    public var capabilities: [String: String] = [:]
    /// `CAPAB END` arrived.
    public var ended = false

    public init() {}

    /// Takes one `CAPAB` line; false when it is not one this side understands.
    public mutating func take(_ message: IRCMessage) -> Bool {
        guard message.command == "CAPAB", let kind = message.params.first else { return false }
        let words = message.params.count > 1 ? message.params[1].split(separator: " ").map(String.init) : []
        switch kind {
        case "START": protocolVersion = Int(message.params.count > 1 ? message.params[1] : "") ?? 0
        case "MODULES": modules += words
        case "MODSUPPORT": modSupport += words
        case "CHANMODES": channelModes += words
        case "USERMODES": userModes += words
        case "CAPABILITIES":
            for word in words {
                if let equals = word.firstIndex(of: "=") {
                    capabilities[String(word[..<equals])] = String(word[word.index(after: equals)...])
                } else {
                    capabilities[word] = ""
                }
            }
        case "END": ended = true
        default: break // EXTBANS and what later protocols add: nothing this side needs.
        }
        return true
    }

    /// Lines of `CAPAB <kind> :<words>` under `LinkLimits.preferredLine` each.
    public static func lines(_ kind: String, _ words: [String]) -> [IRCMessage] {
        LinkLimits.pack(words, overhead: 19).map { IRCMessage(command: "CAPAB", params: [kind, $0]) }
    }
}
