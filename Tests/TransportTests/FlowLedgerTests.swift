import Foundation
import Glibc
import PosternTestSupport
import Testing
@testable import TransportBase

/// What a dialer reports about each connection it opened: connection assist's evidence
/// (docs/plans/CENSOR-AWARE-ASSIST.md). Real sockets on 127.0.0.1, peers that answer, reset, close
/// or refuse.
@Suite struct FlowLedgerTests {
    /// A listener whose first connection gets `peer`.
    private func listener(_ peer: @escaping @Sendable (TCPSocket) async throws -> Void) throws -> LoopbackListener {
        let listener = try LoopbackListener()
        Task {
            guard let connection = try? await listener.accept() else { return }
            try? await peer(connection)
        }
        return listener
    }

    private func dialer(_ ledger: FlowLedger, _ origin: FlowOrigin = .probe) -> OutboundDialer {
        OutboundDialer.direct.reporting(to: ledger, as: origin)
    }

    @Test func aConnectionThatCarriedBytesReportsThemWhenItCloses() async throws {
        let server = try listener { connection in
            let bytes = try await connection.read(maximumCount: 1000)
            try await connection.write(bytes + bytes)
            try await Task.sleep(for: .seconds(5))
        }
        defer { server.close() }
        let ledger = FlowLedger()
        let socket = try await dialer(ledger).connect(to: server.endpoint, timeout: .seconds(5))
        try await socket.write([UInt8](repeating: 7, count: 100))
        var received = 0
        while received < 200 { received += try await socket.read(maximumCount: 1000).count }
        let open = ledger.openFlows()
        #expect(open.count == 1)
        #expect(open.first?.isOpen == true)
        #expect(open.first?.counts.bytesReceived == 200)
        socket.close()
        #expect(ledger.openFlows().isEmpty)
        let report = try #require(ledger.finishedFlows().first)
        #expect(ledger.finishedFlows().count == 1)
        #expect(report.origin == .probe)
        #expect(report.peer == server.endpoint)
        #expect(report.connected)
        #expect(report.counts.bytesSent == 100)
        #expect(report.counts.bytesReceived == 200)
        let connected = try #require(report.counts.connectedAfter)
        let firstWrite = try #require(report.counts.firstWriteAfter)
        let lastRead = try #require(report.counts.lastReadAfter)
        #expect(connected <= firstWrite && firstWrite <= lastRead && lastRead <= report.counts.age)
        #expect(report.error?.code == .connectionClosed)  // our own close
        #expect(!report.endedByPeer)
        // The address is a bridge's: never in the text.
        #expect(!report.description.contains("127.0.0.1"))
        #expect(!report.description.contains("\(server.port)"))
    }

    @Test func aRefusedConnectIsReportedAsNeverConnected() async throws {
        let closedPort = try HeldLoopbackPort(listening: false)
        let ledger = FlowLedger()
        await #expect(throws: TransportError.self) {
            _ = try await dialer(ledger).connect(to: try TransportEndpoint(parsing: "127.0.0.1:\(closedPort.port)"), timeout: .seconds(5))
        }
        let report = try #require(ledger.finishedFlows().first)
        #expect(!report.connected)
        #expect(report.error?.code == .connectionRefused)
        #expect(report.counts.bytesSent == 0)
        #expect(ledger.openFlows().isEmpty)
    }

    @Test func aResetAfterTheFirstPacketShowsBytesSentAndNoneBack() async throws {
        let server = try listener { connection in
            _ = try await connection.read(maximumCount: 1000)
            // No close(): its shutdown would send a FIN. The descriptor's close in deinit, with
            // SO_LINGER 0, sends the RST.
            connection.resetOnClose()
        }
        defer { server.close() }
        let ledger = FlowLedger()
        let socket = try await dialer(ledger, .transport).connect(to: server.endpoint, timeout: .seconds(5))
        try await socket.write([UInt8](repeating: 0x9c, count: 300))
        await #expect(throws: TransportError.self) {
            while try await !socket.read(maximumCount: 1000).isEmpty {}
        }
        let report = try #require(ledger.finishedFlows().first)
        #expect(report.error?.code == .connectionReset)
        #expect(report.counts.bytesSent == 300)
        #expect(report.counts.bytesReceived == 0)
        #expect(report.counts.lastReadAfter == nil)
        socket.close()
        #expect(ledger.finishedFlows().count == 1)  // the end is reported once
    }

    @Test func aPeersCloseIsReportedAsEndedByThePeer() async throws {
        let server = try listener { connection in
            try await connection.write(Array("hello".utf8))
            connection.close()
        }
        defer { server.close() }
        let ledger = FlowLedger()
        let socket = try await dialer(ledger).connect(to: server.endpoint, timeout: .seconds(5))
        defer { socket.close() }
        var all: [UInt8] = []
        while true {
            let chunk = try await socket.read(maximumCount: 100)
            if chunk.isEmpty { break }
            all += chunk
        }
        let report = try #require(ledger.finishedFlows().first)
        #expect(report.endedByPeer)
        #expect(report.error == nil)
        #expect(report.counts.bytesReceived == 5)
    }

    @Test func aPlainSocketReportsNothingButStillCounts() async throws {
        let server = try listener { connection in try await connection.write([1, 2, 3]) }
        defer { server.close() }
        let socket = try await TCPSocket.connect(to: server.endpoint, timeout: .seconds(5))
        defer { socket.close() }
        _ = try await socket.read(maximumCount: 10)
        #expect(socket.counters.snapshot().bytesReceived == 3)
    }

    @Test func theLedgerKeepsOnlyItsCapacityOfFinishedFlows() async throws {
        let ledger = FlowLedger()
        let closedPort = try HeldLoopbackPort(listening: false)
        let endpoint = try TransportEndpoint(parsing: "127.0.0.1:\(closedPort.port)")
        for _ in 0..<(FlowLedger.capacity + 10) {
            _ = try? await dialer(ledger).connect(to: endpoint, timeout: .seconds(5))
        }
        #expect(ledger.finishedFlows().count == FlowLedger.capacity)
    }
}

extension TCPSocket {
    /// SO_LINGER 0: the close sends RST, as a censor's forged reset looks to the client.
    func resetOnClose() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
    }
}
