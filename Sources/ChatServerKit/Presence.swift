import ChatLink
import ChatStore
import ChatTransport
import IRCWire

/// One person on every device, present while away (multiclient and always-on).
///
/// A guest is one connection. A connection that logs in to an account whose user exists
/// (another device is connected, or the account is always-on with none) becomes one more
/// session of that user: same nickname, rooms and modes (`attach`). What any session sends
/// reaches the others; what anyone sends the person reaches every session. When the last
/// session goes, an always-on account's user stays: in its rooms, away "not connected", its
/// nickname held, its invitations kept; the next session that arrives is put back in the rooms
/// and shown what its device missed. `People.byAccount` is the one place that says which user
/// speaks for an account.
extension ServerState {
    /// The away text of a user with no session left.
    static let notConnected = "not connected"
    /// Devices remembered per account (the least recently seen is forgotten past it), and the
    /// invitations kept for a user nobody is connected as (the oldest dropped past it).
    static let devicesPerAccount = 16
    static let missedInvitesLimit = 20
    /// Lines replayed per conversation, and direct conversations replayed, to a device that
    /// cannot ask for history itself (CHATHISTORY clients ask).
    static let missedLinesPerConversation = 100
    static let missedConversations = 50

    // MARK: Who speaks for an account

    /// Whether `account` (folded) stays present with no session, under the server's policy and
    /// its own setting.
    func alwaysOnWanted(_ account: String) -> Bool {
        guard hasAccounts else { return false }
        let setting = people.presence[account]?.setting ?? "default"
        switch config.alwaysOn {
        case .off: return false
        case .optIn: return setting == "on"
        case .optOut: return setting != "off"
        }
    }

    /// The account's setting as PERSISTENCE shows it: ON, OFF or DEFAULT.
    func persistenceSetting(_ account: String) -> String { (people.presence[account]?.setting ?? "default").uppercased() }

    /// A session registered as its user, which has an account: that user now speaks for it.
    mutating func claimAccount(_ user: User) {
        guard let account = user.account, user.remote == nil else { return }
        let key = fold(account)
        if people.byAccount[key] == nil { people.byAccount[key] = user }
    }

    /// The user a connection logged in to an account will be a session of (multiclient), if any.
    func accountOwner(of session: Session) -> User? {
        if let resumed = session.resumes, people.users[resumed.id] === resumed, !resumed.ending, session.user.account == nil { return resumed }
        guard config.multiclient, let account = session.user.account, let owner = people.byAccount[fold(account)],
              owner !== session.user, owner.remote == nil else { return nil }
        return owner
    }

    /// Registration, for a session logged in to an account whose user exists already: it
    /// becomes a session of that user. False: it registers as a user of its own.
    mutating func registerAsSession(_ session: Session, now: Double) -> Bool {
        guard let owner = accountOwner(of: session) else { return false }
        if owner.account == nil {
            // A guest coming back (RESUME): whatever connection it still had gives way.
            for old in owner.sessions where people.sessions[old.connection] != nil {
                closeLink(old, reason: "Resumed in another window", now: now)
            }
            if owner.resumeDeadline != nil {
                owner.resumeDeadline = nil
                people.resumableCount -= 1
            }
            owner.alwaysOn = false
            // (Full of guests kept: the one it was has left meanwhile; it registers as itself.)
            guard people.users[owner.id] === owner else {
                session.resumes = nil
                return false
            }
        }
        adopt(session, into: owner)
        session.resumes = nil
        session.registered = true
        gate.leaveUnregistered(session)
        people.registeredSessions += 1
        log(session, "registered as a session of \(owner.replyName) (\(owner.account.map { "account \($0)" } ?? "a guest resuming"), device \(deviceName(session)); \(owner.sessions.count) connected)")
        sendWelcome(session)
        arrive(session, now: now)
        return true
    }

    /// Logged in after registering (NickServ IDENTIFY, a late SASL): the connection leaves the
    /// user it was and joins its account's, which keeps its nickname; it is told of the change.
    mutating func moveToAccountUser(_ session: Session, now: Double) {
        let guest = session.user
        guard config.multiclient, session.registered, let account = guest.account, let owner = people.byAccount[fold(account)],
              owner !== guest, owner.remote == nil, guest.sessions.count == 1 else {
            claimAccount(session.user)
            return
        }
        let oldPrefix = guest.prefix
        // The guest it was leaves, with words saying where it went.
        roomBook.membership.detach(session)
        guest.sessions.removeAll()
        people.registeredSessions -= 1
        endUser(guest, quitMessage: "Logged in on another device as \(owner.replyName)", leaving: session.connection, now: now)
        adopt(session, into: owner)
        people.registeredSessions += 1
        if let nick = owner.nick {
            send(session, IRCMessage(source: oldPrefix, command: "NICK", params: [nick]))
        }
        log(session, "now a session of \(owner.replyName) (account \(account), device \(deviceName(session)))")
        arrive(session, now: now)
    }

    /// The connection's own user (made when it connected) gives way to `owner`.
    mutating func adopt(_ session: Session, into owner: User) {
        let placeholder = session.user
        if let nick = placeholder.nick { releaseNick(nick, of: placeholder, wasOnline: false) }
        if people.users[placeholder.id] === placeholder { people.users.removeValue(forKey: placeholder.id) }
        placeholder.sessions.removeAll { $0 === session }
        // draft/pre-away: what it said before registering is this session's own.
        if session.away == nil { session.away = placeholder.away }
        session.user = owner
        owner.sessions.append(session)
        people.openUsers.opened(session.connection, owner)
        session.lastDirect = nil
        session.nickProtectionDeadline = nil
    }

    /// The device a session is: the name its client gave, else its address.
    func deviceName(_ session: Session) -> String { session.device ?? session.user.address }

    /// A session arrived at a user that may be in rooms already: put in them and told so as if it
    /// had joined each (JOIN, topic, names), told of its modes and of invitations kept while
    /// nobody was connected, and shown what this device missed.
    mutating func arrive(_ session: Session, now: Double) {
        let user = session.user
        roomBook.membership.attach(session)
        if !user.modes.isEmpty, let nick = user.nick {
            send(session, IRCMessage(source: nick, command: "MODE", params: [nick, "+" + String(user.modes.sorted())]))
        }
        for key in roomBook.membership.rooms(of: user.id).sorted() {
            guard let channel = roomBook.channels[key] else { continue }
            let join = IRCMessage(tags: accountTags(user), source: user.prefix, command: "JOIN", params: [channel.name, user.account ?? "*", user.realname])
            send(session, join)
            if !channel.topic.isEmpty { sendTopic(session, channel) }
            markerOnJoin(session, key: key, name: channel.name)
            if !session.caps.contains(.noImplicitNames) { sendNames(session, key: key, channel) }
        }
        for invite in user.missedInvites { send(session, invite) }
        user.missedInvites = []
        refreshAway(user, now: now)
        if let account = user.account {
            let key = fold(account)
            let seen = people.presence[key]?.devices[deviceName(session)]
            touchPresence(user, now: now)
            // From now on this device gets the lines as they come.
            markDeviceSeen(session, now: now)
            if let seen {
                replayMissed(session, since: seen, now: now)
            } else {
                // A device never seen: each room's last lines, as a JOIN would give it.
                for key in roomBook.membership.rooms(of: user.id).sorted() {
                    if let channel = roomBook.channels[key] { replayOnJoin(session, key: key, name: channel.name) }
                }
            }
        }
        if session.caps.contains(.persistence), let account = user.account {
            sendPersistenceStatus(session, account: fold(account))
        }
        giveResumeToken(session)
    }

    // MARK: A guest back within a minute (chat-tui.org/resume)

    /// How long a guest whose connection dropped (not by QUIT) is kept for RESUME, and how many
    /// are kept at once.
    static let resumeGrace = 60.0
    static let resumableLimit = 1_000

    /// A guest whose client asked for resume gets a fresh token (the last one is spent).
    mutating func giveResumeToken(_ session: Session) {
        let user = session.user
        guard user.account == nil, session.caps.contains(.resume) else { return }
        if let old = user.resumeToken { people.resumeTokens[old] = nil }
        let token = Crypto.hex(Crypto.randomBytes(16))
        user.resumeToken = token
        people.resumeTokens[token] = user
        send(session, IRCMessage(source: config.name, command: "RESUME", params: ["TOKEN", token]))
    }

    // RESUME <token>: before registering, to come back as the guest the token was given to.
    mutating func handleResume(_ request: Request) {
        let session = request.session
        if request.params[0].uppercased() == "FORGET" { return forgetLoginToken(session) }
        guard !session.registered else {
            return standardReply(session, "FAIL", command: "RESUME", code: "REGISTRATION_IS_COMPLETED", always: true, "RESUME comes before registering")
        }
        // The token is the proof (128 random bits, given only to that guest's connection): not
        // the address, which a phone changes between networks.
        guard let user = people.resumeTokens[request.params[0]], people.users[user.id] === user, !user.ending, user.account == nil else {
            // An account's token (LoginTokens.swift): logged in as the account, as SASL would.
            if resumeLogin(session, token: request.params[0], now: request.now) { return completeRegistrationIfReady(session, now: request.now) }
            return standardReply(session, "FAIL", command: "RESUME", code: "INVALID_TOKEN", always: true,
                                 "That token is unknown or spent; you join as someone new")
        }
        session.resumes = user
        completeRegistrationIfReady(session, now: request.now)
    }

    /// A guest with a resume token whose connection dropped: kept a minute, nickname and rooms
    /// held, unless too many are kept already. True when kept.
    mutating func keepForResume(_ user: User, now: Double) -> Bool {
        guard user.account == nil, user.resumeToken != nil, !user.ending, user.remote == nil,
              people.resumableCount < Self.resumableLimit else { return false }
        user.resumeDeadline = now + Self.resumeGrace
        user.alwaysOn = true
        people.resumableCount += 1
        return true
    }

    /// From `tick`: guests not back in time leave.
    mutating func endUnresumed(now: Double) {
        guard people.resumableCount > 0 else { return }
        let due = people.users.values.filter { ($0.resumeDeadline ?? .infinity) <= now }.sorted { $0.id < $1.id }
        for user in due {
            user.resumeDeadline = nil
            people.resumableCount -= 1
            user.alwaysOn = false
            endUser(user, quitMessage: "Connection closed", leaving: nil, now: now)
        }
    }

    /// A registered session ended. True when its user stays (another session, or always-on).
    mutating func sessionLeft(_ session: Session, now: Double) -> Bool {
        let user = session.user
        roomBook.membership.detach(session)
        people.registeredSessions -= 1
        if user.account != nil { markDeviceSeen(session, now: now) }
        if user.sessions.contains(where: \.registered) {
            refreshAway(user, now: now)
            return true
        }
        if user.account == nil { return keepForResume(user, now: now) }
        guard config.multiclient, let account = user.account, user.remote == nil, !user.ending, alwaysOnWanted(fold(account)) else { return false }
        guard user.alwaysOn || people.alwaysOnCount < config.alwaysOnLimit else {
            log("always-on: \(config.alwaysOnLimit) users are kept already; \(user.replyName) leaves")
            return false
        }
        if !user.alwaysOn { people.alwaysOnCount += 1 }
        user.alwaysOn = true
        touchPresence(user, now: now)
        refreshAway(user, now: now)
        return true
    }

    /// Away as others see it: when every session is away (the newest text), or "not connected"
    /// with none; others are told when that changes (away-notify, MONITOR, links).
    mutating func refreshAway(_ user: User, now: Double) {
        let present = user.sessions.filter(\.registered)
        let away: String?
        if present.isEmpty {
            away = user.alwaysOn ? Self.notConnected : nil
        } else if present.allSatisfy({ $0.away != nil }) {
            away = present.last?.away
        } else {
            away = nil
        }
        guard away != user.away else { return }
        user.away = away
        let message = IRCMessage(tags: accountTags(user), source: user.prefix, command: "AWAY", params: away.map { [$0] } ?? [])
        deliver(message, to: roomBook.membership.neighbours(of: user.id), now: now, onlyWith: .awayNotify)
        notifyMonitors(online: user, now: now, extendedOnly: .awayNotify, message: message)
        linkUserEvent(user, "AWAY", away.map { [String(Int(now)), $0] } ?? [])
    }

    // MARK: What is kept of each account (PresenceRecord)

    /// The user's rooms or nickname changed: its account's record is compared at the next check
    /// (not every account's every time: 10,000 always-on users cost nothing while nothing moves).
    mutating func presenceMayChange(_ user: User) {
        guard hasAccounts, user.remote == nil, let account = user.account else { return }
        people.presenceStale.insert(fold(account))
    }

    /// The account's record, made from its user as it is now.
    mutating func touchPresence(_ user: User, now: Double) {
        guard let account = user.account else { return }
        let key = fold(account)
        var record = people.presence[key] ?? PresenceRecord(account: key, nick: user.nick ?? account, username: user.username ?? "user",
                                                            host: user.host, realname: user.realname, lastUsed: now)
        record.nick = user.nick ?? record.nick
        record.username = user.username ?? record.username
        record.host = user.host
        record.realname = user.realname
        record.rooms = roomBook.membership.rooms(of: user.id).sorted().compactMap { roomBook.channels[$0]?.name }
        record.lastUsed = now
        savePresence(record)
    }

    /// The newest msgid said by now: minted here since the start, or before it (a msgid starts
    /// with its time, and this run began after every line of the last).
    func newestLine(now: Double) -> Int64 { Int64(bitPattern: max(messageIDs.latest, MessageIDs.lowest(at: now))) }

    /// The device of `session` has been shown everything up to the newest line said.
    mutating func markDeviceSeen(_ session: Session, now: Double) {
        guard let account = session.user.account else { return }
        let key = fold(account)
        guard var record = people.presence[key] else {
            touchPresence(session.user, now: now)
            if people.presence[key] != nil { markDeviceSeen(session, now: now) }
            return
        }
        record.devices[deviceName(session)] = newestLine(now: now)
        if record.devices.count > Self.devicesPerAccount, let oldest = record.devices.min(by: { $0.value < $1.value })?.key {
            record.devices[oldest] = nil
        }
        savePresence(record)
    }

    mutating func savePresence(_ record: PresenceRecord) {
        guard people.presence[record.account] != record else { return }
        people.presence[record.account] = record
        people.presenceDirty.insert(record.account)
    }

    /// From `tick`: what changed goes to the store worker, one write at a time; an always-on
    /// user nobody has used for `alwaysOnExpireDays` leaves; rooms and nicknames of users
    /// kept are written as they change.
    mutating func tickPresence(now: Double) {
        endUnresumed(now: now)
        guard hasAccounts else { return }
        if people.presenceTicks % 5 == 0, !people.presenceStale.isEmpty {
            let stale = people.presenceStale
            people.presenceStale.removeAll()
            for key in stale.sorted() {
                guard let user = people.byAccount[key], let record = people.presence[key] else { continue }
                let rooms = roomBook.membership.rooms(of: user.id).sorted().compactMap { roomBook.channels[$0]?.name }
                if record.rooms != rooms || record.nick != user.nick {
                    var changed = record
                    changed.rooms = rooms
                    changed.nick = user.nick ?? record.nick
                    savePresence(changed)
                }
            }
        }
        if now - people.expiryCheckedAt >= 60 {
            people.expiryCheckedAt = now
            expireWebPush(now: now)
            expireLoginTokens(now: now)
            // Connected devices have seen what was said until now: a crash loses a minute of
            // that at most (a device shown a line twice, never one missed).
            markConnectedDevicesSeen(now: now)
            let expiry = config.alwaysOnExpireDays * 86_400
            let expired = people.byAccount.values.filter { user in
                guard user.alwaysOn, !user.sessions.contains(where: \.registered), let account = user.account else { return false }
                return now - (people.presence[fold(account)]?.lastUsed ?? now) > expiry || !alwaysOnWanted(fold(account))
            }.sorted { $0.id < $1.id }
            for user in expired {
                log("always-on: \(user.replyName) has not been used for \(Int(config.alwaysOnExpireDays)) days, or no longer wants to stay; it leaves")
                endUser(user, quitMessage: "Not connected for too long", leaving: nil, now: now)
            }
        }
        people.presenceTicks += 1
        writePresence()
    }

    /// What changed goes to the store worker, unless a write is there already.
    mutating func writePresence() {
        guard !people.presenceAtWorker, !people.presenceDirty.isEmpty else { return }
        let changes: [PresenceStore.Change] = people.presenceDirty.sorted().map { key in
            people.presence[key].map { .save($0) } ?? .remove(account: key)
        }
        people.presenceDirty.removeAll()
        people.presenceAtWorker = true
        outbox.items.append(.store(.savePresence(changes)))
    }

    /// Every connected device of an account has seen everything said until now.
    mutating func markConnectedDevicesSeen(now: Double) {
        for user in people.byAccount.values {
            for session in user.sessions where session.registered { markDeviceSeen(session, now: now) }
        }
    }

    /// At shutdown: the connected devices' marks, and every record not written yet, to the
    /// store worker (it finishes them before the server ends).
    public mutating func flushPresence(now: Double) {
        guard hasAccounts else { return }
        markConnectedDevicesSeen(now: now)
        writePresence()
    }

    /// The store worker's answer to a presence write: a failure puts the accounts back to be written again.
    mutating func presenceSaved(_ changes: [PresenceStore.Change], failure: String?) {
        people.presenceAtWorker = false
        guard let failure else { return }
        if !people.presenceFailing { log("always-on: cannot save \(changes.count) accounts' presence: \(failure); tried again each second") }
        people.presenceFailing = true
        for change in changes {
            switch change {
            case .save(let record): people.presenceDirty.insert(record.account)
            case .remove(let account): people.presenceDirty.insert(account)
            }
        }
    }

    /// At start: the presence records read, and each always-on account's user made again, in
    /// its rooms, with nobody connected.
    mutating func loadPresence(_ database: Database?) {
        guard let database, hasAccounts else { return }
        let records: [PresenceRecord]
        do {
            records = try PresenceStore(database: database).all()
        } catch {
            log("always-on: the presence records cannot be read (\(error)); nobody is kept present across this start")
            return
        }
        let now = config.createdAt
        for record in records {
            people.presence[record.account] = record
            guard let entry = accountBook.directory?.lookup(record.account), alwaysOnWanted(record.account),
                  people.alwaysOnCount < config.alwaysOnLimit,
                  now - record.lastUsed <= config.alwaysOnExpireDays * 86_400 else { continue }
            restoreUser(record, account: entry.name, now: now)
        }
        if people.alwaysOnCount > 0 { log("always-on: \(people.alwaysOnCount) users kept present from the last run") }
    }

    /// One always-on user made from its record: its nickname if it is free (else the account's
    /// name, else it is not made), its rooms as they are or made anew.
    mutating func restoreUser(_ record: PresenceRecord, account: String, now: Double) {
        let user = User(id: UserID(people.nextUserID), host: record.host, now: now)
        user.uuid = LinkIDs.uuid(sid: sid, number: people.nextUserID)
        people.nextUserID += 1
        user.account = account
        user.username = record.username
        user.realname = record.realname
        var nick: String?
        for candidate in [record.nick, account] where nick == nil {
            let keys = NameKeys.of(candidate, casemapping)
            if people.nicks[casemapping.fold(candidate)] == nil, nickProblem(candidate, keys: keys, for: user) == nil {
                claimNick(candidate, keys: keys, for: user)
                nick = candidate
            }
        }
        guard nick != nil else {
            log("always-on: \(account)'s nickname \(record.nick) is taken; it is not kept present")
            return
        }
        user.nickTS = Int(now)
        user.alwaysOn = true
        user.away = Self.notConnected
        people.users[user.id] = user
        people.byAccount[fold(account)] = user
        people.alwaysOnCount += 1
        people.registeredCount += 1
        people.peakRegistered = max(people.peakRegistered, people.registeredCount)
        for name in record.rooms.prefix(config.alwaysOnRoomLimit) {
            restoreMembership(user, room: name, now: now)
        }
    }

    /// Puts a user with no session back in a room: the room as it is, or made again (from its
    /// record, when it is registered and lets this user in).
    mutating func restoreMembership(_ user: User, room name: String, now: Double) {
        guard IRCNames.channelProblem(name, maxBytes: config.channelLength) == nil else { return }
        let key = casemapping.fold(name)
        if roomBook.channels[key] == nil {
            var channel = Channel(name: name, createdAt: now)
            var op = true
            if roomBook.roomRecords.saved[key] != nil {
                guard let record = pendingRecord(key) else { return }
                channel = Self.channel(from: record, casemapping: casemapping)
                if admissionProblem(user, channel, key: channel.key) != nil { return }
                op = isSavedOperator(user, key: key)
            }
            roomBook.channels[key] = channel
            roomBook.sortedChannelKeys.insert(key)
            for skeleton in NameKeys.of(name, casemapping) { roomBook.channelSkeletons[skeleton] = key }
            roomBook.membership.add(user.id, to: key, MemberStatus(user: user, op: op))
        } else if admissionProblem(user, roomBook.channels[key]!, key: roomBook.channels[key]!.key) == nil {
            roomBook.membership.add(user.id, to: key, MemberStatus(user: user, op: isSavedOperator(user, key: key)))
        }
    }

    // MARK: Ending a user

    /// The user leaves the server for good: QUIT to those who shared a room with it (when it was
    /// known to them), its rooms, invitations, nickname and watches given up.
    mutating func endUser(_ user: User, quitMessage: String, leaving: ConnectionID?, now: Double) {
        guard people.users[user.id] === user else { return }
        user.ending = true
        // Its sessions first: each is closed with the reason.
        for session in user.sessions where people.sessions[session.connection] != nil {
            closeLink(session, reason: quitMessage, now: now)
        }
        guard people.users[user.id] === user else { return }
        let quit = IRCMessage(tags: accountTags(user), source: user.prefix, command: "QUIT", params: [quitMessage])
        let rooms = roomBook.membership.rooms(of: user.id), entries = roomEntries(of: user)
        if rooms.count == 1, let room = rooms.first {
            // In one room (everyone is in #lobby): its members are the room's kept lists,
            // with no set of neighbours made and no lookup per member (a crowd leaving at
            // once cost ~0.6 µs per member per departure that way: 30 s for 10,000).
            deliver(quit, toRoom: room, except: user.id, leaving: leaving, now: now, history: entries)
        } else {
            deliver(quit, to: roomBook.membership.neighbours(of: user.id), now: now, history: entries)
        }
        people.registeredCount -= 1
        if user.alwaysOn && user.account != nil { people.alwaysOnCount -= 1 }
        if user.resumeDeadline != nil { people.resumableCount -= 1 }
        linkUserEvent(user, "QUIT", [quitMessage])
        for letter in user.modes { people.setMode(of: user, letter, false) }
        rememberDeparture(user, now: now)
        forgetUser(user, wasOnline: true)
    }

    /// The user's rooms, invitations, nickname, watches and account claim are given up.
    mutating func forgetUser(_ user: User, wasOnline: Bool) {
        for key in roomBook.membership.rooms(of: user.id) { removeMember(user.id, from: key) }
        for key in roomBook.invitations[user.id] ?? [] { roomBook.forgetInvitation(user.id, to: key) }
        if let nick = user.nick { releaseNick(nick, of: user, wasOnline: wasOnline) }
        for name in user.monitoring.keys {
            people.monitors[name]?.remove(user.id)
            if people.monitors[name]?.isEmpty == true { people.monitors.removeValue(forKey: name) }
        }
        if let account = user.account, people.byAccount[fold(account)] === user { people.byAccount[fold(account)] = nil }
        if let token = user.resumeToken, people.resumeTokens[token] === user { people.resumeTokens[token] = nil }
        people.users.removeValue(forKey: user.id)
    }

    // MARK: What a device missed

    /// A device that cannot ask for history (no draft/chathistory) is shown what was said in
    /// its rooms and to it since it was last connected, each line once, in server-time batches.
    mutating func replayMissed(_ session: Session, since seen: Int64, now: Double) {
        guard history != nil, !session.caps.contains(.chathistory), let account = session.user.account else { return }
        let upTo = newestLine(now: now)
        guard upTo > seen else { return }
        let rooms = roomBook.membership.rooms(of: session.user.id).sorted().compactMap { key in roomBook.channels[key].map { (key: key, name: $0.name) } }
        var reads = readsAfter(rooms.map { (target: $0.key, bound: max(seen, historyFloor($0.key))) })
        reads.append(.conversations(party: "a:" + fold(account), from: seen, to: upTo + 1, limit: Self.missedConversations))
        requestHistory(session, reads, .missed(rooms: rooms, since: seen, upTo: upTo))
    }

    /// Reads of each conversation's lines after its bound.
    func readsAfter(_ targets: [(target: String, bound: Int64)]) -> [HistoryRead] {
        targets.map { .rows(target: $0.target, direction: .after, bound: $0.bound, limit: Self.missedLinesPerConversation, kinds: .messages) }
    }

    /// One conversation's missed lines from an answer: only those said while the device was away.
    static func missedRows(_ stored: [HistoryRow], since: Int64, upTo: Int64) -> [HistoryRow] {
        stored.filter { $0.msgid <= upTo && $0.msgid > since }
    }

    /// The answer: each room's lines, then (a second read) the direct conversations'.
    mutating func answerMissed(_ query: HistoryQuery, _ results: [HistoryResult], session: Session,
                               rooms: [(key: String, name: String)], since: Int64, upTo: Int64) {
        var total = 0
        var conversations: [(target: String, peer: String)] = []
        for (index, result) in results.enumerated() {
            switch result {
            case .rows(let stored):
                guard index < rooms.count else { continue }
                let room = rooms[index]
                let rows = Self.missedRows(stored, since: since, upTo: upTo)
                guard !rows.isEmpty, roomBook.membership.isMember(session.user.id, of: room.key) else { continue }
                total += rows.count
                replay(rows, to: session, key: room.key, name: room.name)
            case .conversations(let found):
                conversations = found.map { ($0.target, $0.peer) }
            default:
                continue
            }
        }
        if total > 0 { noticeMissed(session, total) }
        guard !conversations.isEmpty else { return }
        let reads = readsAfter(conversations.map { (target: $0.target, bound: since) })
        requestHistory(session, reads, .missedDirect(peers: conversations, since: since, upTo: upTo))
    }

    mutating func answerMissedDirect(_ query: HistoryQuery, _ results: [HistoryResult], session: Session,
                                     peers: [(target: String, peer: String)], since: Int64, upTo: Int64) {
        var total = 0
        for (index, result) in results.enumerated() {
            guard case .rows(let stored) = result, index < peers.count else { continue }
            let rows = Self.missedRows(stored, since: since, upTo: upTo)
            guard !rows.isEmpty else { continue }
            total += rows.count
            if session.caps.contains(.batch) {
                sendHistoryBatch(session, peers[index].peer, rows)
            } else {
                for row in rows { replay(row, to: session, batch: nil) }
            }
        }
        if total > 0 { noticeMissed(session, total, direct: true) }
    }

    mutating func noticeMissed(_ session: Session, _ count: Int, direct: Bool = false) {
        send(session, IRCMessage(source: config.name, command: "NOTICE", params: [session.user.replyName,
            "\(count) \(direct ? "direct " : "")message\(count == 1 ? "" : "s") you missed while this device was away (shown above)"]))
    }

    // MARK: PERSISTENCE (draft/persistence)

    // PERSISTENCE GET | PERSISTENCE SET ON|OFF|DEFAULT
    mutating func handlePersistence(_ request: Request) {
        let session = request.session
        guard let account = session.user.account else {
            standardReply(session, "FAIL", command: "PERSISTENCE", code: "ACCOUNT_REQUIRED", always: true,
                          "Log in to an account first: only an account's user can stay while nobody is connected")
            return
        }
        let key = fold(account)
        switch request.params[0].uppercased() {
        case "GET":
            sendPersistenceStatus(session, account: key)
        case "SET":
            guard request.params.count > 1, ["ON", "OFF", "DEFAULT"].contains(request.params[1].uppercased()) else {
                standardReply(session, "FAIL", command: "PERSISTENCE", code: "INVALID_PARAMS", context: ["SET"], always: true,
                              "PERSISTENCE SET takes ON, OFF or DEFAULT")
                return
            }
            setAlwaysOn(session, account: key, request.params[1].lowercased(), now: request.now)
            sendPersistenceStatus(session, account: key)
        default:
            standardReply(session, "FAIL", command: "PERSISTENCE", code: "INVALID_PARAMS", context: [request.params[0]], always: true,
                          "PERSISTENCE takes GET or SET")
        }
    }

    /// `PERSISTENCE STATUS <the account's setting> <what applies>`.
    mutating func sendPersistenceStatus(_ session: Session, account: String) {
        send(session, IRCMessage(source: config.name, command: "PERSISTENCE",
                                 params: ["STATUS", persistenceSetting(account), alwaysOnWanted(account) ? "ON" : "OFF"]))
    }

    mutating func setAlwaysOn(_ session: Session, account: String, _ setting: String, now: Double) {
        let user = session.user
        if people.presence[account] == nil { touchPresence(user, now: now) }
        guard var record = people.presence[account] else { return }
        record.setting = setting
        savePresence(record)
        log(session, "\(user.replyName) set always-on to \(setting) for \(account)")
    }
}
