#if canImport(Glibc)
import Glibc
#endif

/// One TCP socket as the kernel lists it in /proc/self/net/tcp and tcp6 (this process's network
/// namespace): its two ends, its state, the account that created it and its inode. The inode is how
/// a socket is matched to the process holding it (``ProcessDescriptors/holdsSocket(pid:inode:)``):
/// the kernel's word on who owns a loopback port, which a peer cannot forge the way it can answer
/// on a port.
public struct KernelTCPSocket: Hashable, Sendable {
    /// 4 bytes (tcp) or 16 (tcp6), in network order.
    public let localAddress: [UInt8]
    public let localPort: UInt16
    public let remoteAddress: [UInt8]
    public let remotePort: UInt16
    /// The kernel's TCP state number (include/net/tcp_states.h).
    public let state: UInt8
    /// The effective uid of the process that created the socket.
    public let uid: UInt32
    /// 0 for a socket no descriptor refers to any more (closing, or waiting in an accept queue).
    public let inode: UInt64

    public static let established: UInt8 = 0x01
    public static let listening: UInt8 = 0x0A

    public var isListening: Bool { state == Self.listening }

    /// Every TCP socket of this network namespace; an empty list when /proc cannot be read (a
    /// caller proving ownership then finds nothing and refuses).
    public static func all() -> [KernelTCPSocket] { read(["/proc/self/net/tcp", "/proc/self/net/tcp6"]) }

    /// The IPv4 sockets only (half the reading, for a check run on every accepted connection).
    public static func ipv4() -> [KernelTCPSocket] { read(["/proc/self/net/tcp"]) }

    private static func read(_ paths: [String]) -> [KernelTCPSocket] {
        var sockets: [KernelTCPSocket] = []
        for path in paths {
            guard let text = ProcessDescriptors.readWholeFile(path, limit: maximumTableBytes) else { continue }
            sockets += parse(table: text)
        }
        return sockets
    }

    /// A table of /proc/net/tcp's form (a header line, then one socket a line). Lines that do not
    /// parse are skipped: the caller looks for a socket and does not find it.
    public static func parse(table: String) -> [KernelTCPSocket] {
        table.split(separator: "\n").dropFirst().compactMap { KernelTCPSocket(line: $0) }
    }

    /// "sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...", addresses as hex words.
    init?(line: Substring) {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 10,
              let local = Self.endpoint(fields[1]), let remote = Self.endpoint(fields[2]),
              let state = UInt8(fields[3], radix: 16), let uid = UInt32(fields[7]), let inode = UInt64(fields[9]) else { return nil }
        (localAddress, localPort) = local
        (remoteAddress, remotePort) = remote
        self.state = state
        self.uid = uid
        self.inode = inode
    }

    /// "0100007F:9A5A": the address as 32-bit words the kernel printed in host order (so their bytes
    /// in memory here are the network-order bytes), then the port.
    private static func endpoint(_ text: Substring) -> ([UInt8], UInt16)? {
        let parts = text.split(separator: ":")
        guard parts.count == 2, let port = UInt16(parts[1], radix: 16),
              parts[0].count == 8 || parts[0].count == 32 else { return nil }
        var bytes: [UInt8] = []
        var rest = parts[0]
        while !rest.isEmpty {
            guard let word = UInt32(rest.prefix(8), radix: 16) else { return nil }
            withUnsafeBytes(of: word) { bytes += $0 }
            rest = rest.dropFirst(8)
        }
        return (bytes, port)
    }

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

    /// /proc/net/tcp is about 150 bytes a socket: this is room for some 100 000 sockets.
    static let maximumTableBytes = 16 << 20
}
