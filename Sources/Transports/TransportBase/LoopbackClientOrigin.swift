import Glibc
import PosternSystem

/// Whether an accepted loopback connection was opened by this process. TCP has no peer
/// credentials (SO_PEERCRED is for Unix sockets), but both ends of a loopback connection are in
/// this network namespace's socket table: the client's end is the socket whose local end is our
/// peer and whose remote end is us, and its inode says whether one of our descriptors holds it.
/// A port or an address alone proves nothing: any local account can connect from anywhere.
enum LoopbackClientOrigin {
    /// False when the ends cannot be read or the client's socket is not found, not ours, or
    /// already closed by whoever opened it: the caller refuses.
    static func isThisProcess(_ connection: TCPSocket) -> Bool {
        guard let local = end(of: connection.descriptor, getsockname), let peer = end(of: connection.descriptor, getpeername) else {
            return false
        }
        let ourUID = UInt32(geteuid())
        guard let client = KernelTCPSocket.ipv4().first(where: {
            $0.localAddress == peer.address && $0.localPort == peer.port
                && $0.remoteAddress == local.address && $0.remotePort == local.port && !$0.isListening
        }) else { return false }
        // The uid first: a stranger's connection is refused without a walk through our descriptors.
        return client.uid == ourUID && ProcessDescriptors.holdsSocket(pid: 0, inode: client.inode)
    }

    private typealias NameCall = (Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?) -> Int32

    /// One end of an IPv4 connection (the PT listeners bind 127.0.0.1 only).
    private static func end(of descriptor: Int32, _ call: NameCall) -> (address: [UInt8], port: UInt16)? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(descriptor, $0, &length) }
        }
        guard result == 0, address.sin_family == sa_family_t(AF_INET) else { return nil }
        return (withUnsafeBytes(of: address.sin_addr) { Array($0) }, UInt16(bigEndian: address.sin_port))
    }
}
