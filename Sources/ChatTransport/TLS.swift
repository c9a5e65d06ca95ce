#if canImport(Glibc)
import Glibc
#endif
import COpenSSL

/// A TLS configuration (OpenSSL's SSL_CTX): the server's certificate and key, or a client's
/// trust store. Immutable once made; shared by every connection that uses it.
public final class TLSContext: @unchecked Sendable {
    // SSL_CTX is reference-counted and safe to share across threads once configured.
    let context: OpaquePointer

    private init(_ context: OpaquePointer) { self.context = context }
    deinit { SSL_CTX_free(context) }

    /// The server side, from PEM files.
    public static func server(certificate: String, key: String) throws(TLSError) -> TLSContext {
        var error = [CChar](repeating: 0, count: 256)
        guard let context = chat_tls_server_context(certificate, key, &error, error.count) else {
            throw .configuration("cannot use \(certificate) and \(key): \(cText(error))")
        }
        return TLSContext(context)
    }

    /// The client side, trusting the system's certificate store; with a certificate and key
    /// (PEM files, one file may hold both) it presents them, for SASL EXTERNAL.
    public static func client(certificate: String? = nil, key: String? = nil) throws(TLSError) -> TLSContext {
        var error = [CChar](repeating: 0, count: 256)
        guard let context = chat_tls_client_context(&error, error.count) else {
            throw .configuration(cText(error))
        }
        let made = TLSContext(context)
        if let certificate {
            guard chat_tls_use_client_certificate(context, certificate, key ?? certificate, &error, error.count) == 1 else {
                throw .configuration("cannot use the client certificate \(certificate): \(cText(error))")
            }
        }
        return made
    }
}

public enum TLSError: Error, Equatable, Sendable, CustomStringConvertible {
    case configuration(String)
    case handshake(String)

    public var description: String {
        switch self {
        case .configuration(let text): return "TLS setup failed: \(text)"
        case .handshake(let text): return "TLS handshake failed: \(text)"
        }
    }
}

/// One TLS connection over a non-blocking socket: handshake, read and write each return at
/// once with what they could do, or what they wait for (the socket readable or writable).
/// Used by one thread at a time (the server's loop, a client's I/O thread).
public final class TLSSession {
    public enum Progress: Equatable {
        case done
        case wantRead
        case wantWrite
        case failed(String)
    }

    let ssl: OpaquePointer
    public private(set) var handshakeDone = false
    /// A fatal error happened (SSL_ERROR_SSL or SYSCALL): no shutdown may be attempted then.
    private var failed = false

    /// `server`: accept; else connect, sending `hostName` for SNI and checking the
    /// certificate against it (the outcome is read after the handshake: `verification`).
    public init(context: TLSContext, fd: Int32, server: Bool, hostName: String? = nil) {
        ssl = SSL_new(context.context)
        SSL_set_fd(ssl, fd)
        if server {
            SSL_set_accept_state(ssl)
        } else {
            SSL_set_connect_state(ssl)
            if let hostName {
                // SNI is for names; an address is checked as one.
                if hostName.contains(where: \.isLetter) && !hostName.contains(":") { _ = chat_tls_set_host_name(ssl, hostName) }
                _ = SSL_set1_host(ssl, hostName)
            }
        }
    }

    /// After a client handshake: nil when the certificate verified for the host name, else why not.
    public var verificationProblem: String? {
        guard peerFingerprint != nil else { return "the server sent no certificate" }
        var text = [CChar](repeating: 0, count: 256)
        return chat_tls_verified(ssl, &text, text.count) == 1 ? nil : cText(text)
    }

    /// Plaintext already decrypted and waiting inside the session (the socket will not say so).
    /// (Decrypted and ready: a half-received record does not count, or a poll would spin on it.)
    public var buffered: Bool { SSL_pending(ssl) > 0 }

    deinit { SSL_free(ssl) }

    /// Advances the handshake.
    public func handshake() -> Progress {
        if handshakeDone { return .done }
        // Each call starts with a clean error queue: the queue is per thread, and a leftover
        // from another connection would make SSL_get_error report that one's failure here.
        ERR_clear_error()
        errno = 0
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            handshakeDone = true
            return .done
        }
        return progress(after: result)
    }

    /// Reads decrypted bytes into `buffer` (at most `limit`).
    public func read(into buffer: inout [UInt8], limit: Int = .max) -> SocketRead.Result {
        ERR_clear_error()
        errno = 0
        let count = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32(min($0.count, limit))) }
        if count > 0 { return .data(Int(count)) }
        switch SSL_get_error(ssl, count) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .wouldBlock
        case SSL_ERROR_ZERO_RETURN: return .endOfStream
        case SSL_ERROR_SYSCALL:
            failed = true
            let code = errno
            ERR_clear_error()
            return code == 0 ? .endOfStream : .failed(errno: code)
        default:
            failed = true
            ERR_clear_error()
            return .failed(errno: EPROTO)
        }
    }

    /// Writes bytes; how many went (0: it waits for the socket), or nil when the connection failed.
    public func write(_ bytes: UnsafeRawBufferPointer) -> Int? {
        if failed { return nil }
        guard bytes.count > 0 else { return 0 }
        ERR_clear_error()
        errno = 0
        let count = SSL_write(ssl, bytes.baseAddress, Int32(bytes.count))
        if count > 0 { return Int(count) }
        switch SSL_get_error(ssl, count) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return 0
        default:
            failed = true
            ERR_clear_error()
            return nil
        }
    }

    /// Sends close_notify, without waiting for the peer's.
    public func shutdown() {
        guard handshakeDone, !failed else { return }
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    /// SHA-256 of the peer's certificate, if it sent one.
    public var peerFingerprint: [UInt8]? {
        var digest = [UInt8](repeating: 0, count: 32)
        return chat_tls_peer_fingerprint(ssl, &digest) == 1 ? digest : nil
    }

    private func progress(after result: Int32) -> Progress {
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_SYSCALL:
            failed = true
            ERR_clear_error()
            return .failed(errno == 0 ? "the peer closed the connection" : TransportError.errnoText(errno))
        default:
            failed = true
            var text = [CChar](repeating: 0, count: 256)
            chat_tls_last_error(&text, text.count)
            return .failed(cText(text))
        }
    }
}

/// Certificates on disk: a self-signed one made on first start, and fingerprints.
public enum TLSCertificates {
    /// Makes `certificate` and `key` (mode 0600) for `name` unless both exist already.
    /// Returns true when it made them.
    public static func ensureSelfSigned(certificate: String, key: String, name: String) throws(TLSError) -> Bool {
        if access(certificate, F_OK) == 0 && access(key, F_OK) == 0 { return false }
        let previous = umask(0o077)
        defer { umask(previous) }
        var error = [CChar](repeating: 0, count: 256)
        guard chat_tls_make_self_signed(certificate, key, name, &error, error.count) == 1 else {
            throw .configuration("cannot make a certificate in \(certificate): \(cText(error))")
        }
        chmod(key, 0o600)
        chmod(certificate, 0o644)
        return true
    }

    /// SHA-256 of a PEM certificate, as `AB:CD:…`.
    public static func fingerprint(ofFile path: String) -> String? {
        var digest = [UInt8](repeating: 0, count: 32)
        guard chat_tls_file_fingerprint(path, &digest) == 1 else { return nil }
        return format(digest)
    }

    public static func isSelfSigned(file path: String) -> Bool { chat_tls_file_is_self_signed(path) == 1 }

    /// Whether the chain in this file verifies against the system's trust store.
    public static func verifies(file path: String) -> Bool { chat_tls_file_verifies(path) == 1 }

    public static func format(_ digest: [UInt8]) -> String {
        digest.map { Crypto.hex([$0]).uppercased() }.joined(separator: ":")
    }
}

/// A NUL-terminated C buffer as text.
func cText(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
