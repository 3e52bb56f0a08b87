import Synchronization

/// TLS 1.3 session tickets, kept in this process's memory so that a later connection to the same
/// server resumes, as a browser does when it returns to a site: the hello adds pre_shared_key (a
/// fresh ECDHE share still goes with it, psk_dhe_ke, so forward secrecy holds), and the server
/// sends no certificate, which saves the certificate and CertificateVerify work
/// (docs/PERFORMANCE.md, "Instructions per handshake").
///
/// Each ticket is used once and then gone, as RFC 8446 appendix C.4 advises clients: its identity
/// crosses the wire in clear, so two hellos carrying the same one would tell an observer they
/// come from one client. NSS's token is opaque to Postern and holds the session's resumption
/// secret, so nothing here is ever written to disk or printed.
///
/// Bounded: at most ``keyLimit`` servers (the least recently stored dropped first),
/// ``tokensPerKey`` tickets each (the oldest dropped first), tokens of at most ``tokenByteLimit``
/// bytes, none kept past NSS's expiry for it or ``lifetimeLimit``.
final class ResumptionTokenCache: Sendable {
    /// What a ticket may be reused for: the same name, trust, hello recipe and ALPN list. The
    /// port is not known at this layer; a ticket offered to another server under the same name
    /// is refused by that server, which then completes a full handshake (certificate checked).
    struct Key: Hashable, Sendable {
        let serverName: String
        let sendsServerName: Bool
        let caFile: String?
        let profile: String
        let applicationProtocols: [String]
    }

    static let keyLimit = 64
    static let tokensPerKey = 4
    static let tokenByteLimit = 16 * 1024
    /// Microseconds (NSS's PRTime unit): a day, whatever lifetime a server grants.
    static let lifetimeLimit: Int64 = 24 * 3600 * 1_000_000

    /// The process's cache, shared by every BrowserTLSStream.
    static let shared = ResumptionTokenCache()

    private struct Token {
        var bytes: [UInt8]
        let expiry: Int64
    }

    private struct State {
        var tokens: [Key: [Token]] = [:]
        /// Keys by when a ticket was last stored for them, oldest first.
        var recency: [Key] = []
    }

    private let state = Mutex(State())

    /// The newest ticket for `key` still valid at `now` (microseconds since 1970), removed from the
    /// cache; expired ones for `key` are dropped on the way.
    func take(for key: Key, now: Int64) -> [UInt8]? {
        state.withLock { state in
            guard var tokens = state.tokens[key] else { return nil }
            tokens.removeAll { $0.expiry <= now }
            let token = tokens.popLast()
            if tokens.isEmpty {
                state.tokens[key] = nil
                state.recency.removeAll { $0 == key }
            } else {
                state.tokens[key] = tokens
            }
            return token?.bytes
        }
    }

    /// Keeps a ticket the server issued for a connection made with `key`. `expiry` is NSS's (0
    /// when it could not read the token, which is then not kept).
    func store(_ bytes: [UInt8], expiry: Int64, for key: Key, now: Int64) {
        guard !bytes.isEmpty, bytes.count <= Self.tokenByteLimit, expiry > now else { return }
        let token = Token(bytes: bytes, expiry: min(expiry, now + Self.lifetimeLimit))
        state.withLock { state in
            var tokens = state.tokens[key] ?? []
            tokens.removeAll { $0.expiry <= now }
            tokens.append(token)
            if tokens.count > Self.tokensPerKey { tokens.removeFirst(tokens.count - Self.tokensPerKey) }
            state.tokens[key] = tokens
            state.recency.removeAll { $0 == key }
            state.recency.append(key)
            while state.recency.count > Self.keyLimit {
                state.tokens[state.recency.removeFirst()] = nil
            }
        }
    }

    /// Tickets held for `key` (expired ones included until the next take or store).
    func count(for key: Key) -> Int { state.withLock { $0.tokens[key]?.count ?? 0 } }

    /// Servers with at least one ticket held.
    var keyCount: Int { state.withLock { $0.tokens.count } }
}
