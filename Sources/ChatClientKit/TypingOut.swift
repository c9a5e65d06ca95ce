import IRCWire

/// Typing notifications we send (`+typing` TAGMSG), and what the server's refusals of them mean.
/// A room or person that cannot take our lines refuses the typing notice too (404, 401…), and
/// that refusal must not read as a second error beside the line's own one, nor appear alone
/// while we only type. So: no typing to a room we are not in; each notice sent is counted per
/// target until our own line there comes back (echo) or a refusal with no line waiting is put
/// down to it, silently; a target that refused one gets no typing for ten minutes.
///
/// Owner: `ClientState`. Bound: `limit` targets in each table (the oldest goes first). End: a
/// count ends with the echo of our line or its refusal, both tables with the connection.
struct TypingOut: Sendable {
    static let limit = 100
    static let quietAfterRefusal: Double = 600
    /// Notices sent per target key not yet accounted for (at most 8 counted each).
    var inFlight: [String: Int] = [:]
    /// Targets that refused a notice, and when.
    var refused: [String: Double] = [:]

    func mayType(to key: String, now: Double) -> Bool {
        guard let when = refused[key] else { return true }
        return now - when >= Self.quietAfterRefusal
    }

    mutating func sent(to key: String) {
        if inFlight[key] == nil && inFlight.count >= Self.limit, let any = inFlight.keys.first { inFlight[any] = nil }
        inFlight[key] = min((inFlight[key] ?? 0) + 1, 8)
    }

    /// A refusal for `key` with no line of ours waiting: true when it is a typing notice's (to be dropped).
    mutating func absorbsRefusal(for key: String, now: Double) -> Bool {
        guard let count = inFlight[key], count > 0 else { return false }
        inFlight[key] = count == 1 ? nil : count - 1
        if refused[key] == nil && refused.count >= Self.limit, let oldest = refused.min(by: { $0.value < $1.value })?.key { refused[oldest] = nil }
        refused[key] = now
        return true
    }

    /// Our line to `key` came back: the notices before it went through.
    mutating func delivered(to key: String) { inFlight[key] = nil }
}

extension ClientState {
    /// `+typing=active|paused|done` to a room or a person, unless it cannot mean anything there.
    public mutating func typing(_ value: String, to target: String, now: Double, connected: Bool) -> Reduction {
        produced = []
        actions = []
        let key = key(for: target)
        if isChannel(target), !(book[.room(key)]?.isJoined ?? false) { return reduction() }
        guard connected, typingOut.mayType(to: key, now: now) else { return reduction() }
        typingOut.sent(to: key)
        actions.append(.send(IRCMessage(tags: [IRCTag("+typing", value)], command: "TAGMSG", params: [target])))
        return reduction()
    }
}
