import Synchronization

/// Certificate chains that passed ServerCertificateVerifier's OpenSSL check a moment ago, per server
/// name and trust source, so that a transport dialling the same server again (webtunnel: every
/// tor channel; the snowflake broker; DoH) does not pay for the chain check again: it was 0.9 ms of
/// CPU in every webtunnel dial, most of what NSS added over the OpenSSL stream it replaced
/// (`postern-bench webtunnel`, docs/PERFORMANCE.md).
///
/// Only successes are kept, for at most ``lifetime``; the key is the chain's exact DER bytes, so a
/// different certificate (a censor's, a renewed one) is checked in full. NSS still checks the
/// handshake's signature with the leaf's key on every connection, so a cached chain vouches only
/// for a server that holds that key. What a cached entry can miss: the chain expiring, or the CA
/// file or system store changing, within its lifetime (at most 60 s late).
final class VerifiedChainCache: Sendable {
    static let shared = VerifiedChainCache()
    static let lifetime: Duration = .seconds(60)
    /// Entries kept; the oldest goes first.
    static let capacity = 32
    /// Chains longer than this are checked every time rather than held (real ones are a few kB).
    static let chainByteLimit = 16 * 1024

    struct Key: Hashable, Sendable {
        let name: String
        let nameIsIPAddress: Bool
        let caFile: String?
        /// SSL_CERT_FILE and SSL_CERT_DIR, which point OpenSSL at the system store.
        let systemStore: [String?]
        let chain: [UInt8]

        /// The same key with its chain in storage of the chain's own size: the verifier reads the
        /// chain into a larger buffer, which an entry would otherwise hold for its lifetime.
        func compacted() -> Key {
            Key(name: name, nameIsIPAddress: nameIsIPAddress, caFile: caFile, systemStore: systemStore,
                chain: chain.withUnsafeBufferPointer { [UInt8]($0) })
        }
    }

    private let entries = Mutex<[Key: ContinuousClock.Instant]>([:])

    /// Whether `key` verified less than ``lifetime`` before `now`.
    func contains(_ key: Key, now: ContinuousClock.Instant = .now) -> Bool {
        entries.withLock { entries in
            guard let verified = entries[key] else { return false }
            if now - verified < Self.lifetime { return true }
            entries[key] = nil
            return false
        }
    }

    /// Records that `key` verified at `now` (a chain over ``chainByteLimit`` is not kept).
    func insert(_ key: Key, now: ContinuousClock.Instant = .now) {
        guard key.chain.count <= Self.chainByteLimit else { return }
        entries.withLock { entries in
            if entries[key] == nil, entries.count >= Self.capacity {
                entries = entries.filter { now - $0.value < Self.lifetime }
                if entries.count >= Self.capacity, let oldest = entries.min(by: { $0.value < $1.value })?.key {
                    entries[oldest] = nil
                }
            }
            if entries[key] != nil {
                entries[key] = now
            } else {
                entries[key.compacted()] = now
            }
        }
    }

    var count: Int { entries.withLock { $0.count } }
}
