import Foundation
import PosternSystem
import Synchronization
import TransportBase
import TransportWire

/// The probe of a trial: an HTTP/1.1 GET through a child's SOCKS5 port (the host name is resolved
/// at the exit, as apps do), timing the first response byte and the download of up to
/// `maximumBytes` of the body. Plain http:// only: the figure wanted is the route's, and a TLS
/// handshake on top would only add noise.
///
/// A download that stops short is a failure after bootstrap, the kind users feel most (tor said
/// 100 %, then the page never finished): tor closes the SOCKS stream cleanly when the bridge
/// connection under it is cut, so "short" is judged against the response's Content-Length.
public struct ProbeFetch: Sendable {
    public struct Target: Sendable, Equatable {
        public var host: String
        public var port: UInt16
        public var path: String
        public var text: String

        public init(parsing text: String) throws(TrialError) {
            guard let components = URLComponents(string: text), components.scheme?.lowercased() == "http",
                  let host = components.host, !host.isEmpty, host.utf8.count <= 255 else {
                throw TrialError(.invalidInput, kind: .usage,
                                 "--probe-url must be an http:// URL with a host (https is not supported), not '\(text)'")
            }
            self.host = host
            port = UInt16(components.port ?? 80)
            let query = components.percentEncodedQuery.map { "?\($0)" } ?? ""
            path = (components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath) + query
            self.text = text
        }
    }

    public struct Result: Sendable, Equatable {
        /// From opening the SOCKS connection to the first byte of the HTTP response.
        public var timeToFirstByte: Double
        public var bodyBytes: Int
        /// Body bytes per second, from the first body byte to the last one read; nil when the body
        /// was too small to time.
        public var throughput: Double?
    }

    /// Why a probe failed, and how far it got.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// An open set of names, as every error kind in Postern (PosternSystem's `ErrorKind`).
        public typealias Kind = ErrorKind<Failure>

        public var kind: Kind
        public var message: String
        /// Body bytes received before the failure.
        public var bodyBytes: Int
        public var timeToFirstByte: Double?

        public var description: String { message }
    }

    public let target: Target
    public let maximumBytes: Int
    public let timeout: Duration

    public init(target: Target, maximumBytes: Int, timeout: Duration) {
        self.target = target
        self.maximumBytes = maximumBytes
        self.timeout = timeout
    }

    /// Progress of one fetch, shared with the deadline's handler (which may run on another task).
    private final class Progress: Sendable {
        struct State {
            var bodyBytes = 0
            var firstByte: Double?
            var timedOut = false
        }
        let state = Mutex(State())
        func update(_ body: (inout State) -> Void) { state.withLock { body(&$0) } }
        var snapshot: State { state.withLock { $0 } }
    }

    public func run(socksPort: UInt16) async throws(Failure) -> Result {
        let target = self.target
        let maximumBytes = self.maximumBytes
        let socket: TCPSocket
        do {
            socket = try await TCPSocket.connect(to: try TransportEndpoint(parsing: "127.0.0.1:\(socksPort)"), timeout: .seconds(10))
        } catch {
            throw Failure(kind: .socksUnreachable, message: "cannot connect to the child's SOCKS port \(socksPort): \(error)", bodyBytes: 0)
        }
        defer { socket.close() }
        let timeout = self.timeout
        let progress = Progress()
        do {
            return try await withDeadline(timeout, expired: {
                progress.update { $0.timedOut = true }
                socket.abort(with: TransportError(code: .init(rawValue: "probe-timeout"), kind: .timeout,
                                                  message: "the probe took longer than \(timeout)"))
            }) {
                try await Self.fetch(socket: socket, target: target, maximumBytes: maximumBytes, progress: progress)
            }
        } catch {
            let snapshot = progress.snapshot
            let bytes = snapshot.bodyBytes, firstByte = snapshot.firstByte
            if snapshot.timedOut {
                throw Failure(kind: .timedOut, message: "the probe took longer than \(timeout.seconds.formatted()) s (\(bytes) body bytes in)",
                              bodyBytes: bytes, timeToFirstByte: firstByte)
            }
            if var failure = error as? Failure {
                failure.bodyBytes = bytes
                failure.timeToFirstByte = firstByte
                throw failure
            }
            // A read or write error of the stream itself.
            throw Failure(kind: firstByte == nil ? .noResponse : .broken, message: "the stream failed: \(error)",
                          bodyBytes: bytes, timeToFirstByte: firstByte)
        }
    }

    private static func fetch(socket: TCPSocket, target: Target, maximumBytes: Int, progress: Progress) async throws -> Result {
        let opened = ContinuousClock.now
        try await socksConnect(socket, host: target.host, port: target.port)
        let request = "GET \(target.path) HTTP/1.1\r\nHost: \(target.host)\r\nUser-Agent: postern-ab\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        try await socket.write(Array(request.utf8))
        var received: [UInt8] = []
        var firstByte: ContinuousClock.Instant?
        var headerEnd: Int?
        while headerEnd == nil {
            let chunk = try await socket.read(maximumCount: 65536)
            if chunk.isEmpty { throw Failure(kind: .noResponse, message: "the connection closed before an HTTP response", bodyBytes: 0) }
            if firstByte == nil {
                let now = ContinuousClock.now
                firstByte = now
                progress.update { $0.firstByte = (now - opened).seconds }
            }
            received += chunk
            headerEnd = headerEndIndex(received)
            if headerEnd == nil && received.count > 65536 {
                throw Failure(kind: .badResponse, message: "the HTTP response header is too long", bodyBytes: 0)
            }
        }
        let head = String(decoding: received[..<headerEnd!], as: UTF8.self)
        let headLines = head.split(separator: "\r\n")
        let statusWords = headLines.first?.split(separator: " ") ?? []
        guard statusWords.count >= 2, let status = Int(statusWords[1]) else {
            throw Failure(kind: .badResponse, message: "not an HTTP response", bodyBytes: 0)
        }
        guard (200..<300).contains(status) else { throw Failure(kind: .badResponse, message: "HTTP status \(status)", bodyBytes: 0) }
        let contentLength = headLines.dropFirst().lazy.compactMap { line -> Int? in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
            return Int(parts[1].trimmingCharacters(in: .whitespaces))
        }.first
        if let contentLength, contentLength < 0 {
            throw Failure(kind: .badResponse, message: "a negative Content-Length", bodyBytes: 0)
        }
        let wanted = min(maximumBytes, contentLength ?? maximumBytes)
        var bodyBytes = received.count - headerEnd! - 4
        progress.update { $0.bodyBytes = bodyBytes }
        var bodyFirst = bodyBytes > 0 ? firstByte : nil
        var last = ContinuousClock.now
        while bodyBytes < wanted {
            let chunk = try await socket.read(maximumCount: 65536)
            if chunk.isEmpty {
                // Closed early: short of the length the server announced, the download broke.
                if contentLength != nil {
                    throw Failure(kind: .broken, message: "the download stopped after \(bodyBytes) of \(wanted) bytes", bodyBytes: bodyBytes)
                }
                break
            }
            if bodyFirst == nil { bodyFirst = ContinuousClock.now }
            bodyBytes += chunk.count
            progress.update { $0.bodyBytes = bodyBytes }
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

    private static func headerEndIndex(_ bytes: [UInt8]) -> Int? {
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
        guard choice == [5, 0] else { throw Failure(kind: .connectFailed, message: "the SOCKS port refused the greeting", bodyBytes: 0) }
        let name = Array(host.utf8)
        try await socket.write([5, 1, 0, 3, UInt8(name.count)] + name + [UInt8(port >> 8), UInt8(port & 0xFF)])
        let head = try await readExactly(socket, 4)
        guard head[0] == 5 else { throw Failure(kind: .connectFailed, message: "not a SOCKS5 reply", bodyBytes: 0) }
        guard head[1] == 0 else {
            throw Failure(kind: .connectFailed, message: "SOCKS CONNECT failed (reply \(head[1]): \(socksReason(head[1])))", bodyBytes: 0)
        }
        switch head[3] {
        case 1: _ = try await readExactly(socket, 6)
        case 4: _ = try await readExactly(socket, 18)
        case 3:
            let length = try await readExactly(socket, 1)[0]
            _ = try await readExactly(socket, Int(length) + 2)
        default: throw Failure(kind: .connectFailed, message: "unknown SOCKS address type \(head[3])", bodyBytes: 0)
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
            if chunk.isEmpty { throw Failure(kind: .connectFailed, message: "the SOCKS port closed the connection", bodyBytes: 0) }
            bytes += chunk
        }
        return bytes
    }
}

extension ProbeFetch.Failure.Kind {
    /// Nothing listens on the child's SOCKS port: the harness's problem, not the route's.
    public static let socksUnreachable = Self("socks-unreachable")
    /// tor answered the SOCKS CONNECT with an error (no circuit, exit refused, timeout).
    public static let connectFailed = Self("connect-failed")
    /// The stream closed or failed before a whole HTTP response header came back.
    public static let noResponse = Self("no-response")
    /// Not HTTP, or a status other than 2xx.
    public static let badResponse = Self("bad-response")
    /// The body stopped short of its Content-Length (the connection was cut).
    public static let broken = Self("broken")
    /// The whole probe took longer than its deadline.
    public static let timedOut = Self("timed-out")
}
