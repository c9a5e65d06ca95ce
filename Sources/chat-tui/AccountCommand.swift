#if canImport(Glibc)
import Glibc
#endif
import ChatClientKit
import ChatStore
import ChatTransport
import IRCWire

/// `chat-tui account …`: the host manages the server's accounts from the shell.
enum AccountCommand {
    static let usage = """
        usage: chat-tui account add NAME [--password P] [--data-dir DIR]
               chat-tui account passwd NAME [--password P] [--data-dir DIR]
               chat-tui account delete NAME [--data-dir DIR]
               chat-tui account list [--data-dir DIR]
               chat-tui account cert add NAME FINGERPRINT [--data-dir DIR]
        Without --password the password is read from standard input (not echoed on a terminal).
        A password has at least 8 characters, as for REGISTER.
        """

    /// The one password rule (REGISTER's too).
    static func checked(_ password: String) -> String {
        if let problem = AccountStore.passwordProblem(password) { fail("account: " + problem.words) }
        return password
    }

    static func run(_ words: [String]) -> Never {
        var positional: [String] = []
        var password: String?
        var directory = homeDirectory + "/.local/share/chat-tui/server"
        var index = 0
        while index < words.count {
            switch words[index] {
            case "--password" where index + 1 < words.count: password = words[index + 1]; index += 2
            case "--data-dir" where index + 1 < words.count: directory = words[index + 1]; index += 2
            case "--help", "-h": writeLine(usage, to: 1); exit(0)
            case let word where word.hasPrefix("--"): fail("account: unknown option \(word)\n\(usage)")
            case let word: positional.append(word); index += 1
            }
        }
        guard let verb = positional.first else { fail(usage) }
        do {
            try Files.createDirectories(directory, mode: 0o700)
        } catch {
            fail("cannot make \(directory): \(error)")
        }
        // The database holds credentials: only the host reads it.
        umask(0o077)
        let accounts: AccountStore
        do {
            accounts = try AccountStore(database: Database(path: directory + "/server.db"))
        } catch {
            fail("\(error)")
        }
        // Account names follow the nickname rules and fold as nicknames do on our server.
        func key(_ name: String) -> String {
            if let problem = IRCNames.nickProblem(name, maxBytes: 30) { fail("\(name) cannot be an account name: \(problem)") }
            return AccountStore.key(name)
        }
        do {
            switch (verb, positional.count) {
            case ("add", 2):
                let name = positional[1]
                _ = key(name)
                let secret = checked(password ?? readPassword("Password for \(name): "))
                try accounts.add(name: name, credential: SCRAMCredential.derive(password: secret), now: Int64(WallClock.now()))
                writeLine("account \(name) added", to: 1)
            case ("passwd", 2):
                let name = positional[1], folded = key(name)
                let secret = checked(password ?? readPassword("New password for \(name): "))
                try accounts.setCredential(key: folded, SCRAMCredential.derive(password: secret))
                writeLine("password of \(name) changed", to: 1)
            case ("delete", 2):
                try accounts.delete(key: key(positional[1]))
                writeLine("account \(positional[1]) deleted", to: 1)
            case ("list", 1):
                for record in try accounts.list() {
                    writeLine(record.name + (record.certificates.isEmpty ? "" : "  certificates: " + record.certificates.joined(separator: " ")), to: 1)
                }
            case ("cert", 4) where positional[1] == "add":
                let fingerprint = KnownServers.normalise(positional[3])
                guard fingerprint.count == 64 else { fail("a certificate fingerprint is its SHA-256: 64 hex digits, colons optional") }
                try accounts.addCertificate(key: key(positional[2]), fingerprint: fingerprint)
                writeLine("certificate added to \(positional[2])", to: 1)
            default:
                fail(usage)
            }
        } catch {
            fail("account: \(error)")
        }
        exit(0)
    }

    /// One line from standard input; on a terminal without echoing it.
    static func readPassword(_ prompt: String) -> String {
        let terminal = isatty(0) == 1
        var saved = termios()
        if terminal {
            write(2, prompt, prompt.utf8.count)
            tcgetattr(0, &saved)
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(0, TCSANOW, &quiet)
        }
        let line = readLine(strippingNewline: true)
        if terminal {
            tcsetattr(0, TCSANOW, &saved)
            write(2, "\n", 1)
        }
        guard let line, !line.isEmpty else { fail("no password given") }
        return line
    }
}
