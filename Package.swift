// swift-tools-version: 6.0
import PackageDescription

// The tor core (scripts/build-tor-core.sh, docs/TOR-CORE-PROVENANCE.md) and libnice's headers are
// reached through pkg-config files that script writes into the core's prefix (tor-embedded.pc,
// postern-nice.pc), never through -L/-I flags: SwiftPM refuses a versioned dependency whose targets
// carry unsafe build flags. PKG_CONFIG_PATH must name <prefix>/lib/pkgconfig (the Makefile and
// scripts/swift-env.sh set it for .deps/tor; for a dependent package see docs/TOR-CORE-PROVENANCE.md).
let package = Package(
    name: "Postern",
    // Linux only: Glibc, epoll and the in-process tor core; no Apple platform is declared because none
    // is supported.
    products: [
        .library(name: "PosternTor", targets: ["PosternTor"]),
        .library(name: "PosternLinkSpec", targets: ["PosternLinkSpec"]),
        .library(name: "BridgeConfig", targets: ["BridgeConfig"]),
        .library(name: "BridgeQR", targets: ["BridgeQR"]),
        .library(name: "PosternRuntime", targets: ["PosternRuntime"]),
        .library(name: "PosternAppLayer", targets: ["PosternAppLayer"]),
        .library(name: "PosternTrials", targets: ["PosternTrials"]),
        .executable(name: "postern", targets: ["postern"]),
    ],
    targets: [
        // The only C-facing module for tor: tor_api.h and the link line of the pinned build.
        .systemLibrary(name: "CTor", path: "Sources/CTor", pkgConfig: "tor-embedded"),
        // libsodium (Debian libsodium-dev) for the obfs4 primitives.
        .systemLibrary(name: "CSodium", path: "Sources/CSodium", pkgConfig: "libsodium",
                       providers: [.apt(["libsodium-dev"])]),
        // Linux epoll for the transports' socket event loop (not exported by Glibc).
        .systemLibrary(name: "CEpoll", path: "Sources/CEpoll"),
        // fork/exec of external transports with PR_SET_PDEATHSIG and their own process group.
        .systemLibrary(name: "CSpawn", path: "Sources/CSpawn"),

        // libqrencode (Debian libqrencode-dev) for BridgeQR (`postern bridges export --format qr`).
        .systemLibrary(name: "CQREncode", path: "Sources/CQREncode", pkgConfig: "libqrencode",
                       providers: [.apt(["libqrencode-dev"])]),
        // libcurl (Debian libcurl4-openssl-dev): HTTP(S) and the WebSocket byte stream through SOCKS5.
        // dlopened on the first request (Sources/CCurl/loader.c), so runs without one never map it.
        .target(name: "CCurl", path: "Sources/CCurl"),
        // libsecp256k1 (Debian libsecp256k1-dev): BIP-340 signatures and the NIP-44 ECDH.
        .systemLibrary(name: "CSecp256k1", path: "Sources/CSecp256k1", pkgConfig: "libsecp256k1",
                       providers: [.apt(["libsecp256k1-dev"])]),

        // zlib (Debian zlib1g-dev): inflating a gzip-encoded broker answer (SnowflakeTransport).
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),

        // libnghttp2 (Debian libnghttp2-dev): HTTP/2 framing, HPACK and flow control for TransportWire's
        // HTTP2Connection (the broker and AMP cache when the server picks h2, DNS over HTTPS).
        .systemLibrary(name: "CNghttp2", path: "Sources/CNghttp2", pkgConfig: "libnghttp2",
                       providers: [.apt(["libnghttp2-dev"])]),

        // One helper per low-level concern, below every other module: system calls retried on EINTR
        // with errno as a typed error, the one shape of the public error structs, signals via Dispatch.
        .target(name: "PosternSystem", path: "Sources/PosternSystem"),
        // The one place for digests (SHA-1 for WebSocket only, SHA-256, SHA-512, BLAKE2s in Swift), HMAC,
        // HKDF and randomness, X25519 and ChaCha20-Poly1305, and Noise NK (dnstt); libsodium initialised
        // once per process. PosternSystem for the shape of its errors.
        .target(name: "PosternCrypto", dependencies: ["PosternSystem", "CSodium"], path: "Sources/PosternCrypto"),
        // The transport vocabulary, below every transport and the settings store (as arti's tor-linkspec
        // and tor-ptmgr's transport names): transport names, bridge lines, addresses, fingerprints and
        // arguments, the argument-rules protocol, redaction.
        .target(name: "PosternLinkSpec", dependencies: ["PosternSystem"], path: "Sources/PosternLinkSpec"),
        // The settings store on the vocabulary: pastes, import and export, built-in bridges, plugin
        // records, custom Nostr relays.
        .target(name: "BridgeConfig", dependencies: ["PosternSystem", "PosternLinkSpec"], path: "Sources/BridgeConfig",
                resources: [.copy("Resources/builtin-bridges.json")]),
        // Bridge lines as a QR code (the JSON array bridges.torproject.org shares), for an app or the CLI.
        .target(name: "BridgeQR", dependencies: ["PosternSystem", "PosternLinkSpec", "CQREncode"], path: "Sources/BridgeQR"),
        // What the transports share on the wire: the byte-stream protocol, deadlines, the HTTP/1.1
        // response-head reader, WebSocket framing and handshake, the HTTP/2 client (CNghttp2). (TLS is
        // TransportTLS's.)
        .target(name: "TransportWire", dependencies: ["PosternSystem", "PosternCrypto", "CNghttp2"], path: "Sources/Transports/TransportWire"),
        .target(name: "TransportBase", dependencies: ["PosternSystem", "PosternLinkSpec", "TransportWire", "CEpoll", "CSpawn"], path: "Sources/Transports/TransportBase"),
        .target(name: "Obfs4Transport", dependencies: ["PosternSystem", "PosternCrypto", "PosternLinkSpec", "TransportBase", "TransportWire", "CSodium"],
                path: "Sources/Transports/Obfs4Transport"),
        // Turbo Tunnel's shared layers (snowflake and dnstt): the KCP engine and segments, smux v2 frames and
        // the client's stream state, the ClientID. Pure logic, no I/O.
        .target(name: "TurboTunnel", dependencies: ["PosternSystem"], path: "Sources/Transports/TurboTunnel"),
        // The dnstt client's codecs so far (issue #23): bridge-line rules and options, DNS messages, dnstt's
        // queries and responses, its Noise framing (Noise NK itself is PosternCrypto's). Not dialled yet.
        .target(name: "DnsttTransport", dependencies: ["PosternSystem", "PosternCrypto", "PosternLinkSpec", "TransportBase", "TransportWire", "TurboTunnel",
                                                     "TransportTLS"],
                path: "Sources/Transports/DnsttTransport"),
        // The snowflake client; its own byte streams inside, TransportBase's PluggableTransport outside.
        // HTTPS to the broker, its fronts and the AMP cache, and WebRTC's DTLS, through TransportTLS (NSS).
        .target(name: "SnowflakeTransport", dependencies: ["PosternSystem", "PosternCrypto", "PosternLinkSpec", "TransportBase", "TransportWire", "TransportTLS",
                                                           "TurboTunnel", "CNice", "CUsrsctp", "CSnowflakeLibraries", "CZlib"],
                path: "Sources/Transports/SnowflakeTransport"),
        // The webtunnel client: TLS (TransportTLS) and an HTTP/1.1 upgrade (TransportWire), then tor's bytes unframed.
        .target(name: "WebtunnelTransport", dependencies: ["PosternSystem", "PosternLinkSpec", "TransportBase", "TransportWire", "TransportTLS"],
                path: "Sources/Transports/WebtunnelTransport"),
        // libnice, GLib/GObject and usrsctp opened with dlopen on the first snowflake connection
        // (CNice and CUsrsctp declare them but link nothing), so other routes never map them.
        .target(name: "CSnowflakeLibraries", dependencies: ["CNice"], path: "Sources/CSnowflakeLibraries"),
        // libnice (Debian libnice-dev) for snowflake's ICE. Its include paths come from postern-nice.pc
        // rather than libnice's nice.pc, whose -pthread makes SwiftPM warn on every build.
        .systemLibrary(name: "CNice", path: "Sources/CNice", pkgConfig: "postern-nice"),
        // OpenSSL 3 (Debian libssl-dev) for TransportTLS's certificate checks
        // and hello parsing (no TLS client: every TLS connection is TransportTLS's, on NSS).
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL"),
        // usrsctp (Debian libusrsctp-dev) for snowflake's SCTP over DTLS.
        .systemLibrary(name: "CUsrsctp", path: "Sources/CUsrsctp"),
        // NSS 3.87 and NSPR (Debian libnss3-dev): Firefox's own TLS library, for TransportTLS's
        // browser-shaped handshakes (docs/TLS-LIBRARY-CHOICE.md).
        .systemLibrary(name: "CNSS", path: "Sources/CNSS", pkgConfig: "nss", providers: [.apt(["libnss3-dev"])]),
        // NSS started once per process, a memory I/O layer under its TLS, its experimental calls as plain functions.
        .target(name: "CNSSShim", dependencies: ["CNSS"], path: "Sources/CNSSShim"),
        // A TLS client shaped like a browser's (NSS) over any transport byte stream; certificates verified with OpenSSL.
        .target(name: "TransportTLS", dependencies: ["PosternSystem", "TransportBase", "TransportWire", "CNSS", "CNSSShim", "COpenSSL"],
                path: "Sources/Transports/TransportTLS"),
        // The tor embedding: tor_api (FFI), the control protocol, TorManager, configuration and its
        // option policy, readiness, status, the in-process PT listeners (TransportHost).
        .target(name: "PosternTor", dependencies: ["PosternSystem", "PosternCrypto", "CTor", "CSodium", "CSpawn", "PosternLinkSpec", "TransportBase"],
                path: "Sources/PosternTor"),
        // Connection assist: the route policy (selector, judge, memory, limits), its driver and the
        // session's runner, the probes; drives tor only through `TorControlling`.
        .target(name: "ConnectionAssist", dependencies: ["PosternSystem", "PosternCrypto", "PosternLinkSpec", "PosternTor", "TransportBase", "TransportWire",
                                                         "Obfs4Transport", "SnowflakeTransport"],
                path: "Sources/ConnectionAssist"),
        // The session an app embeds (settings, transports, connection assist,
        // live SETCONF, status), the bridge health check.
        .target(name: "PosternRuntime", dependencies: ["PosternSystem", "PosternCrypto", "PosternTor", "ConnectionAssist", "PosternLinkSpec", "BridgeConfig", "TransportBase", "TransportWire", "Obfs4Transport",
                                                       "SnowflakeTransport", "WebtunnelTransport", "DnsttTransport", "TransportTLS"],
                path: "Sources/PosternRuntime"),
        // The app layer on top of the session: HTTP(S) and WebSocket through
        // its SOCKS port (libcurl), Nostr relays and NIP-17, the geo relay directory.
        .target(name: "PosternAppLayer", dependencies: ["PosternSystem", "PosternCrypto", "PosternTor", "PosternRuntime", "BridgeConfig", "TransportBase", "TransportWire",
                                                        "CCurl", "CSecp256k1", "CSodium"],
                path: "Sources/PosternAppLayer"),
        // Statistics, box-plot SVG, sparklines and CSV for `postern ab` (pure, unit-tested).
        .target(name: "TrialAnalysis", path: "Sources/TrialAnalysis"),
        // The A/B trial runner: child `postern run`s, the probe download, harness errors kept apart,
        // typed results, the HTML report, OONI measurements and merges (`postern ab` renders them).
        .target(name: "PosternTrials", dependencies: ["PosternSystem", "PosternLinkSpec", "BridgeConfig", "TransportBase", "TransportWire", "TrialAnalysis"], path: "Sources/PosternTrials"),
        .executableTarget(name: "postern",
                          dependencies: ["PosternSystem", "PosternTor", "ConnectionAssist", "PosternLinkSpec", "BridgeConfig", "TransportBase", "Obfs4Transport", "SnowflakeTransport", "WebtunnelTransport", "BridgeQR",
                                         "TrialAnalysis", "PosternRuntime", "PosternAppLayer", "PosternTrials"],
                          path: "Sources/postern"),

        .testTarget(name: "BridgeConfigTests", dependencies: ["PosternLinkSpec", "BridgeConfig", "PosternRuntime", "BridgeStoreCrashWriter"],
                    path: "Tests/BridgeConfigTests", resources: [.copy("Corpus")]),
        // Helper process for the store's kill -9 and multi-process tests.
        .executableTarget(name: "BridgeStoreCrashWriter", dependencies: ["PosternLinkSpec", "BridgeConfig"], path: "Tests/BridgeStoreCrashWriter"),
        // Benchmarks against real peers: `swift run -c release postern-bench obfs4`. Not a product; the
        // obfs4 framing benchmark reaches Obfs4Transport's `package` API and libsodium directly; the TLS
        // handshake benchmark runs OpenSSL's client (COpenSSL) beside TransportTLS against s_server.
        .executableTarget(name: "postern-bench", dependencies: ["TransportBase", "TransportWire", "Obfs4Transport", "SnowflakeTransport", "TransportTestSupport",
                                                               "PosternCrypto", "CSodium", "TransportTLS", "COpenSSL", "PosternTestSupport"],
                          path: "Benchmarks/postern-bench"),
        // Real peers on loopback (obfs4proxy as a managed server, microsocks, a listener that keeps a
        // client's TLS hello) for tests and benchmarks.
        .target(name: "TransportTestSupport", dependencies: ["PosternSystem", "TransportBase"], path: "Tests/Support/TransportTestSupport"),
        .testTarget(name: "TransportTests", dependencies: ["PosternCrypto", "TransportBase", "TransportWire", "Obfs4Transport", "BridgeConfig", "TransportTestSupport", "PosternTestSupport"],
                    path: "Tests/TransportTests"),
        // TransportTLS against openssl s_server on loopback: handshake, the hello's JA4, profiles and randomized hellos, certificates, hostile servers.
        .testTarget(name: "TransportTLSTests", dependencies: ["TransportTLS", "TransportBase", "TransportWire", "PosternLinkSpec", "PosternTestSupport"], path: "Tests/TransportTLSTests"),
        .testTarget(name: "WebtunnelTests", dependencies: ["BridgeConfig", "WebtunnelTransport", "TransportBase", "TransportWire", "TransportTLS", "TransportTestSupport",
                                                       "PosternTestSupport"], path: "Tests/WebtunnelTests"),
        .testTarget(name: "SnowflakeTests", dependencies: ["PosternCrypto", "SnowflakeTransport", "TurboTunnel", "TransportBase", "TransportWire", "TransportTLS", "TransportTestSupport",
                                                       "PosternTestSupport"],
                    path: "Tests/SnowflakeTests",
                    resources: [.copy("Vectors")]),
        .testTarget(name: "CoreTests", dependencies: ["PosternSystem", "PosternCrypto", "PosternTor", "ConnectionAssist", "PosternRuntime", "PosternAppLayer", "BridgeConfig", "TransportWire", "TransportBase", "PosternLinkSpec", "PosternTestSupport"], path: "Tests/CoreTests",
                    exclude: ["Vectors"]),
        // Shared by the test targets: running our binary and scripts, and Python peers on loopback.
        .target(name: "PosternTestSupport", path: "Tests/Support/PosternTestSupport", exclude: ["Peers"]),
        // TurboTunnel alone: KCP engines against each other with dnstt's asymmetric MTUs, loss and caps.
        .testTarget(name: "TurboTunnelTests", dependencies: ["TurboTunnel"], path: "Tests/TurboTunnelTests"),
        // The dnstt codecs against the dnstt notes' §7 vectors (upstream dns.go, the Noise handshake) and Vectors/dnstt-go.json
        // (flynn/noise, kcp-go and the bed's DNS codec: Tests/Support/dnstt-testbed/vectors).
        .testTarget(name: "DnsttTests", dependencies: ["DnsttTransport", "PosternCrypto", "PosternLinkSpec", "TransportBase", "TransportTLS", "TurboTunnel",
                                                      "TransportWire", "PosternTestSupport", "TransportTestSupport"],
                    path: "Tests/DnsttTests", resources: [.copy("Vectors")]),
        .testTarget(name: "CLITests", dependencies: ["PosternTestSupport"], path: "Tests/CLITests"),
        // PosternCrypto alone: BLAKE2s against RFC 7693, Python's hashlib and OpenSSL (COpenSSL, the test's
        // oracle only), Noise NK against flynn/noise's vectors (Tests/Support/noise-vectors).
        .testTarget(name: "CryptoTests", dependencies: ["PosternCrypto", "PosternSystem", "COpenSSL"], path: "Tests/CryptoTests",
                    resources: [.copy("Vectors")]),
        .testTarget(name: "BridgeQRTests", dependencies: ["BridgeQR", "PosternLinkSpec", "BridgeConfig"], path: "Tests/BridgeQRTests"),
        .testTarget(name: "TrialAnalysisTests", dependencies: ["TrialAnalysis"], path: "Tests/TrialAnalysisTests"),
        // Results, report (rendered by rsvg-convert), OONI schema, merge; no network.
        .testTarget(name: "PosternTrialsTests", dependencies: ["PosternTrials", "PosternLinkSpec", "BridgeConfig", "PosternTestSupport", "TransportBase"], path: "Tests/PosternTrialsTests",
                    exclude: ["Schemas"]),
        .testTarget(name: "IntegrationTests", dependencies: ["PosternTor", "ConnectionAssist", "PosternRuntime", "PosternAppLayer", "PosternLinkSpec", "BridgeConfig", "TransportBase",
                                                             "Obfs4Transport", "PosternTestSupport",
                                                             "TransportTestSupport", "PosternTrials"],
                    path: "Tests/IntegrationTests"),
    ]
)

// libFuzzer targets, one executable per decoder (Fuzz/README.md). Every one is a main.swift that hands
// its check to FuzzSupport.runFuzzer; the C entry in Fuzz/Entry starts libFuzzer when the build used
// `-Xswiftc -sanitize=fuzzer` and otherwise replays the files named on the command line, so a plain
// `swift build` links them too. `make fuzz` and scripts/fuzz.sh build and run them all.
let fuzzTargets: [(name: String, dependencies: [Target.Dependency])] = [
    ("BridgeParserFuzzer", ["PosternLinkSpec", "BridgeConfig", "PosternRuntime"]),
    ("ControlReplyFuzzer", ["PosternTor", "ConnectionAssist"]),
    ("PTSocksFuzzer", ["TransportBase"]),
    ("PluginHandshakeFuzzer", ["TransportBase"]),
    ("Obfs4HandshakeFuzzer", ["Obfs4FuzzHarnesses"]),
    ("Obfs4FrameFuzzer", ["Obfs4FuzzHarnesses"]),
    ("Obfs4ClientHandshakeFuzzer", ["Obfs4FuzzHarnesses"]),
    ("Obfs4ClientSessionFuzzer", ["Obfs4FuzzHarnesses"]),
    ("SnowflakeEncapsulationFuzzer", ["SnowflakeTransport"]),
    ("KCPFuzzer", ["TurboTunnel"]),
    ("SmuxFuzzer", ["TurboTunnel"]),
    ("SDPFuzzer", ["SnowflakeTransport"]),
    ("BrokerResponseFuzzer", ["SnowflakeTransport"]),
    ("KCPControlBlockFuzzer", ["TurboTunnel"]),
    ("SmuxSessionFuzzer", ["TurboTunnel"]),
    ("BrokerHTTPResponseFuzzer", ["TransportWire"]),
    ("GeoRelayCSVFuzzer", ["PosternAppLayer"]),
    ("WebSocketFrameFuzzer", ["TransportWire"]),
    ("WebSocketHandshakeFuzzer", ["TransportWire"]),
    ("NostrMessageFuzzer", ["PosternAppLayer"]),
    ("WebtunnelUpgradeFuzzer", ["WebtunnelTransport", "TransportBase", "TransportWire"]),
    ("NoiseNKFuzzer", ["PosternCrypto"]),
    ("DnsMessageFuzzer", ["DnsttTransport"]),
    ("DnsttQueryFuzzer", ["DnsttTransport", "TurboTunnel"]),
    ("DnsttDownstreamFuzzer", ["DnsttTransport"]),
    ("NoiseFrameFuzzer", ["DnsttTransport", "PosternCrypto"]),
    ("DnsttSessionFuzzer", ["DnsttTransport", "PosternCrypto", "TurboTunnel"]),
    ("DoHResponseFuzzer", ["DnsttTransport", "TransportWire"]),
]
package.targets += [
    .target(name: "FuzzerEntry", path: "Fuzz/Entry"),
    .target(name: "FuzzSupport", dependencies: ["FuzzerEntry"], path: "Fuzz/Support"),
    // The obfs4 harnesses (three, one shared by two targets) over Obfs4Transport's `package` API.
    .target(name: "Obfs4FuzzHarnesses", dependencies: ["Obfs4Transport", "TransportBase", "PosternCrypto"], path: "Fuzz/Obfs4Harnesses"),
] + fuzzTargets.map { target in
    .executableTarget(name: target.name, dependencies: ["FuzzSupport"] + target.dependencies, path: "Fuzz/\(target.name)")
}
