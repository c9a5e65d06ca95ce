import ChatTransport
import IRCWire
#if canImport(Glibc)
import Glibc
#endif

/// Plain-text logs for people who grep (the text-logs setting): one file per network,
/// conversation and day, `DIRECTORY/NETWORK/CONVERSATION/YYYY-MM-DD.log`, each line as irssi
/// writes it (`08:01 <bob> hi`, `08:02  * bob waves`, `08:03 -bob- a notice`, `08:04 -!- bob
/// joined #lobby`), a new file each local day with `--- Log opened …` at its top. Owned by the
/// `ChatClient` that shows the lines; written as each line is shown (an append, no fsync); the
/// files are the user's archive, as irssi's are: kept until the user removes them. A line seen
/// twice (a replay, history filling a gap) is written once: the last 1,000 msgids are kept.
public struct TextLog: Sendable {
    public let directory: String
    let network: String
    var recent: [String] = []
    var recentSet: Set<String> = []
    /// The first failure to write, for the user to be told once.
    public private(set) var problem: String?

    public init(directory: String, network: String) {
        self.directory = directory
        self.network = network
    }

    /// A name as a path component: no `/`, no control characters, not `.` or `..` or hidden.
    static func component(_ name: String) -> String {
        var out = String(name.unicodeScalars.map { $0 == "/" || $0.value < 0x20 || $0.value == 0x7F ? "_" : Character($0) })
        if out.hasPrefix(".") { out = "_" + out.dropFirst() }
        return out.isEmpty ? "_" : String(out.prefix(100))
    }

    /// The file a line of `conversation` said at `time` goes to (`utcOffset`: the local zone's).
    public func path(conversation: String, time: Double, utcOffset: Int) -> String {
        let day = String(ServerTime.format(time + Double(utcOffset)).prefix(10))
        return directory + "/" + Self.component(network) + "/" + Self.component(conversation.lowercased()) + "/" + day + ".log"
    }

    /// How irssi writes the line (nil for the kinds it keeps out of a log: errors, transfers' progress).
    public static func format(_ line: ChatLine, utcOffset: Int) -> String? {
        let clock = String(ServerTime.format(line.time + Double(utcOffset)).dropFirst(11).prefix(5))
        let sender = PlainLine.clean(line.sender ?? "")
        let text = line.text.split(separator: "\n", omittingEmptySubsequences: false).map { PlainLine.clean(String($0)) }
        let body: String
        switch line.kind {
        case .message: body = "<\(sender)> " + text.joined(separator: "\n\(clock) <\(sender)> ")
        case .action: body = " * \(sender) " + text.joined(separator: " ")
        case .notice: body = "-\(sender)- " + text.joined(separator: " ")
        case .join, .part, .quit, .kick, .nick, .topic, .mode, .info: body = "-!- " + text.joined(separator: " ")
        case .error, .transfer: return nil
        }
        return clock + " " + body
    }

    /// Appends a line shown in `conversation` (pending and old-news lines are not new: skipped).
    public mutating func write(_ line: ChatLine, conversation: String, utcOffset: Int) {
        guard !line.isPending, !line.isOldNews, let text = Self.format(line, utcOffset: utcOffset) else { return }
        if let msgid = line.msgid {
            guard recentSet.insert(msgid).inserted else { return }
            recent.append(msgid)
            if recent.count > 1_000 { recentSet.remove(recent.removeFirst()) }
        }
        let path = path(conversation: conversation, time: line.time, utcOffset: utcOffset)
        let isNew = !Files.exists(path)
        var out = ""
        if isNew {
            out += "--- Log opened " + ServerTime.format(line.time + Double(utcOffset)).prefix(19).replacing("T", with: " ") + "\n"
        }
        out += text + "\n"
        do {
            if isNew { try Files.createDirectories(Paths.directory(of: path), mode: 0o700) }
            try Files.append(path, Array(out.utf8))
            problem = nil
        } catch {
            problem = "The text log \(path) could not be written (\(error))"
        }
    }
}

/// Text for a plain file: mIRC formatting and control characters out (a log read with `cat`
/// or `less` must not drive the terminal).
enum PlainLine {
    static func clean(_ text: String) -> String {
        var out = ""
        var skipping = 0
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x03:
                // A colour: the code and up to two digits, a comma and two more.
                skipping = 5
                continue
            case 0x00..<0x20, 0x7F, 0x80...0x9F:
                skipping = 0
                continue
            default:
                if skipping > 0, scalar.properties.numericType != nil || scalar == "," {
                    skipping -= 1
                    continue
                }
                skipping = 0
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
