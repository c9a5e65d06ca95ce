import ChatStore
import ChatTransport
import IRCWire

/// Web Push (draft/webpush, and soju.im/webpush as soju and goguma speak it): an account's
/// browsers and phones subscribe; a direct message, a mention or an invitation that reaches the
/// account while none of its sessions is connected is POSTed to each subscription's push
/// service, encrypted for it (RFC 8291) and signed by the server (VAPID, RFC 8292); a MARKREAD
/// from any device sends a dismissal. The sending is the runtime's push workers' (off the loop).
public struct WebPushSettings: Sendable {
    /// The server's VAPID key, kept in the data directory (`vapid.key`).
    public var key: P256KeyPair
    /// Who runs the server, for push services (VAPID `sub`).
    public var subject: String
    /// Endpoints on loopback, private and link-local addresses (tests: a local push service).
    public var allowPrivate: Bool
    public var perAccount = 4
    public var expireDays = 14.0
    /// Pushes handed to the workers and not answered yet; past it a push is dropped (and logged).
    public var inFlightLimit = 256

    public init(key: P256KeyPair, subject: String, allowPrivate: Bool = false) {
        self.key = key
        self.subject = subject
        self.allowPrivate = allowPrivate
    }
}

/// One POST for the push workers: where, the subscription's keys, and the IRC line it carries.
public struct PushJob: Sendable, Equatable {
    public let account: String
    public let endpoint: String
    public let p256dh: [UInt8]
    public let auth: [UInt8]
    public let payload: [UInt8]
    public let urgency: String
    public let ttl: Int

    /// The request made: the encrypted body and the headers, signed now (nil: the keys are unusable).
    public func request(_ settings: WebPushSettings, now: Double) -> (PushEndpoint, [(String, String)], [UInt8])? {
        guard let endpoint = PushEndpoint(endpoint),
              let body = WebPushEncryption.encrypt(payload, subscriberKey: p256dh, authSecret: auth),
              let token = VAPID.token(audience: endpoint.origin, expires: Int(now) + 12 * 3600, subject: settings.subject, key: settings.key)
        else { return nil }
        let headers = [("Content-Type", "application/octet-stream"), ("Content-Encoding", "aes128gcm"), ("TTL", String(ttl)),
                       ("Urgency", urgency), ("Authorization", VAPID.authorization(token: token, key: settings.key))]
        return (endpoint, headers, body)
    }
}

/// The subscriptions, by folded account name. Owner: `ServerState.pushBook`. Bound: 4 per
/// account (a fifth replaces the one least recently used), as ergo keeps them; an account's
/// list lives as long as the account. End: UNREGISTER, 404/410 from the push service, 14 days
/// unused, the account deleted. Written to the database by the store worker when changed.
struct PushBook {
    var subscriptions: [String: [PushSubscription]] = [:]
    var dirty: Set<String> = []
    var atWorker = false
    var inFlight = 0
    var droppedLogged = false
}

extension ServerState {
    var webPushOn: Bool { hasAccounts && config.webPush != nil }

    /// At start: the subscriptions read (those unused past the expiry are left to go at the next write).
    mutating func loadWebPush(_ database: Database?) {
        guard let database, webPushOn else { return }
        do {
            pushBook.subscriptions = try WebPushStore(database: database).all()
        } catch {
            log("web push: the subscriptions cannot be read (\(error)); none are used until they can")
        }
    }

    // WEBPUSH VAPIDPUBKEY | REGISTER <endpoint> <keys> | UNREGISTER <endpoint>
    mutating func handleWebPush(_ request: Request) {
        let session = request.session
        guard let settings = config.webPush, hasAccounts else {
            standardReply(session, "FAIL", command: "WEBPUSH", code: "INTERNAL_ERROR", context: [], always: true, "This server sends no push notifications")
            return
        }
        let sub = request.params.first?.uppercased() ?? ""
        let key = Base64URL.encode(settings.key.publicKey)
        switch sub {
        case "VAPIDPUBKEY":
            send(session, IRCMessage(source: config.name, command: "WEBPUSH", params: ["VAPIDPUBKEY", key]))
        case "REGISTER", "UNREGISTER":
            guard let account = session.user.account.map(AccountStore.key) else {
                standardReply(session, "FAIL", command: "WEBPUSH", code: "ACCOUNT_REQUIRED", context: [sub], always: true,
                              "Push notifications are for accounts: log in first")
                return
            }
            guard request.params.count >= (sub == "REGISTER" ? 3 : 2) else {
                standardReply(session, "FAIL", command: "WEBPUSH", code: "INVALID_PARAMS", context: [sub], always: true, "WEBPUSH \(sub) <endpoint>\(sub == "REGISTER" ? " <keys>" : "")")
                return
            }
            let endpoint = request.params[1]
            if sub == "UNREGISTER" {
                if let list = pushBook.subscriptions[account], list.contains(where: { $0.endpoint == endpoint }) {
                    pushBook.subscriptions[account] = list.filter { $0.endpoint != endpoint }
                    pushBook.dirty.insert(account)
                    writeWebPush()
                }
                send(session, IRCMessage(source: config.name, command: "WEBPUSH", params: ["UNREGISTER", endpoint]))
                return
            }
            guard PushEndpoint(endpoint) != nil else {
                standardReply(session, "FAIL", command: "WEBPUSH", code: "INVALID_PARAMS", context: [sub, endpoint], always: true,
                              "The endpoint is an https URL of at most 2048 bytes")
                return
            }
            var keys: [String: String] = [:]
            for pair in request.params[2].split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2 { keys[String(parts[0])] = String(parts[1]) }
            }
            guard let p256dh = keys["p256dh"].flatMap(Base64URL.decode), p256dh.count == 65, p256dh.first == 4,
                  let auth = keys["auth"].flatMap(Base64URL.decode), auth.count == 16 else {
                standardReply(session, "FAIL", command: "WEBPUSH", code: "INVALID_PARAMS", context: [sub, endpoint], always: true,
                              "The keys are p256dh (a P-256 public key) and auth (16 bytes), base64url")
                return
            }
            var list = (pushBook.subscriptions[account] ?? []).filter { $0.endpoint != endpoint }
            let created = pushBook.subscriptions[account]?.first { $0.endpoint == endpoint }?.created ?? request.now
            if list.count >= settings.perAccount, let oldest = list.indices.min(by: { list[$0].lastUsed < list[$1].lastUsed }) {
                list.remove(at: oldest)
            }
            list.append(PushSubscription(endpoint: endpoint, p256dh: p256dh, auth: auth, created: created, lastUsed: request.now))
            pushBook.subscriptions[account] = list
            pushBook.dirty.insert(account)
            writeWebPush()
            send(session, IRCMessage(source: config.name, command: "WEBPUSH", params: ["REGISTER", endpoint]))
        default:
            standardReply(session, "FAIL", command: "WEBPUSH", code: "INVALID_PARAMS", context: [sub], always: true,
                          "WEBPUSH VAPIDPUBKEY, REGISTER <endpoint> <keys> or UNREGISTER <endpoint>")
        }
    }

    /// Whether a user would be told by push: an account with subscriptions, no session connected.
    func pushListener(_ user: User) -> String? {
        guard webPushOn, !pushBook.subscriptions.isEmpty, user.remote == nil, let account = user.account.map(AccountStore.key),
              !(pushBook.subscriptions[account]?.isEmpty ?? true), !user.sessions.contains(where: \.registered) else { return nil }
        return account
    }

    /// A line for `user` while none of their sessions is connected: to each subscription.
    mutating func pushIfAway(_ user: User, _ message: IRCMessage, stamp: Stamp?, now: Double) {
        guard let account = pushListener(user) else { return }
        push(account, message, stamp: stamp, urgency: "high", now: now)
    }

    /// A room line that names people kept present with no session: each of them is pushed it.
    mutating func pushMentions(_ message: IRCMessage, roomKey: String, sender: User, stamp: Stamp?, now: Double) {
        guard webPushOn, !pushBook.subscriptions.isEmpty, message.params.count > 1 else { return }
        var told: Set<UserID> = [sender.id]
        for word in message.params[1].split(whereSeparator: { !($0.isLetter || $0.isNumber || "[]\\`_^{|}-".contains($0)) }) {
            guard let user = people.nicks[casemapping.fold(String(word))],
                  told.insert(user.id).inserted, roomBook.membership.isMember(user.id, of: roomKey),
                  let account = pushListener(user) else { continue }
            push(account, message, stamp: stamp, urgency: "high", now: now)
        }
    }

    /// A read marker moved: the account's notifications for that conversation can go.
    mutating func pushDismissal(account: String, target: String, marker: String, now: Double) {
        guard webPushOn, !(pushBook.subscriptions[account]?.isEmpty ?? true) else { return }
        push(account, IRCMessage(source: config.name, command: "MARKREAD", params: [target, marker]), stamp: nil, urgency: "normal", now: now)
    }

    mutating func push(_ account: String, _ message: IRCMessage, stamp: Stamp?, urgency: String, now: Double) {
        guard let settings = config.webPush, let list = pushBook.subscriptions[account] else { return }
        // The line as the client would see it, with its msgid and time (the tags it needs), whole
        // lines only: a push body holds at most one record of 4 KiB.
        var tags = message.tags.filter { $0.key == "account" }
        if let stamp {
            tags.insert(IRCTag("time", stamp.timeTag), at: 0)
            if let msgid = stamp.msgidTag { tags.insert(IRCTag("msgid", msgid), at: 0) }
        }
        let line = IRCMessage(tags: tags, source: message.source, command: message.command, params: message.params)
        let payload = Array(line.serialized(maxBodyBytes: 3000).dropLast(2))
        for subscription in list where now - subscription.lastUsed <= settings.expireDays * 86_400 {
            guard pushBook.inFlight < settings.inFlightLimit else {
                if !pushBook.droppedLogged { log("web push: \(settings.inFlightLimit) pushes are waiting for their push services; new ones are dropped until they answer") }
                pushBook.droppedLogged = true
                return
            }
            pushBook.inFlight += 1
            outbox.items.append(.webPush(PushJob(account: account, endpoint: subscription.endpoint, p256dh: subscription.p256dh, auth: subscription.auth,
                                                 payload: payload, urgency: urgency, ttl: 7 * 86_400)))
        }
    }

    /// A push service's answer: a gone subscription is forgotten, a delivered one marked used.
    public mutating func webPushAnswered(_ job: PushJob, _ result: PushDelivery, now: Double) {
        pushBook.inFlight = max(0, pushBook.inFlight - 1)
        if pushBook.inFlight == 0 { pushBook.droppedLogged = false }
        guard var list = pushBook.subscriptions[job.account], let index = list.firstIndex(where: { $0.endpoint == job.endpoint }) else { return }
        switch result {
        case .delivered:
            // Written at most once a day per subscription: a busy account does not write on every push.
            guard now - list[index].lastUsed > 86_400 else { return }
            list[index].lastUsed = now
        case .gone(let status):
            log("web push: \(job.endpoint.prefix(60))… answered \(status): the subscription is gone, forgotten")
            list.remove(at: index)
        case .refused, .failed:
            return
        }
        pushBook.subscriptions[job.account] = list.isEmpty ? nil : list
        pushBook.dirty.insert(job.account)
        writeWebPush()
    }

    /// Subscriptions unused past the expiry go (from `tick`, once a minute).
    mutating func expireWebPush(now: Double) {
        guard let settings = config.webPush else { return }
        for (account, list) in pushBook.subscriptions {
            let kept = list.filter { now - $0.lastUsed <= settings.expireDays * 86_400 }
            guard kept.count != list.count else { continue }
            pushBook.subscriptions[account] = kept.isEmpty ? nil : kept
            pushBook.dirty.insert(account)
        }
        writeWebPush()
    }

    mutating func writeWebPush() {
        guard !pushBook.atWorker, !pushBook.dirty.isEmpty else { return }
        let changes = pushBook.dirty.sorted().map { WebPushStore.Change(account: $0, subscriptions: pushBook.subscriptions[$0] ?? []) }
        pushBook.dirty.removeAll()
        pushBook.atWorker = true
        outbox.items.append(.store(.saveWebPush(changes)))
    }

    mutating func webPushSaved(_ changes: [WebPushStore.Change], failure: String?) {
        pushBook.atWorker = false
        if let failure {
            log("web push: cannot save \(changes.count) accounts' subscriptions: \(failure)")
            for change in changes { pushBook.dirty.insert(change.account) }
        } else {
            writeWebPush()
        }
    }
}
