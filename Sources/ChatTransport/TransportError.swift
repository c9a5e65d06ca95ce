#if canImport(Glibc)
import Glibc
#endif

/// A failure of the network layer, in words a user can read.
public enum TransportError: Error, Equatable, Sendable, CustomStringConvertible {
    case hostNotFound(host: String, reason: String)
    case connectionRefused(host: String, port: Int)
    case timedOut(host: String, port: Int, seconds: Double)
    case unreachable(host: String, port: Int, reason: String)
    case addressInUse(address: String, port: Int)
    case system(call: String, errno: Int32)
    case closed
    /// The caller gave up (a connect cancelled by quitting).
    case cancelled
    case tls(host: String, port: Int, reason: String)
    /// More was written than the peer has read, past the bound: it stopped reading.
    case outputFull(bytes: Int)
    /// Something the server needs besides sockets (its history database) could not be opened.
    case unavailable(String)

    public var description: String {
        switch self {
        case .hostNotFound(let host, let reason): return "host not found: \(host) (\(reason))"
        case .connectionRefused(let host, let port): return "connection refused by \(host) port \(port)"
        case .timedOut(let host, let port, let seconds):
            return "connecting to \(host) port \(port) timed out after \(Self.format(seconds)) s"
        case .unreachable(let host, let port, let reason): return "cannot reach \(host) port \(port): \(reason)"
        case .addressInUse(let address, let port): return "address \(address) port \(port) is already in use"
        case .system(let call, let code): return "\(call) failed: \(Self.errnoText(code))"
        case .closed: return "connection closed"
        case .cancelled: return "cancelled"
        case .tls(let host, let port, let reason): return "TLS with \(host) port \(port) failed: \(reason)"
        case .outputFull(let bytes): return "the peer stopped reading (\(bytes) bytes waiting to be sent)"
        case .unavailable(let text): return text
        }
    }

    public static func errnoText(_ code: Int32) -> String {
        String(cString: strerror(code))
    }

    static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }

    static func lastError(_ call: String) -> TransportError { .system(call: call, errno: errno) }
}
