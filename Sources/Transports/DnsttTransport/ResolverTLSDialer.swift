import TransportBase
import TransportTLS

/// TCP then TLS to a DoT or DoH resolver: the host name through the system's lookup (TransportBase's
/// HostLookup, outside Tor), TCP through the transports' dialer (so an upstream proxy is honoured and
/// the flow ledger sees the connection), and TLS with Firefox ESR's ClientHello (TransportTLS's
/// BrowserTLSStream). SNI is the host name; an IP literal is checked against the certificate's
/// addresses and never sent (BrowserTLSConfiguration). Deadlines as docs/plans/DNSTT.md §2: lookup
/// and TCP connect 30 s each, the TLS handshake 20 s.
struct ResolverTLSDialer: Sendable {
    static let lookupTimeout: Duration = .seconds(30)
    static let connectTimeout: Duration = .seconds(30)
    static let handshakeTimeout: Duration = .seconds(20)
    /// Addresses of one name tried in turn at most (a name may resolve to many).
    static let maximumAddressesTried = 4

    /// Name or IP literal (an IPv6 literal with or without brackets).
    let host: String
    let port: UInt16
    let dialer: OutboundDialer
    /// ALPN offered, in order (empty: no ALPN extension).
    let applicationProtocols: [String]
    /// PEM CA certificates trusted besides the system's (the test bed's CA).
    let caFile: String?
    let profile: BrowserTLSProfile

    private var bareHost: String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    /// A TLS stream to the resolver. Errors say which step failed, never the host.
    func connect() async throws(DnsttError) -> BrowserTLSStream {
        let addresses: [TransportEndpoint]
        do {
            addresses = try await HostLookup.addresses(of: bareHost, port: port, timeout: Self.lookupTimeout, label: "the resolver")
        } catch {
            throw DnsttError(code: .resolverLookupFailed, kind: error.kind == .timeout ? .timeout : .network,
                             message: "looking up the resolver failed (\(error.code.rawValue))")
        }
        guard !addresses.isEmpty else {
            throw DnsttError(code: .resolverLookupFailed, kind: .network, message: "the system resolver returned no address for the resolver")
        }
        var socket: TCPSocket?
        var lastCode = "none"
        for address in addresses.prefix(Self.maximumAddressesTried) {
            do {
                socket = try await dialer.connect(to: address, timeout: Self.connectTimeout)
                break
            } catch {
                // Only the code: a connect error's message may name the address.
                lastCode = (error as? TransportError)?.code.rawValue ?? "error"
                if Task.isCancelled { break }
            }
        }
        guard let socket else {
            throw DnsttError(code: .resolverConnectFailed, kind: .network,
                             message: "no address of the resolver accepted a TCP connection (\(min(addresses.count, Self.maximumAddressesTried)) tried; last: \(lastCode))")
        }
        do {
            return try await BrowserTLSStream.handshake(over: socket, configuration: BrowserTLSConfiguration(
                serverName: bareHost, applicationProtocols: applicationProtocols, profile: profile, caFile: caFile,
                handshakeTimeout: Self.handshakeTimeout))
        } catch {
            socket.close()
            // The code says what went wrong (certificate rejected, timed out, refused record); the
            // message is left out because a certificate rejection names the host.
            throw DnsttError(code: .resolverTLSFailed, kind: error.kind == .timeout ? .timeout : .protocolViolation,
                             message: "the TLS handshake with the resolver failed (\(error.code.rawValue))")
        }
    }
}
