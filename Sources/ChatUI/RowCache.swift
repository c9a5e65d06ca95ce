import Synchronization
import ChatClientKit

/// How many rows each line takes at a width, remembered so that PgUp 3,000 lines up costs a
/// dictionary look-up per line below the view instead of formatting and wrapping it again.
/// Owned by the `ChatModel` (its copies share it: the key holds everything the count depends
/// on, so a shared answer is always right); bounded at 50,000 entries, when it is emptied and
/// filled again as lines are drawn; ends with the screen.
public final class RowCache: Sendable {
    struct Key: Hashable {
        let width: Int
        let seconds: Bool
        let time: Double
        let kind: ChatLine.Kind
        let sender: String?
        let text: String
        /// 0: not held; 1: held while the connection is down; 2: held while it is up (the note differs).
        let held: Int
        let deletedBy: String?
        let isReply: Bool
        let reactions: String
    }

    static let limit = 50_000
    private let counts = Mutex<[Key: Int]>([:])

    public init() {}

    var count: Int { counts.withLock { $0.count } }

    func rows(_ key: Key, _ make: () -> Int) -> Int {
        if let known = counts.withLock({ $0[key] }) { return known }
        let rows = make()
        counts.withLock { table in
            if table.count >= Self.limit { table.removeAll(keepingCapacity: true) }
            table[key] = rows
        }
        return rows
    }
}

extension ChatModel {
    /// The rows `line` takes in the pane (what `lineRows(…).count` says), from the cache.
    func rowCount(_ line: ChatLine, in conversation: Conversation, width: Int) -> Int {
        let key = RowCache.Key(width: width, seconds: showSeconds, time: line.time, kind: line.kind, sender: line.sender, text: line.text,
                               held: line.isPending ? (networks[focus].isDown ? 1 : 2) : 0, deletedBy: line.deletedBy,
                               isReply: line.replyTo != nil,
                               reactions: line.reactions.isEmpty ? "" : line.reactions.map { "\($0.emoji) \($0.nicks.count)" }.joined(separator: " "))
        return rowCache.rows(key) { lineRows(line, in: conversation, width: width).count }
    }
}
