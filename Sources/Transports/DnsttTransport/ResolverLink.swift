/// One way to a recursive resolver (UDP, DoT or DoH, docs/plans/DNSTT.md §2): DNS query messages go
/// out, DNS response messages come back in any order and unmatched (dnstt spec §8.6: the session
/// hands every parsed packet to KCP). A link never interprets the messages it carries.
package protocol ResolverLink: Sendable {
    /// Sends one DNS query message in wire format. Never waits on the resolver for long: a link that
    /// cannot take the query now drops it (KCP retransmits what mattered).
    func send(_ query: [UInt8]) async throws(DnsttError)
    /// The next DNS response message in wire format, or nil once the link has closed for good.
    func receive() async throws(DnsttError) -> [UInt8]?
    /// Closes the link; a pending `receive()` returns nil.
    func close() async
}
