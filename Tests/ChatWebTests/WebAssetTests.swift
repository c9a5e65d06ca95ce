import ChatTransport
import Testing
@testable import ChatWeb

@Suite("the page and uploads: embedded files, streamed bodies")
struct WebAssetTests {
    /// The page's sources, from this file's path.
    static let webDirectory = Paths.directory(of: Paths.directory(of: Paths.directory(of: #filePath))) + "/Sources/ChatWeb/Page"

    @Test("the page is compiled in as it is in Sources/ChatWeb/Page, each file with its type and an ETag; under 160 KB; 304 for a known ETag")
    func embeddedMatchesWeb() throws {
        let names = (Files.list(Self.webDirectory) ?? []).filter { !$0.hasSuffix(".md") }.sorted()
        #expect(names == ["app.js", "icon-192.png", "icon-512.png", "index.html", "manifest.webmanifest", "style.css", "sw.js"])
        #expect(WebAssets.paths == ["/", "/app.js", "/icon-192.png", "/icon-512.png", "/manifest.webmanifest", "/style.css", "/sw.js"])
        var total = 0
        for name in names {
            let path = name == "index.html" ? "/" : "/" + name
            let asset = try #require(WebAssets.asset(at: path))
            let disk = try #require(Files.read(Self.webDirectory + "/" + name))
            #expect(asset.bytes == disk, "\(name) differs from its compiled-in copy")
            total += disk.count
        }
        // It grows with what it does (issue 47: an installable app with notifications, search,
        // previews and settings); the bound says when it grew by more than that.
        #expect(total < 160 * 1024, "the page stays under 160 KB: \(total) bytes")
        #expect(WebAssets.asset(at: "/")?.type == "text/html; charset=utf-8")
        #expect(WebAssets.asset(at: "/app.js")?.type == "text/javascript; charset=utf-8")
        let page = try #require(WebAssets.asset(at: "/"))
        #expect(WebAssets.response(page, ifNoneMatch: page.etag).status == 304)
        #expect(WebAssets.response(page, ifNoneMatch: "\"other\", " + page.etag).status == 304)
        #expect(WebAssets.response(page, ifNoneMatch: "\"other\"").body == page.bytes)
        // The page obeys its own policy: no inline script or style, no handler attributes.
        let html = String(decoding: page.bytes, as: UTF8.self)
        #expect(!html.contains("<script>") && !html.contains("style=\"") && !html.contains(" onclick="))
    }

    @Test("a POST's body is streamed after its headers, fed a byte at a time or all at once, and the next request follows")
    func streamedBodies() {
        let bytes = Array("POST /upload/abc HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Disposition: attachment; filename*=UTF-8''r%C3%A9sum%C3%A9%2F..%2Fx.pdf; filename=\"plain.pdf\"\r\nAuthorization: Basic dGluYTpzZWNyZXQ6d2l0aDpjb2xvbnM=\r\n\r\nhelloGET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        for step in [1, 7, bytes.count] {
            var limits = HTTPRequestReader.Limits()
            limits.streamsPOST = true
            var reader = HTTPRequestReader(limits: limits)
            var head: HTTPRequest?
            var body: [UInt8] = []
            var sawLast = false
            var next: HTTPRequest?
            var index = 0
            while index < bytes.count {
                var result = reader.feed(Array(bytes[index..<min(index + step, bytes.count)]))
                index += step
                while result != .needMore {
                    switch result {
                    case .head(let request, let length):
                        #expect(length == 5)
                        head = request
                    case .body(let chunk, let last):
                        body += chunk
                        sawLast = sawLast || last
                    case .request(let request): next = request
                    default: Issue.record("unexpected \(result)")
                    }
                    result = reader.feed([])
                }
            }
            #expect(body == Array("hello".utf8) && sawLast, "fed \(step) at a time")
            #expect(head?.dispositionFileName == "résumé/../x.pdf", "as sent: making it safe is the store's job")
            #expect(head?.basicCredentials?.user == "tina" && head?.basicCredentials?.password == "secret:with:colons")
            #expect(next?.target == "/")
        }
        // Without streaming, a large body is still refused from its headers.
        var plain = HTTPRequestReader()
        #expect(plain.feed(Array("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 999999\r\n\r\n".utf8)) == .refused(HTTPRefusal(status: 413, reason: "the body is longer than 65536 bytes")))
        var request = HTTPRequest(method: "POST", target: "/", version: 11, headers: [("content-disposition", "attachment; filename=\"a b.txt\"")])
        #expect(request.dispositionFileName == "a b.txt")
        request.headers = [("authorization", "Bearer xyz")]
        #expect(request.basicCredentials == nil)
    }

    @Test("fuzz finding (http): a raw NUL or control byte in the target is no path")
    func rawControlsInTheTarget() {
        for target in ["/irc\u{0}", "/a\u{1}b", "/files/\u{7F}", "/\tx"] {
            #expect(HTTPRequest(method: "GET", target: target, version: 11, headers: []).path == nil, "\(Array(target.utf8))")
        }
        #expect(HTTPRequest(method: "GET", target: "/irc?x=\u{1}", version: 11, headers: []).path == "/irc", "the query is not the path")
    }

    @Test("JSON strings: quotes, backslashes, controls and line separators escaped")
    func json() {
        #expect(JSONText.quoted("a\"b\\c\n\u{1}\u{2028}é") == "\"a\\\"b\\\\c\\n\\u0001\\u2028é\"")
    }
}
