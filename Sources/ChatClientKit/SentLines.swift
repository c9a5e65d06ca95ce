/// Our lines sent with echo-message on and not echoed yet: if the connection drops, the server
/// may or may not have them, so they are held and, after the reconnect, sent again unless
/// history has them. A line the server refused is done: it leaves this list at once, so no
/// reconnect sends it later. A pure value owned by `ClientState`.
public struct SentLines: Sendable {
    public struct Line: Sendable, Equatable {
        public let target: String
        public let text: String
        public let isAction: Bool
        /// The held line showing it after a drop; 0 while it is on its way on this connection.
        public var serial: UInt64 = 0
        /// The msgid of the message it answers (`+draft/reply`).
        public var replyTo: String?
        /// The newest msgid of its conversation shown when it was sent. After a drop, history is
        /// asked from there, not from the newest shown then: others' lines reach us before our
        /// own echo (which waits for the server's commit), so a line said after ours may be shown
        /// while ours was stored and its echo lost; asked from the newest, history would leave
        /// ours out and it would be sent twice (found by the chaos soak).
        public var seenBefore: String?

        public init(target: String, text: String, isAction: Bool, serial: UInt64 = 0, replyTo: String? = nil) {
            self.target = target
            self.text = text
            self.isAction = isAction
            self.serial = serial
            self.replyTo = replyTo
        }
    }

    public private(set) var lines: [Line] = []
    /// The nicknames we have had (folded), for recognising our own lines in history (after a
    /// half-open drop we may come back as alice_ while history has the line from alice).
    private(set) var ownNicks: Set<String> = []
    /// Kept at most: past it the oldest are forgotten (their echo will not be matched).
    static let limit = 1000

    /// Written on the connection as `nickKey` (our folded nickname).
    mutating func sent(_ line: Line, as nickKey: String) {
        ownNicks.insert(nickKey)
        lines.append(line)
        if lines.count > Self.limit { lines.removeFirst() }
    }

    mutating func nickSeen(_ nickKey: String) { ownNicks.insert(nickKey) }

    /// The oldest held line of the conversation `belongs` picks: history must be read from its
    /// `seenBefore` (or, when nothing was shown before it, the conversation's latest lines).
    func oldestHeld(where belongs: (Line) -> Bool) -> Line? {
        lines.first { $0.serial != 0 && belongs($0) }
    }

    func isOwn(_ nickKey: String) -> Bool { ownNicks.contains(nickKey) }

    /// An echo (live or in history) of `text` to the target with this key: the line it confirms.
    mutating func confirm(targetKey: String, text: String, isAction: Bool, key: (String) -> String) -> Line? {
        guard let index = lines.firstIndex(where: { key($0.target) == targetKey && $0.text == text && $0.isAction == isAction }) else { return nil }
        return lines.remove(at: index)
    }

    /// A line that could not be written at all (it goes to the offline queue instead).
    mutating func forget(_ line: Line) {
        if let index = lines.lastIndex(where: { $0.serial == 0 && $0.target == line.target && $0.text == line.text && $0.isAction == line.isAction }) {
            lines.remove(at: index)
        }
    }

    /// The server refused a line to this target (any target when nil): the oldest one sent on
    /// this connection goes, as the server answers lines in the order they came.
    mutating func refuse(targetKey: String?, key: (String) -> String) -> Line? {
        guard let index = lines.firstIndex(where: { $0.serial == 0 && (targetKey == nil || key($0.target) == targetKey) }) else { return nil }
        return lines.remove(at: index)
    }

    /// The connection dropped: the lines not shown as held yet get a serial (from `serial`).
    mutating func hold(serial: () -> UInt64) -> [Line] {
        var held: [Line] = []
        for index in lines.indices where lines[index].serial == 0 {
            lines[index].serial = serial()
            held.append(lines[index])
        }
        return held
    }

    /// The held lines (those of a dropped connection) that `belongs` chooses, taken out to be
    /// sent again (a line just sent on this connection is still on its way and stays).
    mutating func takeHeld(where belongs: (Line) -> Bool) -> [Line] {
        let taken = lines.filter { $0.serial != 0 && belongs($0) }
        lines.removeAll { $0.serial != 0 && belongs($0) }
        return taken
    }
}
