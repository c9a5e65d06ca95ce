import CSystem
import ChatClientKit
import ChatLink
import ChatTransport
import ChatWeb
import IRCWire
#if canImport(Glibc)
import Glibc
#endif

// The fuzz targets: each takes any bytes and must neither trap nor break its property.
//
// Built two ways. `swift build` makes a replayer (`Replay` below): it runs every file of a
// target's corpus through it, then mutates them for a few seconds (no coverage guidance),
// which is what `make test` does. `make fuzz` builds this file with libFuzzer and
// AddressSanitizer (`-sanitize=fuzzer,address -DFUZZING`), where libFuzzer's own `main`
// drives `LLVMFuzzerTestOneInput` with coverage; the target is named by FUZZ_TARGET.

/// The targets, by name.
let targets: [String: @Sendable ([UInt8]) -> Void] = [
    "irc": fuzzIRC,
    "framer": fuzzFramer,
    "ctcp": fuzzCTCP,
    "sasl": fuzzSASL,
    "client": fuzzClient,
    "http": fuzzHTTP,
    "websocket": fuzzWebSocket,
    "link": fuzzLink,
]

/// A line parses or is refused; one that parses serialises to a line that parses to the same
/// message (unless the serialiser had to cut it at 512 bytes).
func fuzzIRC(_ bytes: [UInt8]) {
    guard let message = try? IRCMessage(bytes: bytes) else { return }
    let line = message.serialized()
    precondition(line.count <= IRCLimits.lineBytes + IRCLimits.tagBytes, "a serialised line past the limits")
    precondition(line.suffix(2) == [13, 10] && !line.dropLast(2).contains(10) && !line.dropLast(2).contains(13) && !line.contains(0),
                 "a serialised line that is not one line")
    let body = line.dropLast(2)
    let cut = message.serialized(maxBodyBytes: 1 << 20).count != line.count
    // CR, LF and NUL inside a parameter are neutralised by the serialiser (to spaces): such a
    // message cannot come back equal, only as one safe line (checked above).
    let neutralised = bytes.contains(13) || bytes.contains(10) || bytes.contains(0)
    guard !cut, !neutralised else { return }
    guard let again = try? IRCMessage(bytes: Array(body)) else { preconditionFailure("a serialised message does not parse: \(message)") }
    precondition(again == message, "parse(serialise(m)) != m: \(message) → \(again)")
}

/// Any chunking of a stream gives the same lines, each within the cap or reported over-long.
func fuzzFramer(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    let step = Int(first % 17) + 1, cap = 64
    var whole = LineFramer(maxLineBytes: cap), pieces = LineFramer(maxLineBytes: cap)
    let expected = whole.feed(bytes.dropFirst())
    var got: [FramedLine] = []
    var index = 1
    while index < bytes.count {
        got += pieces.feed(bytes[index..<min(index + step, bytes.count)])
        index += step
    }
    precondition(got == expected, "chunking changed the lines")
    for case .line(let line) in got { precondition(line.count <= cap + 1 && !line.contains(10), "a line past the cap") }
}

/// CTCP and DCC offers: parsed or not, a name made safe is a plain name.
func fuzzCTCP(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    _ = CTCP.parse(text)
    if case .send(let name, _, let port, _, _)? = DCCMessage(ctcp: text) {
        precondition((0...65535).contains(port))
        let safe = SafeFileName.make(name)
        precondition(!safe.isEmpty && !safe.contains("/") && !safe.contains("\\") && !safe.hasPrefix(".") && !safe.hasPrefix("-")
                     && safe.utf8.count <= SafeFileName.maxBytes, "an unsafe file name: \(safe)")
    }
    let safe = SafeFileName.make(text)
    precondition(!safe.contains("/") && safe != ".." && safe.utf8.count <= SafeFileName.maxBytes)
}

/// SASL: AUTHENTICATE's Base64, and a SCRAM server's first and final messages answered by our client.
func fuzzSASL(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    if let decoded = Base64.decode(text) { precondition(Base64.decode(Base64.encode(decoded)) == decoded) }
    var client = SCRAMClient(user: "alice", password: "secret", nonce: "fixednonce")
    let halves = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
    if (try? client.final(serverFirst: String(halves[0]))) != nil, halves.count > 1 {
        _ = try? client.verify(serverFinal: String(halves[1]))
    }
}

/// The client's state takes any server line, in any order, without trapping.
func fuzzClient(_ bytes: [UInt8]) {
    var state = ClientState(nick: "me")
    var now = 1_000_000.0
    for line in bytes.split(separator: 10, omittingEmptySubsequences: true).prefix(64) {
        guard let message = try? IRCMessage(bytes: Array(line)) else { continue }
        _ = state.receive(message, now: now)
        now += 1
    }
}

/// HTTP requests, fed in two pieces: a request, a refusal, a streamed body or more needed; a
/// path that comes out clean never climbs.
func fuzzHTTP(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    var limits = HTTPRequestReader.Limits()
    limits.streamsPOST = first & 1 == 1
    var reader = HTTPRequestReader(limits: limits)
    let split = min(bytes.count, Int(first) + 1)
    var results = [reader.feed(Array(bytes[1..<split]))]
    results.append(reader.feed(Array(bytes[split...])))
    for _ in 0..<16 { results.append(reader.feed([])) }
    for case .request(let request) in results {
        if let path = request.path {
            precondition(path.hasPrefix("/") && !path.split(separator: "/").contains("..") && !path.utf8.contains(0), "a path that climbs: \(path)")
        }
        _ = request.dispositionFileName.map(SafeFileName.make)
        _ = request.basicCredentials
    }
}

/// WebSocket frames from a client: events or a failure with a close code, never a trap; text
/// messages are UTF-8.
func fuzzWebSocket(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    var reader = WebSocketReader()
    let split = min(bytes.count, Int(first) + 1)
    for event in reader.feed(Array(bytes[1..<split])) + reader.feed(Array(bytes[split...])) {
        if case .message(let payload) = event { precondition(payload.count <= reader.maxMessage) }
    }
}

/// Server-to-server lines (InspIRCd's 1205): SERVER, UID and FJOIN parsed from any line come
/// back equal from the lines we would write for them (FJOIN's members over as many lines as it takes).
func fuzzLink(_ bytes: [UInt8]) {
    guard let message = try? IRCMessage(bytes: bytes) else { return }
    if let server = ServerLine(message) {
        precondition(ServerLine(server.message(source: message.source)) == server, "SERVER round trip")
    }
    if let uid = UIDLine(message) {
        precondition(UIDLine(uid.message(source: "0AA")) == uid, "UID round trip: \(uid)")
    }
    if let fjoin = FJOINLine(message) {
        let lines = fjoin.messages(source: "0AA")
        var members: [FJOINLine.Member] = []
        for line in lines {
            guard let part = FJOINLine(line) else { preconditionFailure("an FJOIN we wrote does not parse: \(line)") }
            precondition(part.room == fjoin.room && part.timestamp == fjoin.timestamp && part.modes == fjoin.modes)
            members += part.members
        }
        precondition(members == fjoin.members, "FJOIN's members changed on the way")
    }
}

#if FUZZING
nonisolated(unsafe) var chosen: @Sendable ([UInt8]) -> Void = fuzzIRC

@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    let name = getenv("FUZZ_TARGET").map { String(cString: $0) } ?? "irc"
    guard let target = targets[name] else {
        print("FUZZ_TARGET must be one of \(targets.keys.sorted().joined(separator: ", "))")
        exit(2)
    }
    chosen = target
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    chosen(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    return 0
}

/// The entry point SwiftPM links as `main` for this executable: libFuzzer's driver, which
/// calls LLVMFuzzerInitialize and then the target with each input it makes.
@_cdecl("chat_fuzz_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var count = argc
    var vector = argv
    return LLVMFuzzerRunDriver(&count, &vector) { data, size in fuzzerTestOneInput(data, size) }
}
#else
/// `chat-fuzz TARGET CORPUS-DIR [SECONDS]`: every file of the corpus through the target, then
/// random mutations of them until SECONDS have passed (a seed printed, so a failure can be
/// run again with CHAT_FUZZ_SEED). Prints executions per second.
@main
struct Replay {
    static func main() {
        let arguments = CommandLine.arguments
        guard arguments.count >= 3, let target = targets[arguments[1]] else {
            print("usage: chat-fuzz TARGET CORPUS-DIR [SECONDS]; targets: \(targets.keys.sorted().joined(separator: " "))")
            exit(2)
        }
        let directory = arguments[2]
        let seconds = arguments.count > 3 ? Double(arguments[3]) ?? 0 : 0
        let files = (Files.list(directory) ?? []).sorted().compactMap { Files.read(directory + "/" + $0) }
        // An input that traps is written to Fuzz/findings/TARGET-crash (the handler runs on the trap).
        crashPath = Array("Fuzz/findings/\(arguments[1])-crash".utf8CString)
        signal(SIGTRAP, saveCrash)
        signal(SIGILL, saveCrash)
        for input in files {
            currentInput = input
            target(input)
        }
        var seed = UInt64(getenv("CHAT_FUZZ_SEED").flatMap { UInt64(String(cString: $0)) } ?? UInt64(Monotonic.now() * 1000))
        let start = Monotonic.now()
        var runs = files.count
        print("chat-fuzz \(arguments[1]): \(files.count) corpus inputs passed; mutating with CHAT_FUZZ_SEED=\(seed) for \(seconds) s")
        var generator = SplitMix(seed: seed)
        let pool = files.isEmpty ? [[UInt8]()] : files
        while Monotonic.now() - start < seconds {
            for _ in 0..<256 {
                var input = pool[Int(generator.next() % UInt64(pool.count))]
                mutate(&input, &generator)
                currentInput = input
                target(input)
                runs += 1
            }
        }
        seed = 0
        let elapsed = max(Monotonic.now() - start, 0.001)
        print("chat-fuzz \(arguments[1]): \(runs) runs, \(Int(Double(runs) / elapsed)) per second, no failure")
    }

    /// A few byte-level changes: flip, insert, delete, splice a run, set an interesting value.
    static func mutate(_ input: inout [UInt8], _ random: inout SplitMix) {
        for _ in 0..<Int(random.next() % 4 + 1) {
            let at = input.isEmpty ? 0 : Int(random.next() % UInt64(input.count))
            switch random.next() % 6 {
            case 0 where !input.isEmpty: input[at] ^= UInt8(1 << (random.next() % 8))
            case 1: input.insert(UInt8(truncatingIfNeeded: random.next()), at: at)
            case 2 where !input.isEmpty: input.remove(at: at)
            case 3 where !input.isEmpty:
                let length = Int(random.next() % 16) + 1
                input.insert(contentsOf: input[at..<min(input.count, at + length)], at: at)
            case 4: input.insert([0, 10, 13, 32, 58, 59, 61, 64, 0x80, 0xFF, 0xE2][Int(random.next() % 11)], at: at)
            default: if input.count > 1 { input.removeLast(Int(random.next() % UInt64(input.count))) }
            }
        }
    }
}

nonisolated(unsafe) var currentInput: [UInt8] = []
nonisolated(unsafe) var crashPath: [CChar] = []

/// On a trap: the input being run, written where it can be replayed, then the trap goes on.
func saveCrash(_ signal: Int32) {
    let fd = crashPath.withUnsafeBufferPointer { open($0.baseAddress!, O_WRONLY | O_CREAT | O_TRUNC, 0o644) }
    if fd >= 0 {
        _ = currentInput.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }
    Glibc.signal(signal, SIG_DFL)
    raise(signal)
}

#endif
