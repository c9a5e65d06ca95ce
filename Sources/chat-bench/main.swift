#if canImport(Glibc)
import Glibc
#endif
import ChatTransport
import IRCWire

// chat-bench: a load generator for any IRC server on 127.0.0.1, written on IRCWire and
// ChatTransport (one epoll thread, no actors) so it costs less than the servers it loads.
// Every scenario is bounded by a count and a time limit and stops by itself; results are one
// JSON object on stdout.

struct Options {
    var scenario = ""
    var port = 6667
    /// A second server (a linked node): the later half of the clients connect there.
    var port2 = 0
    var host = "127.0.0.1"
    var clients = 50
    var senders = 5
    var messages = 1000
    /// Messages per second per sender; 0 floods (closed loop, `window` in flight).
    var rate = 0.0
    var window = 32
    var count = 1000
    var batch = 64
    var hold = 0.0
    var timeLimit = 120.0
    var room = "#lobby"
    var target = ""
    var prefix = "b"
    var rooms = 1
    /// Speak TLS to the server (the certificate is not checked: this is load, not trust).
    var tls = false
    /// `register`: each client joins `room` too (our server puts everyone in #lobby on
    /// arrival; with this the peers tell everyone of every arrival as well: like with like).
    var join = false

    init(_ argv: [String]) {
        var rest = argv[...]
        scenario = rest.popFirst() ?? ""
        while let flag = rest.popFirst() {
            if flag == "--tls" { tls = true; continue }
            if flag == "--join" { join = true; continue }
            let value = rest.popFirst() ?? ""
            switch flag {
            case "--port": port = Int(value) ?? port
            case "--port2": port2 = Int(value) ?? port2
            case "--host": host = value
            case "--clients": clients = Int(value) ?? clients
            case "--senders": senders = Int(value) ?? senders
            case "--messages": messages = Int(value) ?? messages
            case "--rate": rate = Double(value) ?? rate
            case "--window": window = Int(value) ?? window
            case "--count": count = Int(value) ?? count
            case "--batch": batch = Int(value) ?? batch
            case "--hold": hold = Double(value) ?? hold
            case "--time-limit": timeLimit = Double(value) ?? timeLimit
            case "--room": room = value
            case "--target": target = value
            case "--prefix": prefix = value
            case "--rooms": rooms = Int(value) ?? rooms
            default:
                writeError("unknown option \(flag)")
                exit(2)
            }
        }
    }
}

func writeError(_ text: String) {
    let line = "chat-bench: \(text)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
}

func emitJSON(_ fields: [(String, String)]) {
    let body = fields.map { "\"\($0.0)\": \($0.1)" }.joined(separator: ", ")
    let line = "{\(body)}\n"
    _ = line.withCString { write(1, $0, strlen($0)) }
}

final class BenchClient {
    enum Phase { case connecting, registering, registered, joined, closed }
    let index: Int
    let nick: String
    var fd: Int32 = -1
    var phase = Phase.connecting
    /// The start of a line the last read ended in the middle of.
    var partial: [UInt8] = []
    var output = OutputBuffer()
    var waitingWritable = false
    var tls: TLSSession?
    var registeredAt = 0.0
    // Sending
    var nextSeq = 0
    var nextSendAt = 0.0
    var isSender = false
    var partner = -1

    init(index: Int, prefix: String) {
        self.index = index
        nick = "\(prefix)\(index)"
    }
}

final class Bench {
    let options: Options
    let epoll: Epoll
    var clients: [BenchClient] = []
    var buffer = [UInt8](repeating: 0, count: 256 * 1024)
    var registered = 0
    var joined = 0
    var disconnects = 0
    var started = Monotonic.now()
    // Deliveries: received[receiver][sender] = last sequence number seen.
    var lastSeen: [[Int]] = []
    var deliveries = 0
    var outOfOrder = 0
    var duplicates = 0
    var latencies: [Double] = []
    var sendingStarted = 0.0
    /// How many of each sender's messages its reference receiver has seen (for the flood window).
    var acknowledged: [Int] = []
    /// flood: the client under test is in the last room.
    var targetSeen = false
    let tlsContext: TLSContext?

    init(_ options: Options) throws {
        self.options = options
        tlsContext = options.tls ? try TLSContext.client() : nil
        epoll = try Epoll()
        Sockets.ignoreSIGPIPE()
        Sockets.raiseOpenFileLimit()
    }

    func connect(_ client: BenchClient) {
        var hints = addrinfo()
        hints.ai_family = AF_INET
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        let port = options.port2 > 0 && client.index >= clients.count / 2 ? options.port2 : options.port
        address.sin_port = UInt16(port).bigEndian
        inet_pton(AF_INET, options.host, &address.sin_addr)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        Sockets.setNoDelay(fd)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if result != 0 && errno != EINPROGRESS {
            disconnects += 1
            close(fd)
            client.phase = .closed
            return
        }
        client.fd = fd
        client.phase = .registering
        client.tls = tlsContext.map { TLSSession(context: $0, fd: fd, server: false) }
        try? epoll.add(fd, token: UInt64(client.index), writable: true)
        client.waitingWritable = true
        send(client, "NICK \(client.nick)\r\nUSER bench 0 * :chat-bench\r\n")
    }

    func send(_ client: BenchClient, _ text: String) {
        client.output.append(Array(text.utf8))
    }

    func setWritable(_ client: BenchClient, _ writable: Bool) {
        guard client.waitingWritable != writable else { return }
        client.waitingWritable = writable
        epoll.modify(client.fd, token: UInt64(client.index), writable: writable)
    }

    /// A TLS handshake step; true once it is done.
    func handshake(_ client: BenchClient) -> Bool {
        guard let tls = client.tls, !tls.handshakeDone else { return true }
        switch tls.handshake() {
        case .done: return true
        case .wantRead: setWritable(client, false)
        case .wantWrite: setWritable(client, true)
        case .failed: drop(client)
        }
        return false
    }

    func flush(_ client: BenchClient) {
        guard client.fd >= 0, client.phase != .closed, handshake(client) else { return }
        switch client.tls.map({ client.output.flush(to: $0) }) ?? client.output.flush(to: client.fd) {
        case .done:
            if client.waitingWritable { client.waitingWritable = false; epoll.modify(client.fd, token: UInt64(client.index), writable: false) }
        case .wouldBlock:
            if !client.waitingWritable { client.waitingWritable = true; epoll.modify(client.fd, token: UInt64(client.index), writable: true) }
        case .failed:
            drop(client)
        }
    }

    func drop(_ client: BenchClient) {
        guard client.phase != .closed else { return }
        if client.phase == .registered || client.phase == .joined { disconnects += 1 } else { disconnects += 1 }
        client.phase = .closed
        epoll.remove(client.fd)
        close(client.fd)
    }

    /// Runs the loop until `done` or the time limit; `tick` runs every turn (for sending).
    func loop(until done: () -> Bool, tick: () -> Void = {}) {
        let deadline = Monotonic.now() + options.timeLimit
        while !done() && Monotonic.now() < deadline {
            tick()
            for client in clients where !client.output.isEmpty && !client.waitingWritable { flush(client) }
            // Paced, the generator spins on its core instead of sleeping: on these VMs a sleeping
            // vCPU takes 1-4 ms to wake (perf sched: most of its wake-ups waited over 1 ms), which
            // would be measured as the server's latency.
            for event in epoll.wait(timeoutMilliseconds: options.rate > 0 ? 0 : 1) {
                let client = clients[Int(event.token)]
                if event.writable { flush(client) }
                if event.readable || event.failed { read(client) }
            }
        }
    }

    func read(_ client: BenchClient) {
        guard client.phase != .closed else { return }
        if let tls = client.tls, !tls.handshakeDone {
            if handshake(client) { flush(client) }
            return
        }
        // What a TLS session already decrypted is not announced by epoll: read it all now.
        repeat {
            guard readOnce(client) else { return }
        } while client.tls?.buffered == true && client.phase != .closed
    }

    /// One read; false when there was nothing (or the connection ended).
    func readOnce(_ client: BenchClient) -> Bool {
        switch client.tls.map({ $0.read(into: &buffer) }) ?? SocketRead.once(client.fd, into: &buffer) {
        case .data(let count):
            let now = Monotonic.now()
            buffer.withUnsafeBufferPointer { raw in split(UnsafeBufferPointer(rebasing: raw[0..<count]), client, now) }
            return true
        case .wouldBlock:
            return false
        case .endOfStream, .failed:
            drop(client)
            return false
        }
    }

    /// Splits what was read into lines (LF-terminated, a CR before it dropped) and handles those
    /// a scenario reads. Lines no scenario looks at (a crowd's JOINs: 50 million of them at
    /// 10,000 arrivals) are skipped in the read buffer itself, without a copy: the generator
    /// must keep ahead of the server it loads (it had become the bottleneck of the arrivals).
    func split(_ bytes: UnsafeBufferPointer<UInt8>, _ client: BenchClient, _ now: Double) {
        guard let base = bytes.baseAddress else { return }
        // The offset of the next LF at or after `from`.
        func newline(_ from: Int) -> Int? {
            memchr(base + from, 0x0A, bytes.count - from).map { UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) - base }
        }
        var from = 0
        if !client.partial.isEmpty {
            guard let end = newline(0) else {
                client.partial += bytes
                // A server that never ends its line: what it sent so far is dropped, not kept for ever.
                if client.partial.count > 1 << 16 { client.partial = [] }
                return
            }
            client.partial += bytes[0..<end]
            let line = client.partial
            client.partial = []
            line.withUnsafeBufferPointer { take($0, client, now) }
            from = end + 1
        }
        while from < bytes.count {
            guard let end = newline(from) else {
                client.partial = Array(bytes[from...])
                return
            }
            take(UnsafeBufferPointer(rebasing: bytes[from..<end]), client, now)
            from = end + 1
        }
    }

    private func take(_ raw: UnsafeBufferPointer<UInt8>, _ client: BenchClient, _ now: Double) {
        var line = raw
        if let last = line.last, last == UInt8(ascii: "\r") { line = UnsafeBufferPointer(rebasing: line.dropLast()) }
        let word = Bench.commandWord(line)
        if Bench.ignoredCommands.contains(where: { $0.elementsEqual(word) }) { return }
        if options.target.isEmpty && word.elementsEqual("353".utf8) { return }
        handle(Array(line), client, now)
    }

    /// The command word of a line without parsing it (after any tags and source).
    static func commandWord(_ line: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        var index = 0
        for _ in 0..<2 where index < line.count && (line[index] == UInt8(ascii: "@") || line[index] == UInt8(ascii: ":")) {
            while index < line.count && line[index] != UInt8(ascii: " ") { index += 1 }
            while index < line.count && line[index] == UInt8(ascii: " ") { index += 1 }
        }
        var end = index
        while end < line.count && line[end] != UInt8(ascii: " ") { end += 1 }
        return UnsafeBufferPointer(rebasing: line[index..<end])
    }

    static let ignoredCommands: [[UInt8]] = ["JOIN", "PART", "QUIT", "MODE", "NOTICE"].map { Array($0.utf8) }

    func handle(_ line: [UInt8], _ client: BenchClient, _ now: Double) {
        // Cheap dispatch on the command word; PRIVMSG payloads are parsed by hand.
        guard let message = try? IRCMessage(bytes: line) else { return }
        switch message.command {
        case "001":
            if client.phase == .registering {
                client.phase = .registered
                client.registeredAt = now
                registered += 1
            }
        case "353":
            // The client under test must be in the last flood room (not merely in #lobby).
            if !options.target.isEmpty, message.params.count > 3,
               message.params[2].lowercased() == "#r\(options.rooms - 1)",
               message.params[3].split(separator: " ").contains(where: { $0.drop(while: { "@+".contains($0) }) == options.target }) {
                targetSeen = true
            }
        case "366":
            let wanted = options.rooms > 1 ? "#r\(client.index % options.rooms)" : options.room.lowercased()
            if client.phase == .registered, message.params.count > 1, message.params[1].lowercased() == wanted {
                client.phase = .joined
                joined += 1
            }
        case "PING":
            send(client, "PONG :\(message.params.last ?? "")\r\n")
        case "PRIVMSG":
            guard let text = message.params.last, text.hasPrefix("B ") else { return }
            let fields = text.split(separator: " ", maxSplits: 4)
            guard fields.count >= 4, let sender = Int(fields[1]), let seq = Int(fields[2]), let sentAt = Double(fields[3]) else { return }
            deliveries += 1
            latencies.append(now - sentAt)
            let last = lastSeen[client.index][sender]
            if seq == last + 1 { lastSeen[client.index][sender] = seq }
            else if seq <= last { duplicates += 1 }
            else { outOfOrder += 1; lastSeen[client.index][sender] = seq }
            let reference = clients[sender].partner
            if reference == client.index { acknowledged[sender] = max(acknowledged[sender], seq + 1) }
        case "ERROR":
            drop(client)
        default:
            break
        }
    }

    /// Connects `count` clients, at most `batch` registering at once; returns seconds taken.
    func registerAll(count: Int, join: Bool) -> Double {
        clients = (0..<count).map { BenchClient(index: $0, prefix: options.prefix) }
        lastSeen = Array(repeating: Array(repeating: -1, count: count), count: count <= 2000 ? count : 0)
        acknowledged = Array(repeating: 0, count: count)
        let start = Monotonic.now()
        var next = 0
        loop(until: { registered + disconnects >= count && (!join || joined + disconnects >= count) }) {
            while next < count && (next - registered - disconnects) < options.batch {
                connect(clients[next])
                next += 1
            }
            if join {
                for client in clients where client.phase == .registered && client.registeredAt > 0 {
                    // With --rooms N, client i joins #r(i mod N) (a burst's shape); else the one room.
                    send(client, "JOIN \(options.rooms > 1 ? "#r\(client.index % options.rooms)" : options.room)\r\n")
                    client.registeredAt = -1
                }
            }
        }
        return Monotonic.now() - start
    }

    func percentile(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
    }

    /// Senders send `messages` each, flooding within a window or paced at `rate`.
    func exchange(senders: [BenchClient], target: (BenchClient) -> String, expected: Int) -> Double {
        sendingStarted = Monotonic.now()
        for sender in senders { sender.isSender = true; sender.nextSendAt = sendingStarted }
        let padding = String(repeating: "x", count: 40)
        loop(until: { deliveries + duplicates >= expected || senders.allSatisfy({ $0.phase == .closed }) }) {
            let now = Monotonic.now()
            for sender in senders where sender.phase != .closed && sender.nextSeq < options.messages {
                if options.rate > 0 {
                    while sender.nextSeq < options.messages && sender.nextSendAt <= now {
                        send(sender, "PRIVMSG \(target(sender)) :B \(sender.index) \(sender.nextSeq) \(now) \(padding)\r\n")
                        sender.nextSeq += 1
                        sender.nextSendAt += 1 / options.rate
                    }
                } else {
                    while sender.nextSeq < options.messages && sender.nextSeq < acknowledged[sender.index] + options.window {
                        send(sender, "PRIVMSG \(target(sender)) :B \(sender.index) \(sender.nextSeq) \(now) \(padding)\r\n")
                        sender.nextSeq += 1
                    }
                }
            }
        }
        return Monotonic.now() - sendingStarted
    }

    func report(_ scenario: String, seconds: Double, expected: Int, extra: [(String, String)] = []) {
        let sorted = latencies.sorted()
        let complete = deliveries == expected && duplicates == 0 && outOfOrder == 0
        emitJSON([
            ("scenario", "\"\(scenario)\""),
            ("deliveries", String(deliveries)),
            ("expected", String(expected)),
            ("seconds", String(seconds)),
            ("per_second", String(seconds > 0 ? Double(deliveries) / seconds : 0)),
            ("p50_ms", String(percentile(sorted, 0.5) * 1000)),
            ("p99_ms", String(percentile(sorted, 0.99) * 1000)),
            ("max_ms", String((sorted.last ?? 0) * 1000)),
            ("complete", complete ? "true" : "false"),
            ("duplicates", String(duplicates)),
            ("out_of_order", String(outOfOrder)),
            ("disconnects", String(disconnects)),
        ] + extra)
    }
}

let options = Options(Array(CommandLine.arguments.dropFirst()))
if options.scenario == "pageup" {
    screenBench(lines: options.messages)
    exit(0)
}
let bench: Bench
do {
    bench = try Bench(options)
} catch {
    writeError("\(error)")
    exit(1)
}

switch options.scenario {
case "register", "idle":
    let seconds = bench.registerAll(count: options.count, join: options.rooms > 1 || options.join)
    if options.scenario == "idle" {
        // Tell the harness we hold the connections, then keep answering PINGs for `hold` seconds.
        emitJSON([("ready", "true"), ("registered", String(bench.registered))])
        let until = Monotonic.now() + options.hold
        bench.loop(until: { Monotonic.now() >= until })
    }
    bench.reportRegistration(options.scenario, seconds: seconds)
case "fanout":
    let count = options.clients
    _ = bench.registerAll(count: count, join: true)
    // Let the join announcements settle before measuring.
    let settle = Monotonic.now() + 0.5
    bench.loop(until: { Monotonic.now() >= settle })
    let senders = Array(bench.clients.prefix(options.senders))
    // The last client (never a sender) is every sender's reference for the flood window.
    for sender in senders { sender.partner = count - 1 }
    let expected = options.senders * options.messages * (count - 1)
    let seconds = bench.exchange(senders: senders, target: { _ in options.room }, expected: expected)
    bench.report("fanout", seconds: seconds, expected: expected)
case "dm":
    let count = options.clients - options.clients % 2
    _ = bench.registerAll(count: count, join: false)
    for client in bench.clients { client.partner = client.index ^ 1 }
    let expected = count * options.messages
    let seconds = bench.exchange(senders: bench.clients, target: { bench.clients[$0.partner].nick }, expected: expected)
    bench.report("dm", seconds: seconds, expected: expected)
case "flood":
    // One sender floods `messages` room messages over `rooms` rooms (#r0…) to a client under
    // test (`--target NICK`), ending with a marker line in the last room.
    let count = 1
    _ = bench.registerAll(count: count, join: false)
    let sender = bench.clients[0]
    let rooms = (0..<options.rooms).map { "#r\($0)" }
    bench.send(sender, rooms.map { "JOIN \($0)\r\n" }.joined())
    var lastAsk = 0.0
    bench.loop(until: { bench.targetSeen }) {
        if Monotonic.now() - lastAsk > 0.2 {
            bench.send(sender, "NAMES \(rooms.last!)\r\n")
            lastAsk = Monotonic.now()
        }
    }
    let texts = ["plain ASCII text for the flood", "中文消息：你好，世界，这是测试", "emoji 😀👍🏽👨‍👩‍👧 and ❤️ mixed in", "日本語のテキストも少し"]
    let started = Monotonic.now()
    var sent = 0
    bench.loop(until: { sent >= options.messages && sender.output.isEmpty }) {
        // Keep a modest amount queued so the loop also reads (PINGs) while sending.
        while sent < options.messages && sender.output.count < 256 * 1024 {
            let room = rooms[sent % rooms.count]
            let text = sent == options.messages - 1 ? "FLOOD-END-MARKER" : "\(sent) \(texts[sent % texts.count])"
            let target = sent == options.messages - 1 ? rooms.last! : room
            bench.send(sender, "PRIVMSG \(target) :\(text)\r\n")
            sent += 1
        }
    }
    // Leave politely and read until the server closes: closing with unread data would reset the
    // connection and the server would drop what it had not read yet.
    bench.send(sender, "QUIT :flood done\r\n")
    bench.loop(until: { sender.phase == .closed })
    emitJSON([("scenario", "\"flood\""), ("sent", String(sent)), ("seconds", String(Monotonic.now() - started)),
              ("target_seen", bench.targetSeen ? "true" : "false")])
default:
    writeError("usage: chat-bench register|idle|fanout|dm --port P [--count C] [--clients N --senders S --messages M --rate R]")
    exit(2)
}

extension Bench {
    func reportRegistration(_ scenario: String, seconds: Double) {
        emitJSON([
            ("scenario", "\"\(scenario)\""),
            ("registered", String(registered)),
            ("expected", String(options.count)),
            ("seconds", String(seconds)),
            ("per_second", String(seconds > 0 ? Double(registered) / seconds : 0)),
            ("disconnects", String(disconnects)),
            ("complete", registered == options.count ? "true" : "false"),
        ])
    }
}
