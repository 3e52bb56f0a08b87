#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Turns a bridge line's options into data channels: one call is one rendezvous with the broker
/// and one WebRTC connection to the proxy it assigns. A session uses it as its dialer, so a lost
/// proxy is replaced by a fresh rendezvous.
public struct SnowflakeDialer: Sendable {
    public let options: SnowflakeOptions
    public let connector: any SnowflakeStreamConnector
    /// Addresses to gather host candidates on; empty lets libnice pick the interfaces.
    public let localAddresses: [String]
    /// Keep private, loopback and link-local host candidates in the offer (the reference client's
    /// -keep-local-addresses; the test bed needs it).
    public let keepLocalAddresses: Bool
    /// How long to keep asking while the broker has no free proxy (the reference client's session
    /// waits for its pool, which retries every 10 s; we ask every 2 s).
    public let proxyPatience: Duration

    public init(options: SnowflakeOptions, connector: any SnowflakeStreamConnector, localAddresses: [String] = [],
                keepLocalAddresses: Bool = false, proxyPatience: Duration = .seconds(60)) {
        self.options = options
        self.connector = connector
        self.localAddresses = localAddresses
        self.keepLocalAddresses = keepLocalAddresses
        self.proxyPatience = proxyPatience
    }

    public func dial() async throws -> WebRTCDataChannel {
        let rendezvous: BrokerRendezvous
        let viaAMPCache: Bool
        switch options.rendezvous {
        case .http(let endpoint):
            rendezvous = BrokerRendezvous(endpoint: endpoint, connector: connector)
            viaAMPCache = false
        case .ampCache(let endpoint, let cache):
            rendezvous = BrokerRendezvous(endpoint: endpoint, connector: connector, ampCache: cache)
            viaAMPCache = true
        }
        var generator = SystemRandomNumberGenerator()
        // libnice takes one STUN server, by IP: the first of the selection that resolves.
        var stun: (ip: String, port: UInt16)?
        for server in options.selectedSTUNServers(using: &generator) {
            if let ip = resolveIPv4(server.host) {
                stun = (ip, server.port)
                break
            }
        }
        let keep = keepLocalAddresses
        let patience = proxyPatience
        return try await WebRTCDataChannel.dial(
            rendezvous: rendezvous, fingerprint: options.fingerprint, stunServer: stun, localAddresses: localAddresses,
            candidateFilter: { keep || !isLocalHostCandidate($0) },
            poll: { rendezvous, request in
                let start = ContinuousClock.now
                while true {
                    let response = viaAMPCache ? try await rendezvous.exchangeAMP(request) : try await rendezvous.exchange(request)
                    guard response == .error(ClientPollResponse.noProxies), ContinuousClock.now - start < patience else {
                        return response
                    }
                    try await Task.sleep(for: .seconds(2))
                }
            })
    }
}

/// A host candidate whose address is private (RFC 1918), CGNAT (100.64/10), loopback, link-local
/// or unspecified: the reference client leaves these out of its offer. IPv6 ULA and link-local
/// too.
public func isLocalHostCandidate(_ candidate: ICECandidate) -> Bool {
    guard candidate.type == "host" else { return false }
    let address = candidate.address
    if address.contains(":") {
        let lower = address.lowercased()
        return lower == "::" || lower == "::1" || lower.hasPrefix("fe80:") || lower.hasPrefix("fc") || lower.hasPrefix("fd")
    }
    let octets = address.split(separator: ".").compactMap { UInt8($0) }
    guard octets.count == 4 else { return false }
    switch (octets[0], octets[1]) {
    case (10, _), (127, _), (0, _): return true
    case (172, 16...31), (192, 168), (169, 254): return true
    case (100, 64...127): return true
    default: return false
    }
}

/// The first IPv4 address of `host` (an IP literal is returned as is); nil when it does not resolve.
func resolveIPv4(_ host: String) -> String? {
    var hints = addrinfo()
    hints.ai_family = AF_INET
    hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
    var list: UnsafeMutablePointer<addrinfo>?
    guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return nil }
    defer { freeaddrinfo(list) }
    var buffer = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
    let ok = first.pointee.ai_addr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address -> Bool in
        var inAddress = address.pointee.sin_addr
        return inet_ntop(AF_INET, &inAddress, &buffer, socklen_t(buffer.count)) != nil
    }
    guard ok else { return nil }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
