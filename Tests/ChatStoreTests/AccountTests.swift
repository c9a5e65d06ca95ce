import Foundation
import Testing
import IRCWire
import ChatStore
import ChatTransport

@Suite("accounts")
struct AccountTests {
    func store() throws -> AccountStore {
        let path = NSTemporaryDirectory() + "chat-tui-accounts-\(UUID().uuidString).db"
        return try AccountStore(database: Database(path: path))
    }

    @Test("SCRAM-SHA-256 keys match RFC 7677's example exchange (server signature and client proof)")
    func rfc7677() {
        let salt = Array(Data(base64Encoded: "W22ZaJ0SNY7soEsUEjb6gQ==")!)
        let credential = SCRAMCredential.derive(password: "pencil", salt: salt, iterations: 4096)
        let nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
        let authMessage = Array("n=user,r=rOprNGfwEbeRWgbNEkqO,r=\(nonce),s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r=\(nonce)".utf8)
        let serverSignature = Crypto.hmacSHA256(key: credential.serverKey, authMessage)
        #expect(Data(serverSignature).base64EncodedString() == "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
        // The client's proof, taken apart with the stored key, gives back a client key whose hash is the stored key.
        let proof = Array(Data(base64Encoded: "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")!)
        let clientSignature = Crypto.hmacSHA256(key: credential.storedKey, authMessage)
        let clientKey = zip(proof, clientSignature).map { $0 ^ $1 }
        #expect(Crypto.sha256(clientKey) == credential.storedKey)
        #expect(credential.matches(password: "pencil") && !credential.matches(password: "pencil "))
    }

    @Test("add, look up, change the password, list with certificates, delete")
    func lifecycle() throws {
        let accounts = try store()
        let first = SCRAMCredential.derive(password: "one", iterations: 1000)
        try accounts.add(name: "Alice", credential: first, now: 100)
        #expect(throws: AccountStore.Problem.exists("ALICE")) { try accounts.add(name: "ALICE", credential: first, now: 101) }
        #expect(throws: AccountStore.Problem.looksLike("AIice", existing: "Alice"), "a look-alike of an account is refused") {
            try accounts.add(name: "AIice", credential: first, now: 101)
        }
        #expect(try accounts.owner(ofKeys: NameKeys.of("aIice", .rfc1459)) == "Alice")
        #expect(try accounts.lookup("alice")?.name == "Alice")
        #expect(try accounts.lookup("alice")?.credential == first)
        let second = SCRAMCredential.derive(password: "two", iterations: 1000)
        try accounts.setCredential(key: "alice", second)
        #expect(try accounts.lookup("alice")?.credential.matches(password: "two") == true)
        try accounts.addCertificate(key: "alice", fingerprint: "AB" + String(repeating: "0", count: 62))
        #expect(try accounts.account(forCertificate: "AB" + String(repeating: "0", count: 62)) == "Alice")
        #expect(try accounts.list() == [AccountRecord(name: "Alice", createdAt: 100, certificates: ["AB" + String(repeating: "0", count: 62)])])
        try accounts.delete(key: "alice")
        #expect(try accounts.lookup("alice") == nil)
        #expect(try accounts.account(forCertificate: "AB" + String(repeating: "0", count: 62)) == nil, "its certificates go with it")
        #expect(throws: AccountStore.Problem.missing("alice")) { try accounts.delete(key: "alice") }
    }

    @Test("nothing reversible is stored: the database holds no password bytes")
    func nothingReversible() throws {
        let path = NSTemporaryDirectory() + "chat-tui-accounts-\(UUID().uuidString).db"
        let accounts = try AccountStore(database: Database(path: path))
        try accounts.add(name: "bob", credential: SCRAMCredential.derive(password: "correct horse battery", iterations: 1000), now: 1)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path)) + ((try? Data(contentsOf: URL(fileURLWithPath: path + "-wal"))) ?? Data())
        #expect(bytes.range(of: Data("correct horse battery".utf8)) == nil)
    }
}
