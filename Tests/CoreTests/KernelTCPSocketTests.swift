import Foundation
import Testing
import PosternSystem
import PosternTestSupport

/// The kernel's word on loopback sockets, asked over netlink sock_diag (issue #24, items 1 and 3):
/// one exact question names a connection's end with its uid and inode, whatever else the machine
/// holds; listeners come from a dump filtered by state in the kernel. The ownership proofs rest on it.
struct KernelTCPSocketTests {
    /// A connected client socket to `port` on 127.0.0.1 (blocking; loopback completes at once).
    private static func connect(to port: UInt16) throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { close(descriptor); throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return descriptor
    }

    private static func localPort(_ descriptor: Int32) -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) } }
        return UInt16(bigEndian: address.sin_port)
    }

    @Test func oneQuestionNamesOurConnectionsEndAndTheListenersAccount() throws {
        let listener = try HeldLoopbackPort()
        let client = try Self.connect(to: listener.port)
        defer { close(client) }
        let loopback: [UInt8] = [127, 0, 0, 1]
        let clientEnd = (address: loopback, port: Self.localPort(client))
        let found = try #require(try SocketDiagnostics.socket(local: clientEnd, remote: (loopback, listener.port)))
        #expect(found.state == KernelTCPSocket.established && found.uid == UInt32(geteuid()))
        #expect(ProcessDescriptors.holdsSocket(pid: 0, inode: found.inode), "the inode is not one of our descriptors")
        // The other end, still in the listener's queue, carries the listener's uid (ours).
        #expect(LoopbackServerAccount.failure(connected: client) == nil)
        // Ends nobody has are not found (the kernel's fallback to a listener on the port is not taken).
        #expect(try SocketDiagnostics.socket(local: (loopback, listener.port), remote: (loopback, 1)) == nil)
    }

    /// The same over IPv6 ([::1] is a SOCKS endpoint `postern run` may be given).
    @Test func theServersEndOfAnIPv6ConnectionIsOurs() throws {
        let flags = Int32(SOCK_STREAM.rawValue)
        let listener = socket(AF_INET6, flags, 0), client = socket(AF_INET6, flags, 0)
        defer { close(listener); close(client) }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_loopback
        var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        let connected = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 1) == 0 && getsockname(listener, $0, &length) == 0
                    && Glibc.connect(client, $0, length) == 0
            }
        }
        try #require(connected, "no IPv6 loopback here: \(String(cString: strerror(errno)))")
        #expect(LoopbackServerAccount.failure(connected: client) == nil)
        #expect(LoopbackServerAccount.failure(connected: client, uid: UInt32(geteuid()) &+ 1)?.contains("uid") == true,
                "another uid's listener was taken for ours")
        let v6Loopback = try #require(KernelTCPSocket.addressBytes("::1"))
        let found = try SocketDiagnostics.listeners { $0.accepts(address: v6Loopback, port: UInt16(bigEndian: address.sin6_port)) }
        #expect(found.count == 1 && found.first?.uid == UInt32(geteuid()), "\(found)")
    }

    @Test func listenersAreFoundByTheAddressTheyTake() throws {
        let listener = try HeldLoopbackPort()
        let loopback: [UInt8] = [127, 0, 0, 1]
        let found = try SocketDiagnostics.listeners { $0.accepts(address: loopback, port: listener.port) }
        #expect(found.count == 1 && found.first?.uid == UInt32(geteuid()), "\(found)")
        #expect(found.allSatisfy { ProcessDescriptors.holdsSocket(pid: 0, inode: $0.inode) })
    }

    @Test func aListenerTakesItsAddressAndWildcardsTakeEveryAddress() throws {
        func listening(_ address: String, _ port: UInt16) throws -> KernelTCPSocket {
            let bytes = try #require(KernelTCPSocket.addressBytes(address))
            return KernelTCPSocket(localAddress: bytes, localPort: port, remoteAddress: [UInt8](repeating: 0, count: bytes.count),
                                   remotePort: 0, state: KernelTCPSocket.listening, uid: 0, inode: 1)
        }
        let loopback = try #require(KernelTCPSocket.addressBytes("127.0.0.1"))
        let v6Loopback = try #require(KernelTCPSocket.addressBytes("::1"))
        #expect(try listening("127.0.0.1", 9050).accepts(address: loopback, port: 9050))
        #expect(try !listening("127.0.0.1", 9050).accepts(address: loopback, port: 9051))
        #expect(try listening("0.0.0.0", 9050).accepts(address: loopback, port: 9050), "0.0.0.0 takes 127.0.0.1")
        #expect(try !listening("0.0.0.0", 9050).accepts(address: v6Loopback, port: 9050))
        #expect(try listening("::", 9050).accepts(address: loopback, port: 9050), ":: may be dual-stack")
        #expect(try listening("::", 9050).accepts(address: v6Loopback, port: 9050))
        #expect(try listening("::ffff:127.0.0.1", 9050).accepts(address: loopback, port: 9050))
        #expect(try !listening("::1", 9050).accepts(address: loopback, port: 9050), "::1 does not take 127.0.0.1")
        let connected = KernelTCPSocket(localAddress: loopback, localPort: 9050, remoteAddress: loopback, remotePort: 40000,
                                        state: KernelTCPSocket.established, uid: 0, inode: 2)
        #expect(!connected.accepts(address: loopback, port: 9050), "a connected socket takes nothing")
    }
}
