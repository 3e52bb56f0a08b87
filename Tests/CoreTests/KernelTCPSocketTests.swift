import Testing
import PosternSystem

/// Reading /proc/net/tcp and tcp6 as the kernel prints them (words in host order), and which
/// listeners take a connection to an endpoint: the ownership proofs of issue #24 rest on it.
struct KernelTCPSocketTests {
    static let ipv4Table = """
          sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
           0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1062 1 0000000018344f9d 100 0 0 10 0
           1: 0100007F:9A5A 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000018344f9d 100 0 0 10 0
           2: 0100007F:8FC0 0100007F:9A5A 01 00000000:00000000 03:000015DA 00000000  1000        0 4343 3 0000000004b23621
           3: garbage
        """
    static let ipv6Table = """
          sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
           0: 0000000000000000FFFF00000100007F:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000   998        0 77 1 0
           1: 00000000000000000000000001000000:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000   998        0 78 1 0
        """

    @Test func parsesTheKernelsTable() throws {
        let sockets = KernelTCPSocket.parse(table: Self.ipv4Table)
        #expect(sockets.count == 3, "the garbage line is skipped")
        let listener = try #require(sockets.first { $0.inode == 4242 })
        #expect(listener.localAddress == [127, 0, 0, 1] && listener.localPort == 39514 && listener.uid == 1000 && listener.isListening)
        let client = try #require(sockets.first { $0.inode == 4343 })
        #expect(client.state == KernelTCPSocket.established && client.remotePort == 39514 && client.localPort == 0x8FC0)
    }

    @Test func aListenerTakesItsAddressAndWildcardsTakeEveryAddress() throws {
        let loopback = try #require(KernelTCPSocket.addressBytes("127.0.0.1"))
        let v4 = KernelTCPSocket.parse(table: Self.ipv4Table)
        #expect(v4.filter { $0.accepts(address: loopback, port: 39514) }.map(\.inode) == [4242])
        #expect(v4.filter { $0.accepts(address: loopback, port: 0x07E8) }.map(\.inode) == [1062], "0.0.0.0 takes 127.0.0.1")
        #expect(v4.filter { $0.accepts(address: loopback, port: 0x8FC0) }.isEmpty, "a connected socket takes nothing")
        let v6 = KernelTCPSocket.parse(table: Self.ipv6Table)
        let v6Loopback = try #require(KernelTCPSocket.addressBytes("::1"))
        #expect(v6.filter { $0.accepts(address: loopback, port: 8080) }.map(\.inode) == [77], "::ffff:127.0.0.1")
        #expect(v6.filter { $0.accepts(address: v6Loopback, port: 8081) }.map(\.inode) == [78])
        #expect(!v6.contains { $0.accepts(address: loopback, port: 8081) }, "::1 does not take 127.0.0.1")
    }
}
