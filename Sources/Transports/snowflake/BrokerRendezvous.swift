import Foundation

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
    public static let readLimit = 100_000

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
        let response = try await send(method: "GET", target: target, body: nil)
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

    private func send(method: String, target: RequestTarget, body: [UInt8]?) async throws(SnowflakeError) -> HTTPResponse {
        let stream = try await connector.connect(host: target.connectHost, port: target.connectPort,
                                                 tlsServerName: target.tlsServerName)
        defer { stream.close() }
        try await stream.write(HTTPRequest(method: method, path: target.path, host: target.hostHeader, body: body).encoded)
        return try await HTTPResponse.read(from: stream, bodyLimit: Self.readLimit)
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
struct HTTPResponse {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    static let headLimit = 16 * 1024

    static func read(from stream: any SnowflakeByteStream, bodyLimit: Int) async throws(SnowflakeError) -> HTTPResponse {
        var buffer: [UInt8] = []
        var eof = false
        func fill() async throws(SnowflakeError) {
            let piece = try await stream.read(maxLength: 16 * 1024)
            if piece.isEmpty { eof = true } else { buffer += piece }
        }
        func malformed(_ what: String) -> SnowflakeError {
            SnowflakeError(code: .brokerHTTP, kind: .protocolViolation, message: "malformed HTTP response: \(what)")
        }
        // Head.
        var headEnd: Int?
        while headEnd == nil {
            if let range = findCRLFCRLF(buffer) { headEnd = range; break }
            guard buffer.count <= headLimit else { throw malformed("header section too large") }
            guard !eof else { throw malformed("connection closed before the headers ended") }
            try await fill()
        }
        let head = String(decoding: buffer[..<headEnd!], as: UTF8.self)
        var rest = Array(buffer[(headEnd! + 4)...])
        let lines = head.components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ", maxSplits: 2)
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else {
            throw malformed("bad status line")
        }
        var headers: [(String, String)] = []
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { throw malformed("header without a colon") }
            headers.append((line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        var response = HTTPResponse(status: status, headers: headers, body: [])
        buffer = rest
        rest = []
        func tooLarge() -> SnowflakeError {
            SnowflakeError(code: .responseTooLarge, kind: .protocolViolation,
                           message: "the broker's response is larger than \(bodyLimit) bytes")
        }
        if response.header("transfer-encoding")?.lowercased().contains("chunked") == true {
            var body: [UInt8] = []
            while true {
                var lineEnd = findCRLF(buffer)
                while lineEnd == nil {
                    guard !eof else { throw malformed("truncated chunk size") }
                    guard buffer.count < 1024 else { throw malformed("chunk size line too long") }
                    try await fill()
                    lineEnd = findCRLF(buffer)
                }
                let sizeText = String(decoding: buffer[..<lineEnd!], as: UTF8.self)
                    .split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
                guard let size = Int(sizeText, radix: 16), size >= 0 else { throw malformed("bad chunk size") }
                buffer.removeFirst(lineEnd! + 2)
                if size == 0 { break }
                guard body.count + size <= bodyLimit else { throw tooLarge() }
                while buffer.count < size + 2 {
                    guard !eof else { throw malformed("truncated chunk") }
                    try await fill()
                }
                body += buffer[..<size]
                buffer.removeFirst(size + 2)
            }
            response.body = body
        } else if let lengthText = response.header("content-length") {
            guard let length = Int(lengthText), length >= 0 else { throw malformed("bad Content-Length") }
            guard length <= bodyLimit else { throw tooLarge() }
            while buffer.count < length {
                guard !eof else { throw malformed("body shorter than Content-Length") }
                try await fill()
            }
            response.body = Array(buffer.prefix(length))
        } else {
            while !eof {
                guard buffer.count <= bodyLimit else { throw tooLarge() }
                try await fill()
            }
            guard buffer.count <= bodyLimit else { throw tooLarge() }
            response.body = buffer
        }
        return response
    }
}

private func findCRLFCRLF(_ bytes: [UInt8]) -> Int? {
    guard bytes.count >= 4 else { return nil }
    for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
        return i
    }
    return nil
}

private func findCRLF(_ bytes: [UInt8]) -> Int? {
    guard bytes.count >= 2 else { return nil }
    for i in 0...(bytes.count - 2) where bytes[i] == 13 && bytes[i + 1] == 10 { return i }
    return nil
}
