#if canImport(Glibc)
import Glibc
#endif

/// Which account accepted a loopback connection we made: the kernel's socket whose local end is
/// our peer and whose remote end is us (``SocketDiagnostics``) carries the uid of the listener that
/// accepted it. Asked on a connected socket before anything is sent, it closes the gap between
/// proving who listens on a port and connecting to it: if the listener died and another account
/// took the port in between, the connection is that account's, and this says so.
public enum LoopbackServerAccount {
    /// Why the server end of `descriptor`'s connection is not proven to be `uid`'s; nil when it is.
    /// The server's accepted socket can appear a moment after our connect returns (the last ACK is
    /// still being processed), so it is asked for again until `deadline`.
    public static func failure(connected descriptor: Int32, uid: UInt32 = UInt32(geteuid()),
                               deadline: Duration = SocketDiagnostics.deadline) -> String? {
        guard let ours = end(of: descriptor, getsockname), let peer = end(of: descriptor, getpeername) else {
            return "the connection's ends cannot be read"
        }
        let end = ContinuousClock.now + deadline
        while true {
            let server: KernelTCPSocket?
            do {
                server = try SocketDiagnostics.socket(local: peer, remote: ours)
            } catch {
                return "the kernel's socket table cannot be asked: \(error)"
            }
            if let server, server.state == KernelTCPSocket.established {
                return server.uid == uid ? nil : "the listener that accepted the connection is uid \(server.uid)'s"
            }
            guard ContinuousClock.now < end else { return "the server's end of the connection was not found" }
            usleep(1000)
        }
    }

    private typealias NameCall = (Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?) -> Int32

    /// One end of an IPv4 or IPv6 connection (an IPv4-mapped IPv6 end is read as IPv4, as the
    /// kernel lists such a connection among the IPv4 ones).
    private static func end(of descriptor: Int32, _ call: NameCall) -> (address: [UInt8], port: UInt16)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(descriptor, $0, &length) }
        }
        guard result == 0 else { return nil }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafeBytes(of: storage) { raw in
                let address = raw.loadUnaligned(as: sockaddr_in.self)
                return (withUnsafeBytes(of: address.sin_addr) { Array($0) }, UInt16(bigEndian: address.sin_port))
            }
        case AF_INET6:
            return withUnsafeBytes(of: storage) { raw in
                let address = raw.loadUnaligned(as: sockaddr_in6.self)
                let bytes = withUnsafeBytes(of: address.sin6_addr) { Array($0) }
                let port = UInt16(bigEndian: address.sin6_port)
                let mapped = bytes.prefix(10).allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
                return (mapped ? Array(bytes.suffix(4)) : bytes, port)
            }
        default:
            return nil
        }
    }
}
