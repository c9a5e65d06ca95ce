// swift-tools-version: 6.0
import PackageDescription

// The server's hot path in a release build: no run-time exclusivity checks (the compiler still
// proves exclusive access statically; the run-time check on class properties cost ~6 % of the
// direct-message relay: swift_beginAccess and its thread-local access set).
let hotPath: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
    name: "chat-tui",
    products: [
        .executable(name: "chat-tui", targets: ["chat-tui"]),
        .executable(name: "chat-bench", targets: ["chat-bench"]),
        .executable(name: "chat-fuzz", targets: ["chat-fuzz"]),
        .executable(name: "chat-soak", targets: ["chat-soak"]),
    ],
    targets: [
        // The C declarations Swift's Glibc module leaves out (epoll, eventfd, accept4).
        .target(name: "CSystem"),
        // ncursesw, for the terminal front end; nothing links it but the curses layer. No
        // pkg-config: its flags (-D_DEFAULT_SOURCE -D_XOPEN_SOURCE=600) are ones SwiftPM warns of
        // as prohibited on every build; the shim defines what the headers need and the module
        // map links the library (Debian's libncursesw.so brings libtinfo with it).
        .systemLibrary(
            name: "CNcursesw",
            providers: [.apt(["libncurses-dev"])]
        ),
        // OpenSSL 3, for TLS on both sides (and, later, hashes and key derivation).
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        // SQLite, for the server's accounts (and history, later).
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .target(name: "IRCWire", swiftSettings: hotPath),
        .target(name: "ChatTransport", dependencies: ["IRCWire", "CSystem", "COpenSSL"], swiftSettings: hotPath),
        // The database: accounts with SCRAM credentials. No IRC logic.
        .target(name: "ChatStore", dependencies: ["CSQLite", "ChatTransport", "IRCWire"]),
        // The server-to-server protocol (InspIRCd's spanning tree, 1205) as pure values.
        .target(name: "ChatLink", dependencies: ["IRCWire"]),
        // HTTP/1.1 and WebSocket (RFC 6455) as pure codecs, for the web port (issue 27).
        // The page (`Page/`) is compiled in as bytes (`PackageResources`): nothing to install beside the binary.
        .target(name: "ChatWeb", dependencies: ["IRCWire", "ChatTransport"],
                exclude: ["Page/README.md"],
                resources: [.embedInCode("Page/index.html"), .embedInCode("Page/app.js"), .embedInCode("Page/style.css"),
                            .embedInCode("Page/sw.js"), .embedInCode("Page/manifest.webmanifest"),
                            .embedInCode("Page/icon-192.png"), .embedInCode("Page/icon-512.png")]),
        .target(name: "ChatServerKit", dependencies: ["IRCWire", "ChatTransport", "ChatStore", "ChatLink", "ChatWeb"], swiftSettings: hotPath),
        .target(name: "ChatClientKit", dependencies: ["IRCWire", "ChatTransport", "ChatStore"]),
        .target(name: "ChatUI", dependencies: ["ChatClientKit", "ChatTransport", "IRCWire"]),
        .target(name: "CursesTerminal", dependencies: ["CNcursesw", "ChatUI"]),
        .executableTarget(name: "chat-tui", dependencies: ["IRCWire", "ChatTransport", "ChatStore", "ChatLink", "ChatServerKit", "ChatClientKit", "ChatUI", "CursesTerminal"]),
        // The load generator for `make bench`: plain IRC on IRCWire and ChatTransport.
        .executableTarget(name: "chat-bench", dependencies: ["IRCWire", "ChatTransport", "ChatClientKit", "ChatUI"]),
        .executableTarget(name: "chat-soak", dependencies: ["IRCWire", "ChatTransport", "ChatStore", "ChatClientKit"]),
        // The fuzz targets: a corpus replayer and mutator as built here (make test), libFuzzer
        // with AddressSanitizer when make fuzz builds it with -sanitize=fuzzer,address -DFUZZING.
        .executableTarget(name: "chat-fuzz", dependencies: ["CSystem", "IRCWire", "ChatTransport", "ChatWeb", "ChatClientKit", "ChatLink"]),
        .testTarget(name: "IRCWireTests", dependencies: ["IRCWire"]),
        .testTarget(name: "ChatLinkTests", dependencies: ["ChatLink", "IRCWire"]),
        .testTarget(name: "ChatWebTests", dependencies: ["ChatWeb", "IRCWire", "ChatTransport"]),
        .testTarget(name: "ChatTransportTests", dependencies: ["ChatTransport", "IRCWire"]),
        .testTarget(name: "ChatStoreTests", dependencies: ["ChatStore", "ChatTransport", "IRCWire"]),
        // Helpers shared by the test targets: a line-level IRC client and a server on a free port.
        .target(name: "IRCTestSupport", dependencies: ["ChatServerKit", "ChatStore", "ChatTransport", "IRCWire"], path: "Tests/IRCTestSupport"),
        .testTarget(name: "ChatServerKitTests", dependencies: ["ChatServerKit", "ChatLink", "ChatTransport", "ChatStore", "IRCWire", "IRCTestSupport"]),
        .testTarget(name: "ChatUITests", dependencies: ["ChatUI", "ChatClientKit", "IRCWire"]),
        // The executable's own pure parts (the flags, the config file's network sections).
        .testTarget(name: "ChatTUITests", dependencies: ["chat-tui", "ChatServerKit"]),
        .testTarget(name: "ChatClientKitTests", dependencies: ["ChatClientKit", "ChatServerKit", "ChatStore", "ChatTransport", "IRCWire", "IRCTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
