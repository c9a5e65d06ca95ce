/// The IRCv3 capabilities this server implements; only these are advertised.
public enum Capability: String, CaseIterable, Sendable {
    case accountNotify = "account-notify"
    case accountRegistration = "draft/account-registration"
    case accountTag = "account-tag"
    case awayNotify = "away-notify"
    case batch
    case capNotify = "cap-notify"
    case channelRename = "draft/channel-rename"
    case chathistory = "draft/chathistory"
    case chghost
    case echoMessage = "echo-message"
    case eventPlayback = "draft/event-playback"
    case extendedISupport = "draft/extended-isupport"
    case extendedJoin = "extended-join"
    case extendedMonitor = "extended-monitor"
    case inviteNotify = "invite-notify"
    case labeledResponse = "labeled-response"
    case messageRedaction = "draft/message-redaction"
    case messageTags = "message-tags"
    case metadata = "draft/metadata-2"
    case multiline = "draft/multiline"
    case multiPrefix = "multi-prefix"
    case persistence = "draft/persistence"
    /// Ours: a guest may come back within a minute as the same user (`RESUME`, Presence.swift).
    case resume = "chat-tui.org/resume"
    case noImplicitNames = "no-implicit-names"
    case preAway = "draft/pre-away"
    case readMarker = "draft/read-marker"
    case sasl
    case serverTime = "server-time"
    case setname
    case standardReplies = "standard-replies"
    case userhostInNames = "userhost-in-names"
    /// Push notifications to an account's browsers and phones (WebPush.swift); soju's name too.
    case webpush = "draft/webpush"
    case sojuWebpush = "soju.im/webpush"
    /// SEARCH of the history one may read (HistoryHandlers.swift).
    case search = "soju.im/search"

    var bit: UInt64 { 1 << UInt64(Capability.allCases.firstIndex(of: self)!) }

    /// The value shown after `=` in `CAP LS 302`, if any.
    func value(_ config: ServerConfig) -> String? {
        switch self {
        case .metadata: return MetadataLimits.capabilityValue
        case .multiline: return "max-bytes=\(config.multilineMaxBytes),max-lines=\(config.multilineMaxLines)"
        case .sasl: return "PLAIN,EXTERNAL,SCRAM-SHA-256"
        // REGISTER works before CAP END; the account is named after the nickname.
        case .accountRegistration: return "before-connect"
        default: return nil
        }
    }
}

/// A set of capabilities in one word, cheap to copy for every recipient of a fan-out.
public struct CapabilitySet: Sendable, Equatable {
    var bits: UInt64 = 0

    public init() {}

    public init(_ caps: [Capability]) {
        for cap in caps { insert(cap) }
    }

    public func contains(_ cap: Capability) -> Bool { bits & cap.bit != 0 }
    public mutating func insert(_ cap: Capability) { bits |= cap.bit }
    public mutating func remove(_ cap: Capability) { bits &= ~cap.bit }

    public var names: [String] { Capability.allCases.filter(contains).map(\.rawValue) }

    /// Which form of a relayed message this client gets (see `Rendering`).
    var variant: RenderVariant {
        var v = RenderVariant()
        if contains(.serverTime) { v.insert(.time) }
        if contains(.messageTags) { v.insert(.tags) }
        if contains(.accountTag) { v.insert(.account) }
        if contains(.extendedJoin) { v.insert(.extendedJoin) }
        // batch tags reach only clients that negotiated batch (draft/multiline relays use them).
        if contains(.batch) { v.insert(.batch) }
        return v
    }
}
