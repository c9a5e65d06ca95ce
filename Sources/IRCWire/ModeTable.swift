/// Every channel and user mode this project knows, once. The server's CHANMODES, PREFIX,
/// 004 mode lists, 324 and MODE parsing come from here; the client builds the same kind of
/// `ModeSyntax` from a server's ISUPPORT, so both sides parse MODE with one parser.

/// The CHANMODES class of a channel mode (the modern docs' types A–D), or a membership prefix.
public enum ChannelModeKind: Sendable, Equatable {
    /// Type A: a list (`+b`, `+e`, `+I`); a parameter when set or unset, none to list.
    case list
    /// Type B: always a parameter (`+k`).
    case alwaysParameter
    /// Type C: a parameter only when set (`+l`).
    case parameterWhenSet
    /// Type D: a flag, never a parameter.
    case flag
    /// A membership status (`+o`, `+v`): a nickname parameter both ways.
    case membership
}

/// What a mode's parameter must look like; the server validates it, the client only counts it.
public enum ModeParameterRule: Sendable, Equatable {
    case none
    /// `nick!user@host` with `*` and `?`; a bare nick or host is completed.
    case mask
    /// A channel key: no spaces, commas or control characters, at most `ChannelModes.keyLength` bytes.
    case key
    /// A positive whole number.
    case limit
    /// A member's nickname.
    case nickname
}

/// Who may change a mode.
public enum ModeSetter: Sendable, Equatable {
    case channelOperator
    /// The user themself (`+i`, `+B`); `-o` too for user mode `o`.
    case selfOnly
    /// Only the server (user mode `+o` comes from OPER).
    case server
}

public struct ChannelMode: Sendable, Equatable {
    public let letter: Character
    public let kind: ChannelModeKind
    public let parameter: ModeParameterRule
    public let setter: ModeSetter
    /// For membership modes, the NAMES/WHO prefix (`@`, `+`).
    public let prefix: Character?
    public let meaning: String
}

public struct UserMode: Sendable, Equatable {
    public let letter: Character
    public let setter: ModeSetter
    public let meaning: String
}

public enum ChannelModes {
    public static let keyLength = 32
    /// The most entries one of `+b`, `+e`, `+I` may hold (MAXLIST).
    public static let listLimit = 100

    /// In CHANMODES order within each class.
    public static let all: [ChannelMode] = [
        ChannelMode(letter: "b", kind: .list, parameter: .mask, setter: .channelOperator, prefix: nil, meaning: "ban"),
        ChannelMode(letter: "e", kind: .list, parameter: .mask, setter: .channelOperator, prefix: nil, meaning: "ban exception"),
        ChannelMode(letter: "I", kind: .list, parameter: .mask, setter: .channelOperator, prefix: nil, meaning: "invite exception"),
        ChannelMode(letter: "k", kind: .alwaysParameter, parameter: .key, setter: .channelOperator, prefix: nil, meaning: "key"),
        ChannelMode(letter: "l", kind: .parameterWhenSet, parameter: .limit, setter: .channelOperator, prefix: nil, meaning: "member limit"),
        ChannelMode(letter: "C", kind: .flag, parameter: .none, setter: .channelOperator, prefix: nil, meaning: "no CTCP but ACTION"),
        ChannelMode(letter: "i", kind: .flag, parameter: .none, setter: .channelOperator, prefix: nil, meaning: "invite only"),
        ChannelMode(letter: "m", kind: .flag, parameter: .none, setter: .channelOperator, prefix: nil, meaning: "moderated"),
        ChannelMode(letter: "n", kind: .flag, parameter: .none, setter: .channelOperator, prefix: nil, meaning: "no messages from outside"),
        ChannelMode(letter: "s", kind: .flag, parameter: .none, setter: .channelOperator, prefix: nil, meaning: "secret"),
        ChannelMode(letter: "t", kind: .flag, parameter: .none, setter: .channelOperator, prefix: nil, meaning: "only operators set the topic"),
        // Highest rank first, as PREFIX lists them.
        ChannelMode(letter: "o", kind: .membership, parameter: .nickname, setter: .channelOperator, prefix: "@", meaning: "operator"),
        ChannelMode(letter: "v", kind: .membership, parameter: .nickname, setter: .channelOperator, prefix: "+", meaning: "voice"),
    ]

    public static func mode(_ letter: Character) -> ChannelMode? { all.first { $0.letter == letter } }

    /// `CHANMODES=beI,k,l,Cimnst`.
    public static var chanmodesToken: String {
        [ChannelModeKind.list, .alwaysParameter, .parameterWhenSet, .flag].map { kind in
            String(all.filter { $0.kind == kind }.map(\.letter))
        }.joined(separator: ",")
    }

    /// `PREFIX=(ov)@+`.
    public static var prefixToken: String {
        let members = all.filter { $0.kind == .membership }
        return "(" + String(members.map(\.letter)) + ")" + String(members.compactMap(\.prefix))
    }

    /// `MAXLIST=b:100,e:100,I:100`: each list on its own (`beI:100` would mean all three together).
    public static var maxListToken: String {
        all.filter { $0.kind == .list }.map { "\($0.letter):\(listLimit)" }.joined(separator: ",")
    }

    /// 004's channel modes, and those of them that take a parameter.
    public static var letters: String { String(all.map(\.letter).sorted()) }
    public static var lettersWithParameter: String {
        String(all.filter { $0.kind != .flag }.map(\.letter).sorted())
    }

    /// Validates a parameter as the server takes it: the normalised value, or why not.
    public static func validate(_ mode: ChannelMode, _ raw: String, casemapping: Casemapping) -> Result<String, ModeParameterProblem> {
        switch mode.parameter {
        case .none, .nickname:
            return .success(raw)
        case .mask:
            if let extban = ExtBan(raw) {
                return extban.text.map { .success($0) } ?? .failure(.invalid("Extended ban is not valid: $a:ACCOUNT or $m:MASK"))
            }
            return IRCMask.normalise(raw).map { .success($0) } ?? .failure(.invalid("Mask is not valid"))
        case .key:
            if raw.isEmpty { return .failure(.invalid("Key is empty")) }
            if raw.utf8.count > keyLength { return .failure(.invalid("Key is longer than \(keyLength) bytes")) }
            if raw.unicodeScalars.contains(where: { $0 == " " || $0 == "," || $0 == ":" || $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) {
                return .failure(.invalid("Key may not contain spaces, commas, colons or control characters"))
            }
            return .success(raw)
        case .limit:
            guard let value = Int(raw), value > 0, value <= 1_000_000 else {
                return .failure(.invalid("Limit must be a whole number from 1 to 1000000"))
            }
            return .success(String(value))
        }
    }
}

/// Why a mode parameter was refused, in words: the server answers 696 (ERR_INVALIDMODEPARAM),
/// which the modern docs name for a bad key as for any other bad parameter.
public enum ModeParameterProblem: Error, Equatable, Sendable {
    case invalid(String)
}

public enum UserModes {
    public static let all: [UserMode] = [
        UserMode(letter: "B", setter: .selfOnly, meaning: "bot"),
        UserMode(letter: "i", setter: .selfOnly, meaning: "invisible"),
        UserMode(letter: "o", setter: .server, meaning: "IRC operator"),
        UserMode(letter: "w", setter: .selfOnly, meaning: "receives WALLOPS"),
    ]

    public static func mode(_ letter: Character) -> UserMode? { all.first { $0.letter == letter } }

    /// 004's user modes.
    public static var letters: String { String(all.map(\.letter).sorted()) }
}

/// One change a MODE line asks for: `+k secret`, `-o bob`, `+b` with no mask (a list query).
public struct ModeChange: Equatable, Sendable {
    public var adding: Bool
    public var letter: Character
    public var argument: String?

    public init(adding: Bool, letter: Character, argument: String? = nil) {
        self.adding = adding
        self.letter = letter
        self.argument = argument
    }
}

/// How to read the letters of a MODE line: which take a parameter, and when.
public struct ModeSyntax: Sendable {
    public var kinds: [Character: ChannelModeKind]

    public init(kinds: [Character: ChannelModeKind]) { self.kinds = kinds }

    /// Our server's own channel modes.
    public static let server = ModeSyntax(kinds: Dictionary(uniqueKeysWithValues: ChannelModes.all.map { ($0.letter, $0.kind) }))

    /// A server's channel modes as its ISUPPORT states them (CHANMODES and PREFIX), with the
    /// RFC defaults when it states nothing.
    public init(isupport: ISupport) {
        var kinds: [Character: ChannelModeKind] = [:]
        let classes = (isupport["CHANMODES"] ?? "beI,k,l,imnpst").split(separator: ",", omittingEmptySubsequences: false)
        let order: [ChannelModeKind] = [.list, .alwaysParameter, .parameterWhenSet, .flag]
        for (index, letters) in classes.enumerated() where index < order.count {
            for letter in letters { kinds[letter] = order[index] }
        }
        for (letter, _) in isupport.prefixes { kinds[letter] = .membership }
        self.kinds = kinds
    }

    /// User modes never take a parameter here (ours do not; `+s` snomasks are not supported).
    public static let user = ModeSyntax(kinds: [:])

    public struct Parsed: Equatable, Sendable {
        public var changes: [ModeChange] = []
        /// Letters this syntax does not know, in order (472 or 501 each).
        public var unknown: [Character] = []
        /// Letters that needed a parameter and had none (ignored, as InspIRCd does, except a
        /// list letter with none, which is a list query and is in `changes` without argument).
        public var missingParameter: [Character] = []
    }

    /// Splits a modestring and its arguments into changes. Letters not in `kinds` are
    /// reported as unknown unless `flagsUnknown` says to take them as flags (user modes).
    public func parse(_ modestring: String, arguments: [String], unknownAreFlags: Bool = false) -> Parsed {
        var parsed = Parsed()
        var adding = true
        var remaining = arguments[...]
        for letter in modestring {
            switch letter {
            case "+": adding = true
            case "-": adding = false
            default:
                guard let kind = kinds[letter] else {
                    if unknownAreFlags { parsed.changes.append(ModeChange(adding: adding, letter: letter)) } else { parsed.unknown.append(letter) }
                    continue
                }
                let needs: Bool
                switch kind {
                case .list, .alwaysParameter, .membership: needs = true
                case .parameterWhenSet: needs = adding
                case .flag: needs = false
                }
                if !needs {
                    parsed.changes.append(ModeChange(adding: adding, letter: letter))
                } else if let argument = remaining.popFirst() {
                    parsed.changes.append(ModeChange(adding: adding, letter: letter, argument: argument))
                } else if kind == .list {
                    parsed.changes.append(ModeChange(adding: adding, letter: letter))
                } else {
                    parsed.missingParameter.append(letter)
                }
            }
        }
        return parsed
    }

    /// Changes as one MODE line's parameters: `+kl-o key 10 bob`.
    public static func format(_ changes: [ModeChange]) -> [String] {
        var text = ""
        var sign: Bool?
        for change in changes {
            if change.adding != sign { text.append(change.adding ? "+" : "-"); sign = change.adding }
            text.append(change.letter)
        }
        return [text] + changes.compactMap(\.argument)
    }
}

/// Extended bans (`EXTBAN=$,am`): `$a:ACCOUNT` matches whoever is logged in to an account of
/// that name (a glob), `$m:MASK` mutes whoever the mask matches (they stay, but may not speak).
/// InspIRCd's spelling of a mute, `m:MASK`, is taken too and kept as `$m:MASK`.
public enum ExtBan: Equatable, Sendable {
    case account(String)
    case mute(String)
    /// Looks like an extban but is not a valid one.
    case invalid

    public static let token = "$,am"

    /// Nil for an ordinary mask.
    public init?(_ raw: String) {
        if raw.hasPrefix("$a:") {
            let account = String(raw.dropFirst(3))
            self = account.isEmpty || account.unicodeScalars.contains(where: { $0 == " " || $0 == "," || $0.value < 0x20 }) ? .invalid : .account(account)
        } else if raw.hasPrefix("$m:") || raw.hasPrefix("m:") {
            self = IRCMask.normalise(String(raw.drop { $0 != ":" }.dropFirst())).map { .mute($0) } ?? .invalid
        } else if raw.hasPrefix("$") {
            self = .invalid
        } else {
            return nil
        }
    }

    /// As the list keeps it.
    public var text: String? {
        switch self {
        case .account(let name): "$a:" + name
        case .mute(let mask): "$m:" + mask
        case .invalid: nil
        }
    }
}
