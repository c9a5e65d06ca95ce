import ChatStore
import ChatTransport
import IRCWire

/// A password to check or derive, which costs a PBKDF2 (about 100,000 HMACs): the state asks
/// for it in the outbox and the runtime runs it on a worker thread, so the loop never waits for
/// it; the answer comes back as `ServerState.passwordChecked`.
public struct PasswordCheck: Sendable, Equatable {
    public enum Purpose: Sendable, Equatable {
        /// SASL PLAIN: does the password match this account's credential?
        case login(account: String, credential: SCRAMCredential)
        /// draft/account-registration: make the new account's credential.
        case register(account: String, iterations: Int)
        /// OPER: which of these blocks (all of one name, or the stand-in) accepts it.
        case oper(blocks: [OperatorBlock])
    }

    public let connection: ConnectionID
    public let purpose: Purpose
    let password: String
    /// The address key it counts against (at most two checks pending per address).
    let address: String

    /// The work itself (on the worker thread, or inline in tests).
    public func run() -> PasswordOutcome {
        switch purpose {
        case .login(_, let credential): return .matched(credential.matches(password: password))
        case .register(_, let iterations): return .derived(SCRAMCredential.derive(password: password, iterations: iterations))
        case .oper(let blocks): return .operator(blocks.first { $0.accepts(password) }?.name)
        }
    }
}

public enum PasswordOutcome: Sendable, Equatable {
    case matched(Bool)
    case derived(SCRAMCredential)
    case `operator`(String?)
    /// Not run: the connection closed while it waited.
    case cancelled
}

/// Why an HTTP login was not checked: its status and words.
public struct HTTPLoginRefusal: Error, Sendable, Equatable {
    public let status: Int
    public let reason: String
}

/// One SASL exchange in progress on a connection (SASL 3.2 over AUTHENTICATE).
enum SASLExchange {
    case plain
    case external
    /// SCRAM-SHA-256, waiting for the client-first message.
    case scramFirst
    /// Server-first sent: what the proof is checked against. `account` is nil for a name with
    /// no account (the exchange goes on, so the answer does not tell names apart, and fails).
    case scramFinal(asked: String, account: String?, credential: SCRAMCredential, authPrefix: String, nonce: String, header: String)
    /// Server-final sent; logged in when the client answers `+`.
    case scramDone(asked: String, account: String)
    /// A PLAIN or SCRAM first message naming no account we hold: parked until the accounts are
    /// read again from disk (one made by `chat-tui account add` a moment ago logs in at once).
    case awaitingAccounts(mechanism: ParkedMechanism, payload: [UInt8])

    enum ParkedMechanism { case plain, scram }
}

extension ServerState {
    static let saslMechanisms = "PLAIN,EXTERNAL,SCRAM-SHA-256"

    /// Whether this server offers a capability: accounts need the database; registration needs it open.
    func offers(_ cap: Capability) -> Bool {
        switch cap {
        case .sasl: return hasAccounts
        case .accountRegistration: return hasAccounts && config.accountRegistration
        case .chathistory, .eventPlayback, .readMarker, .search: return history != nil
        case .persistence: return hasAccounts && config.alwaysOn != .off
        case .webpush, .sojuWebpush: return webPushOn
        default: return true
        }
    }

    // AUTHENTICATE <mechanism> | <base64 chunk> | + | *
    mutating func handleAuthenticate(_ request: Request) {
        let session = request.session
        let argument = request.params[0]
        guard hasAccounts, session.caps.contains(.sasl) else {
            reply(session, .saslFail, "SASL authentication failed: request the sasl capability first")
            return
        }
        // A password being checked: the exchange is over until the answer comes.
        if session.verifying { return }
        if session.user.account != nil {
            reply(session, .saslAlready, "You have already authenticated using SASL")
            return
        }
        guard let exchange = session.sasl else {
            switch argument.uppercased() {
            case "PLAIN": session.sasl = .plain
            case "EXTERNAL": session.sasl = .external
            case "SCRAM-SHA-256": session.sasl = .scramFirst
            case "*":
                reply(session, .saslAborted, "SASL authentication aborted")
                return
            default:
                reply(session, .saslMechanisms, Self.saslMechanisms, "are available SASL mechanisms")
                reply(session, .saslFail, "SASL authentication failed")
                return
            }
            session.saslBuffer = ""
            send(session, IRCMessage(command: "AUTHENTICATE", params: ["+"]))
            return
        }
        if argument == "*" {
            endSASL(session)
            reply(session, .saslAborted, "SASL authentication aborted")
            return
        }
        // A chunk is at most 400 bytes (longer: 905); a message, however many chunks, at most
        // 4 KiB here (past that the authentication fails: 904, as the modern docs say).
        guard argument.utf8.count <= 400 else {
            endSASL(session)
            reply(session, .saslTooLong, "SASL message too long")
            return
        }
        guard session.saslBuffer.utf8.count + argument.utf8.count <= 4096 else {
            endSASL(session)
            reply(session, .saslFail, "SASL authentication failed: the message is longer than 4096 bytes")
            return
        }
        if argument != "+" { session.saslBuffer += argument }
        // A full chunk means more follow (ended by `+` when the message is a multiple of 400).
        if argument.utf8.count == 400 { return }
        let text = session.saslBuffer
        session.saslBuffer = ""
        guard let payload = text.isEmpty ? [] : Base64.decode(text) else {
            saslFailed(session, account: nil, reason: "the message was not base64", now: request.now)
            return
        }
        switch exchange {
        case .plain: plainLogin(session, payload, now: request.now)
        case .external: externalLogin(session, payload, now: request.now)
        case .scramFirst: scramFirst(session, payload, now: request.now)
        case .scramFinal(let asked, let account, let credential, let authPrefix, let nonce, let header):
            scramFinal(session, payload, asked: asked, account: account, credential: credential, authPrefix: authPrefix, nonce: nonce,
                       header: header, now: request.now)
        case .awaitingAccounts:
            saslFailed(session, account: nil, reason: "unexpected data while the accounts are read", now: request.now)
        case .scramDone(let asked, let account):
            // The client has checked our signature and says so with an empty answer.
            guard payload.isEmpty else {
                saslFailed(session, account: account, reason: "unexpected data after the server's signature", now: request.now)
                return
            }
            forgiveAttempt(session, account: asked)
            loggedIn(session, account: account, now: request.now)
        }
    }

    func fold(_ name: String) -> String { AccountStore.key(name) }

    /// A login name with a device after `@` (`alice@phone`): the account and the device's
    /// name (at most 32 bytes of letters, digits, `-`, `_` and `.`; anything else is no device).
    static func accountAndDevice(_ name: String) -> (account: String, device: String?) {
        guard let at = name.lastIndex(of: "@") else { return (name, nil) }
        let device = String(name[name.index(after: at)...])
        let valid = !device.isEmpty && device.utf8.count <= 32
            && device.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0)) }
        return (String(name[..<at]), valid ? device : nil)
    }

    /// PLAIN: `authzid NUL authcid NUL password`; the identity asked for must be the one proved.
    mutating func plainLogin(_ session: Session, _ payload: [UInt8], now: Double, reloaded: Bool = false) {
        let parts = payload.split(separator: 0, maxSplits: 2, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        guard parts.count == 3, !parts[1].isEmpty else {
            saslFailed(session, account: nil, reason: "malformed PLAIN message", now: now)
            return
        }
        // `alice@phone`: the account alice, from the device phone (as ergo and soju read it).
        let (authcid, device) = Self.accountAndDevice(parts[1])
        let authzid = Self.accountAndDevice(parts[0]).account
        let password = parts[2]
        if let device { session.device = device }
        if !reloaded && parkUntilReloaded(session, name: authcid, .plain, payload) { return }
        guard authzid.isEmpty || fold(authzid) == fold(authcid) else {
            saslFailed(session, account: authcid, reason: "cannot log in as another account", now: now)
            return
        }
        if refusedByThrottle(session, account: authcid, now: now) { return }
        if refusedUnreadable(session) { return }
        guard checkSlotFree(session) else {
            endSASL(session)
            reply(session, .saslFail, "SASL authentication failed: the server is busy, try again in a moment")
            return
        }
        // Counted as it starts, so parallel attempts cannot all pass the throttle; forgiven on success.
        countAttempt(session, account: authcid, now: now)
        // An unknown account costs the same PBKDF2 as a wrong password, so timing tells no names.
        let found = lookupAccount(authcid, session: session)
        let credential = found?.credential ?? standInCredential(authcid)
        requestCheck(session, .login(account: found?.name ?? authcid, credential: credential), password: password)
        if found == nil { session.loginOfUnknownAccount = true }
    }

    /// EXTERNAL: the client certificate presented during the TLS handshake names the account.
    mutating func externalLogin(_ session: Session, _ payload: [UInt8], now: Double) {
        guard let fingerprint = session.clientCertificate else {
            saslFailed(session, account: nil, reason: "no client certificate was presented", now: now, count: false)
            return
        }
        if refusedUnreadable(session) { return }
        guard let account = accountBook.directory?.account(forCertificate: fingerprint) else {
            saslFailed(session, account: nil, reason: "the certificate \(fingerprint.prefix(16))… belongs to no account", now: now, count: false)
            return
        }
        let asked = String(decoding: payload, as: UTF8.self)
        guard asked.isEmpty || fold(asked) == fold(account) else {
            saslFailed(session, account: asked, reason: "the certificate belongs to \(account), not \(asked)", now: now, count: false)
            return
        }
        loggedIn(session, account: account, now: now)
    }

    /// SCRAM client-first: `n,,n=NAME,r=NONCE` (no channel binding). Answered with our nonce
    /// added, the salt and the iteration count.
    mutating func scramFirst(_ session: Session, _ payload: [UInt8], now: Double, reloaded: Bool = false) {
        let message = String(decoding: payload, as: UTF8.self)
        // gs2 header: `n` or `y` (the client could bind but thinks we cannot), no authzid or the same one.
        let fields = message.split(separator: ",", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 3, fields[0] == "n" || fields[0] == "y" else {
            saslFailed(session, account: nil, reason: fields.first?.hasPrefix("p=") == true
                       ? "channel binding is not supported" : "malformed SCRAM client-first message", now: now)
            return
        }
        let bare = fields[2]
        var name: String?, clientNonce: String?
        for attribute in bare.split(separator: ",") {
            if attribute.hasPrefix("n=") {
                let (account, device) = Self.accountAndDevice(Self.scramUnescape(String(attribute.dropFirst(2))))
                name = account
                if let device { session.device = device }
            }
            if attribute.hasPrefix("r=") { clientNonce = String(attribute.dropFirst(2)) }
            if attribute.hasPrefix("m=") { name = nil; break }
        }
        let authzid = fields[1].hasPrefix("a=") ? Self.accountAndDevice(Self.scramUnescape(String(fields[1].dropFirst(2)))).account : nil
        guard let name, !name.isEmpty, let clientNonce, !clientNonce.isEmpty, authzid.map({ fold($0) == fold(name) }) ?? true else {
            saslFailed(session, account: name, reason: "malformed SCRAM client-first message", now: now)
            return
        }
        if !reloaded && parkUntilReloaded(session, name: name, .scram, payload) { return }
        if refusedByThrottle(session, account: name, now: now) { return }
        if refusedUnreadable(session) { return }
        countAttempt(session, account: name, now: now)
        let found = lookupAccount(name, session: session)
        let credential = found?.credential ?? standInCredential(name)
        let nonce = clientNonce + Base64.encode(Crypto.randomBytes(18))
        let serverFirst = "r=\(nonce),s=\(Base64.encode(credential.salt)),i=\(credential.iterations)"
        session.sasl = .scramFinal(asked: name, account: found?.name, credential: credential, authPrefix: bare + "," + serverFirst,
                                   nonce: nonce, header: fields[0] + "," + fields[1] + ",")
        sendAuthenticate(session, Array(serverFirst.utf8))
    }

    /// SCRAM client-final: `c=biws,r=NONCE,p=PROOF`. The proof XOR the client signature is the
    /// client key, whose SHA-256 must be the stored key; we answer with our own signature.
    mutating func scramFinal(_ session: Session, _ payload: [UInt8], asked: String, account: String?, credential: SCRAMCredential,
                             authPrefix: String, nonce: String, header: String, now: Double) {
        let message = String(decoding: payload, as: UTF8.self)
        guard let proofRange = message.firstRange(of: ",p=") else {
            saslFailed(session, account: account, reason: "malformed SCRAM client-final message", now: now)
            return
        }
        let withoutProof = String(message[..<proofRange.lowerBound])
        let proof = Base64.decode(String(message[proofRange.upperBound...])) ?? []
        var binding: String?, echoedNonce: String?
        for attribute in withoutProof.split(separator: ",") {
            if attribute.hasPrefix("c=") { binding = String(attribute.dropFirst(2)) }
            if attribute.hasPrefix("r=") { echoedNonce = String(attribute.dropFirst(2)) }
        }
        guard binding == Base64.encode(Array(header.utf8)), echoedNonce == nonce, proof.count == 32 else {
            saslFailed(session, account: account, reason: "the SCRAM client-final message does not match", now: now)
            return
        }
        let authMessage = Array((authPrefix + "," + withoutProof).utf8)
        let signature = Crypto.hmacSHA256(key: credential.storedKey, authMessage)
        let clientKey = zip(proof, signature).map { $0 ^ $1 }
        guard let account, Crypto.constantTimeEqual(Crypto.sha256(clientKey), credential.storedKey) else {
            saslFailed(session, account: asked, reason: Self.badCredentials, logged: account == nil ? "no such account" : "wrong password",
                       now: now, count: false)
            return
        }
        session.sasl = .scramDone(asked: asked, account: account)
        let serverSignature = Crypto.hmacSHA256(key: credential.serverKey, authMessage)
        sendAuthenticate(session, Array(("v=" + Base64.encode(serverSignature)).utf8))
    }

    /// RFC 5802: `=2C` is a comma and `=3D` an equals sign in a SCRAM name.
    static func scramUnescape(_ text: String) -> String {
        text.replacing("=2C", with: ",").replacing("=3D", with: "=")
    }

    /// Sends a SASL message in 400-byte chunks, with `+` after a full last chunk.
    mutating func sendAuthenticate(_ session: Session, _ bytes: [UInt8]) {
        let text = Base64.encode(bytes)
        var rest = Substring(text)
        repeat {
            let chunk = rest.prefix(400)
            rest = rest.dropFirst(chunk.count)
            send(session, IRCMessage(command: "AUTHENTICATE", params: [String(chunk)]))
            if rest.isEmpty && chunk.count == 400 { send(session, IRCMessage(command: "AUTHENTICATE", params: ["+"])) }
        } while !rest.isEmpty
    }

    /// A login naming no account we hold waits for the accounts to be read again (true when
    /// parked): made on disk a moment ago, the account is there then. A name that is still
    /// unknown goes on to the same stand-in check as before, a read later.
    mutating func parkUntilReloaded(_ session: Session, name: String, _ mechanism: SASLExchange.ParkedMechanism, _ payload: [UInt8]) -> Bool {
        guard hasAccounts, accountBook.directory != nil, lookupAccount(name, session: session) == nil else { return false }
        session.sasl = .awaitingAccounts(mechanism: mechanism, payload: payload)
        // A read already under way may have begun before the account was made: the next one.
        if accountBook.accountReloadPending {
            accountBook.loginsAfterNextReload.append(session.connection)
        } else {
            accountBook.loginsAfterThisReload.append(session.connection)
            accountBook.accountReloadPending = true
            outbox.items.append(.store(.reloadAccounts(known: accountBook.directory?.version ?? -1)))
        }
        return true
    }

    /// The accounts were read again (or could not be): the logins parked for that read go on.
    mutating func resumeParkedLogins(now: Double) {
        let resumed = accountBook.loginsAfterThisReload
        accountBook.loginsAfterThisReload = accountBook.loginsAfterNextReload
        accountBook.loginsAfterNextReload = []
        if !accountBook.loginsAfterThisReload.isEmpty {
            accountBook.accountReloadPending = true
            outbox.items.append(.store(.reloadAccounts(known: accountBook.directory?.version ?? -1)))
        }
        for id in resumed {
            guard let session = people.sessions[id], case .awaitingAccounts(let mechanism, let payload)? = session.sasl else { continue }
            switch mechanism {
            case .plain:
                session.sasl = .plain
                plainLogin(session, payload, now: now, reloaded: true)
            case .scram:
                session.sasl = .scramFirst
                scramFirst(session, payload, now: now, reloaded: true)
            }
        }
    }

    func lookupAccount(_ name: String, session: Session) -> AccountDirectory.Entry? {
        accountBook.directory?.lookup(fold(name))
    }

    /// Ends a login with 904 when the accounts cannot be read: no name is checked against nothing.
    mutating func refusedUnreadable(_ session: Session) -> Bool {
        guard accountsUnreadable else { return false }
        endSASL(session)
        reply(session, .saslFail, "SASL authentication failed: " + Self.accountsUnavailable)
        return true
    }

    /// A credential for a name with no account, the same for every attempt at that name (so a
    /// SCRAM salt does not change between tries and give it away), that no password matches.
    func standInCredential(_ name: String) -> SCRAMCredential {
        let seed = Crypto.hmacSHA256(key: accountBook.standInSecret, Array(fold(name).utf8))
        return SCRAMCredential(salt: Array(seed.prefix(16)), iterations: config.accountIterations,
                               storedKey: Crypto.sha256(seed), serverKey: seed)
    }

    /// Hands a PBKDF2 to the worker. The command's response (and its label) waits for the answer.
    mutating func requestCheck(_ session: Session, _ purpose: PasswordCheck.Purpose, password: String) {
        session.verifying = true
        accountBook.pendingPasswordChecks += 1
        let address = Self.throttleKey(session.user.address)
        accountBook.pendingChecksPerAddress[address, default: 0] += 1
        deferResponse(session)
        outbox.items.append(.checkPassword(PasswordCheck(connection: session.connection, purpose: purpose, password: password, address: address)))
    }

    /// The command's answer (and its label) waits for a worker's answer.
    mutating func deferResponse(_ session: Session) {
        guard response?.session === session else { return }
        response?.deferred = true
        session.deferredLabel = response?.label
    }

    /// Room for one more check: under the total, and under two per address (loopback aside),
    /// so a few addresses cannot keep everyone else's logins waiting.
    func checkSlotFree(_ session: Session) -> Bool {
        guard accountBook.pendingPasswordChecks < config.maxPendingPasswordChecks else { return false }
        if Self.isLoopback(session.user.address) { return true }
        return (accountBook.pendingChecksPerAddress[Self.throttleKey(session.user.address)] ?? 0) < 2
    }

    /// The answer to a PBKDF2 the runtime ran off the loop.
    public mutating func passwordChecked(_ check: PasswordCheck, _ outcome: PasswordOutcome, now: Double) {
        accountBook.pendingPasswordChecks = max(0, accountBook.pendingPasswordChecks - 1)
        accountBook.pendingChecksPerAddress[check.address, default: 1] -= 1
        if accountBook.pendingChecksPerAddress[check.address] ?? 0 <= 0 { accountBook.pendingChecksPerAddress[check.address] = nil }
        guard let session = people.sessions[check.connection], session.verifying else { return }
        session.verifying = false
        response = ResponseBuffer(session: session, label: session.deferredLabel)
        session.deferredLabel = nil
        answer(check, outcome, session: session, now: now)
        flushResponse()
        resumeHeldLines(session, now: now)
    }

    mutating func answer(_ check: PasswordCheck, _ outcome: PasswordOutcome, session: Session, now: Double) {
        switch (check.purpose, outcome) {
        case (.login(let account, _), .matched(let matched)) where session.viaNickServ:
            identified(session, account: account, matched: matched && !session.loginOfUnknownAccount, now: now)
        case (.login(let account, _), .matched(let matched)):
            let unknown = session.loginOfUnknownAccount
            session.loginOfUnknownAccount = false
            if matched && !unknown {
                forgiveAttempt(session, account: account)
                loggedIn(session, account: account, now: now)
            } else {
                saslFailed(session, account: account, reason: Self.badCredentials, logged: unknown ? "no such account" : "wrong password",
                           now: now, count: false)
            }
            completeRegistrationIfReady(session, now: now)
        case (.register(let account, _), .derived(let credential)):
            storeNewAccount(session, account: account, credential: credential, now: now)
        case (.oper, .operator(let name)):
            operChecked(session, block: name, now: now)
        default:
            break
        }
    }

    /// Logged in: 900 and 903, account-notify to those who share a room, and the nickname is safe.
    mutating func loggedIn(_ session: Session, account: String, viaSASL: Bool = true, now: Double) {
        endSASL(session)
        let user = session.user
        user.account = account
        reply(session, .loggedIn, user.prefix, account, "You are now logged in as \(account)")
        if viaSASL { reply(session, .saslSuccess, "SASL authentication successful") }
        giveLoginToken(session, account: account, now: now)
        log(session, "\(user.replyName) logged in as \(account)")
        if let nick = user.nick, fold(nick) == fold(account) { session.nickProtectionDeadline = nil }
        if session.registered {
            accountChanged(user, now: now)
            moveToAccountUser(session, now: now)
        }
    }

    /// 904, counted against the address and the account (not when no secret was guessed).
    /// One answer for a wrong password and an unknown name, so a login attempt tells no names.
    static let badCredentials = "wrong account name or password"

    /// `count`: a failure before any secret was tried (a malformed message) still counts, so
    /// garbage cannot be sent for free; a wrong password was counted when it started.
    mutating func saslFailed(_ session: Session, account: String?, reason: String, logged: String? = nil, now: Double, count: Bool = true) {
        endSASL(session)
        reply(session, .saslFail, "SASL authentication failed: \(reason)")
        if count { countAttempt(session, account: account, now: now) }
        log(session, "error: login failed\(account.map { " for \($0)" } ?? ""): \(logged ?? reason)")
    }

    /// A login attempt counts against the address and the account asked for (known or not).
    mutating func countAttempt(_ session: Session, account: String?, now: Double) {
        countAttempt(address: session.user.address, account: account, now: now)
    }

    mutating func countAttempt(address: String, account: String?, now: Double) {
        for key in loginThrottleKeys(address: address, account: account) {
            var entry = accountBook.loginFailures[key] ?? (0, now)
            if now - entry.since >= 60 { entry = (0, now) }
            entry.count += 1
            accountBook.loginFailures[key] = entry
        }
    }

    /// A successful login is not a failure: its attempt is taken back.
    mutating func forgiveAttempt(_ session: Session, account: String) {
        forgiveAttempt(address: session.user.address, account: account)
    }

    mutating func forgiveAttempt(address: String, account: String) {
        for key in loginThrottleKeys(address: address, account: account) {
            guard var entry = accountBook.loginFailures[key] else { continue }
            entry.count -= 1
            accountBook.loginFailures[key] = entry.count > 0 ? entry : nil
        }
    }

    func loginThrottleKeys(address: String, account: String?) -> [String] {
        var keys = ["address " + Self.throttleKey(address)]
        if let account { keys.append("account " + fold(account)) }
        return keys
    }

    /// Past the failures allowed in a minute from one address (loopback aside), a login from
    /// there is refused unchecked until the minute is over. Past an account's failures from
    /// anywhere, a login to it is refused only from addresses that have failed this minute
    /// themselves: the guessers are slowed, never the owner, whose right password from an
    /// address that has not been failing is checked as always. Successes are never counted.
    func loginThrottled(_ session: Session, account: String, now: Double) -> String? {
        loginThrottled(address: session.user.address, account: account, now: now)
    }

    func loginThrottled(address host: String, account: String, now: Double) -> String? {
        let address = accountBook.loginFailures["address " + Self.throttleKey(host)].flatMap { now - $0.since < 60 ? $0.count : nil } ?? 0
        if address >= config.loginFailuresPerAddress && !Self.isLoopback(host) {
            return "SASL authentication failed: too many failed logins from your address; try again in a minute"
        }
        if address > 0, let entry = accountBook.loginFailures["account " + fold(account)], now - entry.since < 60, entry.count >= config.loginFailuresPerAccount {
            return "SASL authentication failed: too many failed logins for \(account) from your address; try again in a minute"
        }
        return nil
    }

    /// Ends the exchange with the throttle's 904 when the account or address is past its limit.
    mutating func refusedByThrottle(_ session: Session, account: String, now: Double) -> Bool {
        guard let refusal = loginThrottled(session, account: account, now: now) else { return false }
        endSASL(session)
        reply(session, .saslFail, refusal)
        return true
    }

    // MARK: HTTP Basic on the upload URL

    /// An upload authenticated by an account (HTTP Basic over TLS, as soju does): the same
    /// throttle, the same worker and the same cost as SASL PLAIN. The check to run, or why not.
    public mutating func webLogin(_ connection: ConnectionID, account: String, password: String, address: String, now: Double) -> Result<PasswordCheck, HTTPLoginRefusal> {
        guard hasAccounts else { return .failure(HTTPLoginRefusal(status: 403, reason: "this server has no accounts")) }
        if accountsUnreadable { return .failure(HTTPLoginRefusal(status: 503, reason: Self.accountsUnavailable)) }
        if let refusal = loginThrottled(address: address, account: account, now: now) {
            return .failure(HTTPLoginRefusal(status: 429, reason: String(refusal.dropFirst("SASL authentication failed: ".count))))
        }
        let key = Self.throttleKey(address)
        guard accountBook.pendingPasswordChecks < config.maxPendingPasswordChecks, Self.isLoopback(address) || (accountBook.pendingChecksPerAddress[key] ?? 0) < 2 else {
            return .failure(HTTPLoginRefusal(status: 503, reason: "the server is busy checking passwords; try again in a moment"))
        }
        countAttempt(address: address, account: account, now: now)
        // An unknown account costs the same PBKDF2 as a wrong password, and gets the same answer.
        let found = accountBook.directory?.lookup(fold(account))
        let credential = found?.credential ?? standInCredential(account)
        accountBook.pendingPasswordChecks += 1
        accountBook.pendingChecksPerAddress[key, default: 0] += 1
        return .success(PasswordCheck(connection: connection, purpose: .login(account: found?.name ?? "", credential: credential),
                                      password: password, address: key))
    }

    /// The answer to `webLogin`'s check (after `passwordChecked` has counted it done): the
    /// owner its files count against, or nil for a wrong name or password.
    public mutating func webLoginAnswered(_ check: PasswordCheck, _ outcome: PasswordOutcome, address: String) -> String? {
        guard case .login(let account, _) = check.purpose, !account.isEmpty, outcome == .matched(true) else { return nil }
        forgiveAttempt(address: address, account: account)
        return "account:" + fold(account)
    }

    mutating func endSASL(_ session: Session) {
        session.sasl = nil
        session.saslBuffer = ""
    }

    // MARK: draft/account-registration

    // REGISTER <account> {<email> | *} <password>
    mutating func handleRegister(_ request: Request) {
        let session = request.session
        let asked = request.params[0]
        func fail(_ code: String, _ account: String, _ text: String) {
            if session.viaNickServ {
                session.viaNickServ = false
                nickServSays(session, text)
            } else {
                standardReply(session, "FAIL", command: "REGISTER", code: code, context: [account], always: true, text)
            }
        }
        guard hasAccounts, config.accountRegistration else {
            fail("TEMPORARILY_UNAVAILABLE", asked, "Accounts are made by the host on this server (chat-tui account add)")
            return
        }
        if let account = session.user.account {
            fail("ALREADY_AUTHENTICATED", account, "You are already logged in as \(account)")
            return
        }
        guard let nick = session.user.nick else {
            standardReply(session, "FAIL", command: "REGISTER", code: "NEED_NICK", context: ["*"], always: true, "Send NICK first: the account is named after it")
            return
        }
        let name = asked == "*" ? nick : asked
        guard fold(name) == fold(nick) else {
            fail("ACCOUNT_NAME_MUST_BE_NICK", name, "The account takes your nickname's name: change nickname to \(name) first")
            return
        }
        if session.verifying { return }
        let password = request.params[2]
        if let problem = AccountStore.passwordProblem(password) {
            fail(problem == .tooShort ? "WEAK_PASSWORD" : "UNACCEPTABLE_PASSWORD", name, problem.words)
            return
        }
        if let problem = IRCNames.nickProblem(name, maxBytes: config.nickLength) ?? NameSafety.nickProblem(name) {
            fail("BAD_ACCOUNT_NAME", name, problem)
            return
        }
        let keys = NameKeys.of(name, casemapping)
        if let reserved = keys.compactMap({ reservedSkeletons[$0] }).first {
            fail("BAD_ACCOUNT_NAME", name, "\(name) looks like \(reserved), which is reserved")
            return
        }
        guard let directory = accountBook.directory else {
            fail("TEMPORARILY_UNAVAILABLE", name, "The " + Self.accountsUnavailable)
            return
        }
        if directory.lookup(fold(name)) != nil {
            fail("ACCOUNT_EXISTS", name, "\(name) is an account already; log in with SASL, or pick another nickname")
            return
        }
        if let existing = directory.owner(ofKeys: keys) {
            fail("ACCOUNT_EXISTS", name, "\(name) looks too much like the account \(existing)")
            return
        }
        // New accounts per address per hour: a name grab from one host stops here.
        let address = Self.throttleKey(session.user.address)
        let recent = (accountBook.accountsCreated[address] ?? []).filter { request.now - $0 < 3600 }
        if !Self.isLoopback(session.user.address) && recent.count >= config.accountsPerAddressPerHour {
            fail("TEMPORARILY_UNAVAILABLE", name, "Too many accounts made from your address; try again in an hour")
            return
        }
        guard checkSlotFree(session) else {
            fail("TEMPORARILY_UNAVAILABLE", name, "The server is busy; try again in a moment")
            return
        }
        // The slot is taken now, so parallel REGISTERs cannot pass the limit together; given back on failure.
        accountBook.accountsCreated[address, default: []].append(request.now)
        requestCheck(session, .register(account: name, iterations: config.accountIterations), password: password)
    }

    /// The credential is derived: the account goes to the store worker, and the REGISTER's
    /// answer (and the connection's next lines) wait for it to be written.
    mutating func storeNewAccount(_ session: Session, account: String, credential: SCRAMCredential, now: Double) {
        session.verifying = true
        deferResponse(session)
        outbox.items.append(.store(.addAccount(connection: session.connection, name: account, credential: credential, now: now)))
    }

    /// The store worker's answer: written (logged in), or why not.
    mutating func finishRegistration(_ session: Session, account: String, credential: SCRAMCredential, problem: AccountStore.Problem?, now: Double) {
        if let problem {
            let code: String, text: String
            switch problem {
            case .exists, .looksLike:
                code = "ACCOUNT_EXISTS"
                text = problem.description
            default:
                code = "TEMPORARILY_UNAVAILABLE"
                text = "The account could not be written (" + Self.accountsUnavailable + ")"
            }
            log(session, "accounts: cannot add \(account): \(problem)")
            if session.viaNickServ {
                nickServSays(session, text)
            } else {
                standardReply(session, "FAIL", command: "REGISTER", code: code, context: [account], always: true, text)
            }
            session.viaNickServ = false
            let address = Self.throttleKey(session.user.address)
            if let index = accountBook.accountsCreated[address]?.indices.last { accountBook.accountsCreated[address]?.remove(at: index) }
            return
        }
        log(session, "account \(account) registered by \(session.user.replyName)")
        if session.viaNickServ {
            session.viaNickServ = false
            nickServSays(session, "Account \(account) created; you are logged in")
        } else {
            send(session, IRCMessage(source: config.name, command: "REGISTER", params: ["SUCCESS", account, "Account created; you are logged in"]))
        }
        loggedIn(session, account: account, viaSASL: false, now: now)
    }

    // VERIFY <account> <code>
    mutating func handleVerify(_ request: Request) {
        let session = request.session
        if let account = session.user.account {
            standardReply(session, "FAIL", command: "VERIFY", code: "ALREADY_AUTHENTICATED", context: [account], always: true,
                          "You are already logged in as \(account)")
        } else {
            standardReply(session, "FAIL", command: "VERIFY", code: "INVALID_CODE", context: [request.params[0]], always: true,
                          "This server sends no verification codes: REGISTER logs you in at once")
        }
    }

    // MARK: Nickname protection

    /// The account whose name this nickname is, when the user is not logged in to it.
    func protectingAccount(of nick: String, for user: User) -> String? {
        guard config.nickProtection != .off, let directory = accountBook.directory else { return nil }
        if let account = user.account, fold(account) == fold(nick) { return nil }
        return directory.lookup(fold(nick))?.name
    }

    /// The account names a nickname looks like (not its own exact one), so `aIice` cannot pass for the account alice.
    func accountLookalike(_ wanted: String, keys: Set<String>) -> String? {
        guard let owner = accountBook.directory?.owner(ofKeys: keys), fold(owner) != fold(wanted) else { return nil }
        return owner
    }

    /// Someone took an account's name without logging in to it: told, and renamed after the grace period.
    mutating func warnNickProtected(_ session: Session, account: String, now: Double) {
        guard case .rename(let grace) = config.nickProtection else { return }
        // One grace period per account name and connection: going back and forth does not renew it.
        if session.nickProtectionDeadline != nil { return }
        session.graceGiven.insert(fold(account))
        session.nickProtectionDeadline = now + grace
        send(session, IRCMessage(source: config.name, command: "NOTICE", params: [session.user.replyName,
            "\(account) is a registered account's nickname: log in to it (SASL) within \(Int(grace)) seconds, or you will be renamed"]))
        log(session, "\(session.user.replyName) holds the account name \(account) without logging in; renamed in \(Int(grace)) s unless they log in")
    }

    /// From `tick`: users whose grace period ran out get a guest nickname.
    mutating func enforceNickProtection(now: Double) {
        let due = people.sessions.values.filter { ($0.nickProtectionDeadline ?? .infinity) <= now }.sorted { $0.connection < $1.connection }
        for session in due {
            session.nickProtectionDeadline = nil
            guard session.registered, let nick = session.user.nick, let account = protectingAccount(of: nick, for: session.user) else { continue }
            // A guest name nobody holds or imitates (nor an account's look-alike).
            var number = session.user.id.raw
            var guest = "Guest\(number)"
            while nickProblem(guest, keys: NameKeys.of(guest, casemapping), for: session.user) != nil || protectingAccount(of: guest, for: session.user) != nil {
                number += 100_000
                guest = "Guest\(number)"
            }
            send(session, IRCMessage(source: config.name, command: "NOTICE", params: [nick,
                "You did not log in to the account \(account): you are now \(guest)"]))
            changeNick(guest, session: session, now: now)
        }
    }
}
