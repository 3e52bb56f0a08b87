import Foundation
import Testing
@testable import SnowflakeTransport

/// The poll asks for gzip as Go's client does (`Accept-Encoding: gzip`, after Content-Length, no
/// `Connection` field), so a broker, front or cache may answer gzip-encoded and keep the connection
/// open. A real peer on loopback (Python's HTTP handling by hand and its gzip module) answers each
/// connection in turn and holds it open until we close it, as a kept-alive server does.
@Suite(.serialized) struct GzipBrokerAnswerTests {
    /// Answers one connection per mode, in order, and prints the request head lines as JSON.
    static let server = #"""
    import gzip, json, socket, sys
    modes, answer = sys.argv[1:-1], bytes.fromhex(sys.argv[-1])
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(60)
    print(listener.getsockname()[1], flush=True)
    for mode in modes:
        connection, _ = listener.accept()
        connection.settimeout(60)
        data = b""
        while b"\r\n\r\n" not in data:
            piece = connection.recv(65536)
            if not piece:
                break
            data += piece
        head, _, rest = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(rest) < length:
            piece = connection.recv(65536)
            if not piece:
                break
            rest += piece
        print(json.dumps(head.decode().split("\r\n")), flush=True)
        body = {"gzip": lambda: gzip.compress(answer),
                "twomembers": lambda: gzip.compress(answer[:10]) + gzip.compress(answer[10:]),
                "bomb": lambda: gzip.compress(b"\0" * 10_000_000),
                "garbage": lambda: b"this is not gzip",
                "truncated": lambda: gzip.compress(answer)[:-6]}[mode]()
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
                           + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        try:
            while connection.recv(65536):
                pass
        except OSError:
            pass
        connection.close()
    """#

    @Test(.timeLimit(.minutes(1))) func gzipAnswersAreInflatedWithinTheLimit() async throws {
        let vector = try #require(GoVectors.shared.pollResponses.first { !$0.answer.isEmpty })
        let encoded = Array(vector.encoded.utf8)
        let modes = ["gzip", "twomembers", "bomb", "garbage", "truncated"]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", Self.server] + modes + [encoded.map { String(format: "%02x", $0) }.joined()]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        defer { process.terminate() }
        let lines = AsyncLineReader(output.fileHandleForReading)
        let portLine = await lines.next()
        let port = try #require(portLine.flatMap { UInt16($0) }, "the server did not start")
        let rendezvous = BrokerRendezvous(endpoint: try BrokerEndpoint(url: try #require(URL(string: "http://127.0.0.1:\(port)/"))),
                                          connector: PlainTCPConnector())
        let request = ClientPollRequest(serializedOffer: GoVectors.shared.pionOfferSerialized, nat: .unknown,
                                        fingerprint: ClientPollRequest.defaultFingerprint)
        let expected = try ClientPollResponse(decoding: encoded)

        // A gzip answer on a connection the server keeps open: inflated, well before the deadline.
        let start = ContinuousClock.now
        #expect(try await rendezvous.exchange(request) == expected)
        // Under the broker's 30 s deadline with room for a stalled test process (a CI run held every
        // task of a unit process back for about 4.5 s).
        #expect(ContinuousClock.now - start < .seconds(20))
        let headLine = await lines.next()
        let head = try JSONDecoder().decode([String].self, from: Data(try #require(headLine).utf8))
        #expect(head == ["POST /client HTTP/1.1", "Host: 127.0.0.1:\(port)", "User-Agent: Go-http-client/1.1",
                         "Content-Length: \(request.encoded.count)", "Accept-Encoding: gzip"])
        // Two gzip members back to back, as Go's reader takes them.
        #expect(try await rendezvous.exchange(request) == expected)
        _ = await lines.next()
        func failure() async -> SnowflakeError? {
            do {
                _ = try await rendezvous.exchange(request)
                return nil
            } catch {
                return error
            }
        }
        // 10 MB of zeros in about 10 kB: refused once past the limit.
        #expect(await failure()?.code == .responseTooLarge)
        // Not gzip, and gzip cut before its trailer.
        #expect(await failure()?.code == .brokerHTTP)
        #expect(await failure()?.code == .brokerHTTP)
    }

    @Test func inflatingStopsAtTheLimit() {
        func failure(_ body: [UInt8]) -> SnowflakeError? {
            do {
                _ = try GzipBody.inflate(body, limit: 100, peer: "the test")
                return nil
            } catch {
                return error
            }
        }
        #expect(failure(Self.storedGzip(count: 101))?.code == .responseTooLarge)
        #expect((try? GzipBody.inflate(Self.storedGzip(count: 100), limit: 100, peer: "the test")) == [UInt8](repeating: 0x61, count: 100))
        #expect(failure([])?.code == .brokerHTTP)
        var corrupted = Self.storedGzip(count: 50)
        corrupted[corrupted.count - 5] ^= 1
        #expect(failure(corrupted)?.code == .brokerHTTP, "a bad CRC-32 is refused")
        #expect(failure(Self.storedGzip(count: 50) + [0x1f])?.code == .brokerHTTP, "trailing bytes are refused")
    }

    /// A gzip member holding `count` bytes of "a" in one stored deflate block (RFC 1951 3.2.4,
    /// RFC 1952), with its CRC-32 and length.
    static func storedGzip(count: Int) -> [UInt8] {
        let data = [UInt8](repeating: 0x61, count: count)
        let length = UInt16(count)
        var bytes: [UInt8] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]
        bytes += [1, UInt8(length & 0xff), UInt8(length >> 8), UInt8(~length & 0xff), UInt8(~length >> 8)] + data
        let crc = PionOfferShape.crc32(data)
        bytes += (0..<4).map { UInt8(truncatingIfNeeded: crc >> (8 * $0)) }
        bytes += (0..<4).map { UInt8(truncatingIfNeeded: UInt32(count) >> (8 * $0)) }
        return bytes
    }
}

/// Lines from a pipe, read off the cooperative pool (a blocking read per line).
final class AsyncLineReader: @unchecked Sendable {
    // Only touched from `next()`, which the test calls sequentially.
    private let handle: FileHandle
    private var buffer: [UInt8] = []

    init(_ handle: FileHandle) { self.handle = handle }

    func next() async -> String? {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { [self] in
                while true {
                    if let newline = buffer.firstIndex(of: 10) {
                        let line = String(decoding: buffer[..<newline], as: UTF8.self)
                        buffer.removeFirst(newline + 1)
                        continuation.resume(returning: line)
                        return
                    }
                    let piece = handle.availableData
                    if piece.isEmpty {
                        continuation.resume(returning: nil)
                        return
                    }
                    buffer += piece
                }
            }
        }
    }
}
