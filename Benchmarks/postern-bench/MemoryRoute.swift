/// One route `postern-bench memory` measures: `postern run` with one of the test bed's bridge
/// lines, and the stock pair through the same line when there is one to run.
struct MemoryRoute {
    /// In the RESULT line: "obfs4", "snowflake", "dnstt-udp", "dnstt-doh".
    let name: String
    /// `postern run --transport`.
    let transport: String
    /// The bed's line, given to `postern run` in a 0600 file (it is a secret: never argv).
    let bridge: String
    /// Added to the benchmark's environment for `postern run` (SSL_CERT_FILE for DoH).
    let posternEnvironment: [String: String]
    /// nil: no stock client to compare with; `missingPeer` says why, and the figures print alone.
    let peer: MemoryPeer?
    let missingPeer: String
}
