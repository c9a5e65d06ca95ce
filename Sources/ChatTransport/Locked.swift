#if canImport(Glibc)
import Glibc
#endif

/// A value behind a pthread mutex: what the threads of this program share (the client's I/O
/// thread and actor, the history writer and the loop, workers and their results). Used instead
/// of the standard library's `Mutex`, whose futex ThreadSanitizer does not see: under `make
/// test-sanitized` every access inside `Mutex.withLock` was reported as a race (17 of them, all
/// in locked sections); with a pthread mutex the sanitizer checks the locking itself.
public final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// (Not `Locked(())`: a value of no size shares its address with whatever lies there, and
    /// ThreadSanitizer takes reading that for a race with the lock. Hold a counter instead.)
    private var value: Value

    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, the lock held for its whole run.
    @inline(__always)
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
