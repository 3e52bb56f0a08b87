import TransportBase

/// How the url host becomes addresses to dial, as the reference client does it: the system
/// resolver (getaddrinfo: /etc/hosts, then the DNS servers of resolv.conf), OUTSIDE Tor, then
/// every loopback, unspecified, multicast, link-local and private address dropped
/// (docs/SECURITY.md says what this lookup reveals).
enum AddressResolution {
    /// The addresses of `host` in the resolver's order, filtered, with `port`. IP literals are
    /// not looked up. Throws when the lookup fails, passes `timeout`, or leaves nothing.
    static func resolve(host: String, port: UInt16, timeout: Duration) async throws(TransportError) -> [TransportEndpoint] {
        let candidates: [TransportEndpoint]
        if let literal = literal(host, port: port) {
            candidates = [literal]
        } else {
            candidates = try await systemLookup(host, port: port, timeout: timeout)
        }
        let usable = filter(candidates)
        guard !usable.isEmpty else {
            throw TransportError(code: .webtunnelNoUsableAddress, kind: .network,
                                 message: "the url host has no public address (loopback, private, link-local and multicast addresses are not dialled)")
        }
        return usable
    }

    static func literal(_ host: String, port: UInt16) -> TransportEndpoint? {
        if let bytes = WebtunnelOptions.ipv4Bytes(host) { return try? TransportEndpoint(ipv4: bytes, port: port) }
        if host.contains(":") { return try? TransportEndpoint(parsing: "[\(host)]:\(port)") }
        return nil
    }

    /// Go's net.IP checks, as getAddressesFromHostname applies them. IPv4-mapped IPv6 addresses
    /// are judged (and dialled) as the IPv4 address they carry.
    static func filter(_ endpoints: [TransportEndpoint]) -> [TransportEndpoint] {
        var seen = Set<TransportEndpoint>()
        var result: [TransportEndpoint] = []
        for endpoint in endpoints {
            var candidate = endpoint
            let bytes = endpoint.addressBytes
            if bytes.count == 16, bytes.prefix(10).allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF,
               let mapped = try? TransportEndpoint(ipv4: Array(bytes.suffix(4)), port: endpoint.port) {
                candidate = mapped
            }
            guard isDialable(candidate.addressBytes), seen.insert(candidate).inserted else { continue }
            result.append(candidate)
        }
        return result
    }

    static func isDialable(_ bytes: [UInt8]) -> Bool {
        if bytes.count == 4 {
            let loopback = bytes[0] == 127
            let unspecified = bytes == [0, 0, 0, 0]
            let multicast = bytes[0] >= 224 && bytes[0] <= 239
            let linkLocal = bytes[0] == 169 && bytes[1] == 254
            let privateUse = bytes[0] == 10 || (bytes[0] == 172 && bytes[1] & 0xF0 == 16) || (bytes[0] == 192 && bytes[1] == 168)
            return !(loopback || unspecified || multicast || linkLocal || privateUse)
        }
        guard bytes.count == 16 else { return false }
        let loopback = bytes == [UInt8](repeating: 0, count: 15) + [1]
        let unspecified = bytes.allSatisfy { $0 == 0 }
        let multicast = bytes[0] == 0xFF
        let linkLocal = bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80
        let privateUse = bytes[0] & 0xFE == 0xFC
        return !(loopback || unspecified || multicast || linkLocal || privateUse)
    }

    /// TransportBase's system lookup, its error under webtunnel's code (same kind and message,
    /// so webtunnel's errors and logs read as before the lookup moved down).
    private static func systemLookup(_ host: String, port: UInt16, timeout: Duration) async throws(TransportError) -> [TransportEndpoint] {
        do throws(TransportError) {
            return try await HostLookup.addresses(of: host, port: port, timeout: timeout, label: "the url host")
        } catch where error.code == .hostLookupFailed {
            throw TransportError(code: .webtunnelResolveFailed, kind: error.kind, message: error.message)
        }
    }
}
