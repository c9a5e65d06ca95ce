import ChatClientKit

/// The order conversations are numbered in (Alt-1…Alt-0, `/window N`), kept across restarts as
/// irssi keeps its window numbers: a conversation seen for the first time goes after every other,
/// so a new room or direct conversation never renumbers the ones before it; `/close` takes one
/// out (the ones after it move down one, as irssi's `windows_auto_renumber` and WeeChat do);
/// `/window move N` puts the one in view at N. A conversation of the order that is not there
/// now (a room not yet joined again after a restart) keeps its place for when it comes back.
/// The server windows are not in it: each comes before its network's conversations. It also keeps which
/// conversations were closed (`/close`), so the next start does not bring them back from the
/// local log; one that has news again is open again.
///
/// Owner: the chat screen's model; the app saves it in `~/.local/state/chat-tui/windows` when it
/// changes and reads it at start. Bound: `limit` entries, and `limit` closed ones; past it the
/// entries of conversations not there now go first, oldest first (the oldest closed ones go).
/// End: an entry ends with `/close` or the bound; a closed one when the conversation comes back.
public struct WindowOrder: Equatable, Sendable {
    public static let limit = 500

    /// `network key` + tab + conversation (`#room`, `@nick`), first numbered first.
    public private(set) var entries: [String] = [] { didSet { known = Set(entries) } }
    private var known = Set<String>()
    /// Conversations closed, oldest first (`-` before the entry in the file).
    public private(set) var closed: [String] = []

    public init() {}

    /// Read from the saved file's text: one entry a line (a closed one after `-`); anything
    /// malformed is skipped.
    public init(text: String) {
        var seen = Set<String>()
        for line in text.split(separator: "\n") {
            let isClosed = line.hasPrefix("-")
            let entry = String(isClosed ? line.dropFirst() : line[...])
            guard entry.split(separator: "\t", omittingEmptySubsequences: false).count == 2, seen.insert(entry).inserted else { continue }
            if isClosed {
                if closed.count < Self.limit { closed.append(entry) }
            } else if entries.count < Self.limit {
                entries.append(entry)
            }
        }
        known = Set(entries)   // (observers do not run in an initializer)
    }

    public var text: String { entries.map { $0 + "\n" }.joined() + closed.map { "-" + $0 + "\n" }.joined() }

    /// The conversations of `network` closed last time (their `ConversationID` descriptions):
    /// not brought back from the log at start.
    public func closed(network: String) -> Set<String> {
        Set(closed.compactMap { entry in
            let parts = entry.split(separator: "\t", maxSplits: 1, omittingEmptySubsequences: false)
            return parts.count == 2 && parts[0] == network ? String(parts[1]) : nil
        })
    }

    public static func entry(network: String, _ id: ConversationID) -> String { network + "\t" + id.description }

    /// Where an entry stands (nil: not in the order yet).
    func contains(_ entry: String) -> Bool { known.contains(entry) }

    /// Each entry's place, for sorting by it.
    var positions: [String: Int] {
        Dictionary(entries.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Appends the conversations present now that are not in the order yet (in the order given);
    /// past the bound, drops entries of conversations not present, oldest first.
    mutating func settle(present: [String]) {
        let new = present.filter { !known.contains($0) }
        guard !new.isEmpty else { return }
        // Back again (news in a conversation closed before): no longer closed.
        if !closed.isEmpty {
            let back = Set(new)
            closed.removeAll { back.contains($0) }
        }
        var adding = Set<String>()
        entries += new.filter { adding.insert($0).inserted }
        guard entries.count > Self.limit else { return }
        let here = Set(present)
        var excess = entries.count - Self.limit
        var kept: [String] = []
        kept.reserveCapacity(Self.limit)
        for entry in entries {
            if excess > 0 && !here.contains(entry) { excess -= 1 } else { kept.append(entry) }
        }
        entries = kept
    }

    /// `/close`: out of the order, the ones after move down; remembered as closed.
    mutating func remove(_ entry: String) {
        entries.removeAll { $0 == entry }
        closed.removeAll { $0 == entry }
        closed.append(entry)
        if closed.count > Self.limit { closed.removeFirst(closed.count - Self.limit) }
    }

    /// `/window move`: `entry` placed just before `before` (nil: last).
    mutating func move(_ entry: String, before: String?) {
        guard entry != before else { return }
        entries.removeAll { $0 == entry }
        if let before, let index = entries.firstIndex(of: before) { entries.insert(entry, at: index) } else { entries.append(entry) }
    }
}
