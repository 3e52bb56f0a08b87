import Foundation
import TransportTLS
import TransportWire

// Hostile input: the broker's (or AMP cache's) HTTP answer is read by HTTPResponse.read and parsed
// by TransportWire's HTTP1ResponseReader (HTTP1ResponseReader.swift states the caps). The decoded body goes to
// BrokerMessages.swift and, for an answer, to SessionDescriptionProtocol.swift, both within
// readLimit. The connection itself comes from a SnowflakeStreamConnector (BrowserTLSConnector for
// https: Firefox ESR's ClientHello, SNI = the front).

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
        // The ClientHello offers h2 as Firefox's does; a server (or front) that picks it gets HTTP/2.
        var response: HTTPResponse
        if let tls = stream as? BrowserTLSStream, tls.applicationProtocol == "h2" {
            response = try await sendHTTP2(over: tls, method: method, target: target, body: body, peer: peer, deadline: deadline)
        } else {
            do {
                try await stream.write(HTTPRequest(method: method, path: target.path, host: target.hostHeader, body: body).encoded)
            } catch {
                throw SnowflakeError(streamFailure: error)
            }
            response = try await HTTPResponse.read(from: stream, bodyLimit: Self.readLimit, peer: peer, deadline: deadline)
        }
        // Both forms ask for gzip (as Go's do); as Go's transport, inflate only that coding and pass
        // any other body through as it came.
        if response.header("content-encoding")?.trimmingCharacters(in: .whitespaces).lowercased() == "gzip" {
            response.body = try GzipBody.inflate(response.body, limit: Self.readLimit, peer: peer)
        }
        return response
    }

    /// The same exchange as HTTP/2 (TransportWire's HTTP2Connection): `:authority` is the Host the
    /// HTTP/1.1 form sends (the real broker or cache behind a front), the fields what Go's HTTP/2
    /// client sends for the reference client's request, the same body limit and deadline.
    private func sendHTTP2(over tls: BrowserTLSStream, method: String, target: RequestTarget, body: [UInt8]?,
                           peer: String, deadline: ContinuousClock.Instant) async throws(SnowflakeError) -> HTTPResponse {
        var headers: [HTTP2Header] = []
        if let body { headers.append(HTTP2Header(name: "content-length", value: "\(body.count)")) }
        headers.append(HTTP2Header(name: "accept-encoding", value: "gzip"))
        headers.append(HTTP2Header(name: "user-agent", value: "Go-http-client/2.0"))
        let request = HTTP2Request(method: method, authority: target.hostHeader, path: target.path, headers: headers, body: body)
        do throws(WireError) {
            let http2 = try await HTTP2Connection.open(over: tls)
            defer { http2.close() }
            let response = try await http2.send(request, bodyLimit: Self.readLimit, timeout: max(.zero, deadline - ContinuousClock.now))
            return HTTPResponse(status: response.status, headers: response.headers.map { ($0.name, $0.value) }, body: response.body)
        } catch {
            switch error.code {
            case .http2TooLarge:
                throw SnowflakeError(code: .responseTooLarge, kind: .protocolViolation, message: "\(peer) sent an HTTP/2 response past a limit: \(error.message)")
            case .timeout:
                throw SnowflakeError(code: .timeout, kind: .network, message: "\(peer) did not finish its HTTP/2 response in time")
            case .http2Failed:
                throw SnowflakeError(code: .brokerHTTP, kind: .protocolViolation, message: "\(peer): \(error.message)")
            default:
                throw SnowflakeError(streamFailure: error)
            }
        }
    }
}
