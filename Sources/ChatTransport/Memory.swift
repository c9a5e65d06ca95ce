import CSystem

public enum Memory {
    /// Hands freed heap pages back to the system; glibc keeps them after a burst otherwise.
    public static func returnFreedMemory() {
        _ = csystem_malloc_trim()
    }

    /// One malloc arena for all threads, from now on: glibc's default (one per thread that
    /// allocates, up to eight per core) keeps what each thread freed apart from the others.
    public static func useOneArena() { _ = csystem_single_malloc_arena() }

    /// Code pages and read-only file pages faulted in so far (the runtime's and libraries'
    /// initialisers, in 64 KiB windows) are dropped: what stays resident is what runs from now
    /// on. Mappings ever written (relocated read-only data) are left alone. Returns the bytes advised.
    @discardableResult
    public static func trimCodePages() -> Int { csystem_trim_code_pages() }
}
