import ChatStore
import ChatTransport
import IRCWire

/// Accounts' standing logins: what a client that asked for `chat-tui.org/resume` is given when it
/// logs in to an account, and sends (`RESUME <token>`) instead of the password the next time. The
/// web page keeps it for the tab (sessionStorage), never the password.
///
/// Owner: this file (the loop), written through the store worker; bound: 8 per account (the least
/// recently used goes first); end: 30 days unused, `RESUME FORGET` (the page's Sign out), a new
/// password (the account's salt changes), the account's deletion. Only SHA-256 digests are kept.
struct TokenBook {
    var byAccount: [String: [LoginToken]] = [:]
    /// Digest to the folded account it belongs to (RESUME looks up without walking every account).
    var owner: [[UInt8]: String] = [:]
    var dirty: Set<String> = []
    var atWorker = false
}

extension ServerState {
    static let loginTokensPerAccount = 8
    static let loginTokenExpireDays = 30.0

    /// At start: the tokens read (those past their end are dropped at the next minute's check).
    mutating func loadLoginTokens(_ database: Database?) {
        guard let database, hasAccounts else { return }
        do {
            tokenBook.byAccount = try LoginTokenStore(database: database).all()
            for (account, list) in tokenBook.byAccount { for token in list { tokenBook.owner[token.digest] = account } }
        } catch {
            log("login tokens cannot be read (\(error)); pages log in with their passwords until they can")
        }
    }

    /// A login by password (or a new account) of a session that asked for chat-tui.org/resume:
    /// a token for its next connection, said as `RESUME TOKEN <token>`.
    mutating func giveLoginToken(_ session: Session, account: String, now: Double) {
        let key = fold(account)
        guard session.caps.contains(.resume), session.loginToken == nil, let entry = accountBook.directory?.lookup(key) else { return }
        let token = Crypto.hex(Crypto.randomBytes(24))
        let digest = Crypto.sha256(Array(token.utf8))
        var list = tokenBook.byAccount[key] ?? []
        list.append(LoginToken(digest: digest, salt: entry.credential.salt, device: session.device, created: now, lastUsed: now))
        if list.count > Self.loginTokensPerAccount {
            list.sort { $0.lastUsed < $1.lastUsed }
            for gone in list.prefix(list.count - Self.loginTokensPerAccount) { tokenBook.owner[gone.digest] = nil }
            list.removeFirst(list.count - Self.loginTokensPerAccount)
        }
        tokenBook.byAccount[key] = list
        tokenBook.owner[digest] = key
        tokenBook.dirty.insert(key)
        writeLoginTokens()
        session.loginToken = digest
        send(session, IRCMessage(source: config.name, command: "RESUME", params: ["TOKEN", token]))
    }

    /// `RESUME <token>` with an account's token: the session logs in as that account (and its
    /// device), as SASL would. False when the token is no account's (or no longer good).
    mutating func resumeLogin(_ session: Session, token: String, now: Double) -> Bool {
        let digest = Crypto.sha256(Array(token.utf8))
        guard hasAccounts, session.user.account == nil, session.sasl == nil, !session.verifying,
              let key = tokenBook.owner[digest], var list = tokenBook.byAccount[key],
              let index = list.firstIndex(where: { $0.digest == digest }),
              let entry = accountBook.directory?.lookup(key) else { return false }
        guard list[index].salt == entry.credential.salt, now - list[index].lastUsed <= Self.loginTokenExpireDays * 86_400 else {
            dropLoginTokens(of: key) { $0.digest == digest }
            return false
        }
        list[index].lastUsed = now
        tokenBook.byAccount[key] = list
        tokenBook.dirty.insert(key)
        writeLoginTokens()
        session.loginToken = digest
        if session.device == nil { session.device = list[index].device }
        loggedIn(session, account: entry.name, viaSASL: false, now: now)
        return true
    }

    /// `RESUME FORGET`: the token this session logged in with or was given ends (Sign out).
    mutating func forgetLoginToken(_ session: Session) {
        guard let digest = session.loginToken, let key = tokenBook.owner[digest] else {
            return standardReply(session, "NOTE", command: "RESUME", code: "FORGOTTEN", always: true, "No login of this connection is kept")
        }
        session.loginToken = nil
        dropLoginTokens(of: key) { $0.digest == digest }
        standardReply(session, "NOTE", command: "RESUME", code: "FORGOTTEN", always: true, "This connection's kept login is forgotten")
    }

    /// Once a minute: tokens unused for 30 days, of accounts gone, or older than the account's
    /// password, end.
    mutating func expireLoginTokens(now: Double) {
        guard let directory = accountBook.directory else { return }
        for key in tokenBook.byAccount.keys.sorted() {
            let salt = directory.lookup(key)?.credential.salt
            dropLoginTokens(of: key) { $0.salt != salt || now - $0.lastUsed > Self.loginTokenExpireDays * 86_400 }
        }
    }

    /// An account's tokens that `ends` picks go, from the list, the index and (written) the file.
    mutating func dropLoginTokens(of key: String, where ends: (LoginToken) -> Bool) {
        guard let list = tokenBook.byAccount[key] else { return }
        let kept = list.filter { !ends($0) }
        guard kept.count != list.count else { return }
        for gone in list where ends(gone) { tokenBook.owner[gone.digest] = nil }
        tokenBook.byAccount[key] = kept.isEmpty ? nil : kept
        tokenBook.dirty.insert(key)
        writeLoginTokens()
    }

    mutating func writeLoginTokens() {
        guard !tokenBook.atWorker, !tokenBook.dirty.isEmpty else { return }
        let changes = tokenBook.dirty.sorted().map { LoginTokenStore.Change(account: $0, tokens: tokenBook.byAccount[$0] ?? []) }
        tokenBook.dirty.removeAll()
        tokenBook.atWorker = true
        outbox.items.append(.store(.saveLoginTokens(changes)))
    }

    mutating func loginTokensSaved(_ changes: [LoginTokenStore.Change], failure: String?) {
        tokenBook.atWorker = false
        if let failure {
            log("login tokens: cannot save \(changes.count) accounts' tokens: \(failure)")
            for change in changes { tokenBook.dirty.insert(change.account) }
        } else {
            writeLoginTokens()
        }
    }
}
