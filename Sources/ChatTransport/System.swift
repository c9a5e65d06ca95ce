#if canImport(Glibc)
import Glibc
#endif
import CSystem

// The few operating-system services the program needs, straight from libc, so that nothing in
// chat-tui links Foundation: Foundation, FoundationEssentials and ICU were 9 MiB of the empty
// server's 30 MiB resident set (their pages are touched at load even when nothing calls them).

/// Threads of our own (the server's loop, the history writer, a blocking connect).
public enum Threads {
    private final class Body {
        let name: String
        let run: @Sendable () -> Void
        init(_ name: String, _ run: @escaping @Sendable () -> Void) { self.name = name; self.run = run }
    }

    /// Starts `body` on a new detached thread named `name` (cut to the kernel's 15 bytes).
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let context = Unmanaged.passRetained(Body(name, body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { context in
            let body = Unmanaged<Body>.fromOpaque(context!).takeRetainedValue()
            csystem_name_thread(body.name)
            body.run()
            return nil
        }, context)
        guard status == 0 else { fatalError("cannot start a thread (\(name)): error \(status)") }
        pthread_detach(thread)
    }
}

/// A counting semaphore (POSIX `sem_t`).
public final class Semaphore: @unchecked Sendable {
    private let semaphore = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)

    public init(value: Int = 0) { sem_init(semaphore, 0, UInt32(value)) }

    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }

    public func signal() { sem_post(semaphore) }

    public func wait() {
        while sem_wait(semaphore) != 0 && errno == EINTR {}
    }

    /// Waits at most `seconds` (by the monotonic clock); false when the time ran out first.
    @discardableResult
    public func wait(seconds: Double) -> Bool { csystem_semaphore_wait(semaphore, seconds) == 1 }
}

/// Environment variables.
public enum Environment {
    public static subscript(name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        return String(cString: value)
    }

    /// The variables the notification style is chosen by (the few it reads, not the whole environment).
    public static var all: [String: String] {
        var found: [String: String] = [:]
        for name in ["TERM", "TERM_PROGRAM", "KITTY_WINDOW_ID", "ITERM_SESSION_ID", "WT_SESSION", "ConEmuPID", "TMUX", "VTE_VERSION"] {
            if let value = self[name] { found[name] = value }
        }
        return found
    }
}

/// Paths as text, the way the shell sees them ("/a/b/c": directory "/a/b", last component "c").
public enum Paths {
    /// Everything before the last "/" ("" for a bare name, "/" for a file in the root).
    public static func directory(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        if slash == trimmed.startIndex { return "/" }
        var directory = trimmed[..<slash]
        while directory.count > 1 && directory.hasSuffix("/") { directory.removeLast() }
        return String(directory)
    }

    /// The part after the last "/" (trailing slashes ignored).
    public static func lastComponent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return String(trimmed) }
        if trimmed == "/" { return "/" }
        return String(trimmed[trimmed.index(after: slash)...])
    }
}

/// Files and directories.
public enum Files {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(_ what: String, _ path: String, _ code: Int32 = errno) {
            description = "\(what) \(path): \(String(cString: strerror(code)))"
        }
    }

    private static func status(_ path: String) -> stat? {
        var info = stat()
        return stat(path, &info) == 0 ? info : nil
    }

    public static func exists(_ path: String) -> Bool { status(path) != nil }

    public static func isDirectory(_ path: String) -> Bool {
        guard let info = status(path) else { return false }
        return info.st_mode & S_IFMT == S_IFDIR
    }

    /// The size of a regular file; nil for anything else or nothing.
    public static func regularFileSize(_ path: String) -> Int? {
        guard let info = status(path), info.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int(info.st_size)
    }

    /// The whole file; nil when it cannot be opened or read.
    public static func read(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let got = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if got == 0 { return bytes }
            if got < 0 {
                if errno == EINTR { continue }
                return nil
            }
            bytes.append(contentsOf: chunk[..<got])
        }
    }

    /// The whole file as UTF-8 text (invalid bytes become U+FFFD); nil when it cannot be read.
    public static func readText(_ path: String) -> String? {
        read(path).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Writes to a new temporary file beside `path` (a name nobody had: mkstemp), flushes it
    /// and renames it over `path`, so a reader sees the old file or the new one, never half of
    /// one. The file keeps the permissions it had (a config holding a password stays 0600);
    /// a new one gets `mode`.
    public static func writeAtomically(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o644) throws(Failure) {
        var template = Array((path + ".tmp-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        let temporary = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard fd >= 0 else { throw Failure("cannot create", temporary) }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        fchmod(fd, status(path).map { $0.st_mode & 0o7777 } ?? mode)
        var written = 0
        while written < bytes.count {
            let wrote = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, bytes.count - written) }
            if wrote < 0 {
                if errno == EINTR { continue }
                let code = errno
                close(fd)
                unlink(temporary)
                throw Failure("cannot write", temporary, code)
            }
            written += wrote
        }
        if fsync(fd) != 0 || close(fd) != 0 {
            let code = errno
            unlink(temporary)
            throw Failure("cannot write", temporary, code)
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw Failure("cannot replace", path, code)
        }
    }

    /// Appends to `path` (made with `mode` when new): one write of the whole bytes, O_APPEND, no
    /// fsync (for logs a crash may cut short, never for what must survive one).
    public static func append(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o600) throws(Failure) {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode)
        guard fd >= 0 else { throw Failure("cannot open", path) }
        defer { close(fd) }
        var written = 0
        while written < bytes.count {
            let wrote = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, bytes.count - written) }
            if wrote < 0 {
                if errno == EINTR { continue }
                throw Failure("cannot write", path, errno)
            }
            written += wrote
        }
    }

    /// Creates `path` and any missing parents (each with `mode`); an existing directory is fine.
    public static func createDirectories(_ path: String, mode: mode_t = 0o755) throws(Failure) {
        guard !path.isEmpty, !isDirectory(path) else { return }
        let parent = Paths.directory(of: path)
        if !parent.isEmpty && parent != path { try createDirectories(parent, mode: mode) }
        if mkdir(path, mode) != 0 && !(errno == EEXIST && isDirectory(path)) {
            throw Failure("cannot create the directory", path)
        }
    }

    /// The names in a directory ("." and ".." left out); nil when it cannot be read.
    public static func list(_ directory: String) -> [String]? {
        guard let handle = opendir(directory) else { return nil }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}

/// Text helpers Foundation used to provide.
extension StringProtocol {
    /// Without the leading and trailing white space (spaces, tabs, line ends; Unicode's too).
    public func trimmedOfWhitespace() -> String {
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace }) else { return "" }
        return String(self[first...last])
    }
}

extension Double {
    /// The value with `digits` digits after the point, as C's printf writes it ("%.1f" for 1),
    /// with a point whatever the locale.
    public func fixed(_ digits: Int) -> String {
        var buffer = [CChar](repeating: 0, count: 400)
        let written = csystem_format_fixed(&buffer, UInt(buffer.count), self, Int32(digits))
        guard written >= 0, Int(written) < buffer.count else { return description }
        return String(decoding: buffer[..<Int(written)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
