import Foundation
import PosternTestSupport
import Testing
@testable import PosternTrials

/// The probe against a stand-in for a child's SOCKS port (a small Python SOCKS5 server that
/// answers the GET itself; no tor): what reaches the user decides the category. A body cut short
/// of its Content-Length is a broken download (the route's failure after bootstrap), a refused
/// CONNECT is the route's too, and nothing listening is the harness's.
@Suite struct ProbeFetchTests {
    /// Serves one connection: SOCKS5 greeting and CONNECT (answered with `reply`), then an HTTP
    /// response announcing `length` bytes and sending `send` of them before closing. Its waits are
    /// long (300 s) because they bound the stand-in, not the test: with 30 s, a test the loaded
    /// pool ran late found the stand-in gone ("the SOCKS port closed the connection").
    static let standIn = #"""
    import socket, sys
    reply, length, send = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen(1)
    print(server.getsockname()[1], flush=True)
    server.settimeout(300)
    conn, _ = server.accept(); conn.settimeout(300)
    def exactly(n):
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk: raise SystemExit(0)
            data += chunk
        return data
    exactly(3); conn.sendall(b"\x05\x00")
    head = exactly(5); exactly(head[4] + 2)
    conn.sendall(bytes([5, reply, 0, 1, 127, 0, 0, 1, 0, 80]))
    if reply != 0: conn.close(); raise SystemExit(0)
    request = b""
    while b"\r\n\r\n" not in request: request += conn.recv(4096)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % length)
    chunk = b"x" * 65536
    sent = 0
    while sent < send:
        part = chunk[: min(len(chunk), send - sent)]
        conn.sendall(part); sent += len(part)
    conn.close()
    """#

    /// Starts the stand-in and returns its port (it exits after one connection).
    static func startStandIn(reply: Int, length: Int, send: Int) throws -> (Process, UInt16) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", standIn, String(reply), String(length), String(send)]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var line = Data()
        while !line.contains(0x0A) {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty { break }
            line += byte
        }
        let port = try #require(UInt16(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
        return (process, port)
    }

    static let probe = ProbeFetch(target: try! ProbeFetch.Target(parsing: "http://web.postern.test:8080/blob.bin"),
                                  maximumBytes: 1 << 20, timeout: .seconds(30))

    @Test func aCompleteDownloadIsTimed() async throws {
        let (process, port) = try Self.startStandIn(reply: 0, length: 1 << 20, send: 1 << 20)
        defer { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }  // SIGTERM is blocked in children of the test process
        let result = try await Self.probe.run(socksPort: port)
        #expect(result.bodyBytes == 1 << 20 && (result.throughput ?? 0) > 0 && result.timeToFirstByte > 0)
    }

    @Test func aBodyCutShortIsABrokenDownload() async throws {
        let (process, port) = try Self.startStandIn(reply: 0, length: 1 << 20, send: 65536)
        defer { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }  // SIGTERM is blocked in children of the test process
        do throws(ProbeFetch.Failure) {
            _ = try await Self.probe.run(socksPort: port)
            Issue.record("a short body passed")
        } catch {
            #expect(error.kind == .broken && error.bodyBytes == 65536, "\(error)")
            #expect(error.timeToFirstByte != nil)
        }
    }

    @Test func aRefusedConnectIsTheRoutes() async throws {
        let (process, port) = try Self.startStandIn(reply: 6, length: 0, send: 0)
        defer { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }  // SIGTERM is blocked in children of the test process
        do throws(ProbeFetch.Failure) {
            _ = try await Self.probe.run(socksPort: port)
            Issue.record("a refused CONNECT passed")
        } catch {
            #expect(error.kind == .connectFailed && error.message.contains("TTL expired"), "\(error)")
        }
    }

    @Test func nothingListeningIsTheHarnesss() async throws {
        // Bound but not listening: connections are refused, and no other program can take the port.
        let holder = try HeldLoopbackPort(listening: false)
        defer { withExtendedLifetime(holder) {} }
        do throws(ProbeFetch.Failure) {
            _ = try await Self.probe.run(socksPort: holder.port)
            Issue.record("a closed port passed")
        } catch {
            #expect(error.kind == .socksUnreachable, "\(error)")
        }
    }
}
