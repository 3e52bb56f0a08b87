internal import COpenSSL
import Synchronization

/// The OpenSSL trust stores ServerCertificateVerifier checks chains against, built once per trust
/// source and shared: loading the system store (Debian's ca-certificates bundle, ~150 roots) took
/// about 39 ms of CPU per handshake when every connection built its own (`postern-bench tls`,
/// docs/PERFORMANCE.md). An X509_STORE is safe for concurrent verifications once loaded.
///
/// Keyed by the extra CA file and the environment that points OpenSSL at the system store
/// (SSL_CERT_FILE, SSL_CERT_DIR), so a changed source gets a fresh store; at most `capacity`
/// stores are kept, and a store older than `maximumAge` is loaded again (a renewed system store or
/// CA file is read within that time).
enum TrustStoreCache {
    static let capacity = 8
    static let maximumAge: Duration = .seconds(600)

    private struct Key: Hashable {
        let caFile: String?
        let certificateFile: String?
        let certificateDirectory: String?
    }

    private struct Entry {
        let store: TrustStore
        let loaded: ContinuousClock.Instant
    }

    private static let entries = Mutex<[Key: Entry]>([:])

    /// The store for `caFile` plus the system's; a TrustStore failure when it cannot be read.
    static func store(caFile: String?) -> Result<TrustStore, TrustStore.Failure> {
        let key = Key(caFile: caFile, certificateFile: environment("SSL_CERT_FILE"), certificateDirectory: environment("SSL_CERT_DIR"))
        let now = ContinuousClock.now
        if let entry = entries.withLock({ $0[key] }), now - entry.loaded < maximumAge { return .success(entry.store) }
        // Loaded outside the lock: two first handshakes may both load; one store wins, both work.
        let loaded = TrustStore.load(caFile: caFile)
        if case .success(let store) = loaded {
            entries.withLock { entries in
                if entries.count >= capacity, let oldest = entries.min(by: { $0.value.loaded < $1.value.loaded })?.key {
                    entries[oldest] = nil
                }
                entries[key] = Entry(store: store, loaded: now)
            }
        }
        return loaded
    }

    static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}

/// One loaded X509_STORE: the only owner, freed in deinit (after the last verification holding
/// it has ended).
final class TrustStore: @unchecked Sendable {
    struct Failure: Error {
        let reason: String
    }

    let pointer: OpaquePointer

    private init(_ pointer: OpaquePointer) { self.pointer = pointer }

    deinit { X509_STORE_free(pointer) }

    static func load(caFile: String?) -> Result<TrustStore, Failure> {
        defer { ERR_clear_error() }
        guard let pointer = X509_STORE_new() else { return .failure(Failure(reason: "no memory for the trust store")) }
        let store = TrustStore(pointer)
        guard X509_STORE_set_default_paths(pointer) == 1 else { return .failure(Failure(reason: "the system trust store could not be read")) }
        if let caFile, X509_STORE_load_file(pointer, caFile) != 1 { return .failure(Failure(reason: "the CA file could not be read")) }
        return .success(store)
    }
}
