import IRCWire

/// One line in a conversation, as a front end shows it.
public struct ChatLine: Sendable, Equatable {
    public enum Kind: Sendable, Hashable {
        case message, action, notice
        case join, part, quit, kick, nick, topic, mode
        /// Anything the client or server says about itself: MOTD, replies, connection notices.
        case info
        case error
        /// A file transfer's line: front ends draw its progress from `ChatClient.transfers`.
        case transfer(Int)
    }

    // The stored fields are declared widest first, and the rare ones (a reply's parent,
    // reactions, a deletion, a held line's serial) share one box that most lines do not have:
    // a line is 80 bytes in a conversation's array instead of 136, and a screen and the
    // client each keep up to `scrollbackLimit` of them per conversation.

    /// Seconds since 1970: the server's `time` tag when present, else when it arrived.
    public var time: Double
    /// Who said it (a nickname), or nil for server and client notices.
    public var sender: String?
    public var text: String
    /// The server's `msgid` tag: the same message delivered twice (a replay, history filling a
    /// gap) is kept once.
    public var msgid: String?
    private var rare: Rare?
    public var kind: Kind
    /// Sent by us.
    public var isOwn: Bool
    /// Mentions our nickname (or is a direct message to us).
    public var isHighlight: Bool
    /// Ours, typed while offline and held until the connection is back.
    public var isPending = false
    /// Said before now (history filling a gap, a replay): placed by its time. Live lines go at
    /// the end in the order they arrive, whatever their clocks say (ours and the server's differ).
    public var isHistory = false
    /// Old news: a room's last lines shown on joining, older lines fetched by scrolling, lines
    /// restored from the log. Not unread, never a mention.
    public var isOldNews = false
    /// Rings even in the conversation on screen (an invitation: news put where the user looks).
    public var rings = false
    /// A join, part, quit or rename of someone who had not spoken in the room for 10 minutes
    /// (and, for a join, has not spoken since): the smart filter folds these (`Conversation.noteSpeaker`).
    public var isQuiet = false

    /// The fields few lines have, shared and never changed in place (a change makes a new box,
    /// so copies of a line stay values).
    private final class Rare: Sendable, Equatable {
        let serial: UInt64
        let replyTo: String?
        let reactions: [Reaction]
        let deletedBy: String?

        init(serial: UInt64, replyTo: String?, reactions: [Reaction], deletedBy: String?) {
            self.serial = serial
            self.replyTo = replyTo
            self.reactions = reactions
            self.deletedBy = deletedBy
        }

        static func == (a: Rare, b: Rare) -> Bool {
            a === b || (a.serial == b.serial && a.replyTo == b.replyTo && a.reactions == b.reactions && a.deletedBy == b.deletedBy)
        }
    }

    private mutating func setRare(serial: UInt64? = nil, replyTo: String?? = nil, reactions: [Reaction]? = nil, deletedBy: String?? = nil) {
        let serial = serial ?? self.serial, replyTo = replyTo ?? self.replyTo
        let reactions = reactions ?? self.reactions, deletedBy = deletedBy ?? self.deletedBy
        rare = serial == 0 && replyTo == nil && reactions.isEmpty && deletedBy == nil
            ? nil : Rare(serial: serial, replyTo: replyTo, reactions: reactions, deletedBy: deletedBy)
    }

    /// A number the client gives its own held lines, so the one sent is the one that goes.
    public var serial: UInt64 {
        get { rare?.serial ?? 0 }
        set { setRare(serial: newValue) }
    }
    /// The msgid of the message this one answers (`+draft/reply`).
    public var replyTo: String? {
        get { rare?.replyTo }
        set { setRare(replyTo: .some(newValue)) }
    }
    /// Reactions (`+draft/react`), in the order first given, each with who gave it.
    public var reactions: [Reaction] {
        get { rare?.reactions ?? [] }
        set { setRare(reactions: newValue) }
    }
    /// Deleted (REDACT), by whom: shown as "(deleted by …)" instead of the text.
    public var deletedBy: String? {
        get { rare?.deletedBy }
        set { setRare(deletedBy: .some(newValue)) }
    }

    public init(time: Double, kind: Kind, sender: String? = nil, text: String, isOwn: Bool = false, isHighlight: Bool = false) {
        self.time = time
        self.kind = kind
        self.sender = sender
        self.text = text
        self.isOwn = isOwn
        self.isHighlight = isHighlight
    }
}

/// One room of a LIST reply.
public struct ListedRoom: Sendable, Equatable {
    public var name: String
    public var users: Int
    public var topic: String

    public init(name: String, users: Int, topic: String) {
        self.name = name
        self.users = users
        self.topic = topic
    }
}

/// One emoji given to a message, and by whom (nicknames, in the order they reacted).
public struct Reaction: Sendable, Equatable {
    public var emoji: String
    public var nicks: [String]

    public init(emoji: String, nicks: [String]) {
        self.emoji = emoji
        self.nicks = nicks
    }
}

/// Someone typing in a conversation (`+typing`): `active` or `paused`, and when it was said.
public struct Typing: Sendable, Equatable {
    public var nick: String
    public var paused: Bool
    public var time: Double

    public init(nick: String, paused: Bool, time: Double) {
        self.nick = nick
        self.paused = paused
        self.time = time
    }

    /// Still typing at `now`: an `active` lasts 6 seconds, a `paused` 30 (the spec's timeouts).
    public func current(at now: Double) -> Bool { now - time < (paused ? 30 : 6) }
}

/// Someone in a room: their nickname, their prefixes (`@`, `+`, highest first) and whether they are away.
public struct Member: Sendable, Equatable {
    public var nick: String
    public var prefixes: String
    public var isAway: Bool

    public init(nick: String, prefixes: String = "", isAway: Bool = false) {
        self.nick = nick
        self.prefixes = prefixes
        self.isAway = isAway
    }

    /// The highest prefix, as a sidebar shows it.
    public var highestPrefix: String { prefixes.first.map(String.init) ?? "" }
}

/// A room, a direct conversation with one person, or the server's own messages.
public struct Conversation: Sendable, Equatable {
    public enum Kind: Sendable, Equatable { case server, room, direct }

    public internal(set) var id: ConversationID
    /// As the server spells it (the first spelling seen; a room's from our JOIN).
    public var name: String
    public var kind: Kind { id.kind }
    public var topic = ""
    /// Folded nickname to member; rooms only.
    public var members: [String: Member] = [:]
    /// The room's modes that are not lists or member statuses: a flag maps to "", `k` to the
    /// key, `l` to the limit. From 324 and MODE, read with the server's own CHANMODES.
    public var modes: [Character: String] = [:]
    /// We are in the room now (false after PART, KICK or a lost connection).
    public var isJoined = false
    /// Not joined only because the connection dropped: we rejoin it when back, and its member
    /// list (as it was) is shown greyed meanwhile.
    public var awaitingRejoin = false
    public private(set) var lines: [ChatLine] = []
    /// The client's own book keeps these instead of `lines` (`keepsOnlyKeys`).
    private var keys: [LineKey] = []
    /// The msgids of the kept lines: a message is kept once, wherever its copies would fall (a
    /// live copy behind history's, or after lines of our own clock: chaos soak).
    private var msgids: Set<String> = []
    public var unread = 0
    public var mentioned = false
    /// The time the account had read up to, from the server (draft/read-marker); lines after it
    /// are below a "new since you last read" line.
    public var readMarker: Double?
    /// Lines kept; older ones are dropped so memory stays flat.
    public var scrollbackLimit: Int
    /// The screen is scrolled up here (reading back): the oldest lines, fetched by scrolling
    /// past the top, are not cut while they are read; up to twice the limit is kept until the
    /// view is back at the bottom.
    public var readingBack = false
    /// Who is typing here, by folded nickname (never stored; gone when they send or say done).
    public var typing: [String: Typing] = [:]

    /// Whether lines are kept (a screen's view) or only counted (the client's own state, and
    /// the line mode, which prints them and forgets).
    public var keepsLines = true
    /// Kept lines are kept as keys only (the client's own book): each line's place, msgid and
    /// what makes a repeat the same line, 40 bytes against a line's 80 (and its text), so a
    /// replay or a history page is taken or refused exactly as the screen's book does.
    public var keepsOnlyKeys = false

    public init(id: ConversationID, name: String, scrollbackLimit: Int = 4_096, keepsLines: Bool = true, keepsOnlyKeys: Bool = false) {
        self.id = id
        self.name = name
        self.scrollbackLimit = scrollbackLimit
        self.keepsLines = keepsLines
        self.keepsOnlyKeys = keepsOnlyKeys
    }

    /// Removes our held line with this serial (it was sent and is shown as sent).
    public mutating func removePending(serial: UInt64) {
        if let index = lines.lastIndex(where: { $0.isPending && $0.serial == serial }) { lines.remove(at: index) }
        if let index = keys.lastIndex(where: { $0.isPending && $0.serial == serial }) { keys.remove(at: index) }
    }

    /// Whether a line with this msgid is shown.
    public func contains(msgid: String?) -> Bool {
        guard let msgid else { return false }
        return msgids.contains(msgid)
    }

    /// Adds a line at its place by time (almost always the end), once per msgid. Returns false
    /// when it was already there.
    @discardableResult
    public mutating func insert(_ line: ChatLine) -> Bool {
        if keepsLines {
            let limit = scrollbackLimit, reading = readingBack
            let placed = keepsOnlyKeys ? Self.place(line, as: LineKey(line), in: &keys, msgids: &msgids, limit: limit, readingBack: reading)
                                       : Self.place(line, as: line, in: &lines, msgids: &msgids, limit: limit, readingBack: reading)
            guard placed else { return false }
        }
        let isOffer: Bool
        if case .transfer = line.kind { isOffer = line.isHighlight } else { isOffer = false }
        if line.kind == .message || line.kind == .action || line.kind == .notice || isOffer, !line.isOwn, !line.isOldNews {
            unread += 1
            if line.isHighlight { mentioned = true }
        }
        return true
    }

    /// When each person last spoke here (folded nicknames), for the smart filter; entries older
    /// than the filter's 10 minutes are dropped whenever there are more than 1,000 (bounded by
    /// the people who spoke in the last 10 minutes, and a rename carries the entry).
    var lastSpoke: [String: Double] = [:]
    static let quietAfter: Double = 600
    /// A join stays folded only while its person keeps silent for 30 minutes after it.
    static let joinUnmaskedWithin: Double = 1800

    /// A room line, before it is placed: a presence line of someone who has been silent is
    /// marked quiet; a message shows its sender's recent quiet join again (they spoke after all).
    mutating func noteSpeaker(_ line: inout ChatLine, key: (String) -> String, isMe: (String) -> Bool) {
        guard let sender = line.sender, !isMe(sender) else { return }
        let who = key(sender)
        switch line.kind {
        case .message, .action, .notice:
            lastSpoke[who] = line.time
            if lastSpoke.count > 1_000 { lastSpoke = lastSpoke.filter { $0.value > line.time - Self.quietAfter } }
            // Their join, if it was folded and is recent: theirs again.
            for index in lines.indices.reversed().prefix(500) {
                let earlier = lines[index]
                if line.time - earlier.time > Self.joinUnmaskedWithin { break }
                if earlier.kind == .join, earlier.isQuiet, earlier.sender.map(key) == who {
                    lines[index].isQuiet = false
                    break
                }
            }
        case .join, .part, .quit, .nick:
            line.isQuiet = (lastSpoke[who] ?? -.infinity) < line.time - Self.quietAfter
            // A renamed person who spoke keeps counting as one under the new name.
            if line.kind == .nick, let spoke = lastSpoke[who], let new = line.text.split(separator: " ").last {
                lastSpoke[key(String(new))] = spoke
            }
        default:
            break
        }
    }

    /// Lines kept (or their keys).
    var keptCount: Int { keepsOnlyKeys ? keys.count : lines.count }

    public mutating func clearLines() {
        lines.removeAll()
        keys.removeAll()
        msgids.removeAll()
    }

    /// Puts a line (or its key) in its place; false when it is already kept.
    private static func place<Kept: KeptLine>(_ line: ChatLine, as kept: Kept, in array: inout [Kept], msgids: inout Set<String>,
                                              limit scrollbackLimit: Int, readingBack: Bool) -> Bool {
        var index = array.endIndex
        // Lines of the same millisecond (a burst) are ordered by msgid when both have one
        // (ours sort as their numbers do; for other servers' the order among them is as good as any).
        func before(_ other: Kept) -> Bool {
            if other.time != line.time { return other.time < line.time }
            guard let mine = line.msgid, let theirs = other.msgid else { return true }
            return theirs <= mine
        }
        // A line of history, or one said before the last shown (our own echo, which the
        // server sends once it is stored, after others' later lines): at its place by time,
        // so lines stay in time order and the same msgid is found again (chaos soak).
        if let last = array.last, !before(last) || last.time > line.time, line.isHistory || (line.isOwn && line.msgid != nil) {
            // Binary search for the first line later than this one.
            var low = 0, high = array.count
            while low < high {
                let middle = (low + high) / 2
                if before(array[middle]) { low = middle + 1 } else { high = middle }
            }
            index = low
        }
        if let msgid = line.msgid {
            guard msgids.insert(msgid).inserted else { return false }
        } else if line.isHistory {
            // A line from the log with no msgid (a join, a line from a server without
            // msgids): the same line at the same time is the same line.
            var probe = index - 1
            while probe >= 0 && array[probe].time == line.time {
                if array[probe].isSame(as: line) { return false }
                probe -= 1
            }
        }
        // Grown by doubling only up to where it is cut back (`scrollbackLimit` and an
        // eighth): past that a doubled array was up to 60 % empty, in each conversation of
        // each book (a flood of 10 × 10,000 lines: 16,384 places a conversation for 11,251).
        if array.count == array.capacity {
            array.reserveCapacity(min(max(2 * array.count, 16), scrollbackLimit + max(1, scrollbackLimit / 8) + 1))
        }
        if index == array.endIndex { array.append(kept) } else { array.insert(kept, at: index) }
        // Drop in chunks so appending stays amortised O(1). Not while the oldest lines are
        // being read (they were fetched by scrolling up; cutting them would fetch them again),
        // unless that doubled the limit.
        if array.count > scrollbackLimit + max(1, scrollbackLimit / 8), !readingBack || array.count > 2 * scrollbackLimit {
            for gone in array[..<(array.count - scrollbackLimit)] {
                if let msgid = gone.msgid { msgids.remove(msgid) }
            }
            array.removeFirst(array.count - scrollbackLimit)
        }
        return true
    }

    /// Different emoji kept on one message: past it, new ones are not shown (one person cannot
    /// grow a message without bound).
    static let reactionsKept = 20

    /// The kept line with this msgid (the newest first: replies and reactions are to recent lines).
    public func index(ofMessage msgid: String) -> Int? { lines.lastIndex { $0.msgid == msgid } }

    /// A reaction given (or taken back) to the line with this msgid, if it is kept.
    public mutating func react(to msgid: String, emoji: String, nick: String, added: Bool, key: (String) -> String) {
        guard let index = index(ofMessage: msgid) else { return }
        var reactions = lines[index].reactions
        let who = key(nick)
        if let at = reactions.firstIndex(where: { $0.emoji == emoji }) {
            reactions[at].nicks.removeAll { key($0) == who }
            if added { reactions[at].nicks.append(nick) }
            if reactions[at].nicks.isEmpty { reactions.remove(at: at) }
            if reactions.indices.contains(at), reactions[at].nicks.count > 1000 { reactions[at].nicks.removeFirst() }
        } else if added, reactions.count < Self.reactionsKept {
            reactions.append(Reaction(emoji: emoji, nicks: [nick]))
        }
        lines[index].reactions = reactions
    }

    /// The line with this msgid deleted by `nick`: its text goes, the fact stays.
    public mutating func redact(_ msgid: String, by nick: String) {
        guard let index = index(ofMessage: msgid) else { return }
        lines[index].deletedBy = nick
        lines[index].text = ""
        lines[index].reactions = []
    }

    public mutating func markRead() {
        unread = 0
        mentioned = false
    }

    /// Members sorted as a sidebar lists them: by rank, then by name.
    public func sortedMembers(rankOf symbols: String = "@+") -> [Member] {
        members.values.sorted { a, b in
            let ra = a.prefixes.first.flatMap { symbols.firstIndex(of: $0) }.map { symbols.distance(from: symbols.startIndex, to: $0) } ?? symbols.count
            let rb = b.prefixes.first.flatMap { symbols.firstIndex(of: $0) }.map { symbols.distance(from: symbols.startIndex, to: $0) } ?? symbols.count
            if ra != rb { return ra < rb }
            return a.nick.lowercased() < b.nick.lowercased()
        }
    }
}

extension ChatLine.Kind {
    /// The kind's name in the client's log.
    public var logName: String {
        switch self {
        case .message: return "message"
        case .action: return "action"
        case .notice: return "notice"
        case .join: return "join"
        case .part: return "part"
        case .quit: return "quit"
        case .kick: return "kick"
        case .nick: return "nick"
        case .topic: return "topic"
        case .mode: return "mode"
        case .info: return "info"
        case .error: return "error"
        case .transfer: return "transfer"
        }
    }

    public init(logName: String) {
        switch logName {
        case "action": self = .action
        case "notice": self = .notice
        case "join": self = .join
        case "part": self = .part
        case "quit": self = .quit
        case "kick": self = .kick
        case "nick": self = .nick
        case "topic": self = .topic
        case "mode": self = .mode
        case "info": self = .info
        default: self = .message
        }
    }
}

/// What `Conversation` places: a line, or the key the client's own book keeps for one.
protocol KeptLine {
    var time: Double { get }
    var msgid: String? { get }
    /// The same line again (for lines without a msgid): same text, sender and kind.
    func isSame(as line: ChatLine) -> Bool
}

extension ChatLine: KeptLine {
    func isSame(as line: ChatLine) -> Bool { text == line.text && sender == line.sender && kind == line.kind }
}

/// A line as the client's own book keeps it: where it goes, its msgid, and a hash of its text,
/// sender and kind for the lines without one (the low bit says it is held, with its serial).
struct LineKey: KeptLine, Sendable, Equatable {
    let time: Double
    let msgid: String?
    private let fingerprint: Int
    let serial: UInt64

    init(_ line: ChatLine) {
        time = line.time
        msgid = line.msgid
        fingerprint = Self.content(of: line) & ~1 | (line.isPending ? 1 : 0)
        serial = line.serial
    }

    var isPending: Bool { fingerprint & 1 == 1 }

    func isSame(as line: ChatLine) -> Bool { (fingerprint ^ Self.content(of: line)) & ~1 == 0 }

    private static func content(of line: ChatLine) -> Int {
        var hasher = Hasher()
        hasher.combine(line.text)
        hasher.combine(line.sender)
        hasher.combine(line.kind)
        return hasher.finalize()
    }
}
