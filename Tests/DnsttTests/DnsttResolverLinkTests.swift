import Testing
import TransportBase
@testable import DnsttTransport

/// Which link a bridge line's resolver gets (DnsttTransport.resolverLink), before any query.
@Suite struct DnsttResolverLinkTests {
    /// A SOCKS5 upstream proxy carries no UDP: a `udp=` resolver is refused rather than reached
    /// around the proxy the user asked for. Nothing listens on the proxy's port; the refusal comes
    /// before any connection, and without the guard the same call returns a working UDP link (the
    /// direct case below), so this fails if the guard goes.
    @Test func udpResolverIsRefusedBehindAnUpstreamProxy() async throws {
        let context = DialContext(dialer: .through(try UpstreamProxy(parsing: "socks5://127.0.0.1:9")))
        do {
            let link = try await DnsttTransport.resolverLink(for: .udp(host: "127.0.0.53", port: 53), context: context,
                                                             resolveTimeout: .seconds(5))
            await link.close()
            Issue.record("a udp= resolver got a link behind an upstream proxy")
        } catch let error as TransportError {
            #expect(error.code == .unsupportedProxy)
            #expect(!error.message.contains("127.0.0.53"), "the error names the resolver: \(error.message)")
        }

        let direct = try await DnsttTransport.resolverLink(for: .udp(host: "127.0.0.53", port: 53), context: DialContext(),
                                                           resolveTimeout: .seconds(5))
        #expect(direct is UDPLink)
        await direct.close()
    }
}
