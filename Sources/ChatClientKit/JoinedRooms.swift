import IRCWire

/// The rooms one is in on a network, kept for the next start (as WeeChat's `autojoin_dynamic`
/// and The Lounge do): chat-tui joins them again when it starts, beside the rooms the flags and
/// the config file name.
///
/// Owner: the network's `ChatClient`, which writes the file whenever JOIN, PART or a rename
/// changes its rooms; read once at start. Bound: `limit` rooms a network (a longer list is cut
/// when read). End: a room leaves the file when it is parted; the file is the network's, one a
/// network under `~/.local/state/chat-tui/rooms/`.
public enum JoinedRooms {
    public static let limit = 200

    /// The file for a network (`host:port`): its name is the network with anything but letters,
    /// digits, `.`, `-`, `_` and `:` written as `%XX`, so no network name reaches outside the directory.
    public static func path(directory: String, network: String) -> String {
        var name = ""
        for byte in network.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: ":"):
                name.append(Character(Unicode.Scalar(byte)))
            case UInt8(ascii: "."):
                // A leading dot would hide the file, and ".." must never be a name.
                name += name.isEmpty ? "%2E" : "."
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                name += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return directory + "/" + name
    }

    public static func text(_ rooms: [String]) -> String { rooms.prefix(limit).map { $0 + "\n" }.joined() }

    /// The rooms a file's text names; anything that is not a room name is skipped.
    public static func rooms(_ text: String) -> [String] {
        var rooms: [String] = []
        for line in text.split(separator: "\n") {
            let room = String(line)
            guard IRCNames.isChannel(room, types: "#&!+"), IRCNames.channelProblem(room, types: "#&!+", maxBytes: 200) == nil,
                  !rooms.contains(room) else { continue }
            rooms.append(room)
            if rooms.count == limit { break }
        }
        return rooms
    }

    /// The rooms to join at start: those given first, then those kept (each room once, any case).
    public static func merged(_ given: [String], _ kept: [String]) -> [String] {
        var seen = Set(given.map { $0.lowercased() })
        return given + kept.filter { seen.insert($0.lowercased()).inserted }
    }
}

/// Where the user had read each conversation up to, kept for the next start: the lines restored
/// from the log after it are unread again (a DM or a mention not read before quitting keeps its
/// `!`), as irssi with a bouncer or WeeChat's hotlist saving do.
///
/// Owner: the network's `ChatClient`, which rewrites `~/.local/state/chat-tui/read/NETWORK` when
/// a conversation is marked read (by this screen or another device); read once at start. Bound:
/// `limit` conversations (those read longest ago go first). End: the bound.
public struct ReadPositions: Equatable, Sendable {
    public static let limit = 1000
    /// `ConversationID.description` → seconds since the epoch.
    public private(set) var until: [String: Double] = [:]

    public init() {}

    /// Read from the file's text (`conversation TAB seconds` a line); anything malformed is skipped.
    public init(text: String) {
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: "\t")
            guard parts.count == 2, let time = Double(parts[1]), time.isFinite else { continue }
            until[String(parts[0])] = time
        }
        trim()
    }

    public var text: String { until.sorted { $0.key < $1.key }.map { "\($0.key)\t\($0.value)\n" }.joined() }

    public mutating func read(_ conversation: String, at time: Double) {
        until[conversation] = max(until[conversation] ?? 0, time)
        trim()
    }

    private mutating func trim() {
        guard until.count > Self.limit else { return }
        for (key, _) in until.sorted(by: { $0.value < $1.value }).prefix(until.count - Self.limit) { until[key] = nil }
    }
}
