import ChatTransport

/// A file of the page the server serves (`WebAssets.files`, from `Page/`): its type, its ETag and its bytes.
public struct WebAsset: Sendable {
    public let type: String
    public let etag: String
    public let bytes: [UInt8]

    init(type: String, bytes: [UInt8]) {
        self.type = type
        self.bytes = bytes
        // A strong validator from the content: a new binary's page is a new ETag.
        etag = "\"" + String(Crypto.hex(Crypto.sha256(bytes)).prefix(16)) + "\""
    }
}

public enum WebAssets {
    /// `Page/` as SwiftPM compiled it in (`.embedInCode` in Package.swift).
    static let files: [String: WebAsset] = [
        "/": WebAsset(type: "text/html; charset=utf-8", bytes: PackageResources.index_html),
        "/app.js": WebAsset(type: "text/javascript; charset=utf-8", bytes: PackageResources.app_js),
        "/style.css": WebAsset(type: "text/css; charset=utf-8", bytes: PackageResources.style_css),
        // The installable app: its manifest, icons (scripts/make_icons.py draws them) and service worker.
        "/sw.js": WebAsset(type: "text/javascript; charset=utf-8", bytes: PackageResources.sw_js),
        "/manifest.webmanifest": WebAsset(type: "application/manifest+json", bytes: PackageResources.manifest_webmanifest),
        "/icon-192.png": WebAsset(type: "image/png", bytes: PackageResources.icon_192_png),
        "/icon-512.png": WebAsset(type: "image/png", bytes: PackageResources.icon_512_png),
    ]

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
