import CSystem

public enum Memory {
    /// Hands freed heap pages back to the system; glibc keeps them after a burst otherwise.
    public static func returnFreedMemory() {
        _ = csystem_malloc_trim()
    }
}
