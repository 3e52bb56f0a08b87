import Foundation
import PosternTestSupport
import Testing
import TransportBase
import TransportTLS
import TransportWire

/// HTTP2Connection against Debian's nginx (TLS, ALPN h2) and against a hostile HTTP/2 peer written
/// frame by frame (cleartext, prior knowledge: HTTP2Connection runs over any byte stream).
@Suite(.serialized) struct HTTP2ConnectionTests {
    private func openOverTLS(_ server: NginxHTTP2Server, _ certificates: TestCertificates) async throws -> (HTTP2Connection, BrowserTLSStream) {
        let (stream, _) = try await handshake(port: server.port, BrowserTLSConfiguration(serverName: TestCertificates.serverName, caFile: certificates.caFile))
        #expect(stream.applicationProtocol == "h2")
        return (try await HTTP2Connection.open(over: stream), stream)
    }

    @Test func getsAndPostsOverTLSWhenNginxPicksH2() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        // Larger than the default 65,535-byte stream window: flow control has to work.
        let page = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let server = try await NginxHTTP2Server(certificates: certificates, files: ["page.bin": page])
        defer { server.stop() }
        let (http2, _) = try await openOverTLS(server, certificates)
        defer { http2.close() }

        let get = try await http2.send(HTTP2Request(method: "GET", authority: TestCertificates.serverName, path: "/page.bin"),
                                       bodyLimit: 1 << 20, timeout: .seconds(20))
        #expect(get.status == 200)
        #expect(get.body == page)
        #expect(get.value("content-length") == "300000")

        let body = Array("poll=\(String(repeating: "x", count: 70_000))".utf8)
        let post = try await http2.send(HTTP2Request(method: "POST", authority: TestCertificates.serverName, path: "/echo",
                                                     headers: [HTTP2Header(name: "Content-Type", value: "application/x-www-form-urlencoded")],
                                                     body: body),
                                        bodyLimit: 1 << 20, timeout: .seconds(20))
        #expect(post.status == 200)
        #expect(post.body == body)

        let missing = try await http2.send(HTTP2Request(method: "GET", authority: TestCertificates.serverName, path: "/nothing"),
                                           bodyLimit: 1 << 20, timeout: .seconds(20))
        #expect(missing.status == 404)
    }

    @Test func twentyRequestsAtOnceShareOneConnection() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let server = try await NginxHTTP2Server(certificates: certificates)
        defer { server.stop() }
        let (http2, _) = try await openOverTLS(server, certificates)
        defer { http2.close() }
        let bodies = try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
            for index in 0..<20 {
                group.addTask {
                    let response = try await http2.send(HTTP2Request(method: "POST", authority: TestCertificates.serverName, path: "/echo",
                                                                     body: Array("request \(index)".utf8)),
                                                        bodyLimit: 4096, timeout: .seconds(20))
                    return (index, response.body)
                }
            }
            var all: [Int: [UInt8]] = [:]
            for try await (index, body) in group { all[index] = body }
            return all
        }
        #expect(bodies.count == 20)
        for index in 0..<20 { #expect(bodies[index] == Array("request \(index)".utf8)) }
    }

    @Test func aBodyOrHeaderBlockPastItsCapFailsThatRequestOnly() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        // 700 fields of ~120 bytes: past the 64 KiB header cap.
        let server = try await NginxHTTP2Server(certificates: certificates, files: ["big.bin": [UInt8](repeating: 65, count: 50_000)], headerCount: 700)
        defer { server.stop() }
        let (http2, _) = try await openOverTLS(server, certificates)
        defer { http2.close() }
        let tooBig = await #expect(throws: WireError.self) {
            _ = try await http2.send(HTTP2Request(method: "GET", authority: TestCertificates.serverName, path: "/big.bin"),
                                     bodyLimit: 10_000, timeout: .seconds(20))
        }
        #expect(tooBig?.code == .http2TooLarge)
        let manyHeaders = await #expect(throws: WireError.self) {
            _ = try await http2.send(HTTP2Request(method: "GET", authority: TestCertificates.serverName, path: "/headers"),
                                     bodyLimit: 10_000, timeout: .seconds(20))
        }
        #expect(manyHeaders?.code == .http2TooLarge)
        // The connection goes on.
        let fine = try await http2.send(HTTP2Request(method: "GET", authority: TestCertificates.serverName, path: "/big.bin"),
                                        bodyLimit: 100_000, timeout: .seconds(20))
        #expect(fine.body.count == 50_000)
    }

    // MARK: A hostile peer

    /// The error one GET over a new HTTP/2 connection to `peer` fails with, expected to be a WireError.
    private func failedRequest(to peer: HostileHTTP2Peer, timeout: Duration = .seconds(20),
                               sourceLocation: SourceLocation = #_sourceLocation) async throws -> WireError? {
        let http2 = try await HTTP2Connection.open(over: try await peer.connect())
        defer { http2.close() }
        return await #expect(throws: WireError.self, sourceLocation: sourceLocation) {
            _ = try await http2.send(HTTP2Request(method: "GET", authority: "postern.test", path: "/"), bodyLimit: 1000, timeout: timeout)
        }
    }

    @Test func garbageInsteadOfFramesFailsTheConnectionWithoutATrap() async throws {
        let peer = try await HostileHTTP2Peer { connection in
            _ = try await connection.read(maximumCount: 4096)
            try await connection.write([UInt8](repeating: 0xff, count: 64))
        }
        defer { peer.stop() }
        let error = try await failedRequest(to: peer)
        #expect(error?.code == .http2Failed || error?.code == .closed)
    }

    @Test func silenceEndsAtTheRequestsDeadline() async throws {
        let peer = try await HostileHTTP2Peer { connection in
            // Reads and never answers.
            while try await !connection.read(maximumCount: 4096).isEmpty {}
        }
        defer { peer.stop() }
        let started = ContinuousClock.now
        let error = try await failedRequest(to: peer, timeout: .seconds(1))
        #expect(error?.code == .timeout)
        #expect(ContinuousClock.now - started < .seconds(15))
    }

    @Test func aServerThatClosesFailsEveryRequestInFlight() async throws {
        let peer = try await HostileHTTP2Peer { connection in
            _ = try await connection.read(maximumCount: 4096)
            try await connection.write(HostileHTTP2Peer.frame(type: 4, flags: 0, stream: 0, payload: []))  // SETTINGS
            connection.close()
        }
        defer { peer.stop() }
        let error = try await failedRequest(to: peer)
        #expect(error?.code == .closed || error?.code == .http2Failed)
    }

    @Test func anEndlessStreamOfContinuationFramesIsCut() async throws {
        let peer = try await HostileHTTP2Peer { connection in
            _ = try await connection.read(maximumCount: 4096)
            try await connection.write(HostileHTTP2Peer.frame(type: 4, flags: 0, stream: 0, payload: []))
            // HEADERS without END_HEADERS on stream 1, then CONTINUATION frames of literal fields forever.
            let field: [UInt8] = [0x00, 0x05] + Array("x-pad".utf8) + [0x7f, 0xe9, 0x06] + [UInt8](repeating: 0x61, count: 1000)  // length 127 + 873
            try await connection.write(HostileHTTP2Peer.frame(type: 1, flags: 0, stream: 1, payload: [0x88] + field))
            for _ in 0..<200 {
                try await connection.write(HostileHTTP2Peer.frame(type: 9, flags: 0, stream: 1, payload: field))
            }
            while try await !connection.read(maximumCount: 4096).isEmpty {}
        }
        defer { peer.stop() }
        let error = try await failedRequest(to: peer)
        #expect(error?.code == .http2Failed || error?.code == .http2TooLarge)
    }
}
