import PosternCrypto
import PosternTestSupport
import Foundation
import Testing
import TransportWire
@testable import PosternTor
@testable import PosternAppLayer

/// The WebSocket client against an independent server (PyPI websockets 17.4) on 127.0.0.1, direct
/// route (the Tor route is exercised by the Nostr interop tests through the test bed).
@Suite struct WebSocketTests {
    private func withServer(_ body: (URL, PeerProcess) async throws -> Void) async throws {
        let peer = try PeerProcess(script: "ws_peer.py", arguments: ["127.0.0.1", "0"])
        defer { peer.stop() }
        let port = try await peer.port()
        try await body(URL(string: "ws://127.0.0.1:\(port)/chat")!, peer)
    }

    private func next(_ connection: WebSocketConnection) async throws -> WebSocketMessage? {
        var iterator = connection.messages.makeAsyncIterator()
        return try await iterator.next()
    }

    @Test func acceptKeyMatchesRFC6455Example() {
        #expect(WebSocketConnection.acceptValue(for: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(Digest.sha1(Array("abc".utf8)).map { String(format: "%02x", $0) }.joined() == "a9993e364706816aba3e25717850c26c9cd0d89d")
    }

    @Test func echoesTextAndBinaryAndClientFragments() async throws {
        try await withServer { url, peer in
            let connection = try await WebSocketConnection.connect(to: url, route: .direct)
            var messages = connection.messages.makeAsyncIterator()
            try connection.send(.text("hello ünïcode"))
            #expect(try await messages.next() == .text("hello ünïcode"))
            let blob = Data((0..<70_000).map { UInt8($0 % 251) })  // 64-bit length form
            try connection.send(.binary(blob))
            #expect(try await messages.next() == .binary(blob))
            // Our fragments (masked, continuation frames) reassembled by the server.
            let long = String(repeating: "fragmented-by-postern ", count: 50)
            try connection.send(.text(long), fragmentSize: 100)
            #expect(try await messages.next() == .text(long))
            await connection.close(WebSocketCloseStatus(code: 1000, reason: "done"))
            _ = try await peer.waitForLine(prefix: "CLOSED 1000 done")
            #expect(connection.closeStatus?.code == 1000)
        }
    }

    @Test func reassemblesServerFragments() async throws {
        try await withServer { url, _ in
            let connection = try await WebSocketConnection.connect(to: url, route: .direct)
            var messages = connection.messages.makeAsyncIterator()
            try connection.send(.text("fragment"))
            #expect(try await messages.next() == .text("fragmented"))
            // 300 KiB in 3 fragments: under the cap as a whole, accepted.
            try connection.send(.text("bigfrag:307200:3"))
            guard case .binary(let data) = try await messages.next() else { Issue.record("expected binary"); return }
            #expect(data.count == 307200 && data.first == 0 && data.last == 2)
            await connection.close()
        }
    }

    @Test func answersServerPingsAndGetsPongs() async throws {
        try await withServer { url, _ in
            let connection = try await WebSocketConnection.connect(to: url, route: .direct)
            var messages = connection.messages.makeAsyncIterator()
            try connection.send(.text("ping"))
            #expect(try await messages.next() == .text("pong-received"))
            try connection.ping(Array("are-you-there".utf8))
            try connection.send(.text("after-ping"))
            #expect(try await messages.next() == .text("after-ping"))
            #expect(connection.receivedPongs == [Array("are-you-there".utf8)])
            await connection.close()
        }
    }

    @Test(arguments: [(UInt16(1000), "bye"), (1001, "going away"), (4001, "custom")])
    func serverCloseCodesEndTheStream(_ code: UInt16, _ reason: String) async throws {
        try await withServer { url, peer in
            let connection = try await WebSocketConnection.connect(to: url, route: .direct)
            var messages = connection.messages.makeAsyncIterator()
            try connection.send(.text("close:\(code):\(reason)"))
            #expect(try await messages.next() == nil)
            #expect(connection.closeStatus == WebSocketCloseStatus(code: code, reason: reason))
            _ = try await peer.waitForLine(prefix: "CLOSED \(code) \(reason)")
            #expect(throws: AppLayerError.self) { try connection.send(.text("late")) }
        }
    }

    @Test(arguments: [("big:\(512 * 1024 + 1)", "one frame"), ("bigfrag:\(600 * 1024):3", "three fragments")])
    func oversizeMessagesCloseWith1009(_ command: String, _ shape: String) async throws {
        try await withServer { url, peer in
            let connection = try await WebSocketConnection.connect(to: url, route: .direct)
            var messages = connection.messages.makeAsyncIterator()
            try connection.send(.text(command))
            do {
                let message = try await messages.next()
                Issue.record("\(shape): expected a failure, got \(String(describing: message).prefix(40))")
            } catch let error as AppLayerError {
                #expect(error.code == .tooLarge, "\(shape): \(error)")
            }
            // The server saw our close frame with 1009.
            _ = try await peer.waitForLine(prefix: "CLOSED 1009")
        }
    }

    @Test func exactly512KiBIsAccepted() async throws {
        try await withServer { url, _ in
            let connection = try await WebSocketConnection.connect(to: url, route: .direct)
            var messages = connection.messages.makeAsyncIterator()
            try connection.send(.text("big:\(512 * 1024)"))
            guard case .text(let text) = try await messages.next() else { Issue.record("expected text"); return }
            #expect(text.utf8.count == 512 * 1024)
            await connection.close()
        }
    }

    /// wss: TLS through libcurl, certificate and host name verified against a CA made for the test.
    @Test func secureWebSocketVerifiesTheCertificate() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-wss-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let cert = directory.appendingPathComponent("cert.pem").path, key = directory.appendingPathComponent("key.pem").path
        let made = Process()
        made.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        made.arguments = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
                          "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert]
        made.standardError = FileHandle.nullDevice
        try made.run()
        made.waitUntilExit()
        #expect(made.terminationStatus == 0)
        let peer = try PeerProcess(script: "ws_peer.py", arguments: ["127.0.0.1", "0", cert, key])
        defer { peer.stop() }
        let url = URL(string: "wss://127.0.0.1:\(try await peer.port())/secure")!
        // Without the CA the certificate is refused.
        await #expect(throws: AppLayerError.self) { try await WebSocketConnection.connect(to: url, route: .direct) }
        let connection = try await WebSocketConnection.connect(to: url, route: .direct, certificateAuthorityFile: cert)
        var messages = connection.messages.makeAsyncIterator()
        let big = String(repeating: "tls ", count: 40_000)
        try connection.send(.text(big), fragmentSize: 16_000)
        #expect(try await messages.next() == .text(big))
        try connection.send(.text("fragment"))
        #expect(try await messages.next() == .text("fragmented"))
        await connection.close()
        _ = try await peer.waitForLine(prefix: "CLOSED 1000")
    }

    @Test func parserRejectsProtocolViolations() {
        let cases: [([UInt8], UInt16)] = [
            ([0x81, 0x81, 1, 2, 3, 4, 0x41], 1002),          // masked server frame
            ([0xC1, 0x01, 0x41], 1002),                       // RSV1 without an extension
            ([0x83, 0x00], 1002),                             // reserved opcode
            ([0x09, 0x00], 1002),                             // fragmented ping
            ([0x89, 0x7E, 0x00, 0x7E] + [UInt8](repeating: 0, count: 126), 1002), // control frame > 125
            ([0x80, 0x01, 0x41], 1002),                       // continuation without a start
            ([0x01, 0x01, 0x41, 0x81, 0x01, 0x42], 1002),     // new message inside a fragmented one
            ([0x81, 0x02, 0xC3, 0x28], 1007),                 // invalid UTF-8 text
            ([0x82, 0x7F, 0x80, 0, 0, 0, 0, 0, 0, 0], 1002),  // 64-bit length with the top bit set
        ]
        for (bytes, code) in cases {
            var parser = WebSocketFrameParser(maximumMessageBytes: 1024)
            #expect(throws: WebSocketFrameParser.Violation.self) { _ = try parser.feed(bytes) }
            do { _ = try parser.feed([]) } catch {}
            var fresh = WebSocketFrameParser(maximumMessageBytes: 1024)
            do {
                _ = try fresh.feed(bytes)
            } catch {
                #expect(error.status.code == code, "\(bytes.prefix(4))")
            }
        }
        // Byte-at-a-time delivery with a ping between fragments.
        var parser = WebSocketFrameParser(maximumMessageBytes: 1024)
        var events: [WebSocketEvent] = []
        for byte in [0x01, 0x02, 0x61, 0x62, 0x89, 0x01, 0x70, 0x80, 0x01, 0x63] as [UInt8] {
            events += (try? parser.feed([byte])) ?? []
        }
        #expect(events == [.ping([0x70]), .message(.text("abc"))])
    }
}
