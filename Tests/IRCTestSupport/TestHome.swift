#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A folder of its own for a program a test starts: its HOME, its XDG folders and its data
/// directory, under the temporary folder, never the user's. Owner: the test that made it (and
/// every process started with it, which share it across a restart); bound: what one test writes;
/// end: removed when the last reference goes.
public final class TestHome: @unchecked Sendable {
    public let path: String

    public init(_ label: String = "chat-tui") {
        var template = Array((NSTemporaryDirectory() + "/\(label)-home-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        path = made.map { String(cString: $0) } ?? NSTemporaryDirectory() + "/\(label)-home-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// The server's `--data-dir`.
    public var dataDirectory: String { path + "/data" }

    /// What a child is started with: HOME and every XDG folder inside this one.
    public var environment: [String: String] {
        ["HOME": path,
         "XDG_CONFIG_HOME": path + "/.config",
         "XDG_DATA_HOME": path + "/.local/share",
         "XDG_STATE_HOME": path + "/.local/state",
         "XDG_CACHE_HOME": path + "/.cache"]
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// Our own binary from the build the tests came from (`.build/debug`, `.build/asan/debug`…):
/// found beside the running test bundle, so a sanitized run starts its sanitized server.
public func builtProgram(_ name: String) -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    if length > 0 {
        let bytes = buffer[0..<length].map { UInt8(bitPattern: $0) }
        let directory = URL(fileURLWithPath: String(decoding: bytes, as: UTF8.self)).deletingLastPathComponent()
        let beside = directory.appendingPathComponent(name).path
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
    }
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    return root.appendingPathComponent(".build/debug/\(name)").path
}
