#if canImport(Glibc)
import Glibc
#endif

/// One TCP socket as the kernel describes it (``SocketDiagnostics``, this process's network
/// namespace): its two ends, its state, the account that created it and its inode. The inode is how
/// a socket is matched to the process holding it (``ProcessDescriptors/holdsSocket(pid:inode:)``):
/// the kernel's word on who owns a loopback port, which a peer cannot forge the way it can answer
/// on a port.
public struct KernelTCPSocket: Hashable, Sendable {
    /// 4 bytes (IPv4) or 16 (IPv6), in network order.
    public let localAddress: [UInt8]
    public let localPort: UInt16
    public let remoteAddress: [UInt8]
    public let remotePort: UInt16
    /// The kernel's TCP state number (include/net/tcp_states.h).
    public let state: UInt8
    /// The effective uid of the process that created the socket (an accepted connection's is its
    /// listener's).
    public let uid: UInt32
    /// 0 for a socket no descriptor refers to any more (closing, or in TIME_WAIT).
    public let inode: UInt64

    public static let established: UInt8 = 0x01
    public static let listening: UInt8 = 0x0A

    public init(localAddress: [UInt8], localPort: UInt16, remoteAddress: [UInt8], remotePort: UInt16,
                state: UInt8, uid: UInt32, inode: UInt64) {
        self.localAddress = localAddress
        self.localPort = localPort
        self.remoteAddress = remoteAddress
        self.remotePort = remotePort
        self.state = state
        self.uid = uid
        self.inode = inode
    }

    public var isListening: Bool { state == Self.listening }

    /// Whether a connection to `address`:`port` (4 or 16 bytes) reaches this listener: the same
    /// address, or a wildcard bind of the same port (0.0.0.0 for IPv4; :: for both families, as a
    /// dual-stack socket also takes IPv4).
    public func accepts(address: [UInt8], port: UInt16) -> Bool {
        guard isListening, localPort == port else { return false }
        if localAddress == address { return true }
        if localAddress.allSatisfy({ $0 == 0 }) { return localAddress.count == 16 || address.count == 4 }
        // A tcp6 socket listed with an IPv4-mapped address (::ffff:a.b.c.d).
        if localAddress.count == 16, address.count == 4 {
            return localAddress.prefix(10).allSatisfy { $0 == 0 } && localAddress[10] == 0xFF && localAddress[11] == 0xFF
                && Array(localAddress.suffix(4)) == address
        }
        return false
    }

    /// Network-order bytes of an IPv4 or IPv6 literal; nil for anything else.
    public static func addressBytes(_ literal: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 { return withUnsafeBytes(of: v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, literal, &v6) == 1 { return withUnsafeBytes(of: v6) { Array($0) } }
        return nil
    }
}
