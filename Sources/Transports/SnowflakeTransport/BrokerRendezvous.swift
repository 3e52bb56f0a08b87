import Foundation
import TransportWire

// Hostile input: the broker's (or AMP cache's) HTTP answer is parsed by HTTPResponseReader below;
// its comment states the caps. The decoded body goes to BrokerMessages.swift and, for an answer, to
// SessionDescriptionProtocol.swift, both within readLimit.

/// Where and how to reach the broker: the bridge line's `url=` and `fronts=` (or `front=`).
public struct BrokerEndpoint: Sendable, Hashable {
    /// The broker URL; requests resolve relative to it (keep the trailing "/").
    public let url: URL
    /// Front domains (each optionally with ":port"); one is picked per request.
    public let fronts: [String]

    public init(url: URL, fronts: [String] = []) throws(SnowflakeError) {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty else {
            throw SnowflakeError(code: .brokerURL, kind: .invalidInput, message: "the broker URL must be http(s)://host/...")
        }
        guard url.user == nil, url.password == nil else {
            throw SnowflakeError(code: .brokerURL, kind: .invalidInput, message: "the broker URL must not carry user information")
        }
        self.url = url
        self.fronts = fronts.filter { !$0.isEmpty }
    }
}

/// Rendezvous with the broker: one client poll, over HTTP POST (`/client`) or the AMP form
/// (`GET /amp/client/...`), the latter either to the broker itself or through an AMP cache
/// (`ampcache=`: the request URL is rewritten onto the cache, see `AMPCacheURL`).
///
/// Domain fronting as upstream: with fronts, the TCP connection and TLS SNI go to a randomly chosen
/// front (its port, or the scheme's default: the URL's port is not kept), while the HTTP `Host`
/// header keeps the URL's host (and port, as written): the broker's, or the cache's rewritten host
/// through an AMP cache. Requests are hand-written HTTP/1.1 on our own stream, so the `Host`
/// header is exactly what we put there.
public struct BrokerRendezvous: Sendable {
    /// Largest response body (a poll answer is a few kilobytes).
    public static let readLimit = 100_000
    /// One exchange (request written, whole response read) ends by this deadline, plus at most one
    /// read timeout of the connector: a broker or cache that drips its answer cannot hold the
    /// rendezvous. The broker itself holds a poll up to about 10 s while it finds a proxy.
    /// Decoding the body (JSON, AMP armor) comes after and is not covered; it is linear in the
    /// body, which is at most readLimit bytes.
    public static let exchangeDeadline: Duration = .seconds(30)

    public let endpoint: BrokerEndpoint
    public let connector: any SnowflakeStreamConnector
    /// The AMP cache the AMP form goes through; nil sends it to the broker directly.
    public let ampCache: URL?

    public init(endpoint: BrokerEndpoint, connector: any SnowflakeStreamConnector, ampCache: URL? = nil) {
        self.endpoint = endpoint
        self.connector = connector
        self.ampCache = ampCache
    }

    /// POST the poll to `<url>client`, return the decoded response.
    public func exchange(_ request: ClientPollRequest) async throws(SnowflakeError) -> ClientPollResponse {
        let target = try resolve("client")
        let response = try await send(method: "POST", target: target, body: request.encoded)
        guard response.status == 200 else {
            throw SnowflakeError(code: .brokerHTTP, kind: .protocolViolation,
                                 message: "the broker answered HTTP status \(response.status)")
        }
        return try ClientPollResponse(decoding: response.body)
    }

    /// The same poll through the AMP form: GET `<url>amp/client/<EncodePath>` (through the AMP
    /// cache when there is one), armored answer.
    public func exchangeAMP(_ request: ClientPollRequest) async throws(SnowflakeError) -> ClientPollResponse {
        let target = try resolveAMP(AMPEncoding.encodePath(request.encoded))
        let response = try await send(method: "GET", target: target, body: nil,
                                      peer: ampCache == nil ? "the broker" : "the AMP cache")
        // A cache turns the broker's errors into 404 and invalid AMP into a redirect.
        guard response.status == 200 else {
            throw SnowflakeError(code: .brokerHTTP, kind: .protocolViolation,
                                 message: "the AMP endpoint answered HTTP status \(response.status)")
        }
        // Google's cache sometimes answers 200 with a Location header and a script redirect.
        guard response.header("location") == nil else {
            throw SnowflakeError(code: .brokerHTTP, kind: .protocolViolation, message: "the AMP endpoint answered with a redirect")
        }
        return try ClientPollResponse(decoding: try AMPEncoding.decodeArmor(response.body))
    }

    /// RFC 3986 resolution of a relative path against the broker URL (path only; the URL has no
    /// query we keep).
    func resolve(_ relative: String) throws(SnowflakeError) -> RequestTarget {
        let url = endpoint.url
        return try target(scheme: url.scheme!.lowercased(), host: url.host!, port: url.port, path: brokerPath(relative))
    }

    /// Where the AMP form of a poll goes: `<url>amp/client/<encoded>`, rewritten onto the AMP cache
    /// when there is one.
    func resolveAMP(_ encodedPoll: String) throws(SnowflakeError) -> RequestTarget {
        let url = endpoint.url
        let path = brokerPath("amp/client/" + encodedPoll)
        guard let ampCache else { return try resolve("amp/client/" + encodedPoll) }
        let rewritten = try AMPCacheURL.rewrite(brokerScheme: url.scheme!, brokerHost: url.host!, brokerPort: url.port,
                                                brokerPath: path, cache: ampCache)
        return try target(scheme: rewritten.scheme, host: rewritten.host, port: rewritten.port, path: rewritten.path)
    }

    /// The broker URL's directory (up to its last "/") followed by `relative`.
    private func brokerPath(_ relative: String) -> String {
        let basePath = endpoint.url.path(percentEncoded: true)
        if let slash = basePath.lastIndex(of: "/") { return String(basePath[...slash]) + relative }
        return "/" + relative
    }

    /// A request for scheme://host[:port]path, domain-fronted when there are fronts.
    private func target(scheme: String, host: String, port: Int?, path: String) throws(SnowflakeError) -> RequestTarget {
        let defaultPort: UInt16 = scheme == "https" ? 443 : 80
        let bracketed = host.contains(":") ? "[\(host)]" : host
        let hostHeader = port.map { bracketed + ":\($0)" } ?? bracketed
        var connectHost = host
        var connectPort = port.map { UInt16(clamping: $0) } ?? defaultPort
        if let front = endpoint.fronts.randomElement() {
            let parts = front.split(separator: ":", maxSplits: 1).map(String.init)
            connectHost = parts[0]
            connectPort = defaultPort
            if parts.count == 2 {
                guard let port = UInt16(parts[1]), port > 0 else {
                    throw SnowflakeError(code: .brokerURL, kind: .invalidInput, message: "a front has an invalid port")
                }
                connectPort = port
            }
        }
        return RequestTarget(path: path, hostHeader: hostHeader, connectHost: connectHost,
                             connectPort: connectPort, tlsServerName: scheme == "https" ? connectHost : nil)
    }

    struct RequestTarget: Sendable, Equatable {
        var path: String
        var hostHeader: String
        var connectHost: String
        var connectPort: UInt16
        var tlsServerName: String?
    }

    private func send(method: String, target: RequestTarget, body: [UInt8]?,
                      peer: String = "the broker") async throws(SnowflakeError) -> HTTPResponse {
        let deadline = ContinuousClock.now + Self.exchangeDeadline
        let stream = try await connector.connect(host: target.connectHost, port: target.connectPort,
                                                 tlsServerName: target.tlsServerName)
        defer { stream.close() }
        do {
            try await stream.write(HTTPRequest(method: method, path: target.path, host: target.hostHeader, body: body).encoded)
        } catch {
            throw SnowflakeError(streamFailure: error)
        }
        return try await HTTPResponse.read(from: stream, bodyLimit: Self.readLimit, peer: peer, deadline: deadline)
    }
}

/// A minimal HTTP/1.1 request: no keep-alive, no content type (the Go client sets none).
struct HTTPRequest {
    var method: String
    var path: String
    var host: String
    var body: [UInt8]?

    var encoded: [UInt8] {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\nUser-Agent: Go-http-client/1.1\r\n"
        if let body { head += "Content-Length: \(body.count)\r\n" }
        head += "Connection: close\r\n\r\n"
        return Array(head.utf8) + (body ?? [])
    }
}

/// A parsed HTTP/1.x response: status, headers (names lower-cased), body (Content-Length,
/// chunked, or until the server closes). Bodies over the limit are an error, as upstream.
package struct HTTPResponse {
    package var status: Int
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]

    package func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    /// Reads one response from `stream`. Each read waits at most the stream's own read timeout, and
    /// the whole response at most until `deadline` (checked after every read), so a peer that drips
    /// a byte at a time cannot hold the rendezvous longer than deadline + one read timeout.
    static func read(from stream: any ByteStream, bodyLimit: Int, peer: String = "the broker",
                     deadline: ContinuousClock.Instant? = nil) async throws(SnowflakeError) -> HTTPResponse {
        var reader = HTTPResponseReader(bodyLimit: bodyLimit, peer: peer)
        while true {
            let piece: [UInt8]
            do {
                piece = try await stream.read(maximumCount: 16 * 1024)
            } catch {
                throw SnowflakeError(streamFailure: error)
            }
            if piece.isEmpty { return try reader.endOfStream() }
            if let response = try reader.append(piece) { return response }
            if let deadline, ContinuousClock.now >= deadline {
                throw SnowflakeError(code: .timeout, kind: .network,
                                     message: "\(peer) did not finish its HTTP response in time")
            }
        }
    }
}

/// The incremental HTTP/1.x response parser behind `HTTPResponse.read`: bytes in, in any split, a
/// response out when it is complete.
///
/// Hostile input (the answer crosses CDNs, and anyone on the path of an http:// broker): no byte may
/// trap, hang or grow memory without a cap. The head is read by TransportWire's HTTPHeadReader (its
/// grammar and caps in HTTPResponseHead.swift), here with at most headLimit bytes and
/// headerCountLimit header lines; a chunk-size line at most chunkLineLimit bytes of hex digits, parsed with overflow
/// checks; every size is compared against what is left of bodyLimit before any sum (a chunk size of
/// 7fffffffffffffff after a 1-byte chunk used to overflow `body.count + size`); a Content-Length is
/// digits only and at most bodyLimit; a body without either ends at EOF, also at most bodyLimit.
/// Impossible values are typed errors (broker-http, response-too-large).
package struct HTTPResponseReader {
    /// Largest head (status line and headers).
    package static let defaultHeadLimit = HTTPHeadReader.maximumHeadBytes
    /// Most header lines.
    package static let defaultHeaderCountLimit = HTTPHeadReader.maximumFieldCount
    /// Longest chunk-size line (with extensions).
    package static let defaultChunkLineLimit = 1024

    package let bodyLimit: Int
    /// The caps in force (the static defaults; the fuzz target uses small ones to reach them).
    package let headLimit: Int
    package let headerCountLimit: Int
    package let chunkLineLimit: Int
    private let peer: String
    private var head: HTTPHeadReader
    private var buffer: [UInt8] = []
    private var start = 0
    private var status = 0
    private var headers: [(name: String, value: String)] = []
    private var body: [UInt8] = []

    private enum Stage {
        case head, chunkSize, chunkData(remaining: Int), chunkEnd, fixed(remaining: Int), untilClose, done
    }
    private var stage = Stage.head

    package init(bodyLimit: Int, peer: String = "the broker", headLimit: Int = HTTPResponseReader.defaultHeadLimit,
                 headerCountLimit: Int = HTTPResponseReader.defaultHeaderCountLimit,
                 chunkLineLimit: Int = HTTPResponseReader.defaultChunkLineLimit) {
        self.bodyLimit = max(0, bodyLimit)
        self.peer = peer
        self.headLimit = max(4, headLimit)
        self.headerCountLimit = max(0, headerCountLimit)
        self.chunkLineLimit = max(1, chunkLineLimit)
        self.head = HTTPHeadReader(headLimit: self.headLimit, fieldCountLimit: self.headerCountLimit)
    }

    /// Bytes held now (undecoded input plus the body so far): never more than headLimit + 3 (or
    /// chunkLineLimit + 1) + bodyLimit + one read.
    package var bufferedBytes: Int { head.bufferedCount + buffer.count - start + body.count }

    private func malformed(_ what: String) -> SnowflakeError {
        SnowflakeError(code: .brokerHTTP, kind: .protocolViolation, message: "\(peer) sent a malformed HTTP response: \(what)")
    }

    private func tooLarge() -> SnowflakeError {
        SnowflakeError(code: .responseTooLarge, kind: .protocolViolation,
                       message: "\(peer)'s response is larger than \(bodyLimit) bytes")
    }

    /// Feeds bytes; the response once it is complete (later bytes are ignored).
    package mutating func append(_ bytes: some Collection<UInt8>) throws(SnowflakeError) -> HTTPResponse? {
        if case .done = stage { return response }
        if case .head = stage {
            let parsed: (head: HTTPResponseHead, remainder: [UInt8])?
            do {
                parsed = try head.append(bytes)
            } catch {
                throw malformed(error.code == .httpTooLarge ? "the header section is too large (\(error.message))" : error.message)
            }
            guard let parsed else { return nil }
            try startBody(parsed.head)
            head = HTTPHeadReader(headLimit: 1, fieldCountLimit: 0)  // done: its buffer is released
            buffer = parsed.remainder
            start = 0
        } else {
            if start > 0 && start >= buffer.count / 2 {
                buffer.removeFirst(start)
                start = 0
            }
            buffer.append(contentsOf: bytes)
        }
        try advance()
        if case .done = stage { return response }
        return nil
    }

    /// The peer closed: the response if it is complete (a body framed by EOF), else an error.
    package mutating func endOfStream() throws(SnowflakeError) -> HTTPResponse {
        switch stage {
        case .done: return response
        case .untilClose:
            stage = .done
            return response
        case .head: throw malformed("the connection closed before the headers ended")
        case .chunkSize, .chunkData, .chunkEnd: throw malformed("the connection closed inside the chunked body")
        case .fixed: throw malformed("the body is shorter than its Content-Length")
        }
    }

    private var response: HTTPResponse { HTTPResponse(status: status, headers: headers, body: body) }

    private var available: Int { buffer.count - start }

    private mutating func advance() throws(SnowflakeError) {
        while true {
            switch stage {
            case .done:
                return
            case .head:
                return  // append hands the head to HTTPHeadReader
            case .chunkSize:
                guard let end = find([13, 10], from: start) else {
                    guard available < chunkLineLimit + 2 else { throw malformed("a chunk-size line is too long") }
                    return
                }
                guard end - start <= chunkLineLimit else { throw malformed("a chunk-size line is too long") }
                let size = try chunkSize(buffer[start..<end])
                start = end + 2
                if size == 0 {
                    stage = .done  // trailers, if any, are not needed: the request said Connection: close
                } else {
                    guard size <= bodyLimit - body.count else { throw tooLarge() }
                    stage = .chunkData(remaining: size)
                }
            case .chunkData(let remaining):
                let take = min(remaining, available)
                guard take > 0 else { return }
                body += buffer[start..<(start + take)]
                start += take
                stage = remaining - take == 0 ? .chunkEnd : .chunkData(remaining: remaining - take)
            case .chunkEnd:
                guard available >= 2 else { return }
                guard buffer[start] == 13, buffer[start + 1] == 10 else { throw malformed("a chunk does not end with CRLF") }
                start += 2
                stage = .chunkSize
            case .fixed(let remaining):
                let take = min(remaining, available)
                body += buffer[start..<(start + take)]
                start += take
                if remaining - take == 0 { stage = .done } else {
                    stage = .fixed(remaining: remaining - take)
                    return
                }
            case .untilClose:
                guard available <= bodyLimit - body.count else { throw tooLarge() }
                body += buffer[start...]
                start = buffer.count
                return
            }
        }
    }

    private func find(_ pattern: [UInt8], from: Int) -> Int? {
        guard buffer.count >= pattern.count, from <= buffer.count - pattern.count else { return nil }
        var index = from
        while index <= buffer.count - pattern.count {
            if buffer[index] == pattern[0] && buffer[(index + 1)..<(index + pattern.count)].elementsEqual(pattern.dropFirst()) {
                return index
            }
            index += 1
        }
        return nil
    }

    /// The framing of the body, from the head (names lower-cased, values as text).
    private mutating func startBody(_ parsed: HTTPResponseHead) throws(SnowflakeError) {
        status = parsed.status
        headers = parsed.fields.map { field in
            (String(decoding: field.name.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }, as: UTF8.self),
             String(decoding: field.value, as: UTF8.self))
        }
        let response = self.response
        if response.header("transfer-encoding")?.lowercased().contains("chunked") == true {
            stage = .chunkSize
        } else if let text = response.header("content-length") {
            guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
                  let length = Int(text) else { throw malformed("a bad Content-Length") }
            guard length <= bodyLimit else { throw tooLarge() }
            stage = .fixed(remaining: length)
        } else {
            stage = .untilClose
        }
    }

    /// The chunk size in hex (extensions after ";" ignored), overflow-checked.
    private func chunkSize(_ line: ArraySlice<UInt8>) throws(SnowflakeError) -> Int {
        var size = 0
        var digits = 0
        for byte in line {
            if byte == UInt8(ascii: ";") { break }
            if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
                guard digits > 0 else { continue }  // tolerate leading whitespace, as before
                break
            }
            let value: Int
            switch byte {
            case 48...57: value = Int(byte) - 48
            case 65...70: value = Int(byte) - 55
            case 97...102: value = Int(byte) - 87
            default: throw malformed("a bad chunk size")
            }
            let (shifted, overflow) = size.multipliedReportingOverflow(by: 16)
            guard !overflow else { throw tooLarge() }
            size = shifted + value
            digits += 1
        }
        guard digits > 0 else { throw malformed("a bad chunk size") }
        return size
    }
}
