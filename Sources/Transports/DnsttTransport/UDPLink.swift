import TransportBase

// The plain-UDP resolver link (docs/plans/DNSTT.md §2, `udp=host:port`): one connected UDPSocket per
// session, one DNS message per datagram. Connected, so the kernel drops datagrams from any other
// source (stricter than the reference client, which reads any source). A response longer than
// UDPSocket.receiveCapacity (4096) is dropped whole by the socket, never handed on cut short.
//
// Sending never waits (a datagram the kernel cannot queue is dropped; KCP retransmits). The
// kernel's reports about the resolver (ICMP port or host unreachable for an earlier datagram) cost
// that datagram only: the link carries on, and the session's silence limit ends a session whose
// resolver never answers. Errors never name the resolver.

/// A ``ResolverLink`` over plain UDP (see the top of this file).
package final class UDPLink: ResolverLink {
    private let socket: UDPSocket

    /// A link on `socket`, which the link owns from here on.
    package init(socket: UDPSocket) {
        self.socket = socket
    }

    /// A link to the resolver at `resolver` (an address, not a name: the caller looks names up).
    package static func connect(to resolver: TransportEndpoint) throws(DnsttError) -> UDPLink {
        do {
            return UDPLink(socket: try UDPSocket.connect(to: resolver))
        } catch {
            throw DnsttError(code: .linkFailed, kind: .network, message: "could not open a UDP socket to the resolver (\(error.code))")
        }
    }

    /// Datagrams the socket dropped: longer than its receive capacity, or not sendable at once.
    package var droppedDatagrams: (truncated: Int, unsent: Int) { (socket.truncatedDatagrams, socket.droppedSends) }

    package func send(_ query: [UInt8]) async throws(DnsttError) {
        do {
            _ = try socket.send(query)
        } catch {
            throw Self.failure(error)
        }
    }

    package func receive() async throws(DnsttError) -> [UInt8]? {
        while true {
            do {
                return try await socket.receive()
            } catch {
                if socket.terminationReason != nil || error.code == .cancelled { return nil }
                if error.code == .connectionRefused || error.code == .hostUnreachable || error.code == .networkUnreachable {
                    continue  // a report about one earlier datagram; the socket stays usable
                }
                throw Self.failure(error)
            }
        }
    }

    package func close() async {
        socket.close()
    }

    /// The socket's error without its message (which a lower layer wrote): its code says enough.
    private static func failure(_ error: TransportError) -> DnsttError {
        DnsttError(code: .linkFailed, kind: error.kind == .timeout ? .timeout : .network,
                   message: "the UDP link to the resolver failed (\(error.code))")
    }
}
