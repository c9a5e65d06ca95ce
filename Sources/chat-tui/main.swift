#if canImport(Glibc)
import Glibc
#endif
import ChatServerKit
import ChatClientKit
import ChatUI
import ChatStore
import ChatTransport
import Dispatch
import IRCWire

// Start-up is measured as a peak: the loader's pages (relocations, symbol tables) are dropped
// before anything else runs, and the server drops what each phase of its start ran once (the
// runtime, the certificates and databases opened, then the server's own set-up) before the
// next; what stays resident is what runs. A server's peak RSS was its start-up's in every quiet
// scenario (21.4 MiB; 15.1 MiB with these three trims).
Memory.trimCodePages()

/// Writes one line to a file descriptor with a single system call.
func writeLine(_ text: String, to fd: Int32) {
    var bytes = Array(text.utf8)
    bytes.append(10)
    bytes.withUnsafeBytes { _ = write(fd, $0.baseAddress, $0.count) }
}

func fail(_ message: String) -> Never {
    writeLine("chat-tui: \(message)", to: 2)
    exit(2)
}

/// $HOME as the user set it (so `HOME=/tmp/x chat-tui` writes there), else the password database's.
let homeDirectory = Environment["HOME"].flatMap { $0.isEmpty ? nil : $0 }
    ?? getpwuid(getuid()).map { String(cString: $0.pointee.pw_dir) } ?? "/"

/// The settings file: $CHAT_TUI_CONFIG (the service's /etc/chat-tui/server.conf), else the user's.
let configPath = Environment["CHAT_TUI_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
    ?? (Environment["XDG_CONFIG_HOME"] ?? homeDirectory + "/.config") + "/chat-tui/config"
// `chat-tui man 1|5`: the man pages, from the same tables as --help and /help.
if CommandLine.arguments.count > 2 && CommandLine.arguments[1] == "man" {
    switch CommandLine.arguments[2] {
    case "1": writeLine(ManPages.chatTUI(), to: 1)
    case "5": writeLine(ManPages.config(), to: 1)
    default: fail("usage: chat-tui man 1|5")
    }
    exit(0)
}
// `chat-tui account …` manages the server's accounts and exits.
if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "account" {
    AccountCommand.run(Array(CommandLine.arguments.dropFirst(2)))
}
let clientLogPath = homeDirectory + "/.local/share/chat-tui/client/history.db"
/// The text-logs setting's files, one directory per network.
let textLogsPath = homeDirectory + "/.local/state/chat-tui/logs"
/// The conversations' numbers, kept across restarts (`WindowOrder`).
let windowOrderPath = homeDirectory + "/.local/state/chat-tui/windows"
let joinedRoomsDirectory = homeDirectory + "/.local/state/chat-tui/rooms"
let readPositionsDirectory = homeDirectory + "/.local/state/chat-tui/read"
// `chat-tui search WORDS`: the client's log searched from the shell, one hit per line.
if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "search" {
    let words = Array(CommandLine.arguments.dropFirst(2))
    guard !words.isEmpty else { fail("usage: chat-tui search WORDS (every word must be in the line)") }
    guard Files.exists(clientLogPath) else { fail("no log yet: \(clientLogPath) does not exist") }
    do {
        let log = try ClientLog(path: clientLogPath)
        let hits = try log.search(words, limit: 1000)
        for hit in hits.reversed() {
            writeLine("\(ServerTime.format(hit.time)) \(hit.network) \(PlainText.visible(hit.name)) <\(PlainText.visible(hit.sender ?? ""))> \(PlainText.visible(hit.text))", to: 1)
        }
        log.close()
        exit(hits.isEmpty ? 1 : 0)
    } catch {
        fail("cannot search \(clientLogPath): \(error)")
    }
}
let arguments: Arguments
do {
    let fromFile = try Arguments.fromConfigFile(configPath)
    let given = Array(CommandLine.arguments.dropFirst())
    arguments = try Arguments.merging(file: fromFile, given: given)
} catch {
    fail(error.description)
}

/// The chat screen needs a terminal on both ends.
let hasTerminal = isatty(0) == 1 && isatty(1) == 1

switch arguments.mode {
case .help:
    writeLine(Arguments.usage, to: 1)
case .version:
    writeLine(ServerConfig().version, to: 1)
case .connect:
    // One malloc arena for the client's threads (the actor's, the screen's, the log's): with
    // glibc's one per thread, each kept the lines freed in it apart, about 3 MiB more at the
    // peak of a 100,000-line flood. The server keeps the default (its loop is one thread).
    Memory.useOneArena()
    let networks: [NetworkSettings]
    do {
        networks = try arguments.networks()
    } catch {
        fail(error.description)
    }
    if arguments.lines {
        exit(await LinesMode.run(networks.map { (name: $0.name, config: clientConfig(arguments, network: $0)) }, arguments: arguments))
    }
    guard hasTerminal else { fail("the chat screen needs a terminal; use --lines for pipes and scripts") }
    let app = ChatApp(clients: networks.map { (name: $0.name, client: ChatClient(config: clientConfig(arguments, network: $0))) }, options: arguments)
    exit(await app.run())
case .serve:
    await runServer(arguments)
case .hashPassword:
    // One line from stdin (without its newline), hashed with a fresh random salt.
    guard let password = readLine(strippingNewline: true), !password.isEmpty else { fail("--hash-password reads a password on stdin") }
    writeLine(OperatorBlock.hash(password, salt: randomToken(bytes: 8)), to: 1)
}

/// How others on the network join this room: the machine's LAN addresses with the port.
/// The addresses others reach us at: the bound one, or every LAN address when bound to all.
func joinAddresses(bind: String?) -> [String] {
    bind.map { $0 == "::" || $0 == "0.0.0.0" ? LocalAddresses.all() : [$0] } ?? LocalAddresses.all()
}

func joinHint(bind: String?, port: Int) -> [String] {
    let addresses = joinAddresses(bind: bind)
    let portFlag = port == 6667 ? "" : " --port \(port)"
    if addresses.isEmpty {
        return ["Hosting on port \(port); no network address found: others on this machine join with chat-tui --host 127.0.0.1\(portFlag)"]
    }
    // Short lines, one command each, so none wraps in the middle of a command on a narrow pane.
    var lines = ["Hosting your room on port \(port). Others join with:"]
    for address in addresses { lines.append("  chat-tui --host \(address)\(portFlag)") }
    lines.append("or from irssi: /connect \(addresses[0]) \(port); on this machine: chat-tui --host 127.0.0.1\(portFlag)")
    return lines
}

/// Where a browser joins: the web port's page at each address (https when the port has the
/// certificate; a self-signed one asks the user to compare the fingerprint the host screen shows).
func webHint(bind: String?, port: Int, secure: Bool) -> [String] {
    let addresses = joinAddresses(bind: bind)
    let scheme = secure ? "https" : "http"
    return ["From a browser (a phone, Windows, no terminal):"] + (addresses.isEmpty ? ["127.0.0.1"] : addresses).map { address in
        "  \(scheme)://\(address.contains(":") ? "[\(address)]" : address):\(port)/"
    }
}

/// The server's data directory (certificate, accounts), made readable only by us.
func dataDirectory(_ arguments: Arguments) -> String {
    // Under systemd (StateDirectory=chat-tui), the directory it made for us.
    let directory = arguments.dataDirectory ?? Environment["STATE_DIRECTORY"].flatMap { $0.isEmpty ? nil : String($0.split(separator: ":")[0]) }
        ?? (homeDirectory + "/.local/share/chat-tui/server")
    do {
        try Files.createDirectories(directory, mode: 0o700)
    } catch {
        fail("cannot make the data directory \(directory): \(error)")
    }
    return directory
}

/// The account database in the data directory (made on first start; only we may read it).
/// The VAPID key in `path` (its private scalar, base64url), made there when there is none; nil
/// (and Web Push off, said in the log) when it can be neither read nor made.
func vapidKey(_ path: String) -> P256KeyPair? {
    if let text = Files.readText(path) {
        guard let key = Base64URL.decode(String(text.filter { !$0.isWhitespace })).flatMap(P256KeyPair.init(privateKey:)) else {
            writeLine("\(path) is not a VAPID key: Web Push is off (remove it to make a new one; browsers then subscribe again)", to: 2)
            return nil
        }
        return key
    }
    guard let key = P256KeyPair.generate() else { return nil }
    do { try Files.writeAtomically(path, Array(Base64URL.encode(key.privateKey).utf8), mode: 0o600) } catch { return nil }
    return key
}

func openAccounts(_ arguments: Arguments) -> AccountStore {
    let path = dataDirectory(arguments) + "/server.db"
    let previous = umask(0o077)
    defer { umask(previous) }
    do {
        return try AccountStore(database: Database(path: path))
    } catch {
        // A damaged file is not rebuilt in its place: its accounts would be gone and their
        // nicknames anyone's. The host decides (a backup, or starting afresh), told how.
        let text = "\(error)"
        if text.contains("not a database") || text.contains("malformed") || text.contains("corrupt") {
            fail("the server database \(path) is damaged (\(text)). It holds the accounts, the saved rooms and the history; "
                 + "restore it from a backup, or move it aside (mv \(path) \(path).damaged) to start with none")
        }
        if text.contains("locked") || text.contains("busy") {
            fail("the server database \(path) is locked by another process (\(text)); stop that process, or try again")
        }
        fail("cannot open the server database \(path): \(text)")
    }
}

/// The TLS context for `--serve`: the given certificate, or a self-signed one kept in the
/// data directory (made on first start, its key readable only by us). Nil with `--tls-port 0`.
func setUpTLS(_ arguments: Arguments, serverName: String) -> (context: TLSContext, certificate: String, key: String, fingerprint: String, made: Bool, selfSigned: Bool)? {
    guard arguments.tlsPort != 0 else { return nil }
    var certificate = arguments.tlsCertificate, key = arguments.tlsKey
    var made = false
    if certificate == nil || key == nil {
        guard certificate == nil && key == nil else { fail("--tls-cert and --tls-key go together") }
        let directory = dataDirectory(arguments)
        certificate = directory + "/tls-certificate.pem"
        key = directory + "/tls-key.pem"
        do {
            made = try TLSCertificates.ensureSelfSigned(certificate: certificate!, key: key!, name: serverName)
        } catch {
            fail("\(error)")
        }
    }
    let context: TLSContext
    do {
        context = try TLSContext.server(certificate: certificate!, key: key!)
    } catch {
        fail("\(error)")
    }
    let fingerprint = TLSCertificates.fingerprint(ofFile: certificate!) ?? "?"
    return (context, certificate!, key!, fingerprint, made, TLSCertificates.isSelfSigned(file: certificate!))
}

/// How to join over TLS, for the host's screen: the exact command, pinned to our certificate
/// when it is self-signed.
func tlsHint(bind: String?, port: Int, fingerprint: String, selfSigned: Bool) -> [String] {
    let addresses = joinAddresses(bind: bind)
    let portFlag = port == 6697 ? "" : " --port \(port)"
    var lines = ["Over TLS (port \(port)):"]
    for address in addresses.isEmpty ? ["127.0.0.1"] : addresses {
        lines.append("  chat-tui --host \(address)\(portFlag)" + (selfSigned ? " --tls-fingerprint \(fingerprint)" : " --tls"))
    }
    if selfSigned {
        // irssi 1.4's -tls_verify takes no argument (`-tls_verify no` made "no" the host):
        // -notls_verify skips the CA check a self-signed certificate fails, and the pin checks
        // it is ours (irssi compares the same SHA-256 of the DER certificate, AB:CD:… form).
        lines.append("the certificate is self-signed (SHA-256 above); from irssi:")
        lines.append("  /connect -tls -notls_verify -tls_pinned_cert \(fingerprint) \(addresses.first ?? "127.0.0.1") \(port)")
    }
    return lines
}

/// Random bytes from the kernel, as hex.
func randomToken(bytes: Int) -> String {
    var generator = SystemRandomNumberGenerator()
    return (0..<bytes).map { _ in String(UInt8.random(in: 0...255, using: &generator), radix: 16).leftPadded(to: 2) }.joined()
}

/// How to join one network: the flags (and the file's top part) as defaults, what its `--host`
/// or `[network]` section says over them. The host's own screen joins its own server (`network` nil).
/// `interactive` false (a network added under the chat screen): a password not given is not
/// asked for, the login left out.
func clientConfig(_ arguments: Arguments, network: NetworkSettings? = nil, interactive: Bool = true) -> ClientConfig {
    let login = Environment["USER"].flatMap { IRCNames.nickProblem($0, maxBytes: 30) == nil ? $0 : nil }
    let portGiven = network?.address.port != nil || network?.port != nil || arguments.portGiven
    let port = network?.address.port ?? network?.port ?? arguments.port
    var config = ClientConfig(host: network?.address.host ?? "127.0.0.1", port: port, nick: network?.nick ?? arguments.nick ?? login ?? "guest")
    config.rooms = network?.rooms ?? arguments.rooms
    // The chat screen decides itself, as the typing setting says at the time (/set applies it at once).
    config.sendsTyping = arguments.typing || !arguments.lines
    config.password = arguments.password
    config.connectTimeout = arguments.connectTimeout
    config.tls = network?.tls ?? arguments.tls ?? (port == 6697)
    // TLS without a port is TLS's port, as irssi's -tls is.
    if config.tls && !portGiven { config.port = 6697 }
    config.tlsFingerprint = network?.tlsFingerprint ?? arguments.tlsFingerprint
    if let certificate = arguments.tlsCertificate {
        config.tlsClientCertificate = certificate
        config.tlsClientKey = arguments.tlsKey
    }
    let saslUser = network?.saslUser ?? arguments.saslUser
    config.saslAccount = saslUser
    // This machine's name unless given: a server that keeps us present remembers what each device saw.
    config.device = arguments.device ?? machineName()
    config.saslPassword = network?.saslUser != nil ? network?.saslPassword : (network?.saslPassword ?? arguments.saslPassword)
    config.saslPlainInsecure = arguments.saslPlainInsecure
    // No password and no certificate to log in with: asked for now, before the screen starts.
    if let account = saslUser, config.saslPassword == nil, !(config.tls && arguments.tlsCertificate != nil) {
        guard interactive else {
            config.saslAccount = nil
            return finishClientConfig(config, arguments)
        }
        guard isatty(0) == 1 else { fail("--sasl-user \(account): give --sasl-password (or sasl-password in the config file)") }
        config.saslPassword = AccountCommand.readPassword("Password for the account \(account)" + (network.map { " on \($0.name)" } ?? "") + ": ")
    }
    return finishClientConfig(config, arguments)
}

/// What every network's client shares: the local log, known servers, timers, DCC, ignores.
func finishClientConfig(_ config: ClientConfig, _ arguments: Arguments) -> ClientConfig {
    var config = config
    config.knownServersPath = homeDirectory + "/.local/share/chat-tui/client/known-servers"
    if arguments.logs {
        try? Files.createDirectories(Paths.directory(of: clientLogPath), mode: 0o700)
        config.logPath = clientLogPath
    }
    config.pingInterval = arguments.pingInterval ?? 30
    config.pingTimeout = arguments.pingTimeout ?? 60
    config.scrollbackLimit = arguments.scrollback
    if let directory = arguments.downloadDirectory { config.downloadDirectory = directory }
    config.dccPorts = arguments.dccPorts
    config.dccAddress = arguments.dccAddress
    if let size = arguments.dccMaxSize { config.dccMaxSize = size }
    config.dccAutoAcceptFrom = arguments.dccAutoAccept
    config.ignoreMasks = arguments.ignore
    if arguments.settings.isOn("text-logs") { config.textLogDirectory = textLogsPath }
    // What was read, so what was not stays unread across a restart.
    config.readPositionsPath = JoinedRooms.path(directory: readPositionsDirectory, network: "\(config.host):\(config.port)")
    // Conversations closed last time stay closed (not restored from the log).
    config.closedConversations = WindowOrder(text: Files.readText(windowOrderPath) ?? "").closed(network: "\(config.host):\(config.port)")
    // The rooms one was in when chat-tui last ended are joined again (the rejoin setting).
    let joined = JoinedRooms.path(directory: joinedRoomsDirectory, network: "\(config.host):\(config.port)")
    config.joinedRoomsPath = joined
    // (The chat screen's: `--lines`, for scripts and pipes, joins only the rooms it is told.)
    if arguments.settings.isOn("rejoin") && !arguments.lines {
        config.rooms = JoinedRooms.merged(config.rooms, JoinedRooms.rooms(Files.readText(joined) ?? ""))
    }
    var now = time(nil)
    var local = tm()
    localtime_r(&now, &local)
    config.utcOffset = local.tm_gmtoff
    config.highlights = Highlights(words: arguments.settings.words("highlights"), pattern: arguments.settings["highlight-regex"]) ?? Highlights()
    return config
}

@MainActor
func runServer(_ arguments: Arguments) async -> Never {
    var config = ServerConfig()
    config.name = arguments.serverName
    config.networkIcon = arguments.networkIcon
    config.webOrigins = arguments.webOrigins
    config.room = arguments.room
    config.casemapping = arguments.casemapping
    config.password = arguments.password
    config.operators = arguments.operators.map { OperatorBlock(name: $0.name, passwordHash: $0.hash) }
    // The host's own user on the chat screen is an operator: a block with a secret made now,
    // known only to this process, which its client sends with OPER after registering.
    let hostSecret = randomToken(bytes: 16)
    let withScreenPlanned = !arguments.headless && hasTerminal
    if withScreenPlanned { config.operators.append(OperatorBlock(name: "host", passwordHash: OperatorBlock.hash(hostSecret, salt: randomToken(bytes: 8), iterations: 1))) }
    config.pingInterval = arguments.pingInterval ?? 90
    config.pingTimeout = arguments.pingTimeout ?? 60
    config.registrationTimeout = arguments.registrationTimeout
    config.connectionLimits = arguments.limits
    config.accountRegistration = arguments.registrationOpen
    config.nickProtection = arguments.nickProtection
    config.multiclient = arguments.multiclient
    config.alwaysOn = arguments.alwaysOn
    config.alwaysOnExpireDays = arguments.alwaysOnExpireDays
    config.replayOnJoin = arguments.replayOnJoin
    config.historyBacklog = arguments.historyBacklog
    do { config.links = try arguments.linkSettings() } catch { fail(error.description) }
    let history = arguments.historyDays > 0
        ? HistoryOptions(path: dataDirectory(arguments) + "/server.db", days: arguments.historyDays, synchronous: arguments.historySync) : nil
    config.createdAt = WallClock.now()
    // Accounts, rooms and history all live there: a directory that cannot be written (a full
    // disk) would lose them silently, so the server does not start.
    if let problem = HistoryWriter.writeProblem(in: dataDirectory(arguments)) {
        let remedy = problem.contains("ermission") || problem.contains("ead-only") ? "make it writable for this user" : "free space there"
        fail("the data directory \(dataDirectory(arguments)) cannot be written (\(problem)): \(remedy) first")
    }
    let accounts = openAccounts(arguments)
    // Web Push: the server's VAPID key, made once and kept beside the accounts (0600).
    if let key = vapidKey(dataDirectory(arguments) + "/vapid.key") {
        config.webPush = WebPushSettings(key: key, subject: arguments.webPushSubject ?? "mailto:webpush@" + config.name,
                                         allowPrivate: arguments.webPushAllowPrivate)
    }
    if let path = arguments.motdPath {
        guard let text = Files.readText(path) else { fail("cannot read the MOTD file \(path)") }
        // Every line end is a separator (CR LF, LF, a lone CR): no CR is left inside a line.
        config.motd = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).map(String.init)
        if config.motd?.last == "" { config.motd?.removeLast() }
    }
    let limit = Sockets.raiseOpenFileLimit()
    let withScreen = !arguments.headless && hasTerminal
    var logFD: Int32 = 1
    if withScreen {
        // The screen belongs to curses: the server's log goes to a file.
        let path = arguments.logPath ?? (homeDirectory + "/.local/state/chat-tui/server.log")
        try? Files.createDirectories(Paths.directory(of: path))
        logFD = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        if logFD < 0 { fail("cannot write the server log \(path): \(String(cString: strerror(errno)))") }
    }
    let logTarget = logFD
    let logger: @Sendable (String) -> Void = { text in
        writeLine(ServerTime.format(WallClock.now()) + " " + text, to: logTarget)
    }
    var arguments = arguments
    // --no-plaintext --port N: N is the TLS port. --port 6697 alone: that is the TLS port's
    // default, so the plain port has it and TLS is off unless --tls-port says where.
    if !arguments.plaintext && !arguments.tlsPortGiven { arguments.tlsPort = arguments.port }
    if arguments.plaintext && !arguments.tlsPortGiven && arguments.port == arguments.tlsPort { arguments.tlsPort = 0 }
    if arguments.plaintext && arguments.tlsPort == arguments.port && arguments.tlsPort != 0 {
        fail("--port and --tls-port are both \(arguments.port): give them different ports")
    }
    var tls = setUpTLS(arguments, serverName: config.name)
    if !arguments.plaintext && tls == nil { fail("--no-plaintext needs TLS: not with --tls-port 0") }
    // Only a certificate clients can verify makes a Strict Transport Security policy worth
    // advertising; a self-signed or private-CA one would lock people out for a month.
    if let tls, TLSCertificates.verifies(file: tls.certificate) { config.sts = (port: arguments.tlsPort, duration: 30 * 24 * 3600) }
    // Links over TLS present the server's certificate, on the link port and when dialling out.
    var link: LinkListener?
    if arguments.linkPort != nil || !config.links.blocks.isEmpty {
        var server: TLSContext?, client: TLSContext?
        if arguments.linkTLS {
            guard let tls else { fail("TLS links need the server's certificate: drop --tls-port 0, or use --link-tls off") }
            server = tls.context
            do { client = try TLSContext.client(certificate: tls.certificate, key: tls.key) } catch { fail("\(error)") }
        }
        link = LinkListener(port: arguments.linkPort, bind: arguments.bind, server: server, client: client)
    }
    if arguments.uploadMaxSize > 0 {
        config.uploads = UploadSettings(directory: dataDirectory(arguments) + "/uploads", maxSize: arguments.uploadMaxSize,
                                        quota: arguments.uploadQuota, total: arguments.uploadTotal, days: arguments.uploadDays)
    }
    config.webURL = arguments.webURL
    // The default ports another room on this machine may hold (6697, 8097): go on without
    // them, saying so. A port given on the command line that is taken is an error.
    var webPort = arguments.webPort == 0 ? nil : arguments.webPort
    var handle: ServerHandle?
    Memory.trimCodePages() // (certificates, keys and databases opened: see the top of this file)
    while handle == nil {
        // What the page shows of the certificate: the one the web port will present, if any.
        config.certificateFingerprint = tls?.fingerprint
        config.certificateSelfSigned = tls?.selfSigned ?? false
        do {
            handle = try ServerHandle.start(config: config, bind: arguments.bind, port: arguments.port,
                                            tls: tls.map { (port: arguments.tlsPort, context: $0.context) }, plaintext: arguments.plaintext,
                                            accounts: accounts, history: history, link: link, webPort: webPort, webTLS: tls?.context,
                                            sendQueueLimit: arguments.sendQueueBytes, logger: logger)
        } catch {
            if case TransportError.unavailable(let reason) = error { fail(reason) }
            guard case TransportError.addressInUse(_, let port) = error else { fail("cannot listen: \(error)") }
            if let web = webPort, port == web, !arguments.webPortGiven {
                logger("the web page is off: port \(web) is in use (--web-port N picks another)")
                webPort = nil
            } else if tls != nil, arguments.plaintext, !arguments.tlsPortGiven, port == arguments.tlsPort {
                logger("TLS is off: port \(arguments.tlsPort) is in use (--tls-port N picks another)")
                tls = nil
            } else {
                fail("cannot listen: \(error)" + Arguments.portHint(port, arguments, tls: tls != nil))
            }
        }
    }
    guard let handle else { fail("cannot listen") }
    Memory.trimCodePages() // (the server's set-up done)
    logger("listening on \(arguments.bind ?? "*") " + (arguments.plaintext ? "port \(handle.port)" : "TLS only")
           + ", room \(config.room ?? "none"), open-file limit \(limit)"
           + (history.map { ", history kept \($0.days) days in \($0.path)" } ?? ", no history"))
    if let tls, let tlsPort = handle.tlsPort {
        logger("TLS on port \(tlsPort), certificate \(tls.certificate)\(tls.made ? " (made now, self-signed)" : ""), SHA-256 \(tls.fingerprint)")
    }
    if let webPort = handle.webPort {
        logger("web port \(webPort): the page at http://HOST:\(webPort)/" + (tls != nil ? " and https://HOST:\(webPort)/" : "")
               + ", IRC over WebSocket at /irc")
    }
    if link != nil {
        let peers = config.links.blocks.map { block -> String in
            guard let host = block.host else { return block.name }
            return "\(block.name)=\(host):\(block.port)"
        }
        var line = "linking as \(config.name) [\(config.sid)]" + (handle.linkPort.map { ", link port \($0)" } ?? "")
        line += arguments.linkTLS ? " over TLS" + (tls.map { ", our link certificate's SHA-256 \($0.fingerprint)" } ?? "") : ", plain links"
        if !peers.isEmpty { line += ", links: " + peers.joined(separator: " ") }
        logger(line)
    }
    if withScreen {
        // The host chats as a user of their own room.
        var client = clientConfig(arguments)
        // Hosting, --tls-cert is the server's certificate, not one for the host's own client.
        client.tlsClientCertificate = nil
        client.tlsClientKey = nil
        client.host = arguments.bind.map { $0 == "::" || $0 == "0.0.0.0" ? "127.0.0.1" : $0 } ?? "127.0.0.1"
        client.port = handle.port
        if !arguments.plaintext, let tls {
            // Only TLS listens: the host's own client speaks it too, pinned to our certificate.
            client.tls = true
            client.tlsFingerprint = tls.fingerprint
        } else {
            client.tls = false
        }
        client.operLogin = ("host", hostSecret)
        let app = ChatApp(clients: [(name: client.host, client: ChatClient(config: client))], options: arguments,
                          hostHint: (arguments.plaintext ? joinHint(bind: arguments.bind, port: handle.port) : [])
                            + (tls.flatMap { tls in handle.tlsPort.map { tlsHint(bind: arguments.bind, port: $0, fingerprint: tls.fingerprint, selfSigned: tls.selfSigned) } } ?? [])
                            + (handle.webPort.map { webHint(bind: arguments.bind, port: $0, secure: tls != nil) } ?? []))
        let code = await app.run()
        handle.stop()
        exit(code)
    }

    // SIGHUP reloads the certificate (a renewed one) without dropping anyone.
    signal(SIGHUP, SIG_IGN)
    let reload = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
    let server = handle, files = tls.map { (certificate: $0.certificate, key: $0.key) }
    reload.setEventHandler { @Sendable in
        ServiceNotify.send("RELOADING=1")
        defer { ServiceNotify.send("READY=1") }
        guard let tls = files else { return }
        do {
            server.replaceTLS(try TLSContext.server(certificate: tls.certificate, key: tls.key))
            logger("SIGHUP: certificate \(tls.certificate) reloaded, SHA-256 \(TLSCertificates.fingerprint(ofFile: tls.certificate) ?? "?")")
        } catch {
            logger("SIGHUP: the certificate was not reloaded: \(error)")
        }
    }
    reload.resume()
    // Listening: systemd (Type=notify) may start what waits for us.
    ServiceNotify.send("READY=1\nSTATUS=listening on port \(handle.port)")
    // Stop cleanly on Ctrl-C or a polite kill: clients get an ERROR line rather than a reset.
    // A parent may have started us with these blocked; unblock them or they never arrive.
    var stopSignals = sigset_t()
    sigemptyset(&stopSignals)
    sigaddset(&stopSignals, SIGINT)
    sigaddset(&stopSignals, SIGTERM)
    pthread_sigmask(SIG_UNBLOCK, &stopSignals, nil)
    signal(SIGINT, SIG_IGN)
    signal(SIGTERM, SIG_IGN)
    let signals = [SIGINT, SIGTERM].map { number in
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { @Sendable in
            server.stop()
            exit(0)
        }
        source.resume()
        return source
    }
    // The server runs on its own thread; this task only waits for a signal to end the process.
    while true {
        try? await Task.sleep(for: .seconds(3600))
        withExtendedLifetime((signals, reload)) {}
    }
}

/// This machine's short host name (up to the first dot), for `--device`'s default.
func machineName() -> String? {
    var buffer = [CChar](repeating: 0, count: 256)
    guard gethostname(&buffer, buffer.count - 1) == 0 else { return nil }
    let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return name.split(separator: ".").first.map(String.init)
}
