import Foundation
import Testing
import ChatTransport
import Synchronization

/// The libc services that replaced Foundation in the program, checked against Foundation
/// itself where it has the same operation (paths, "%.1f"), and against the file system.
@Suite("system services without Foundation")
struct SystemTests {
    /// (path, directory, last component), as NSString's deletingLastPathComponent and
    /// lastPathComponent answer (the callers used those before).
    static let paths: [(String, String, String)] = [
        ("/a/b/c", "/a/b", "c"), ("/a/b/c/", "/a/b", "c"), ("a/b", "a", "b"), ("a", "", "a"), ("/a", "/", "a"),
        ("/", "/", "/"), ("", "", ""), ("~/x.txt", "~", "x.txt"), ("dir/sub/", "dir", "sub"), ("./f", ".", "f"),
        ("../f", "..", "f"), ("/tmp/a b/c d.txt", "/tmp/a b", "c d.txt"), ("写真/猫.jpg", "写真", "猫.jpg"), ("x/.hidden", "x", ".hidden"),
    ]

    @Test("directory and last component of a path", arguments: paths)
    func pathParts(_ path: String, _ directory: String, _ last: String) {
        #expect(Paths.directory(of: path) == directory, "directory of \(path)")
        #expect(Paths.lastComponent(of: path) == last, "last component of \(path)")
    }

    @Test("fixed digits agree with String(format:)")
    func fixedAgrees() {
        var values: [Double] = [0, -0.0, 0.05, 0.15, 0.25, 0.35, 1.25, 2.5, 9.95, 99.95, 1023.96, 1e15, 1e300, -3.14159, .infinity, -.infinity, .nan]
        var seed: UInt64 = 12345
        for _ in 0..<2000 {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            values.append(Double(seed >> 11) / Double(1 << 53) * 10_000)
        }
        for value in values {
            for digits in [0, 1, 2, 6] {
                #expect(value.fixed(digits) == String(format: "%.\(digits)f", value), "\(value) to \(digits) digits")
            }
        }
    }

    @Test("trimmedOfWhitespace drops white space at both ends only")
    func trimmed() {
        #expect("  a b \t\r\n".trimmedOfWhitespace() == "a b")
        #expect("\r\nkey = value\r\n".trimmedOfWhitespace() == "key = value")
        #expect("\t\t".trimmedOfWhitespace() == "")
        #expect("".trimmedOfWhitespace() == "")
        #expect("x".trimmedOfWhitespace() == "x")
        #expect(" 猫 ".dropFirst(0).trimmedOfWhitespace() == "猫")
    }

    @Test("files: nested directories with their mode, atomic write, read, list, size, kinds")
    func files() throws {
        let root = NSTemporaryDirectory() + "chat-tui-system-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let nested = root + "/one/two/three"
        try Files.createDirectories(nested, mode: 0o700)
        try Files.createDirectories(nested, mode: 0o700)  // already there: fine
        #expect(Files.isDirectory(nested))
        for directory in [root, root + "/one", root + "/one/two", nested] {
            let mode = try FileManager.default.attributesOfItem(atPath: directory)[.posixPermissions] as? Int
            #expect(mode == 0o700, "\(directory)")
        }
        let file = nested + "/note.txt"
        #expect(Files.read(file) == nil)
        #expect(!Files.exists(file))
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try Files.writeAtomically(file, bytes)
        #expect(Files.read(file) == bytes)
        #expect(Files.regularFileSize(file) == bytes.count)
        #expect(Files.regularFileSize(nested) == nil)
        #expect(Files.exists(file) && !Files.isDirectory(file))
        try Files.writeAtomically(file, Array("replaced\n".utf8))
        #expect(Files.readText(file) == "replaced\n")
        try Files.writeAtomically(nested + "/猫 b.txt", [])
        #expect(Files.list(nested)?.sorted() == ["note.txt", "猫 b.txt"])
        #expect(Files.list(root + "/missing") == nil)
        // A write into a directory that does not exist fails, saying where, and leaves nothing.
        #expect(throws: Files.Failure.self) { try Files.writeAtomically(root + "/missing/x", [1]) }
        do { try Files.writeAtomically(root + "/missing/x", [1]) } catch {
            #expect(error.description.contains(root + "/missing/x"))
        }
        // A path under a regular file cannot become a directory.
        #expect(throws: Files.Failure.self) { try Files.createDirectories(file + "/sub") }
        // A rewrite keeps the file's mode; a new file gets the one asked for; no temporary stays.
        chmod(file, 0o600)
        try Files.writeAtomically(file, Array("again\n".utf8))
        #expect(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int == 0o600)
        try Files.writeAtomically(nested + "/new", [1], mode: 0o640)
        #expect(try FileManager.default.attributesOfItem(atPath: nested + "/new")[.posixPermissions] as? Int == 0o640)
        #expect(Files.list(nested)?.sorted() == ["new", "note.txt", "猫 b.txt"])
    }

    @Test("a semaphore's signal wakes a waiter on another thread; a timed wait with nothing signalled returns false")
    func semaphore() {
        let semaphore = Semaphore()
        #expect(!semaphore.wait(seconds: 0))
        #expect(!semaphore.wait(seconds: 0.01))
        #expect(!semaphore.wait(seconds: -1))
        #expect(!semaphore.wait(seconds: .nan))
        semaphore.signal()
        #expect(semaphore.wait(seconds: .infinity), "a wait without end returns once signalled")
        semaphore.signal()
        #expect(semaphore.wait(seconds: 0.999_999_999))
        semaphore.signal()
        semaphore.signal()
        #expect(semaphore.wait(seconds: 0))
        semaphore.wait()
        let started = Semaphore(), answer = Semaphore()
        Threads.start(name: "chat-tui semaphore test") {
            started.wait()
            answer.signal()
        }
        started.signal()
        answer.wait()
    }

    @Test("a started thread runs its body under its name, cut to the kernel's 15 bytes")
    func namedThread() throws {
        let done = Semaphore(), release = Semaphore()
        let seen = Mutex<String?>(nil)
        Threads.start(name: "chat-tui named thread") {
            let comm = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
            seen.withLock { $0 = comm }
            done.signal()
            release.wait()
        }
        done.wait()
        #expect(seen.withLock { $0 } == "chat-tui named \n")
        release.signal()
    }

    @Test("environment variables read as set")
    func environment() {
        setenv("CHAT_TUI_SYSTEM_TEST", "värde", 1)
        #expect(Environment["CHAT_TUI_SYSTEM_TEST"] == "värde")
        unsetenv("CHAT_TUI_SYSTEM_TEST")
        #expect(Environment["CHAT_TUI_SYSTEM_TEST"] == nil)
    }
}

@Suite("memory")
struct MemoryTests {
    /// Resident pages mapped from files, from /proc/self/status (kB).
    func residentFileKiB() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("RssFile:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// The written (relocated) pages of read-only mappings, kB: RELRO, r--p with `Anonymous` pages.
    func relocatedReadOnlyKiB() -> Int {
        let smaps = (try? String(contentsOfFile: "/proc/self/smaps", encoding: .utf8)) ?? ""
        var readOnly = false, total = 0
        for line in smaps.split(separator: "\n") {
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            if words.count >= 5, words[0].contains("-"), words[0].first?.isHexDigit == true {
                readOnly = words[1] == "r--p"
            } else if readOnly, words.first == "Anonymous:", words.count >= 2 {
                total += Int(words[1]) ?? 0
            }
        }
        return total
    }

    @Test("code and read-only pages dropped: fewer resident, the code still runs, relocated read-only data kept")
    func trimCodePages() throws {
        let before = residentFileKiB()
        let relocated = relocatedReadOnlyKiB()
        let advised = Memory.trimCodePages()
        let after = residentFileKiB()
        #expect(advised > 0, "the executable's code mappings were found")
        #expect(after < before, "resident file pages \(before) kB -> \(after) kB")
        // RELRO (relocated, then made read-only) is never dropped: its written pages would be lost.
        #expect(relocated > 0, "this process has relocated read-only data")
        #expect(relocatedReadOnlyKiB() == relocated)
        // Type metadata and conformances (read through relocated pointers) still work.
        let values: [Any] = [1, "two", [3.0]]
        #expect(values.map { String(describing: type(of: $0)) } == ["Int", "String", "Array<Double>"])
        #expect(values.compactMap { $0 as? any CustomStringConvertible }.count == 3)
        // Code that ran before runs again: the pages come back from the file.
        #expect(Crypto.hex(Crypto.hmacSHA256(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8)))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }
}
