import IRCWire

/// The client's side of SCRAM-SHA-256 (RFC 5802, RFC 7677), without channel binding: the
/// password never crosses the wire, and the server proves it knows the credential too.
public struct SCRAMClient: Sendable {
    public enum Problem: Error, Equatable, CustomStringConvertible {
        case malformed(String)
        case serverNotVerified

        public var description: String {
            switch self {
            case .malformed(let what): return "the server's SCRAM message was malformed (\(what))"
            case .serverNotVerified: return "the server could not prove it knows the password (not the real server?)"
            }
        }
    }

    let user: String
    let password: String
    let nonce: String
    private var authMessage: [UInt8] = []
    private var serverKey: [UInt8] = []

    /// `nonce`: printable, no commas; random in use (`SCRAMClient.randomNonce()`), fixed in tests.
    public init(user: String, password: String, nonce: String) {
        self.user = user
        self.password = password
        self.nonce = nonce
    }

    public static func randomNonce() -> String { Base64.encode(Crypto.randomBytes(18)) }

    var firstBare: String {
        "n=" + user.replacing("=", with: "=3D").replacing(",", with: "=2C") + ",r=" + nonce
    }

    /// client-first-message: `n,,n=USER,r=NONCE`.
    public var first: String { "n,," + firstBare }

    /// The most PBKDF2 iterations a server may ask of us.
    public static let maxIterations = 1_000_000

    /// client-final-message for the server's first message (`r=…,s=…,i=…`).
    public mutating func final(serverFirst: String) throws(Problem) -> String {
        var combined: String?, salt: [UInt8]?, iterations: Int?
        for attribute in serverFirst.split(separator: ",") {
            if attribute.hasPrefix("r=") { combined = String(attribute.dropFirst(2)) }
            if attribute.hasPrefix("s=") { salt = Base64.decode(String(attribute.dropFirst(2))) }
            if attribute.hasPrefix("i=") { iterations = Int(attribute.dropFirst(2)) }
            if attribute.hasPrefix("m=") { throw .malformed("an extension we do not know") }
        }
        guard let combined, combined.hasPrefix(nonce), combined.count > nonce.count else { throw .malformed("its nonce") }
        guard let salt, !salt.isEmpty else { throw .malformed("the salt") }
        // A server asking for millions of iterations would stall us (the sasl fuzz target found
        // 4,094,096 taking seconds): 4096 is the RFC's minimum, 1,000,000 ten times what ours uses.
        guard let iterations, (4096...SCRAMClient.maxIterations).contains(iterations) else { throw .malformed("the iteration count") }
        let withoutProof = "c=biws,r=" + combined
        authMessage = Array((firstBare + "," + serverFirst + "," + withoutProof).utf8)
        let salted = Crypto.pbkdf2SHA256(password: Array(password.utf8), salt: salt, iterations: iterations)
        let clientKey = Crypto.hmacSHA256(key: salted, Array("Client Key".utf8))
        let signature = Crypto.hmacSHA256(key: Crypto.sha256(clientKey), authMessage)
        serverKey = Crypto.hmacSHA256(key: salted, Array("Server Key".utf8))
        let proof = zip(clientKey, signature).map { $0 ^ $1 }
        return withoutProof + ",p=" + Base64.encode(proof)
    }

    /// Checks the server-final-message (`v=SIGNATURE`).
    public func verify(serverFinal: String) throws(Problem) {
        guard serverFinal.hasPrefix("v="), let signature = Base64.decode(String(serverFinal.dropFirst(2))),
              !serverKey.isEmpty, Crypto.constantTimeEqual(signature, Crypto.hmacSHA256(key: serverKey, authMessage)) else {
            throw .serverNotVerified
        }
    }
}
