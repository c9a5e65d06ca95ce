import ChatLink
import ChatStore
import IRCWire

/// No holes in history after a split: when a link between two chat-tui servers heals, each sends
/// the other the messages of the rooms they share said since the split began (`HISTORYROW`, then
/// `HISTORYEND`; only to a peer that said `CHATTUI` in its CAPAB, so InspIRCd never sees them).
/// The receiver keeps the rows it has not got (by msgid, which was minted once at the origin)
/// and shows them in the room after a notice, so CHATHISTORY on either side returns what both
/// sides said, once, in time order.
extension ServerState {
    /// The most rows one room's exchange carries each way (the oldest of a longer split are not sent).
    static let splitRowsPerRoom = 5000
    /// How far before the last line heard from the peer the exchange reaches back: what we sent
    /// in the moments before a cut may never have arrived.
    static let splitMargin: Double = 10

    /// The link to a chat-tui server dropped: remember since when its side may have missed ours.
    mutating func rememberSplit(_ link: LinkSession) {
        guard historyEnabled, link.isChatTUI, let server = link.server else { return }
        let key = casemapping.fold(server.name)
        net.splitSince[key] = min(net.splitSince[key] ?? .infinity, link.lastActivity - Self.splitMargin)
    }

    /// The peer's burst is in: if we were split from it, our rows of the rooms we share since then go to it.
    mutating func offerSplitHistory(_ link: LinkSession) {
        guard historyEnabled, link.isChatTUI, let server = link.server,
              let since = net.splitSince.removeValue(forKey: casemapping.fold(server.name)) else { return }
        var rooms: [(key: String, name: String)] = []
        for key in roomBook.channels.keys.sorted() {
            let members = (roomBook.membership.members[key] ?? [:]).values
            if members.contains(where: { $0.user.remote?.route == link.connection }),
               members.contains(where: { $0.user.remote?.route != link.connection }) {
                rooms.append((key, roomBook.channels[key]!.name))
            }
        }
        guard !rooms.isEmpty else { return }
        let low = Int64(bitPattern: MessageIDs.lowest(at: since))
        let upTo = Int64(bitPattern: MessageIDs.lowest(at: link.linkedAt))
        let reads = rooms.map { HistoryRead.rows(target: $0.key, direction: .after, bound: low, limit: Self.splitRowsPerRoom, kinds: .messages) }
        cache.nextHistorySerial += 1
        outbox.items.append(.readHistory(HistoryQuery(connection: link.connection, serial: cache.nextHistorySerial, reads: reads,
                                                      purpose: .splitOffer(rooms: rooms, upTo: upTo))))
        log("link \(server.name): sending what was said in \(rooms.count) shared room(s) from \(ServerTime.format(since)) (10 s before the last line heard from it) to the heal")
    }

    /// The store worker's answer for a link: rows to send, or which offered rows are new.
    mutating func linkHistoryAnswered(_ query: HistoryQuery, _ result: Result<[HistoryResult], Database.Failure>, now: Double) {
        guard case .success(let results) = result else {
            if case .failure(let error) = result { log("history exchange after a split: \(error)") }
            return
        }
        switch query.purpose {
        case .splitOffer(let rooms, let upTo):
            guard let link = net.links[query.connection], link.burstSent else { return }
            for (index, room) in rooms.enumerated() {
                guard index < results.count, case .rows(let stored) = results[index] else { continue }
                let rows = stored.filter { $0.msgid < upTo }
                for row in rows {
                    // A multiline message's row goes as one HISTORYROW per line, under its one msgid.
                    for line in row.line.split(separator: "\n", omittingEmptySubsequences: false) {
                        sendLink(link, IRCMessage(source: sid, command: "HISTORYROW",
                                                  params: [room.name, String(row.msgid), String(row.timeMilliseconds), row.command, String(line)]))
                    }
                }
                sendLink(link, IRCMessage(source: sid, command: "HISTORYEND", params: [room.name, String(rows.count)]))
            }
        case .splitMerge(let key, let rows):
            guard case .msgids(let stored)? = results.first else { return }
            // (Rows merged a moment ago, from another link, may not be committed yet.)
            let known = stored.union(cache.splitMerged[key] ?? [])
            let fresh = rows.filter { !known.contains($0.msgid) }.sorted { $0.msgid < $1.msgid }
            mergeSplitRows(fresh, key: key, now: now)
        default:
            break
        }
    }

    /// `:<sid> HISTORYROW <room> <msgid> <time-ms> <command> :<line>` and `HISTORYEND <room> <count>`.
    mutating func splitHistoryLine(_ message: IRCMessage, from link: LinkSession) {
        let p = message.params
        guard link.isChatTUI, let name = p.first else { return }
        let key = casemapping.fold(name)
        if message.command == "HISTORYEND" {
            guard let rows = link.incomingRows.removeValue(forKey: key), !rows.isEmpty,
                  let low = rows.map(\.msgid).min(), let high = rows.map(\.msgid).max() else { return }
            cache.nextHistorySerial += 1
            outbox.items.append(.readHistory(HistoryQuery(connection: link.connection, serial: cache.nextHistorySerial,
                                                          reads: [.msgids(target: key, low: low, high: high)],
                                                          purpose: .splitMerge(key: key, rows: rows))))
            return
        }
        // A room we have, a message line addressed to it, within the bound.
        guard p.count == 5, roomBook.channels[key] != nil, let msgid = Int64(p[1]), let time = Int64(p[2]),
              HistoryStore.Kinds.isMessage(p[3]), (link.incomingRows[key]?.count ?? 0) < Self.splitRowsPerRoom,
              let line = try? IRCMessage(parsing: p[4]), line.command == p[3], line.params.first.map({ casemapping.equal($0, name) }) == true
        else { return }
        // The next line of a multiline message (the same msgid as the row before): one row.
        if let last = link.incomingRows[key]?.last, last.msgid == msgid, last.command == p[3] {
            guard last.line.utf8.count + p[4].utf8.count < config.multilineMaxBytes * 2 + 8192 else { return }
            link.incomingRows[key]![link.incomingRows[key]!.count - 1] =
                HistoryRow(msgid: msgid, timeMilliseconds: last.timeMilliseconds, target: key, command: p[3], line: last.line + "\n" + p[4])
            return
        }
        link.incomingRows[key, default: []].append(HistoryRow(msgid: msgid, timeMilliseconds: time, target: key, command: p[3], line: p[4]))
    }

    /// Rows said on the other side of a split, new here: stored, and shown to the room's members
    /// after a notice saying what they are, each at its own time and under its msgid.
    mutating func mergeSplitRows(_ rows: [HistoryRow], key: String, now: Double) {
        guard !rows.isEmpty, let channel = roomBook.channels[key] else { return }
        cache.splitMerged[key, default: []].formUnion(rows.map(\.msgid))
        outbox.items.append(.storeRows(rows))
        let count = rows.count
        deliver(IRCMessage(source: config.name, command: "NOTICE",
                           params: [channel.name, "\(count) message\(count == 1 ? "" : "s") said on the other side of a split follow"]),
                toRoom: key, now: now, history: [])
        for row in rows {
            let stamp = Stamp(time: Double(row.timeMilliseconds) / 1000, msgid: UInt64(bitPattern: row.msgid))
            if let (parts, tags) = Self.storedParts(row.line) {
                let members = (roomBook.membership.members[key] ?? [:]).values.map(\.user)
                deliverMultiline(parts, tags: tags, batchTo: members, linesTo: members, stamp: stamp, now: now)
                continue
            }
            guard let message = try? IRCMessage(parsing: row.line) else { continue }
            deliver(message, toRoom: key, now: now, onlyWith: message.command == "TAGMSG" ? .messageTags : nil, stamp: stamp, history: [])
        }
        log("room \(channel.name): \(count) message(s) said on the other side of a split merged into history")
    }
}
