import Testing
@testable import ChatClientKit

@Suite("who was logged in to what: bounded")
struct AccountsSeenBoundTests {
    @Test("past 4,096 nicknames the map starts again: someone not seen since is unknown (their held lines ask before going)")
    func bounded() {
        var seen = AccountsSeen()
        for n in 0..<AccountsSeen.limit { seen.saw("n\(n)", account: "a\(n)") }
        #expect(seen.account(of: "n0") == "a0")
        seen.saw("n0", account: "a0")
        #expect(seen.account(of: "n0") == "a0", "one already there costs no room")
        seen.saw("newcomer", account: "x")
        #expect(seen.account(of: "n1") == nil && seen.account(of: "newcomer") == "x")
        seen.renamed("newcomer", to: "renamed")
        #expect(seen.account(of: "newcomer") == nil && seen.account(of: "renamed") == "x")
    }
}
