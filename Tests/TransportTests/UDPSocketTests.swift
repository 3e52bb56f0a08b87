import Foundation
import Glibc
import Testing
@testable import TransportBase

/// UDPSocket against real datagram sockets on 127.0.0.0/8. The peers are plain blocking sockets
/// of the test (the smallest stand-in for a DNS resolver's UDP port: it only echoes or sends what
/// the test says), each read bounded by SO_RCVTIMEO.
/// The wall-clock bounds are generous on purpose: swift-testing runs this process's tests at once
/// on a cooperative pool of two threads, and CPU-bound tests beside these held every task back for
/// about 4.5 s in one CI run (even trivial tests took 4.4–5.6 s), so a 300 ms wait measured 5.7 s.
/// A receive that close or its deadline fails to end never returns: the time limit catches that.
@Suite(.timeLimit(.minutes(1))) struct UDPSocketTests {
    @Test func echoesOverLoopback() async throws {
        let peer = try DatagramPeer()
        let socket = try UDPSocket.connect(to: peer.endpoint)
        #expect(try socket.send(Array("hello resolver".utf8)))
        let (query, from) = try peer.receive()
        #expect(query == Array("hello resolver".utf8))
        #expect(from == socket.localEndpoint)
        try peer.send(query + Array(" and back".utf8), to: from)
        #expect(try await socket.receive(timeout: .seconds(5)) == Array("hello resolver and back".utf8))
        #expect(socket.counters.snapshot().bytesSent == 14)
        #expect(socket.counters.snapshot().bytesReceived == 23)
    }

    /// A datagram one byte over the cap is dropped whole and counted; one of exactly the cap and
    /// the empty datagram are delivered as sent.
    @Test func anOversizedDatagramIsDroppedAndCounted() async throws {
        let peer = try DatagramPeer()
        let socket = try UDPSocket.connect(to: peer.endpoint)
        let local = try #require(socket.localEndpoint)
        let exact = (0..<UDPSocket.receiveCapacity).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try peer.send([UInt8](repeating: 0xAB, count: UDPSocket.receiveCapacity + 1), to: local)
        try peer.send(exact, to: local)
        try peer.send([UInt8](repeating: 0xCD, count: 9000), to: local)
        try peer.send([], to: local)
        try peer.send(Array("after".utf8), to: local)
        #expect(try await socket.receive(timeout: .seconds(5)) == exact)
        #expect(try await socket.receive(timeout: .seconds(5)) == [])
        #expect(try await socket.receive(timeout: .seconds(5)) == Array("after".utf8))
        #expect(socket.truncatedDatagrams == 2)
        #expect(socket.counters.snapshot().bytesReceived == UDPSocket.receiveCapacity + 5)
    }

    /// Datagrams from another port on the peer's address and from another loopback address never
    /// reach the reader: the kernel drops them, since the socket is connected.
    @Test func aDatagramFromAnotherSourceIsNotDelivered() async throws {
        let peer = try DatagramPeer()
        let samePortElsewhere = try DatagramPeer()
        let otherAddress = try DatagramPeer(address: [127, 0, 0, 2])
        let socket = try UDPSocket.connect(to: peer.endpoint)
        let local = try #require(socket.localEndpoint)
        try samePortElsewhere.send(Array("forged 1".utf8), to: local)
        try otherAddress.send(Array("forged 2".utf8), to: local)
        try peer.send(Array("genuine".utf8), to: local)
        #expect(try await socket.receive(timeout: .seconds(5)) == Array("genuine".utf8))
        await #expect {
            _ = try await socket.receive(timeout: .milliseconds(300))
        } throws: { ($0 as? TransportError)?.code == .timedOut }
        #expect(socket.truncatedDatagrams == 0)
    }

    @Test func closeWakesAPendingReceive() async throws {
        let peer = try DatagramPeer()
        let socket = try UDPSocket.connect(to: peer.endpoint)
        let started = ContinuousClock.now
        let reader = Task { () async throws(TransportError) -> [UInt8] in try await socket.receive() }
        try await Task.sleep(for: .milliseconds(200))
        socket.close()
        let result = await reader.result
        #expect(ContinuousClock.now - started < .seconds(30))
        #expect(throws: TransportError.self) { try result.get() }
        if case .failure(let error) = result { #expect((error as? TransportError)?.code == .connectionClosed) }
        #expect(throws: TransportError.self) { try socket.send([1]) }
    }

    /// The deadline ends the receive with `timedOut`, not before it, and leaves the socket usable.
    @Test func aDeadlineFiresAndTheSocketStaysUsable() async throws {
        let peer = try DatagramPeer()
        let socket = try UDPSocket.connect(to: peer.endpoint)
        let started = ContinuousClock.now
        do {
            _ = try await socket.receive(timeout: .milliseconds(300))
            Issue.record("a receive with nothing to read returned")
        } catch {
            #expect(error.code == .timedOut)
            #expect(error.kind == .timeout)
        }
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(300))
        #expect(waited < .seconds(30))
        try peer.send(Array("late".utf8), to: try #require(socket.localEndpoint))
        #expect(try await socket.receive(timeout: .seconds(5)) == Array("late".utf8))
    }

    @Test func cancellingAReceiveEndsItAndLeavesTheSocketUsable() async throws {
        let peer = try DatagramPeer()
        let socket = try UDPSocket.connect(to: peer.endpoint)
        let reader = Task { () async throws(TransportError) -> [UInt8] in try await socket.receive() }
        try await Task.sleep(for: .milliseconds(200))
        reader.cancel()
        if case .failure(let error) = await reader.result {
            #expect((error as? TransportError)?.code == .cancelled)
        } else {
            Issue.record("a cancelled receive returned a datagram")
        }
        try peer.send(Array("still open".utf8), to: try #require(socket.localEndpoint))
        #expect(try await socket.receive(timeout: .seconds(5)) == Array("still open".utf8))
    }

    @Test func aSecondConcurrentReceiveIsRefused() async throws {
        let peer = try DatagramPeer()
        let socket = try UDPSocket.connect(to: peer.endpoint)
        let reader = Task { () async throws(TransportError) -> [UInt8] in try await socket.receive(timeout: .seconds(5)) }
        try await Task.sleep(for: .milliseconds(200))
        await #expect {
            _ = try await socket.receive(timeout: .seconds(1))
        } throws: { ($0 as? TransportError)?.code == .socketFailure }
        try peer.send(Array("first reader".utf8), to: try #require(socket.localEndpoint))
        #expect(try await reader.value == Array("first reader".utf8))
    }

    /// A port nobody listens on answers with ICMP port unreachable, which the connected socket
    /// reports on its next receive as a typed error; the socket stays usable.
    @Test func aClosedPortIsReportedAsRefused() async throws {
        let gone = try DatagramPeer()
        let endpoint = gone.endpoint
        gone.close()
        let socket = try UDPSocket.connect(to: endpoint)
        try socket.send(Array("anyone?".utf8))
        await #expect {
            _ = try await socket.receive(timeout: .seconds(5))
        } throws: { ($0 as? TransportError)?.code == .connectionRefused }
        await #expect {
            _ = try await socket.receive(timeout: .milliseconds(100))
        } throws: { ($0 as? TransportError)?.code == .timedOut }
    }

    @Test func aDatagramTooLargeForUDPIsATypedError() async throws {
        let peer = try DatagramPeer()
        let socket = try UDPSocket.connect(to: peer.endpoint)
        #expect {
            try socket.send([UInt8](repeating: 0, count: 70_000))
        } throws: { ($0 as? TransportError)?.code == .datagramTooLarge }
    }
}

/// A blocking UDP socket bound to a loopback address, the test's peer. Reads time out after 5 s.
private final class DatagramPeer: @unchecked Sendable {
    let descriptor: Int32
    let endpoint: TransportEndpoint
    private var closed = false

    init(address: [UInt8] = [127, 0, 0, 1]) throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw PeerError(what: "socket") }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var bound = sockaddr_in()
        bound.sin_family = sa_family_t(AF_INET)
        withUnsafeMutableBytes(of: &bound.sin_addr) { $0.copyBytes(from: address) }
        let bindResult = withUnsafePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bindResult == 0 else { Glibc.close(fd); throw PeerError(what: "bind") }
        var name = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &name) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        descriptor = fd
        endpoint = try TransportEndpoint(ipv4: address, port: UInt16(bigEndian: name.sin_port))
    }

    deinit { close() }

    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(descriptor)
    }

    func send(_ bytes: [UInt8], to destination: TransportEndpoint) throws {
        let sent = destination.withSockAddr { address, length in
            bytes.withUnsafeBytes { sendto(descriptor, $0.baseAddress, $0.count, 0, address, length) }
        }
        guard sent == bytes.count else { throw PeerError(what: "sendto") }
    }

    func receive() throws -> ([UInt8], TransportEndpoint) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        var from = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let count = withUnsafeMutablePointer(to: &from) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                buffer.withUnsafeMutableBytes { recvfrom(descriptor, $0.baseAddress, $0.count, 0, address, &length) }
            }
        }
        guard count >= 0 else { throw PeerError(what: "recvfrom") }
        let source = try TransportEndpoint(ipv4: withUnsafeBytes(of: from.sin_addr) { Array($0) }, port: UInt16(bigEndian: from.sin_port))
        return (Array(buffer.prefix(count)), source)
    }
}

private struct PeerError: Error {
    let what: String
}
