/// How a connection ended, read for what the user should do next: stop with a hint (a port
/// that speaks the other protocol) or try again, saying why in words. Pure; the actor's
/// connection loop asks and performs.
public enum ConnectionEnd: Sendable, Equatable {
    /// Trying again cannot help: stop, with this reason.
    case stop(String)
    /// Try again after the backoff; `reason` is what the status line says meanwhile.
    case retry(reason: String)

    /// A plain-text hello answered with TLS (or a plain close that a TLS handshake then passed).
    public static let speaksTLS = "this port speaks TLS: add --tls"

    /// A TLS hello answered in plain text: our server's `ERROR :This is the plain-text port;
    /// TLS is on port N` names the TLS port, any other text does not.
    public static func speaksPlainText(answer: String) -> String {
        var words = "this port speaks plain text: drop --tls"
        if let after = text(after: "TLS is on port ", in: answer) {
            let port = after.prefix { $0.isASCII && $0.isNumber }
            if !port.isEmpty { words += " (or use --port \(port) with --tls)" }
        }
        return words
    }

    /// What the status says while retrying after `reason`.
    /// The host ending its server is not a failure to hide behind a bare retry loop: the host may
    /// start it again, so we keep trying, and say so and how to stop. (Not how often: the status
    /// line counts the wait down, and a figure here said "every 8 s" beside "in 3 s".)
    public static func retrying(after reason: String) -> ConnectionEnd {
        if isHostClosing(reason) {
            return .retry(reason: "the host closed the room" + stopRetrying)
        }
        return .retry(reason: reason)
    }

    /// The words a retried reason ends with that say how to stop.
    public static let stopRetrying = "; /disconnect stops trying"

    /// Our server's shutdown ERROR: `Closing Link: the host closed the room (server shutting down)`.
    public static func isHostClosing(_ reason: String) -> Bool {
        text(after: "the host closed the room", in: reason) != nil
    }

    /// A TLS connect that failed: the reason `LineConnection` gives when the answer was plain text.
    public static func afterTLSFailure(_ reason: String, plainTextMarker: String) -> ConnectionEnd? {
        guard let answer = text(after: plainTextMarker, in: reason) else { return nil }
        return .stop(speaksPlainText(answer: String(answer)))
    }

    /// What follows the first `marker` in `text` (no Foundation here).
    static func text(after marker: String, in text: String) -> Substring? {
        let marker = Array(marker.utf8), bytes = Array(text.utf8)
        guard !marker.isEmpty, bytes.count >= marker.count else { return nil }
        for start in 0...(bytes.count - marker.count) where Array(bytes[start..<start + marker.count]) == marker {
            let index = text.utf8.index(text.utf8.startIndex, offsetBy: start + marker.count)
            return text[index...]
        }
        return nil
    }
}
