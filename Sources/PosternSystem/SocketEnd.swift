#if canImport(Glibc)
import Glibc
#endif

/// The two ends of a connected IPv4 or IPv6 socket, as the kernel's socket table names them: for
/// asking ``SocketDiagnostics`` about the other end of a loopback connection.
public enum SocketEnd {
    /// This socket's own address bytes (4 for IPv4, 16 for IPv6) and port.
    public static func local(of descriptor: Int32) -> (address: [UInt8], port: UInt16)? { end(of: descriptor, getsockname) }

    /// The connected peer's address bytes and port.
    public static func peer(of descriptor: Int32) -> (address: [UInt8], port: UInt16)? { end(of: descriptor, getpeername) }

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
