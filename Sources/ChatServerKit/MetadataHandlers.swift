import IRCWire

/// draft/metadata-2: keys and values on users (display-name, avatar, pronouns, status…) and
/// rooms, held in memory for as long as the user is connected or the room lives. A client
/// subscribes to the keys it shows (`METADATA * SUB`) and is told of them for the people it
/// shares a room with, and the rooms it is in: on joining, and when they change.
struct MetadataLimits {
    static let subscriptions = 50
    static let keys = 20
    static let valueBytes = 300
    static let keyBytes = 64
    /// A room with more members than this answers a JOIN with 774 (sync later) instead of
    /// every member's metadata at once.
    static let syncOnJoin = 200
    /// The keys WHOIS shows (760), the ones a person reads.
    static let whoisKeys = ["display-name", "pronouns", "avatar", "homepage", "status"]

    static var capabilityValue: String { "max-subs=\(subscriptions),max-keys=\(keys),max-value-bytes=\(valueBytes)" }

    /// A key as the spec allows it (a-z, 0-9, `_.:-`, not starting with `:`), folded to lower case.
    static func key(_ raw: String) -> String? {
        let key = raw.lowercased()
        guard !key.isEmpty, key.utf8.count <= keyBytes, !key.hasPrefix(":"),
              key.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) || "_.:-".unicodeScalars.contains($0) })
        else { return nil }
        return key
    }
}

extension ServerState {
    // METADATA <target> GET <key>... | LIST | SET <key> [<value>] | CLEAR | SUB <key>... | UNSUB <key>... | SUBS | SYNC
    mutating func handleMetadata(_ request: Request) {
        let session = request.session, user = request.user
        let p = request.params
        guard p.count >= 2 else {
            standardReply(session, "FAIL", command: "METADATA", code: "NEED_MORE_PARAMS", context: [], always: true, "Missing parameters")
            return
        }
        let subcommand = p[1].uppercased()
        func fail(_ code: String, _ context: [String], _ text: String) {
            standardReply(session, "FAIL", command: "METADATA", code: code, context: context, always: true, text)
        }
        // Subscriptions are the connection's own.
        switch subcommand {
        case "SUB", "UNSUB":
            var done: [String] = []
            for raw in p.dropFirst(2).flatMap({ $0.split(separator: " ").map(String.init) }) {
                guard let key = MetadataLimits.key(raw) else {
                    fail("KEY_INVALID", [raw], "Invalid key")
                    continue
                }
                if subcommand == "UNSUB" {
                    session.metadataSubscriptions.remove(key)
                } else if !session.metadataSubscriptions.contains(key) {
                    guard session.metadataSubscriptions.count < MetadataLimits.subscriptions else {
                        fail("TOO_MANY_SUBS", [key], "Too many subscriptions (at most \(MetadataLimits.subscriptions))")
                        break
                    }
                    session.metadataSubscriptions.insert(key)
                }
                if !done.contains(key) { done.append(key) }
            }
            if !done.isEmpty { reply(session, subcommand == "SUB" ? .metadataSubOK : .metadataUnsubOK, params: [done.joined(separator: " ")]) }
            return
        case "SUBS":
            let keys = session.metadataSubscriptions.sorted()
            if !keys.isEmpty { reply(session, .metadataSubs, params: [keys.joined(separator: " ")]) }
            return
        default:
            break
        }
        // The rest name a target: `*` is oneself.
        let name = p[0]
        let target: MetadataTarget
        if name == "*" || (user.nick.map { casemapping.equal($0, name) } ?? false) {
            target = .user(user)
        } else if IRCNames.isChannel(name), let (key, channel) = channel(named: name), canSee(user, key: key) || !channel.isSecret {
            target = .room(key)
        } else if !IRCNames.isChannel(name), let other = self.user(named: name) {
            target = .user(other)
        } else {
            return fail("INVALID_TARGET", [name], "No such nick or room")
        }
        let shown = target.name(self)
        switch subcommand {
        case "GET":
            guard p.count > 2 else { return fail("NEED_MORE_PARAMS", ["GET"], "Missing parameters") }
            let values = metadata(of: target)
            for raw in p.dropFirst(2) {
                guard let key = MetadataLimits.key(raw) else {
                    fail("KEY_INVALID", [raw], "Invalid key")
                    continue
                }
                if let value = values[key] {
                    reply(session, .keyValue, shown, key, "*", value)
                } else {
                    reply(session, .keyNotSet, shown, key, "key not set")
                }
            }
        case "LIST":
            sendMetadata(session, shown, metadata(of: target).sorted { $0.key < $1.key }, numeric: true)
        case "SET", "CLEAR":
            // Oneself, or a room one operates.
            if case .room(let key) = target, roomBook.membership.status(of: user.id, in: key)?.op != true, !user.isOperator {
                return fail("KEY_NO_PERMISSION", [shown, subcommand == "SET" && p.count > 2 ? p[2] : "*"],
                            "Only the room's operators may change its metadata")
            }
            if case .user(let other) = target, other !== user, !user.isOperator {
                return fail("KEY_NO_PERMISSION", [shown, subcommand == "SET" && p.count > 2 ? p[2] : "*"], "You may change only your own metadata")
            }
            var changes: [(String, String?)] = []
            if subcommand == "CLEAR" {
                changes = metadata(of: target).keys.sorted().map { ($0, nil) }
            } else {
                guard p.count > 2 else { return fail("NEED_MORE_PARAMS", ["SET"], "Missing parameters") }
                guard let key = MetadataLimits.key(p[2]) else { return fail("KEY_INVALID", [p[2]], "Invalid key") }
                let value = p.count > 3 ? PlainText.cleanFreeText(p[3]) : ""
                let current = metadata(of: target)
                if value.isEmpty {
                    guard current[key] != nil else { return reply(session, .keyNotSet, shown, key, "key not set") }
                } else {
                    guard value.utf8.count <= MetadataLimits.valueBytes else {
                        return fail("VALUE_INVALID", [], "The value is longer than \(MetadataLimits.valueBytes) bytes")
                    }
                    guard current[key] != nil || current.count < MetadataLimits.keys else {
                        return fail("LIMIT_REACHED", [shown], "At most \(MetadataLimits.keys) keys")
                    }
                }
                changes = [(key, value.isEmpty ? nil : value)]
            }
            for (key, value) in changes {
                setMetadata(target, key, value)
                if let value { reply(session, .keyValue, shown, key, "*", value) } else { reply(session, .keyValue, shown, key, "*") }
                announceMetadata(target, key, value, by: user, except: session, now: request.now)
            }
        case "SYNC":
            // A room's SYNC sends its members' metadata too: for its members only (issue 43, item 11).
            if case .room(let key) = target, !roomBook.membership.isMember(user.id, of: key), !user.isOperator {
                return fail("INVALID_TARGET", [shown], "You are not in that room")
            }
            syncMetadata(session, target)
        default:
            fail("SUBCOMMAND_INVALID", [p[1]], "Unknown METADATA subcommand")
        }
    }

    enum MetadataTarget {
        case user(User)
        case room(String)

        func name(_ state: ServerState) -> String {
            switch self {
            case .user(let user): user.nick ?? "*"
            case .room(let key): state.roomBook.channels[key]?.name ?? key
            }
        }
    }

    func metadata(of target: MetadataTarget) -> [String: String] {
        switch target {
        case .user(let user): user.metadata
        case .room(let key): roomBook.channels[key]?.metadata ?? [:]
        }
    }

    mutating func setMetadata(_ target: MetadataTarget, _ key: String, _ value: String?) {
        switch target {
        case .user(let user): user.metadata[key] = value
        case .room(let room): roomBook.channels[room]?.metadata[key] = value
        }
    }

    /// `METADATA <target> <key> * :<value>` (no value: removed) to whoever is told of the
    /// target and subscribed to the key: a user's room neighbours and its other connections,
    /// a room's members.
    mutating func announceMetadata(_ target: MetadataTarget, _ key: String, _ value: String?, by setter: User, except: Session, now: Double) {
        let recipients: [UserID]
        switch target {
        case .user(let user): recipients = [user.id] + roomBook.membership.neighbours(of: user.id)
        case .room(let room): recipients = (roomBook.membership.members[room] ?? [:]).keys.map { $0 }
        }
        let message = IRCMessage(source: setter.prefix, command: "METADATA", params: [target.name(self), key, "*"] + (value.map { [$0] } ?? []))
        for id in recipients {
            guard let user = people.users[id] else { continue }
            for session in user.sessions where session !== except && session.registered && session.caps.contains(.metadata)
                && session.metadataSubscriptions.contains(key) {
                sendNow(session, message)
            }
        }
    }

    /// Key-value lines in a `metadata` batch where the client reads batches: 761 for a LIST,
    /// METADATA messages for a sync.
    mutating func sendMetadata(_ session: Session, _ name: String, _ values: [(key: String, value: String)], numeric: Bool) {
        let batched = session.caps.contains(.batch)
        let reference = batched ? newBatchReference() : nil
        if let reference { send(session, IRCMessage(source: config.name, command: "BATCH", params: ["+" + reference, "metadata"])) }
        for (key, value) in values {
            var line = numeric ? self.numeric(session, .keyValue, name, key, "*", value)
                : IRCMessage(source: config.name, command: "METADATA", params: [name, key, "*", value])
            if let reference { line.tags = [IRCTag("batch", reference)] }
            send(session, line)
        }
        if let reference { send(session, IRCMessage(source: config.name, command: "BATCH", params: ["-" + reference])) }
    }

    /// The subscribed keys of a target (and for a room, of its members), as METADATA messages.
    mutating func syncMetadata(_ session: Session, _ target: MetadataTarget) {
        let keys = session.metadataSubscriptions
        var lines: [(String, String, String)] = []
        func add(_ name: String, _ values: [String: String]) {
            for (key, value) in values.sorted(by: { $0.key < $1.key }) where keys.contains(key) { lines.append((name, key, value)) }
        }
        add(target.name(self), metadata(of: target))
        if case .room(let room) = target {
            for member in (roomBook.membership.members[room] ?? [:]).values.map(\.user).sorted(by: { ($0.nick ?? "") < ($1.nick ?? "") })
                where member !== session.user && !member.metadata.isEmpty {
                add(member.nick ?? "*", member.metadata)
            }
        }
        guard !lines.isEmpty else { return }
        let batched = session.caps.contains(.batch)
        let reference = batched ? newBatchReference() : nil
        if let reference { send(session, IRCMessage(source: config.name, command: "BATCH", params: ["+" + reference, "metadata"])) }
        for (name, key, value) in lines {
            send(session, IRCMessage(tags: reference.map { [IRCTag("batch", $0)] } ?? [], source: config.name, command: "METADATA",
                                     params: [name, key, "*", value]))
        }
        if let reference { send(session, IRCMessage(source: config.name, command: "BATCH", params: ["-" + reference])) }
    }

    /// On joining: the room's metadata and its members', or 774 (sync later) for a big room.
    mutating func metadataOnJoin(_ session: Session, key: String, name: String) {
        guard session.caps.contains(.metadata), !session.metadataSubscriptions.isEmpty else { return }
        if (roomBook.membership.members[key]?.count ?? 0) > MetadataLimits.syncOnJoin {
            reply(session, .metadataSyncLater, name, "5")
            return
        }
        syncMetadata(session, .room(key))
    }

    /// WHOIS: the keys a person reads (760).
    mutating func whoisMetadata(_ session: Session, _ other: User, _ name: String) {
        for key in MetadataLimits.whoisKeys {
            if let value = other.metadata[key] { reply(session, .whoisKeyValue, name, key, "*", value) }
        }
    }
}
