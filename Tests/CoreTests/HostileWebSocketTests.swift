import PosternTestSupport
import Foundation
import Testing
import TransportWire
@testable import PosternTor
@testable import PosternAppLayer

/// The WebSocket client against a server of ours that misbehaves on purpose (hostile_ws_peer.py):
/// every case ends in a typed error or stays within a stated cap, and none traps or hangs.
@Suite struct HostileWebSocketTests {
    private func withPeer(_ mode: String, _ body: (URL, PeerProcess) async throws -> Void) async throws {
        let peer = try PeerProcess(script: "hostile_ws_peer.py", arguments: ["127.0.0.1", "0", mode])
        defer { peer.stop() }
        let port = try await peer.port()
        try await body(URL(string: "ws://127.0.0.1:\(port)/")!, peer)
    }

    private func streamError(_ connection: WebSocketConnection) async -> AppLayerError? {
        do {
            for try await _ in connection.messages {}
            return nil
        } catch {
            return error as? AppLayerError
        }
    }

    @Test func endlessHandshakeHeadersAreRefusedAtTheCap() async throws {
        try await withPeer("huge-head") { url, _ in
            do {
                _ = try await WebSocketConnection.connect(to: url, route: .direct, timeout: .seconds(10))
                Issue.record("connected to a server whose head never ends")
            } catch let error as AppLayerError {
                #expect(error.code == .webSocketProtocol && error.message.contains("\(WebSocketHandshakeReader.maximumHeadBytes)"), "\(error)")
            }
        }
    }

    @Test func aDrippedHandshakeMeetsTheConnectDeadline() async throws {
        try await withPeer("drip-head") { url, _ in
            let started = ContinuousClock.now
            do {
                _ = try await WebSocketConnection.connect(to: url, route: .direct, timeout: .seconds(2))
                Issue.record("the dripped handshake completed within 2 s")
            } catch let error as AppLayerError {
                #expect(error.code == .timedOut, "\(error)")
            }
            // The drip would take about 65 s; the typed timeout shows the deadline cut it. The bound is
            // loose because other tests in this process can hold both cooperative threads for seconds.
            #expect(ContinuousClock.now - started < .seconds(30))
        }
    }

    @Test func aSilentServerIsAHalfOpenConnectionAfterTheIdleTimeout() async throws {
        try await withPeer("silent") { url, _ in
            // The idle clock starts at the last byte received (the end of the handshake), so the
            // reference is taken before connecting: taken after it, a loaded machine that resumes this
            // task late would measure less than the timeout (seen once at load 15).
            let started = ContinuousClock.now
            let connection = try await WebSocketConnection.connect(to: url, route: .direct, timeout: .seconds(5), idleTimeout: .seconds(2))
            let error = await streamError(connection)
            #expect(error?.code == .timedOut, "\(String(describing: error))")
            let waited = ContinuousClock.now - started
            // The peer stays silent for an hour; the upper bound is loose for the reason above.
            #expect(waited >= .seconds(2) && waited < .seconds(60), "\(waited)")
        }
    }

    @Test func aPingFloodFromAServerThatNeverReadsKeepsThePongBacklogCapped() async throws {
        try await withPeer("ping-flood") { url, peer in
            let connection = try await WebSocketConnection.connect(to: url, route: .direct, timeout: .seconds(5))
            // Long enough for the server to send far more pings than the backlog holds (its SENT
            // lines say how many bytes of pings went out).
            try await Task.sleep(for: .seconds(3))
            let sent = peer.output.compactMap { $0.hasPrefix("SENT ") ? Int($0.dropFirst(5)) : nil }.last ?? 0
            #expect(sent > 4 * WebSocketConnection.maximumPongBacklogBytes, "the server sent only \(sent) bytes of pings")
            let backlog = connection.pendingOutboundBytes
            #expect(backlog <= WebSocketConnection.maximumPongBacklogBytes + 131, "pong backlog \(backlog) bytes")
            await connection.close(timeout: .milliseconds(200))
        }
    }

    @Test func aFrameWithA62BitLengthIsRefusedFromItsHeader() async throws {
        try await withPeer("huge-length") { url, _ in
            let connection = try await WebSocketConnection.connect(to: url, route: .direct, timeout: .seconds(5))
            let error = await streamError(connection)
            #expect(error?.code == .tooLarge, "\(String(describing: error))")
        }
    }

    /// A connection dropped while messages wait unread: the credit semaphore is disposed below its
    /// starting value. Created with value 64, libdispatch trapped there and took the whole process
    /// down (seen in a full test run, from WebSocketConnection.deinit); this test crashed then.
    @Test func aConnectionDroppedWithMessagesUnreadDoesNotCrash() async throws {
        try await withPeer("endless-text") { url, _ in
            var connection: WebSocketConnection? = try await WebSocketConnection.connect(to: url, route: .direct, timeout: .seconds(5))
            try await Task.sleep(for: .seconds(1))
            await connection?.close(timeout: .milliseconds(200))
            weak let released = connection
            connection = nil
            // The reading thread lets go of the connection once it sees the close.
            for _ in 0..<50 where released != nil { try await Task.sleep(for: .milliseconds(100)) }
            #expect(released == nil, "the connection was never deallocated, so this test showed nothing")
        }
    }

    @Test func anEndlessStreamTheReaderDoesNotTakeIsHeldBackByTCP() async throws {
        try await withPeer("endless-text") { url, peer in
            let connection = try await WebSocketConnection.connect(to: url, route: .direct, timeout: .seconds(5))
            try await Task.sleep(for: .seconds(3))
            // 64 queued 64 KiB messages plus what the loopback socket buffers hold (a few MiB);
            // without the cap the thread would read on at hundreds of MB/s.
            let sent = peer.output.compactMap { $0.hasPrefix("SENT ") ? Int($0.dropFirst(5)) : nil }.last ?? 0
            #expect(sent < 48 * 1024 * 1024, "the server pushed \(sent) bytes into a reader that took nothing")
            var iterator = connection.messages.makeAsyncIterator()
            for _ in 0..<200 {
                guard case .text(let text)? = try await iterator.next() else { Issue.record("stream ended"); break }
                #expect(text.utf8.count == 65536)
            }
            await connection.close(timeout: .milliseconds(200))
        }
    }

    @Test func handshakeReaderAcceptsAByteAtATimeAndHandsOnTheLeftover() throws {
        let key = "dGhlIHNhbXBsZSBub25jZQ=="
        let head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"
        let bytes = Array(head.utf8) + [0x81, 0x01, 0x41]
        var reader = WebSocketHandshakeReader(key: key)
        var leftover: [UInt8]?
        for (index, byte) in bytes.enumerated() {
            leftover = try reader.feed([byte])
            if leftover != nil { #expect(index == head.utf8.count - 1); break }
        }
        #expect(leftover == [])
        var whole = WebSocketHandshakeReader(key: key)
        #expect(try whole.feed(bytes) == [0x81, 0x01, 0x41])
    }

    @Test func handshakeReaderRefusesWrongAcceptsAndHeadsOverTheCap() {
        let key = "dGhlIHNhbXBsZSBub25jZQ=="
        var wrong = WebSocketHandshakeReader(key: key)
        #expect(throws: WireError.self) {
            _ = try wrong.feed(Array("HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n".utf8))
        }
        var refused = WebSocketHandshakeReader(key: key)
        #expect(throws: WireError.self) { _ = try refused.feed(Array("HTTP/1.1 403 Forbidden\r\n\r\n".utf8)) }
        var long = WebSocketHandshakeReader(key: key)
        var failure: WireError?
        for _ in 0..<40 {
            do { _ = try long.feed([UInt8](repeating: 0x61, count: 1000)) } catch { failure = error; break }
        }
        #expect(failure?.code == .webSocketHandshake)
        #expect(long.bufferedCount <= WebSocketHandshakeReader.maximumHeadBytes + 1000)
    }
}
