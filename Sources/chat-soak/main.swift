// chat-soak: the chaos soak of issue 28. Our server, our clients (ChatClient actors, as the
// chat screen uses them) and raw IRC clients chat in three rooms and in pairs through a proxy
// that cuts, stalls, delays and splits their connections, while the server is killed with
// SIGKILL and started again. At the end every message whose sender saw it confirmed (its echo
// came back) must be in the server's history exactly once, and on every member's screen model
// (a ConversationBook fed the client's events) exactly once, in the order it was sent.
//
//   chat-soak --binary .build/debug/chat-tui [--seconds 180] [--clients 50] [--raw 10]
//             [--restart MIN-MAX] [--seed N]
//
// Exit status 0 when nothing was lost or duplicated, 1 otherwise; the figures are printed.
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ChatClientKit
import ChatStore
import ChatTransport
import IRCWire

// MARK: Options

struct Options {
    var binary = ".build/debug/chat-tui"
    var seconds = 180.0
    var clients = 50
    var raw = 10
    /// Clients with accounts, chatting in pairs (also in rooms): the first `pairs * 2`.
    var pairs = 5
    var restart: ClosedRange<Double> = 15...45
    var seed = UInt64(Monotonic.now() * 1000)
    /// More arguments for the server (`--server-arg --history-days --server-arg 0`: the soak's
    /// own check that it finds losses, since without history nothing fills a gap).
    var serverArguments: [String] = []

    init(_ arguments: [String]) {
        var rest = arguments.dropFirst()
        func value() -> String {
            guard let next = rest.popFirst() else { fatal("a value is missing after \(arguments.last ?? "")") }
            return next
        }
        while let word = rest.popFirst() {
            switch word {
            case "--binary": binary = value()
            case "--seconds": seconds = Double(value()) ?? seconds
            case "--clients": clients = max(2, Int(value()) ?? clients)
            case "--raw": raw = Int(value()) ?? raw
            case "--pairs": pairs = Int(value()) ?? pairs
            case "--seed": seed = UInt64(value()) ?? seed
            case "--server-arg": serverArguments.append(value())
            case "--restart":
                let parts = value().split(separator: "-").compactMap { Double($0) }
                if parts.count == 2, parts[0] <= parts[1] { restart = parts[0]...parts[1] }
            default: fatal("unknown argument \(word) (see the top of Sources/chat-soak/main.swift)")
            }
        }
        pairs = min(pairs, clients / 2)
    }
}

func fatal(_ text: String) -> Never {
    FileHandle.standardError.write(Data(("chat-soak: " + text + "\n").utf8))
    exit(2)
}

func say(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }

/// Random choices from one seed, shared by the threads that make them.
final class Chance: Sendable {
    private let generator: Locked<SplitMix>
    init(seed: UInt64) { generator = Locked(SplitMix(seed: seed)) }
    func double(_ range: ClosedRange<Double>) -> Double {
        generator.withLock { Double.random(in: range, using: &$0) }
    }
    func int(_ range: ClosedRange<Int>) -> Int { generator.withLock { Int.random(in: range, using: &$0) } }
    func chance(_ percent: UInt64) -> Bool { generator.withLock { $0.chance(percent) } }
}

// MARK: The server

/// `chat-tui --serve --headless` in a directory of its own, killed and started again on one port.
final class ServerControl: @unchecked Sendable {
    let binary: String
    let home: String
    let data: String
    let port: Int
    private var process: Process?
    private let lock = NSLock()
    private(set) var starts = 0
    private var peakRSS = 0

    let extra: [String]

    init(binary: String, port: Int, extra: [String]) {
        self.binary = binary
        self.extra = extra
        self.port = port
        let base = NSTemporaryDirectory() + "chat-soak-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        home = base + "/home"
        data = base + "/data"
        try? FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        try? FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
    }

    var logPath: String { home + "/server.log" }

    func addAccount(_ name: String, password: String) {
        let add = Process()
        add.executableURL = URL(fileURLWithPath: binary)
        add.arguments = ["account", "add", name, "--password", password, "--data-dir", data]
        add.environment = ProcessInfo.processInfo.environment.merging(["HOME": home]) { $1 }
        add.standardOutput = FileHandle.nullDevice
        do { try add.run() } catch { fatal("cannot run \(binary): \(error)") }
        add.waitUntilExit()
        if add.terminationStatus != 0 { fatal("could not add the account \(name)") }
    }

    func start() {
        lock.lock()
        defer { lock.unlock() }
        let server = Process()
        server.executableURL = URL(fileURLWithPath: binary)
        server.arguments = ["--serve", "--headless", "--bind", "127.0.0.1", "--port", String(port), "--tls-port", "0", "--web-port", "0",
                            "--data-dir", data, "--room", "#lobby"] + extra
        server.environment = ProcessInfo.processInfo.environment.merging(["HOME": home]) { $1 }
        if !FileManager.default.fileExists(atPath: logPath) { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }
        let log = FileHandle(forWritingAtPath: logPath)!
        log.seekToEndOfFile()
        server.standardOutput = log
        server.standardError = log
        do { try server.run() } catch { fatal("cannot start \(binary): \(error)") }
        process = server
        starts += 1
    }

    /// Waits until the port takes connections (or the server died).
    func waitListening(timeout: Double = 30) -> Bool {
        let deadline = Monotonic.now() + timeout
        while Monotonic.now() < deadline {
            if let fd = try? Sockets.connect(host: "127.0.0.1", port: port, timeout: 0.5) {
                close(fd)
                return true
            }
            if lock.withLock({ process?.isRunning == false }) { return false }
            usleep(20_000)
        }
        return false
    }

    func kill9() {
        lock.lock()
        let server = process
        process = nil
        lock.unlock()
        guard let server else { return }
        sampleRSS(server.processIdentifier)
        kill(server.processIdentifier, SIGKILL)
        server.waitUntilExit()
    }

    /// SIGTERM: the server writes what it holds and stops. Its exit status.
    func stop() -> Int32 {
        lock.lock()
        let server = process
        process = nil
        lock.unlock()
        guard let server else { return 0 }
        sampleRSS(server.processIdentifier)
        kill(server.processIdentifier, SIGTERM)
        server.waitUntilExit()
        return server.terminationStatus
    }

    /// Whether the server died without being told to (a crash).
    var crashed: Bool { lock.withLock { process.map { !$0.isRunning } ?? false } }

    func sampleRSS() {
        guard let pid = lock.withLock({ process?.processIdentifier }) else { return }
        sampleRSS(pid)
    }

    private func sampleRSS(_ pid: Int32) {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kib = Int(line.split(separator: " ").dropFirst().first ?? "") else { return }
        lock.withLock { peakRSS = max(peakRSS, kib) }
    }

    var peakRSSKiB: Int { lock.withLock { peakRSS } }
}

func selfRSSKiB() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
}

// MARK: The fault-injecting proxy

/// POLLRDHUP (Linux; Glibc's module leaves it out without _GNU_SOURCE): the peer hung up.
let pollRDHUP: Int16 = 0x2000

/// Forwards each connection to the server, one thread a connection, and does to it what the
/// chaos asks: cut it, stall it (nothing forwarded either way, the sockets left open), delay
/// it, or pass its bytes on in pieces of one to seven.
/// What each client of ours did about direct lines, on the wire (as the proxy passed it on)
/// and in its events: printed for a line shown out of order, so its story can be read.
final class Transcript: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [String: [String]] = [:]
    private let started = Monotonic.now()

    func add(_ who: String, _ text: String) {
        let stamp = String(format: "%8.3f", Monotonic.now() - started)
        lock.withLock {
            entries[who, default: []].append(stamp + " " + text)
            if entries[who]!.count > 40_000 { entries[who]!.removeFirst(10_000) }
        }
    }

    /// A client's entries from a little before the first that contains `from` to a little after
    /// the first after it that contains `to`.
    func story(of who: String, from: String, to: String, margin: Int = 12, limit: Int = 160) -> [String] {
        let all = lock.withLock { entries[who] ?? [] }
        guard let first = all.firstIndex(where: { $0.contains(from) }) else { return ["    (no entry for \(from))"] }
        let last = all[first...].firstIndex(where: { $0.contains(to) }) ?? first
        let range = max(0, first - margin)...min(all.count - 1, max(first, last) + margin)
        return all[range].prefix(limit).map { "    " + $0 }
    }

    /// A client's entries from the first of `other`'s that contains `from` on (by time): what
    /// one side saw after the other did something (a lost direct line's recipient).
    func after(of who: String, whenOf other: String, contains from: String, limit: Int = 200) -> [String] {
        let (mine, theirs) = lock.withLock { (entries[who] ?? [], entries[other] ?? []) }
        guard let start = theirs.first(where: { $0.contains(from) })?.prefix(8) else { return ["    (no entry for \(from))"] }
        return mine.filter { $0.prefix(8) >= start }.prefix(limit).map { "    " + $0 }
    }

    /// Whether a line on the wire belongs in the story: direct lines and what decides their fate.
    static func matters(_ line: String) -> Bool {
        guard let message = try? IRCMessage(parsing: line) else { return false }
        switch message.command {
        case "PRIVMSG": return !(message.params.first ?? "#").hasPrefix("#")
        case "CHATHISTORY", "MONITOR", "NICK", "001", "401", "730", "731", "FAIL", "ERROR": return true
        case "BATCH": return message.params.count > 2 || message.params.first?.hasPrefix("-") == true
        default: return false
        }
    }
}
let transcript = Transcript()

final class FaultProxy: @unchecked Sendable {
    final class Link: @unchecked Sendable {
        let client: Int32
        let server: Int32
        let number: Int
        /// The nickname it registers (its NICK), for the transcript; and each way's partial line.
        let name = Locked("?")
        var nick: String { name.withLock { $0 } }
        var partial: [[UInt8]] = [[], []]
        var stalledUntil = 0.0
        var delayedUntil = 0.0
        var split = false
        var cut = false
        init(client: Int32, server: Int32, number: Int) {
            self.client = client
            self.server = server
            self.number = number
        }

        /// Bytes passed on one way (0: from the client): complete lines that matter go to the transcript.
        func passed(_ bytes: UnsafeRawBufferPointer, way: Int) {
            partial[way].append(contentsOf: bytes)
            while let end = partial[way].firstIndex(of: 10) {
                let line = String(decoding: partial[way][..<end], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                partial[way].removeSubrange(...end)
                if way == 0, line.hasPrefix("NICK "), nick == "?" { name.withLock { $0 = String(line.dropFirst(5)) } }
                if Transcript.matters(line) { transcript.add(nick, "link \(number) \(way == 0 ? "->" : "<-") \(line.prefix(200))") }
            }
            if partial[way].count > 65536 { partial[way] = [] }
        }
    }

    let port: Int
    let target: Int
    private let listener: Int32
    private let lock = NSLock()
    private var links: [ObjectIdentifier: Link] = [:]
    private var stopped = false
    private let chance: Chance
    private(set) var faults: [String: Int] = [:]
    private var linkCount = 0

    init(target: Int, chance: Chance) throws {
        let fds = try Sockets.listen(bind: "127.0.0.1", port: 0)
        listener = fds[0]
        for extra in fds.dropFirst() { close(extra) }
        port = Sockets.boundPort(listener)
        self.target = target
        self.chance = chance
        Threads.start(name: "soak proxy") { [self] in acceptLoop() }
    }

    private func acceptLoop() {
        while !lock.withLock({ stopped }) {
            var pfd = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 200) > 0 else { continue }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { continue }
            guard let server = try? Sockets.connect(host: "127.0.0.1", port: target, timeout: 1) else {
                // The server is down: the client sees its connection closed at once, as it would.
                close(client)
                continue
            }
            let number = lock.withLock { linkCount += 1; return linkCount }
            let link = Link(client: client, server: server, number: number)
            // A quarter of the connections pass their bytes on in pieces from the start.
            link.split = chance.chance(25)
            lock.withLock { links[ObjectIdentifier(link)] = link }
            Threads.start(name: "soak link") { [self] in pump(link) }
        }
    }

    private func pump(_ link: Link) {
        var buffer = [UInt8](repeating: 0, count: 16384)
        defer {
            transcript.add(link.nick, "link \(link.number) ends")
            close(link.client)
            close(link.server)
            lock.withLock { _ = links.removeValue(forKey: ObjectIdentifier(link)) }
        }
        while true {
            let (cut, stalledUntil, delayedUntil, split) = lock.withLock { (link.cut || stopped, link.stalledUntil, link.delayedUntil, link.split) }
            if cut { return }
            let now = Monotonic.now()
            if now < stalledUntil {
                // Stalled: nothing passes either way (a network that lost its path: the bytes
                // sent meanwhile are lost with it), but a side that hangs up or resets ends the link.
                var ends = [pollfd(fd: link.client, events: pollRDHUP, revents: 0), pollfd(fd: link.server, events: pollRDHUP, revents: 0)]
                if poll(&ends, 2, 50) > 0, ends.contains(where: { $0.revents & (pollRDHUP | Int16(POLLHUP | POLLERR)) != 0 }) { return }
                continue
            }
            var fds = [pollfd(fd: link.client, events: Int16(POLLIN), revents: 0), pollfd(fd: link.server, events: Int16(POLLIN), revents: 0)]
            guard poll(&fds, 2, 100) > 0 else { continue }
            for (index, entry) in fds.enumerated() where entry.revents != 0 {
                let from = entry.fd
                let to = index == 0 ? link.server : link.client
                let count = recv(from, &buffer, buffer.count, 0)
                if count <= 0 { return }
                if now < delayedUntil { usleep(UInt32(chance.int(100...600)) * 1000) }
                var offset = 0
                while offset < count {
                    let piece = split ? min(count - offset, chance.int(1...7)) : count - offset
                    let sent = buffer.withUnsafeBytes { send(to, $0.baseAddress! + offset, piece, Int32(MSG_NOSIGNAL)) }
                    if sent <= 0 { return }
                    buffer.withUnsafeBytes { link.passed(UnsafeRawBufferPointer(rebasing: $0[offset..<(offset + sent)]), way: index) }
                    offset += sent
                }
            }
        }
    }

    /// One fault on a connection picked at random (none when there is none).
    func injectFault() {
        let kind = chance.int(0...9)
        lock.withLock {
            guard !links.isEmpty else { return }
            let link = Array(links.values)[chance.int(0...(links.count - 1))]
            let now = Monotonic.now()
            switch kind {
            case 0...3:
                transcript.add(link.nick, "link \(link.number) cut by the proxy")
                link.cut = true
                faults["cut", default: 0] += 1
            case 4...5:
                link.stalledUntil = now + chance.double(5...20)
                transcript.add(link.nick, "link \(link.number) stalled until +\(Int(link.stalledUntil - now)) s")
                faults["stalled", default: 0] += 1
            case 6...7:
                link.delayedUntil = now + chance.double(2...10)
                faults["delayed", default: 0] += 1
            default:
                link.split.toggle()
                faults["split", default: 0] += 1
            }
        }
    }

    /// Faults end: stalls and delays are over (connections cut stay cut).
    func calm() {
        lock.withLock {
            for link in links.values {
                link.stalledUntil = 0
                link.delayedUntil = 0
            }
        }
    }

    var faultCounts: [String: Int] { lock.withLock { faults } }

    func stop() {
        lock.withLock {
            stopped = true
            for link in links.values { link.cut = true }
        }
    }
}

// MARK: What was said and confirmed

/// Every message sent, and which were confirmed (their echo seen by their sender).
final class Ledger: @unchecked Sendable {
    struct Sent {
        let sender: String
        let target: String
        let sequence: Int
        /// Its place among everything recorded (a client's first join of a room is placed too).
        let order: Int
    }
    private let lock = NSLock()
    private var sent: [String: Sent] = [:]
    private(set) var confirmed: Set<String> = []
    private var count = 0

    func record(_ text: String, sender: String, target: String, sequence: Int) {
        lock.withLock {
            count += 1
            sent[text] = Sent(sender: sender, target: target, sequence: sequence, order: count)
        }
    }

    /// The place now: a message recorded later is sent later.
    var mark: Int { lock.withLock { count } }

    func confirm(_ text: String) { _ = lock.withLock { confirmed.insert(text) } }

    var snapshot: (sent: [String: Sent], confirmed: Set<String>) { lock.withLock { (sent, confirmed) } }
}

// MARK: Our clients

/// One ChatClient, its screen model (a ConversationBook fed every event) and what it sent.
actor SoakClient {
    let nick: String
    let rooms: [String]
    let partner: String?
    let client: ChatClient
    private(set) var book: ConversationBook
    private(set) var registered = false
    private var lostAt: Double?
    private(set) var reconnectTimes: [Double] = []
    private(set) var registrations = 0
    private var sequence = 0
    private let ledger: Ledger
    /// Every soak line shown so far (for the wait after the calm; the verdict reads the book).
    private var seen: Set<String> = []
    /// Where the ledger was when it first joined each room (folded): what was said before is
    /// not its to show (a join shows the room's last 50 lines, not all of them).
    private(set) var firstJoined: [String: Int] = [:]

    /// How many of `expected` it has not shown yet.
    func missing(_ expected: [String]) -> Int { expected.count { !seen.contains($0) } }

    init(nick: String, rooms: [String], partner: String?, account: String?, port: Int, ledger: Ledger) {
        self.nick = nick
        self.rooms = rooms
        self.partner = partner
        self.ledger = ledger
        var config = ClientConfig(host: "127.0.0.1", port: port, nick: nick)
        config.rooms = rooms
        config.reconnect = ReconnectPolicy(initial: 0.3, maximum: 2, jitter: 0.3)
        config.pingInterval = 3
        config.pingTimeout = 6
        config.registrationTimeout = 10
        config.connectTimeout = 3
        config.sendsTyping = false
        config.logPath = nil
        config.knownServersPath = nil
        config.scrollbackLimit = 100_000
        if let account {
            config.saslAccount = account
            config.saslPassword = "soak password \(account)"
            config.saslPlainInsecure = true
        }
        client = ChatClient(config: config)
        book = ConversationBook(nick: nick, scrollbackLimit: 100_000)
    }

    func run() async {
        let events = client.events
        await client.start()
        for await event in events { note(event) }
    }

    private func note(_ event: ClientEvent) {
        book.apply(event)
        switch event {
        case .line(let id, let line) where id.kind == .direct && line.text.hasPrefix("soak ") && line.isOwn:
            transcript.add(nick, "event: \(line.isPending ? "held" : "shown") \(line.text) serial \(line.serial) msgid \(line.msgid ?? "-")")
        case .pendingDone(let id, let serial) where id.kind == .direct:
            transcript.add(nick, "event: pending done serial \(serial)")
        case .notSent(let target, let text, let reason):
            transcript.add(nick, "event: not sent \(text) to \(target): \(reason)")
        case .status(.registered):
            transcript.add(nick, "event: registered")
        case .connectionLost:
            transcript.add(nick, "event: connection lost")
        default:
            break
        }
        switch event {
        case .status(.registered):
            registered = true
            registrations += 1
            if let lostAt { reconnectTimes.append(Monotonic.now() - lostAt) }
            lostAt = nil
        case .status(.disconnected), .connectionLost:
            if registered { lostAt = Monotonic.now() }
            registered = false
        case .joined(_, let name, _) where firstJoined[name.lowercased()] == nil:
            firstJoined[name.lowercased()] = ledger.mark
        case .line(_, let line) where line.text.hasPrefix("soak ") && !line.isPending:
            if line.isOwn { ledger.confirm(line.text) }
            seen.insert(line.text)
        default:
            break
        }
    }

    /// Says the next line: in a room, or (one time in three) to its partner.
    func speak(_ chance: Chance) async {
        sequence += 1
        let target = partner.flatMap { chance.chance(33) ? $0 : nil } ?? rooms[chance.int(0...(rooms.count - 1))]
        let text = "soak \(nick) \(sequence)"
        ledger.record(text, sender: nick, target: target, sequence: sequence)
        if !target.hasPrefix("#") { transcript.add(nick, "typed \(text) to \(target)") }
        await client.send(text, to: target)
    }

    func quit() async { await client.quit(reason: "soak over") }
}

// MARK: Raw clients

/// A plain IRC client on a socket of its own: echo-message, rooms, a line every few seconds,
/// its own heartbeat; cut, it connects again after a moment.
final class RawClient: @unchecked Sendable {
    let nick: String
    let rooms: [String]
    let port: Int
    let ledger: Ledger
    let chance: Chance
    private let lock = NSLock()
    private var stopping = false
    private(set) var connections = 0

    init(nick: String, rooms: [String], port: Int, ledger: Ledger, chance: Chance) {
        self.nick = nick
        self.rooms = rooms
        self.port = port
        self.ledger = ledger
        self.chance = chance
        Threads.start(name: "soak raw") { [self] in run() }
    }

    func stop() { lock.withLock { stopping = true } }
    private var isStopping: Bool { lock.withLock { stopping } }

    private func run() {
        var sequence = 0
        while !isStopping {
            guard let fd = try? Sockets.connect(host: "127.0.0.1", port: port, timeout: 2) else {
                usleep(300_000)
                continue
            }
            lock.withLock { connections += 1 }
            session(fd, &sequence)
            close(fd)
            usleep(UInt32(chance.int(200...800)) * 1000)
        }
    }

    private func session(_ fd: Int32, _ sequence: inout Int) {
        func write(_ line: String) -> Bool {
            let bytes = Array((line + "\r\n").utf8)
            return bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
        }
        guard write("CAP REQ :echo-message server-time message-tags"), write("NICK \(nick)"), write("USER \(nick) 0 * :soak"),
              write("CAP END") else { return }
        var framer = LineFramer()
        var buffer = [UInt8](repeating: 0, count: 16384)
        var registered = false
        var nextLine = Monotonic.now() + chance.double(1...3)
        var lastHeard = Monotonic.now()
        var pingSent: Double?
        while !isStopping {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, 100)
            let now = Monotonic.now()
            if ready > 0 {
                let count = recv(fd, &buffer, buffer.count, 0)
                if count <= 0 { return }
                lastHeard = now
                pingSent = nil
                for case .line(let bytes) in framer.feed(buffer[0..<count]) {
                    guard let message = try? IRCMessage(bytes: bytes) else { continue }
                    switch message.command {
                    case "PING": _ = write("PONG :" + (message.params.last ?? ""))
                    case "001":
                        registered = true
                        guard write("JOIN " + rooms.joined(separator: ",")) else { return }
                    case "433": return
                    case "PRIVMSG" where message.source.map({ IRCSource(parsing: $0).nick }) == nick:
                        if let text = message.params.last, text.hasPrefix("soak ") { ledger.confirm(text) }
                    default: break
                    }
                }
            }
            // Its own heartbeat: a stalled link is given up after six silent seconds.
            if now - lastHeard > 3 && pingSent == nil {
                pingSent = now
                guard write("PING :soak") else { return }
            }
            if let pingSent, now - pingSent > 6 { return }
            if registered && now >= nextLine {
                sequence += 1
                let room = rooms[chance.int(0...(rooms.count - 1))]
                let text = "soak \(nick) \(sequence)"
                ledger.record(text, sender: nick, target: room, sequence: sequence)
                guard write("PRIVMSG \(room) :\(text)") else { return }
                nextLine = now + chance.double(1.5...4)
            }
        }
        _ = write("QUIT :soak over")
    }
}

// MARK: Figures

func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return 0 }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

func ms(_ seconds: Double) -> String { String(format: "%.0f ms", seconds * 1000) }

// MARK: The run

let options = Options(CommandLine.arguments)
signal(SIGPIPE, SIG_IGN)
let chance = Chance(seed: options.seed)
let serverPort: Int = {
    guard let fds = try? Sockets.listen(bind: "127.0.0.1", port: 0) else { fatal("no free port") }
    defer { fds.forEach { close($0) } }
    return Sockets.boundPort(fds[0])
}()
let server = ServerControl(binary: options.binary, port: serverPort, extra: options.serverArguments)
let ledger = Ledger()
let roomNames = ["#lobby", "#soak-a", "#soak-b"]

say("chat-soak: seed \(options.seed), \(Int(options.seconds)) s, \(options.clients) clients of ours (\(options.pairs) pair\(options.pairs == 1 ? "" : "s") with accounts), \(options.raw) raw, the server killed every \(Int(options.restart.lowerBound))–\(Int(options.restart.upperBound)) s; data in \(server.data)")
for pair in 0..<options.pairs * 2 { server.addAccount(String(format: "c%02d", pair), password: "soak password " + String(format: "c%02d", pair)) }
server.start()
guard server.waitListening() else { fatal("the server did not start; its log: \(server.logPath)") }
let proxy: FaultProxy
do { proxy = try FaultProxy(target: serverPort, chance: chance) } catch { fatal("the proxy cannot listen: \(error)") }

var soakClients: [SoakClient] = []
for index in 0..<options.clients {
    let nick = String(format: "c%02d", index)
    // Everyone is in #lobby (the server puts them there); each is also in one or both others.
    var rooms = ["#lobby"]
    switch index % 3 {
    case 0: rooms += ["#soak-a"]
    case 1: rooms += ["#soak-b"]
    default: rooms += ["#soak-a", "#soak-b"]
    }
    let paired = index < options.pairs * 2
    let partner = paired ? String(format: "c%02d", index ^ 1) : nil
    soakClients.append(SoakClient(nick: nick, rooms: rooms, partner: partner, account: paired ? nick : nil, port: proxy.port, ledger: ledger))
}
let rawClients = (0..<options.raw).map { index in
    RawClient(nick: String(format: "r%02d", index), rooms: index % 2 == 0 ? ["#lobby", "#soak-a"] : ["#lobby", "#soak-b"],
              port: proxy.port, ledger: ledger, chance: chance)
}

let started = Monotonic.now()
let stopSpeaking = Locked(false)
// Off the main actor, which runs the chaos below.
let runners = soakClients.map { client in Task.detached { await client.run() } }
let speakers = soakClients.map { client in
    Task.detached {
        while !stopSpeaking.withLock({ $0 }) {
            try? await Task.sleep(for: .milliseconds(chance.int(2000...6000)))
            if stopSpeaking.withLock({ $0 }) { break }
            await client.speak(chance)
        }
    }
}

// The chaos: a fault every second or so, the server killed now and then.
var restarts: [(killed: Double, back: Double)] = []
var nextKill = started + chance.double(options.restart)
var rssAtQuarter = 0
var crashes = 0
while Monotonic.now() - started < options.seconds {
    try? await Task.sleep(for: .milliseconds(chance.int(300...1500)))
    proxy.injectFault()
    server.sampleRSS()
    if rssAtQuarter == 0 && Monotonic.now() - started > options.seconds / 4 { rssAtQuarter = selfRSSKiB() }
    if server.crashed {
        crashes += 1
        say("chat-soak: the server died on its own (see \(server.logPath)); started again")
        server.start()
        _ = server.waitListening()
    }
    if Monotonic.now() >= nextKill {
        let killed = Monotonic.now()
        server.kill9()
        try? await Task.sleep(for: .milliseconds(chance.int(200...3000)))
        server.start()
        guard server.waitListening() else { fatal("the server did not come back; its log: \(server.logPath)") }
        // Back when every client of ours has registered again.
        var back = Monotonic.now()
        let deadline = back + 60
        while Monotonic.now() < deadline {
            var all = true
            for client in soakClients where !(await client.registered) { all = false; break }
            if all { back = Monotonic.now(); break }
            try? await Task.sleep(for: .milliseconds(50))
        }
        restarts.append((killed, back))
        nextKill = Monotonic.now() + chance.double(options.restart)
    }
}

// Calm: no more faults or lines; everyone connects again and fills its gaps.
stopSpeaking.withLock { $0 = true }
for speaker in speakers { await speaker.value }
proxy.calm()
for raw in rawClients { raw.stop() }
say("chat-soak: calm; waiting for every client to be back and to have filled its gaps")

/// The confirmed messages by where they were said (a room, or the pair of a direct message).
func confirmedByPlace(_ sent: [String: Ledger.Sent], _ confirmed: Set<String>) -> [String: [String]] {
    var places: [String: [String]] = [:]
    for text in confirmed {
        guard let entry = sent[text] else { continue }
        let place = entry.target.hasPrefix("#") ? entry.target : [entry.sender, entry.target].sorted().joined(separator: " ")
        places[place, default: []].append(text)
    }
    return places
}

/// The confirmed messages a client should show: those to its rooms since it first joined them,
/// and those between it and its partner.
func expected(for client: SoakClient, _ places: [String: [String]], _ sent: [String: Ledger.Sent]) async -> [String] {
    let joined = await client.firstJoined
    var texts = client.rooms.flatMap { room in
        (places[room] ?? []).filter { text in joined[room.lowercased()].map { sent[text]!.order > $0 } ?? true }
    }
    if let partner = client.partner { texts += places[[client.nick, partner].sorted().joined(separator: " ")] ?? [] }
    return texts
}

func shown(in book: ConversationBook) -> [String: [String]] {
    var texts: [String: [String]] = [:]
    for conversation in book.orderedConversations {
        texts[conversation.name.lowercased()] = conversation.lines.filter { $0.kind == .message && $0.text.hasPrefix("soak ") && !$0.isPending }.map(\.text)
    }
    return texts
}

let calmStarted = Monotonic.now()
var settled = false
while Monotonic.now() - calmStarted < 120 && !settled {
    try? await Task.sleep(for: .milliseconds(500))
    let (sent, confirmed) = ledger.snapshot
    let places = confirmedByPlace(sent, confirmed)
    settled = true
    for client in soakClients {
        guard await client.registered, await client.missing(await expected(for: client, places, sent)) == 0 else { settled = false; break }
    }
}
let settleTime = Monotonic.now() - calmStarted

// The verdict, client by client: each confirmed message exactly once where it belongs, in order.
let (sent, confirmed) = ledger.snapshot
let places = confirmedByPlace(sent, confirmed)
var lost: [String] = []
var duplicated: [String] = []
var outOfOrder: [String] = []
var details: [String] = []
/// Each copy of a line shown more than once, with its neighbours (what a fix needs to know).
func describe(_ text: String, in book: ConversationBook) -> String {
    var out: [String] = []
    for conversation in book.orderedConversations {
        let lines = conversation.lines
        for (index, line) in lines.enumerated() where line.text == text {
            out.append("    \(conversation.name)[\(index)/\(lines.count)] " + summary(line))
            for near in max(0, index - 2)...min(lines.count - 1, index + 2) where near != index {
                out.append("      \(near - index > 0 ? "+" : "")\(near - index): " + summary(lines[near]) + " \(lines[near].text.prefix(24))")
            }
        }
    }
    return out.joined(separator: "\n")
}
func summary(_ line: ChatLine) -> String {
    "msgid \(line.msgid ?? "-") time \(String(format: "%.3f", line.time)) history \(line.isHistory) old \(line.isOldNews) own \(line.isOwn)"
}
for client in soakClients {
    let book = await client.book
    let texts = shown(in: book)
    var counts: [String: [String: Int]] = [:]
    for (place, lines) in texts {
        for text in lines { counts[place, default: [:]][text, default: 0] += 1 }
    }
    // A direct message is shown in the conversation with its sender's nickname at the time,
    // which is not always its first one (back after a half-open drop while its ghost held
    // the name, it is c01_): counted across the direct conversations.
    var direct: [String: Int] = [:]
    for (place, lines) in texts where !place.hasPrefix("#") {
        for text in lines { direct[text, default: 0] += 1 }
    }
    for text in await expected(for: client, places, sent) {
        let entry = sent[text]!
        let place = entry.target.hasPrefix("#") ? entry.target : (entry.sender == client.nick ? entry.target : entry.sender)
        let count = entry.target.hasPrefix("#") ? counts[place.lowercased()]?[text] ?? 0 : direct[text] ?? 0
        if count == 0 {
            lost.append("\(client.nick) lacks \"\(text)\" in \(place)")
            // A lost direct line: both sides' stories (what the fix needs to know).
            if !entry.target.hasPrefix("#") && entry.sender != client.nick && lost.count <= 2 {
                details.append("  \(entry.sender)'s story of \"\(text)\":\n" + transcript.story(of: entry.sender, from: "typed \(text) ", to: "shown \(text) ").joined(separator: "\n"))
                details.append("  \(client.nick)'s transcript from then on:\n" + transcript.after(of: client.nick, whenOf: entry.sender, contains: "typed \(text) ").joined(separator: "\n"))
            }
        }
        if count > 1 {
            duplicated.append("\(client.nick) shows \"\(text)\" \(count) times in \(place)")
            if duplicated.count <= 8 { details.append(describe(text, in: book)) }
        }
    }
    // A sender's lines in one place come in the order it sent them.
    for (place, lines) in texts {
        var last: [String: Int] = [:]
        for text in lines where confirmed.contains(text) {
            guard let entry = sent[text] else { continue }
            if let previous = last[entry.sender], previous > entry.sequence {
                outOfOrder.append("\(client.nick) shows \"\(text)\" after \(entry.sender)'s \(previous) in \(place)")
                if outOfOrder.count <= 4 {
                    details.append(describe(text, in: book))
                    // The sender's story of it: from typing it to its echo.
                    if !place.hasPrefix("#") && client.nick != entry.sender {
                        details.append("  \(entry.sender)'s story of \"\(text)\":\n" + transcript.story(of: entry.sender, from: "typed \(text) ", to: "shown \(text) ").joined(separator: "\n"))
                    }
                }
            }
            last[entry.sender] = entry.sequence
        }
    }
}
let reconnects = await soakClients.asyncMap { await $0.reconnectTimes }.flatMap { $0 }
let registrations = await soakClients.asyncMap { await $0.registrations }.reduce(0, +)
let clientRSS = selfRSSKiB()
for client in soakClients { await client.quit() }
for runner in runners { runner.cancel() }
proxy.stop()
let exitStatus = server.stop()

// The server's history: every confirmed message once (direct messages are kept only between accounts).
var historyLost: [String] = []
var historyDuplicated: [String] = []
do {
    let database = try Database(path: server.data + "/server.db")
    var stored: [String: Int] = [:]
    for row in try database.query("SELECT line FROM history WHERE command = 'PRIVMSG'") {
        guard case .text(let line)? = row.first, let message = try? IRCMessage(bytes: Array(line.utf8)), let text = message.params.last else { continue }
        stored[text, default: 0] += 1
    }
    for text in confirmed.sorted() {
        let count = stored[text] ?? 0
        if count == 0 { historyLost.append(text) }
        if count > 1 { historyDuplicated.append("\(text) ×\(count)") }
    }
} catch {
    say("chat-soak: cannot read the server's history (\(error)): every confirmed message counts as lost from it")
    historyLost = confirmed.sorted()
}

let recoveries = restarts.map { $0.back - $0.killed }
let faults = proxy.faultCounts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
say("""
chat-soak: \(Int(Monotonic.now() - started)) s, seed \(options.seed)
  messages: \(sent.count) sent, \(confirmed.count) confirmed (their echo seen), \(sent.count - confirmed.count) not confirmed (sent into a cut, a stall or a kill)
  faults: \(faults); the server killed \(restarts.count) times (SIGKILL), \(crashes) crashes
  recovery after a kill (every client of ours registered again): p50 \(ms(percentile(recoveries, 0.5))), p99 \(ms(percentile(recoveries, 0.99)))
  reconnect after a lost connection: \(reconnects.count) times, p50 \(ms(percentile(reconnects, 0.5))), p99 \(ms(percentile(reconnects, 0.99))); \(registrations) registrations
  settled after the calm in \(String(format: "%.1f", settleTime)) s
  memory: the server's peak RSS \(server.peakRSSKiB / 1024) MiB; the clients' process \(rssAtQuarter / 1024) MiB at a quarter, \(clientRSS / 1024) MiB at the end
  screens: \(lost.count) lost, \(duplicated.count) duplicated, \(outOfOrder.count) out of order
  history: \(historyLost.count) lost, \(historyDuplicated.count) duplicated
  the server's last stop: exit status \(exitStatus)
""")
for problem in (lost + duplicated + outOfOrder).prefix(20) { say("  " + problem) }
for detail in details { say(detail) }
for text in historyLost.prefix(10) { say("  not in history: " + text) }
for text in historyDuplicated.prefix(10) { say("  twice in history: " + text) }
// Memory: the server is started again often, so its peak is what is bounded (a leak per
// connection or message would show within a life); the clients' books hold every line (a
// scrollback of 100,000), so theirs only is reported.
let serverBounded = server.peakRSSKiB < 256 * 1024
if !serverBounded { say("chat-soak: the server's RSS reached \(server.peakRSSKiB / 1024) MiB (bound: 256 MiB)") }
let clean = lost.isEmpty && duplicated.isEmpty && outOfOrder.isEmpty && historyLost.isEmpty && historyDuplicated.isEmpty && crashes == 0 && settled
    && confirmed.count > 0 && restarts.count > 0 && serverBounded
say(clean ? "chat-soak: 0 lost, 0 duplicated" : "chat-soak: FAILED (server log: \(server.logPath))")
if clean { try? FileManager.default.removeItem(atPath: Paths.directory(of: server.data)) }
exit(clean ? 0 : 1)

extension Array {
    func asyncMap<T>(_ transform: (Element) async -> T) async -> [T] {
        var result: [T] = []
        for element in self { result.append(await transform(element)) }
        return result
    }
}
