import ChatStore
import IRCWire

/// What the store worker does for the loop: the one thread (the history writer aside) that
/// reads or writes the server's database while it runs. The loop holds what it looks up in
/// memory (the accounts, `AccountDirectory`; the saved rooms; the read markers) and hands the
/// writes here; the answer comes back as `ServerState.storeAnswered`, as a password check's does.
public enum StoreJob: Sendable, Equatable {
    /// The accounts read again if they changed (another process, `chat-tui account`, may change
    /// them): asked once a second.
    case reloadAccounts(known: Int64)
    /// REGISTER's account, once its credential is derived.
    case addAccount(connection: ConnectionID, name: String, credential: SCRAMCredential, now: Double)
    /// Saved rooms' changes when there is no history writer (history off).
    case saveRooms(RoomChanges)
    /// Accounts' presence records that changed (Presence.swift).
    case savePresence([PresenceStore.Change])
    /// Accounts' Web Push subscriptions that changed (WebPush.swift).
    case saveWebPush([WebPushStore.Change])
    /// Accounts' login tokens that changed (LoginTokens.swift).
    case saveLoginTokens([LoginTokenStore.Change])

    /// The work itself, on the worker's thread (inline in tests).
    public func run(on accounts: AccountStore) -> StoreOutcome {
        switch self {
        case .reloadAccounts(let known):
            do {
                if try accounts.version() == known { return .unchanged }
                return .directory(try accounts.directory())
            } catch {
                return .failed(error.description)
            }
        case .addAccount(_, let name, let credential, let now):
            do {
                try accounts.add(name: name, credential: credential, now: Int64(now))
                return .added(nil, version: try? accounts.version())
            } catch {
                return .added(error, version: nil)
            }
        case .saveRooms(let changes):
            do {
                try RoomStore(database: accounts.database).apply(changes.list)
                return .roomsSaved(failure: nil)
            } catch {
                return .roomsSaved(failure: error.description)
            }
        case .savePresence(let changes):
            do {
                try PresenceStore(database: accounts.database).apply(changes)
                return .presenceSaved(failure: nil)
            } catch {
                return .presenceSaved(failure: error.description)
            }
        case .saveWebPush(let changes):
            do {
                try WebPushStore(database: accounts.database).apply(changes)
                return .webPushSaved(failure: nil)
            } catch {
                return .webPushSaved(failure: error.description)
            }
        case .saveLoginTokens(let changes):
            do {
                try LoginTokenStore(database: accounts.database).apply(changes)
                return .loginTokensSaved(failure: nil)
            } catch {
                return .loginTokensSaved(failure: error.description)
            }
        }
    }
}

public enum StoreOutcome: Sendable, Equatable {
    case unchanged
    case directory(AccountDirectory)
    case failed(String)
    /// `version`: the accounts' version after the write, so the next reload is not made for our own change.
    case added(AccountStore.Problem?, version: Int64?)
    case roomsSaved(failure: String?)
    case presenceSaved(failure: String?)
    case webPushSaved(failure: String?)
    case loginTokensSaved(failure: String?)
}

extension ServerState {
    /// Words for every refusal made because the accounts cannot be checked now (fail closed:
    /// a nickname that might be an account's is not handed out unchecked).
    static let accountsUnavailable = "accounts are unavailable right now; try again in a moment"

    /// Whether the server has accounts but cannot tell who owns what (they could not be read).
    var accountsUnreadable: Bool { hasAccounts && accountBook.directory == nil }

    /// From `tick`: ask the worker whether the accounts changed (one indexed read there).
    mutating func reloadAccountsIfChanged() {
        guard hasAccounts, !accountBook.accountReloadPending else { return }
        accountBook.accountReloadPending = true
        outbox.items.append(.store(.reloadAccounts(known: accountBook.directory?.version ?? -1)))
    }

    /// The answer to a `StoreJob` the runtime ran off the loop.
    public mutating func storeAnswered(_ job: StoreJob, _ outcome: StoreOutcome, now: Double) {
        switch (job, outcome) {
        case (.reloadAccounts, .unchanged):
            accountBook.accountReloadPending = false
            accountsFailed(nil)
            resumeParkedLogins(now: now)
        case (.reloadAccounts, .directory(let fresh)):
            accountBook.accountReloadPending = false
            accountsFailed(nil)
            let before = accountBook.directory
            accountBook.directory = fresh
            // An account deleted meanwhile takes its read markers with it (the database's went in the same transaction).
            if let before {
                for key in before.accounts.keys where fresh.accounts[key] == nil { cache.accountMarkers[key] = nil }
                // And the rooms it registered are registered no more.
                if before.accounts.keys.contains(where: { fresh.accounts[$0] == nil }) { forgetRoomsOfMissingAccounts(now: now) }
            }
            outbox.items.append(.log("accounts: \(fresh.accounts.count) accounts\(before == nil ? " (readable again)" : " (reloaded: changed on disk)")"))
            resumeParkedLogins(now: now)
        case (.reloadAccounts, .failed(let problem)):
            accountBook.accountReloadPending = false
            accountsFailed(problem)
            resumeParkedLogins(now: now)
        case (.addAccount(let connection, let name, let credential, _), .added(let problem, let version)):
            if problem == nil {
                accountBook.directory?.add(name: name, credential: credential)
                // Our own write moved the version by one; more means another process changed them too (reloaded then).
                if let version, let known = accountBook.directory?.version, version == known + 1 { accountBook.directory?.version = version }
            }
            guard let session = people.sessions[connection] else { return }
            session.verifying = false
            response = ResponseBuffer(session: session, label: session.deferredLabel)
            session.deferredLabel = nil
            finishRegistration(session, account: name, credential: credential, problem: problem, now: now)
            completeRegistrationIfReady(session, now: now)
            flushResponse()
            resumeHeldLines(session, now: now)
        case (.saveRooms(let changes), .roomsSaved(let failure)):
            roomsSaved(changes, failure: failure)
        case (.savePresence(let changes), .presenceSaved(let failure)):
            presenceSaved(changes, failure: failure)
        case (.saveWebPush(let changes), .webPushSaved(let failure)):
            webPushSaved(changes, failure: failure)
        case (.saveLoginTokens(let changes), .loginTokensSaved(let failure)):
            loginTokensSaved(changes, failure: failure)
        default:
            break
        }
    }

    /// The accounts could (nil) or could not be read: said once a burst, and again when it ends.
    mutating func accountsFailed(_ problem: String?) {
        if let problem {
            if !accountBook.accountsFailing { outbox.items.append(.log("accounts: cannot read the account database (\(problem)); \(accountBook.directory == nil ? "nicknames, logins and registrations are refused until it can be read" : "the accounts as last read are used")")) }
            accountBook.accountsFailing = true
        } else if accountBook.accountsFailing {
            accountBook.accountsFailing = false
            outbox.items.append(.log("accounts: the account database is readable again"))
        }
    }
}
