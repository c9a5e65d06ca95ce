import ChatTransport

// Backpressure: a reader falling behind slows the senders feeding it, before its queue's bound.
//
// A reader is behind when the kernel refuses its bytes and more than `behindMark` (a quarter of
// the send queue's bound) waits for it. From then on, a message line (PRIVMSG, NOTICE, TAGMSG)
// to one of its rooms or to it waits in its sender's queue (the sender is paced, as a flooder
// is: its queue fills, then its socket is not read) until the reader has taken all but
// `caughtUpMark` (a sixteenth), and then goes on in order. Nothing is lost and nobody who reads
// is cut off: a room goes at the pace of its slowest reader that reads.
//
// The bound on that: a reader that takes nothing for 2 s, or is still behind after 10 s
// (`ServerConfig.readerStallSeconds`, `readerBehindSeconds`), is given up on: the senders go on, and it is cut off ("SendQ exceeded")
// when its queue reaches the bound, as any reader that does not read (while its senders wait, the
// bound is four times that: the turn that found it behind may still add to it, then it stops). It is not waited for
// again until it has caught up. A link's lines are not held (another server is not paced).
//
// Owner: the runtime (the loop thread). `behind`, `slowed` and `heldSenders` are bounded by the
// connections; an entry ends when its reader catches up, is given up on, or closes.
extension ServerRuntime {
    /// Unsent bytes past which a reader the kernel refuses is behind.
    var behindMark: Int { max(4096, sendQueueLimit / 4) }
    /// Unsent bytes at or below which a reader behind has caught up.
    var caughtUpMark: Int { max(1024, sendQueueLimit / 16) }

    /// How much unsent output cuts a reader off: the send queue's bound; for a reader whose
    /// senders wait, four times that (what the turn that found it behind may still add: its
    /// growth stops there).
    func readerBound(_ connection: Connection) -> Int {
        connection.behindSince == nil ? sendQueueLimit : sendQueueLimit * 4
    }

    /// After a flush: whether the connection fell behind, or caught up.
    func checkBehind(_ connection: Connection, refused: Bool) {
        let unsent = connection.output.count
        if unsent <= caughtUpMark || connection.closing {
            connection.givenUp = false
            caughtUp(connection)
            return
        }
        guard connection.behindSince == nil, !connection.givenUp, refused, unsent > behindMark, !connection.isLink,
              let keys = state.deliveryKeys(of: connection.id), !keys.isEmpty else { return }
        let now = Monotonic.now()
        connection.behindSince = now
        connection.progress = (connection.output.sent, now)
        behind[connection.id] = keys
        slowed.formUnion(keys)
        control.countBehind()
    }

    /// Once a second: a reader behind that takes nothing, or never catches up, is given up on.
    func checkStalledReaders(now: Double) {
        for id in behind.keys.sorted(by: { $0.raw < $1.raw }) {
            guard let connection = connections[id.raw], let since = connection.behindSince else {
                // Gone without passing markClosing (it always does today): its senders go on.
                behind[id] = nil
                releaseHeldSenders()
                continue
            }
            if connection.output.sent > connection.progress.sent { connection.progress = (connection.output.sent, now) }
            let stalled = now - connection.progress.at >= state.config.readerStallSeconds
            if stalled || now - since >= state.config.readerBehindSeconds {
                logger("[\(connection.peer)] fell behind and \(stalled ? "took nothing for \(Int(now - connection.progress.at)) s" : "did not catch up in \(Int(now - since)) s"); its rooms' senders no longer wait for it")
                connection.givenUp = true
                caughtUp(connection)
                control.countGivenUp()
            }
        }
    }

    /// The reader no longer holds anyone: the senders waiting go on (next turn, in order).
    func caughtUp(_ connection: Connection) {
        guard connection.behindSince != nil else { return }
        connection.behindSince = nil
        behind[connection.id] = nil
        releaseHeldSenders()
    }

    /// The senders waiting go on (next turn, in order), but those still waiting for another reader.
    func releaseHeldSenders() {
        slowed = Set(behind.values.joined())
        let waiting = heldSenders
        heldSenders.removeAll()
        for sender in waiting {
            sender.heldBySlowReader = false
            guard !sender.closing, connections[sender.id.raw] != nil else { continue }
            if mustWait(sender) {
                sender.heldBySlowReader = true
                heldSenders.append(sender)
            } else if !sender.inPaced {
                sender.inPaced = true
                paced.append(sender)
            }
        }
    }

    /// In `drain`: whether the line at the head of the sender's queue is a message to a reader
    /// behind (to one of its rooms, or to it); if so the sender waits, its place kept.
    func holdsForSlowReader(_ connection: Connection) -> Bool {
        guard !slowed.isEmpty, mustWait(connection) else { return false }
        if !connection.heldBySlowReader {
            connection.heldBySlowReader = true
            heldSenders.append(connection)
        }
        return true
    }

    func mustWait(_ connection: Connection) -> Bool {
        guard !slowed.isEmpty, connection.behindSince == nil, connection.queueHead < connection.queue.count,
              case .line(let line) = connection.queue[connection.queueHead], let targets = Self.messageTargets(line) else { return false }
        return targets.contains { slowed.contains(state.casemapping.fold($0)) }
    }

    /// The targets of a PRIVMSG, NOTICE or TAGMSG line (tags and a source skipped); nil for any
    /// other line. Read only while some reader is behind.
    static func messageTargets(_ line: [UInt8]) -> [String]? {
        var index = 0
        func skipWord() { while index < line.count, line[index] != 0x20 { index += 1 } }
        func skipSpaces() { while index < line.count, line[index] == 0x20 { index += 1 } }
        if index < line.count, line[index] == UInt8(ascii: "@") { skipWord(); skipSpaces() }
        if index < line.count, line[index] == UInt8(ascii: ":") { skipWord(); skipSpaces() }
        let commandStart = index
        skipWord()
        let command = String(decoding: line[commandStart..<index], as: UTF8.self).uppercased()
        guard command == "PRIVMSG" || command == "NOTICE" || command == "TAGMSG" else { return nil }
        skipSpaces()
        let targetStart = index
        skipWord()
        guard index > targetStart else { return nil }
        return line[targetStart..<index].split(separator: UInt8(ascii: ",")).map { String(decoding: $0, as: UTF8.self) }
    }
}

extension ServerState {
    /// What a message must name to reach this connection: its rooms and its nickname (folded).
    /// Nil for a connection that is not a registered user's.
    func deliveryKeys(of id: ConnectionID) -> Set<String>? {
        guard let session = people.sessions[id], session.registered, let nick = session.user.nick else { return nil }
        var keys = roomBook.membership.rooms(of: session.user.id)
        keys.insert(casemapping.fold(nick))
        return keys
    }
}
