/// A file of the page the server serves (`WebAssets.files`, generated from `web/` by
/// `scripts/embed_web.py`): its type, its ETag and its bytes.
public struct WebAsset: Sendable {
    public let type: String
    public let etag: String
    public let bytes: [UInt8]

    init(type: String, etag: String, finalNewline: Bool, text: String) {
        self.type = type
        self.etag = etag
        bytes = Array(text.utf8) + (finalNewline ? [10] : [])
    }
}

public enum WebAssets {
    /// The file served at `path` ("/" is the page), if there is one.
    public static func asset(at path: String) -> WebAsset? { files[path] }

    /// Every path served, sorted.
    public static var paths: [String] { files.keys.sorted() }

    /// An answer for a file: 304 when the browser already has this version (its ETag), else
    /// the file, revalidated on each load (`no-cache`: a new binary's page is picked up at once).
    public static func response(_ asset: WebAsset, ifNoneMatch: String?) -> HTTPResponse {
        let headers: [(name: String, value: String)] = [("Content-Type", asset.type), ("ETag", asset.etag), ("Cache-Control", "no-cache")]
        if let ifNoneMatch, ifNoneMatch.split(separator: ",").contains(where: { tag in
            let trimmed = tag.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()
            return String(trimmed) == asset.etag || String(trimmed) == "*"
        }) {
            return HTTPResponse(status: 304, headers: headers)
        }
        return HTTPResponse(status: 200, headers: headers, body: asset.bytes)
    }
}
