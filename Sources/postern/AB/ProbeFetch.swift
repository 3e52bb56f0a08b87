import PosternRuntime
import Foundation
import TransportBase

/// The probe of a trial: an HTTP/1.1 GET through a child's SOCKS5 port (the host name is resolved
/// at the exit, as apps do), timing the first response byte and the download of up to
/// `maximumBytes` of the body. Plain http:// only: the figure wanted is the route's, and a TLS
/// handshake on top would only add noise.
struct ProbeFetch: Sendable {
    struct Target: Sendable, Equatable {
        var host: String
        var port: UInt16
        var path: String
        var text: String

        init(parsing text: String) throws(UsageError) {
            guard let components = URLComponents(string: text), components.scheme?.lowercased() == "http",
                  let host = components.host, !host.isEmpty, host.utf8.count <= 255 else {
                throw UsageError("--probe-url must be an http:// URL with a host (https is not supported), not '\(text)'")
            }
            self.host = host
            port = UInt16(components.port ?? 80)
            let query = components.percentEncodedQuery.map { "?\($0)" } ?? ""
            path = (components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath) + query
            self.text = text
        }
    }

    struct Result: Sendable, Equatable {
        /// From opening the SOCKS connection to the first byte of the HTTP response.
        var timeToFirstByte: Double
        var bodyBytes: Int
        /// Body bytes per second, from the first body byte to the last one read; nil when the body
        /// was too small to time.
        var throughput: Double?
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let target: Target
    let maximumBytes: Int
    let timeout: Duration

    func run(socksPort: UInt16) async throws -> Result {
        let target = self.target
        let maximumBytes = self.maximumBytes
        let socket = try await TCPSocket.connect(to: try TransportEndpoint(parsing: "127.0.0.1:\(socksPort)"), timeout: .seconds(10))
        defer { socket.close() }
        let timeout = self.timeout
        return try await withTimeout(timeout, expired: {
            socket.abort(with: TransportError(code: .init(rawValue: "probe-timeout"), kind: .timeout,
                                              message: "the probe took longer than \(timeout)"))
        }) {
            let opened = ContinuousClock.now
            try await Self.socksConnect(socket, host: target.host, port: target.port)
            let request = "GET \(target.path) HTTP/1.1\r\nHost: \(target.host)\r\nUser-Agent: postern-ab\r\nAccept: */*\r\nConnection: close\r\n\r\n"
            try await socket.write(Array(request.utf8))
            var received: [UInt8] = []
            var firstByte: ContinuousClock.Instant?
            var headerEnd: Int?
            while headerEnd == nil {
                let chunk = try await socket.read(maximumCount: 65536)
                if chunk.isEmpty { throw Failure(description: "the connection closed before an HTTP response") }
                if firstByte == nil { firstByte = ContinuousClock.now }
                received += chunk
                headerEnd = Self.headerEnd(received)
                if headerEnd == nil && received.count > 65536 { throw Failure(description: "the HTTP response header is too long") }
            }
            let head = String(decoding: received[..<headerEnd!], as: UTF8.self)
            let statusWords = head.split(separator: "\r\n").first?.split(separator: " ") ?? []
            guard statusWords.count >= 2, let status = Int(statusWords[1]) else {
                throw Failure(description: "not an HTTP response")
            }
            guard (200..<300).contains(status) else { throw Failure(description: "HTTP status \(status)") }
            var bodyBytes = received.count - headerEnd! - 4
            let bodyStarted = bodyBytes > 0 ? firstByte! : nil
            var bodyFirst = bodyStarted
            var last = ContinuousClock.now
            while bodyBytes < maximumBytes {
                let chunk = try await socket.read(maximumCount: 65536)
                if chunk.isEmpty { break }
                if bodyFirst == nil { bodyFirst = ContinuousClock.now }
                bodyBytes += chunk.count
                last = ContinuousClock.now
            }
            bodyBytes = min(bodyBytes, maximumBytes)
            var throughput: Double?
            if let bodyFirst, bodyBytes >= 16 * 1024 {
                let seconds = (last - bodyFirst).seconds
                if seconds > 0 { throughput = Double(bodyBytes) / seconds }
            }
            return Result(timeToFirstByte: (firstByte! - opened).seconds, bodyBytes: bodyBytes, throughput: throughput)
        }
    }

    private static func headerEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }

    /// RFC 1928 without authentication; CONNECT by domain name (tor resolves it at the exit).
    private static func socksConnect(_ socket: TCPSocket, host: String, port: UInt16) async throws {
        try await socket.write([5, 1, 0])
        let choice = try await readExactly(socket, 2)
        guard choice == [5, 0] else { throw Failure(description: "the SOCKS port refused the greeting") }
        let name = Array(host.utf8)
        try await socket.write([5, 1, 0, 3, UInt8(name.count)] + name + [UInt8(port >> 8), UInt8(port & 0xFF)])
        let head = try await readExactly(socket, 4)
        guard head[0] == 5 else { throw Failure(description: "not a SOCKS5 reply") }
        guard head[1] == 0 else { throw Failure(description: "SOCKS CONNECT failed (reply \(head[1]): \(socksReason(head[1])))") }
        switch head[3] {
        case 1: _ = try await readExactly(socket, 6)
        case 4: _ = try await readExactly(socket, 18)
        case 3:
            let length = try await readExactly(socket, 1)[0]
            _ = try await readExactly(socket, Int(length) + 2)
        default: throw Failure(description: "unknown SOCKS address type \(head[3])")
        }
    }

    private static func socksReason(_ code: UInt8) -> String {
        switch code {
        case 1: "general failure"
        case 2: "not allowed"
        case 3: "network unreachable"
        case 4: "host unreachable"
        case 5: "connection refused"
        case 6: "TTL expired (tor: timeout)"
        default: "error"
        }
    }

    private static func readExactly(_ socket: TCPSocket, _ count: Int) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        while bytes.count < count {
            let chunk = try await socket.read(maximumCount: count - bytes.count)
            if chunk.isEmpty { throw Failure(description: "the SOCKS port closed the connection") }
            bytes += chunk
        }
        return bytes
    }
}
