#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A program started for a test with posix_spawn, with every signal unblocked and at its
/// default: the test runner's threads block signals such as SIGTERM, and a child started with
/// Foundation's Process inherits that mask and then cannot be stopped politely.
public final class ChildProcess {
    public let pid: pid_t
    private var exited = false

    /// `environment`: variables set for the child over the test runner's own (a HOME of its own).
    public init(executable: String, arguments: [String], output: String = "/dev/null", environment: [String: String] = [:]) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var variables = ProcessInfo.processInfo.environment
        variables.merge(environment) { $1 }
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var child: pid_t = 0
        let status = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        guard status == 0 else {
            throw SpawnError(description: "cannot start \(executable): \(String(cString: strerror(status)))")
        }
        pid = child
    }

    public struct SpawnError: Error, CustomStringConvertible {
        public let description: String
    }

    public var isRunning: Bool {
        if exited { return false }
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid { exited = true }
        return !exited
    }

    public func signal(_ number: Int32) { kill(pid, number) }

    /// Waits up to `timeout` seconds for the process to end; true if it did.
    @discardableResult
    public func wait(timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while isRunning && Date() < deadline { usleep(10_000) }
        return !isRunning
    }

    /// SIGTERM, then SIGKILL if it has not ended within `grace` seconds.
    public func stop(grace: Double = 5) {
        guard isRunning else { return }
        signal(SIGTERM)
        if !wait(timeout: grace) {
            signal(SIGKILL)
            wait(timeout: 5)
        }
    }

    deinit { stop() }
}
