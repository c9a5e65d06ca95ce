import Foundation
import Testing
@testable import ChatClientKit

@Suite("text logs for grep (issue 46)")
struct TextLogTests {
    @Test("one file per network, conversation and day, lines as irssi writes them, each msgid once, nothing that drives a terminal")
    func files() throws {
        let directory = NSTemporaryDirectory() + "chat-tui-textlog-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var log = TextLog(directory: directory, network: "irc.libera.chat:6697")
        // 2027-01-15 23:59 and the next day, at UTC+1 (so 22:59 and 23:30 UTC).
        let late = 1_800_000_000.0 + 15 * 3600 - 60, next = late + 31 * 60
        var message = ChatLine(time: late, kind: .message, sender: "bob", text: "deploy at \u{2}five\u{2}\u{1B}[2J")
        message.msgid = "m1"
        log.write(message, conversation: "#Dev", utcOffset: 3600)
        log.write(message, conversation: "#Dev", utcOffset: 3600) // a replay
        log.write(ChatLine(time: late, kind: .action, sender: "bob", text: "waves"), conversation: "#Dev", utcOffset: 3600)
        log.write(ChatLine(time: late, kind: .join, sender: "carol", text: "carol joined #dev"), conversation: "#Dev", utcOffset: 3600)
        log.write(ChatLine(time: next, kind: .notice, sender: "bot", text: "build \u{3}04red"), conversation: "#Dev", utcOffset: 3600)
        var old = ChatLine(time: late, kind: .message, sender: "bob", text: "old news")
        old.isOldNews = true
        log.write(old, conversation: "#Dev", utcOffset: 3600)
        log.write(ChatLine(time: late, kind: .message, sender: "eve", text: "hi"), conversation: "../../etc/passwd", utcOffset: 3600)
        let network = directory + "/irc.libera.chat:6697"
        let first = try String(contentsOfFile: network + "/#dev/2027-01-15.log", encoding: .utf8)
        #expect(first == "--- Log opened 2027-01-15 23:59:00\n23:59 <bob> deploy at five[2J\n23:59  * bob waves\n23:59 -!- carol joined #dev\n")
        let second = try String(contentsOfFile: network + "/#dev/2027-01-16.log", encoding: .utf8)
        #expect(second == "--- Log opened 2027-01-16 00:30:00\n00:30 -bot- build red\n")
        #expect(FileManager.default.fileExists(atPath: network + "/.._.._etc_passwd/2027-01-15.log") == false)
        #expect(FileManager.default.fileExists(atPath: network + "/_._.._etc_passwd/2027-01-15.log"))
        #expect(log.problem == nil)
    }

    @Test("a directory that cannot be written says why, once the caller asks")
    func problem() {
        var log = TextLog(directory: "/proc/nope", network: "x")
        log.write(ChatLine(time: 0, kind: .message, sender: "bob", text: "hi"), conversation: "#a", utcOffset: 0)
        #expect(log.problem?.hasPrefix("The text log /proc/nope/x/#a/1970-01-01.log could not be written") == true)
    }
}
