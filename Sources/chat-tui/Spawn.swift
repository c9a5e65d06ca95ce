#if canImport(Glibc)
import Glibc
#endif
import Dispatch

/// Runs a program of the user's (`--notify command`) without a shell: its arguments are passed
/// as they are (nothing in a message is ever interpreted), its input and output are /dev/null,
/// and it is waited for on a thread of its own so it never lingers as a zombie. At most four at
/// once: a flood of highlights does not start a flood of processes (the rest are dropped).
enum Spawn {
    nonisolated(unsafe) static var running = 0
    static let lock = DispatchQueue(label: "chat-tui.spawn")

    static func detached(_ arguments: [String]) {
        guard let program = arguments.first else { return }
        let allowed = lock.sync { () -> Bool in
            guard running < 4 else { return false }
            running += 1
            return true
        }
        guard allowed else { return }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd in Int32(0)...2 { posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0) }
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, program, &actions, nil, &argv, environ)
        guard result == 0 else {
            lock.sync { running -= 1 }
            return
        }
        let child = pid
        DispatchQueue.global().async {
            var status: Int32 = 0
            while waitpid(child, &status, 0) == -1 && errno == EINTR {}
            lock.sync { running -= 1 }
        }
    }
}
