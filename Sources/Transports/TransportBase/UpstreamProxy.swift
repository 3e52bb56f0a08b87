import PosternSystem
import TransportWire

/// The proxy a managed PT must use for its outgoing connections (`TOR_PT_PROXY`, pt-spec §3.2).
///
/// Only `socks5://[user:pass@]IP:port` is supported; tor writes the host as an IP literal (IPv6 in
/// brackets). The description round-trips and therefore contains the credentials: log
/// `scrubbedDescription` instead.
public struct UpstreamProxy: Hashable, Sendable, CustomStringConvertible {
    public let endpoint: TransportEndpoint
    public let username: String?
    public let password: String?

    public init(endpoint: TransportEndpoint, username: String? = nil, password: String? = nil) throws(TransportError) {
        if let username, username.utf8.isEmpty || username.utf8.count > 255 { throw Self.invalid("the user name must be 1 to 255 bytes") }
        if let password, password.utf8.isEmpty || password.utf8.count > 255 { throw Self.invalid("the password must be 1 to 255 bytes") }
        guard (username == nil) == (password == nil) else { throw Self.invalid("a user name needs a password and vice versa") }
        self.endpoint = endpoint
        self.username = username
        self.password = password
    }

    public init(parsing uri: String) throws(TransportError) {
        guard let schemeEnd = uri.range(of: "://") else { throw Self.invalid("expected scheme://host:port") }
        let scheme = uri[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "socks5" else {
            throw TransportError(code: .unsupportedProxy, kind: .invalidInput,
                                 message: "upstream proxy scheme \"\(scheme.prefix(16))\" is not supported (only socks5)")
        }
        var rest = Substring(uri[schemeEnd.upperBound...])
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        var username: String?
        var password: String?
        // tor does not percent-encode credentials, so the LAST '@' separates them from the host.
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            guard let colon = credentials.firstIndex(of: ":") else { throw Self.invalid("credentials must be user:password") }
            username = String(credentials[..<colon])
            password = String(credentials[credentials.index(after: colon)...])
            rest = rest[rest.index(after: at)...]
        }
        try self.init(endpoint: TransportEndpoint(parsing: String(rest)), username: username, password: password)
    }

    public var description: String {
        let credentials = username.map { "\($0):\(password ?? "")@" } ?? ""
        return "socks5://\(credentials)\(endpoint)"
    }

    public var scrubbedDescription: String { "socks5://[scrubbed]" }

    private static func invalid(_ reason: String) -> TransportError {
        TransportError(code: .invalidProxy, kind: .invalidInput, message: "TOR_PT_PROXY: \(reason)")
    }
}

extension TransportError.Code {
    public static let invalidProxy = Self(rawValue: "invalid-upstream-proxy")
    public static let unsupportedProxy = Self(rawValue: "unsupported-upstream-proxy")
    public static let proxyRefused = Self(rawValue: "upstream-proxy-refused")
}

/// How a transport opens its TCP connections: directly, or through the upstream proxy; and where
/// each connection it opens is reported (``FlowLedger``), so connection assist can read what the
/// network did to it.
public struct OutboundDialer: Sendable {
    public let proxy: UpstreamProxy?
    /// Where connections are reported; nil reports nothing.
    public private(set) var ledger: FlowLedger?
    public private(set) var origin: FlowOrigin = .transport
    /// The per-ip:port discipline every connection passes (``EndpointGate``); nil for none.
    public private(set) var gate: EndpointGate? = .shared

    init(proxy: UpstreamProxy?) { self.proxy = proxy }

    public static let direct = OutboundDialer(proxy: nil)
    public static func through(_ proxy: UpstreamProxy) -> OutboundDialer { OutboundDialer(proxy: proxy) }

    /// The same dialer, reporting every connection it opens to `ledger` as `origin`'s.
    public func reporting(to ledger: FlowLedger, as origin: FlowOrigin) -> OutboundDialer {
        var copy = self
        copy.ledger = ledger
        copy.origin = origin
        return copy
    }

    /// The same dialer, its connections taken as `origin`'s (the gate treats probes and confirm
    /// connects apart from dials) without a ledger.
    public func labelled(as origin: FlowOrigin) -> OutboundDialer {
        var copy = self
        copy.origin = origin
        return copy
    }

    /// The same dialer with another gate (nil: none), e.g. a test's own.
    public func gated(by gate: EndpointGate?) -> OutboundDialer {
        var copy = self
        copy.gate = gate
        return copy
    }

    /// A connected socket to `endpoint`; `timeout` bounds the TCP connect and any proxy exchange.
    /// The gate may delay the connect (its wait is not part of `timeout`) or refuse it without
    /// any packet sent (`held-back`, `endpoint-busy`).
    public func connect(to endpoint: TransportEndpoint, timeout: Duration) async throws -> TCPSocket {
        let flow: ((FlowCounters) -> FlowEntry)? = ledger.map { ledger in
            { [origin, proxy] counters in ledger.begin(peer: endpoint, origin: origin, throughProxy: proxy != nil, counters: counters) }
        }
        // The bridge's ip:port is what a censor on the path counts, even through a proxy (whose
        // own connection then carries it).
        let role: EndpointGate.Role = origin == .probe || origin == .confirm ? .probe : .dial
        let pass = try await gate?.admit(endpoint, as: role)
        guard let proxy else { return try await TCPSocket.connect(to: endpoint, timeout: timeout, reportingTo: flow, gatePass: pass) }
        let socket = try await TCPSocket.connect(to: proxy.endpoint, timeout: timeout, reportingTo: flow, gatePass: pass)
        do {
            try await withDeadline(timeout, expired: {
                socket.abort(with: TransportError(code: .timedOut, kind: .timeout, message: "the upstream proxy did not answer in time"))
            }) {
                try await Self.socks5Connect(socket, proxy: proxy, target: endpoint)
            }
            return socket
        } catch {
            socket.abort(with: error as? TransportError ?? SocketErrors.closedLocally)
            throw error
        }
    }

    /// RFC 1928 CONNECT, with RFC 1929 authentication when credentials are set.
    private static func socks5Connect(_ socket: TCPSocket, proxy: UpstreamProxy, target: TransportEndpoint) async throws {
        func refused(_ reason: String) -> TransportError {
            TransportError(code: .proxyRefused, kind: .network, message: "upstream proxy: \(reason)")
        }
        var reader = BufferedReader(socket: socket)
        let method: UInt8 = proxy.username == nil ? 0x00 : 0x02
        try await socket.write([5, 1, method])
        let selection = try await reader.read(exactly: 2)
        guard selection == [5, method] else { throw refused("it did not accept our authentication method") }
        if let username = proxy.username, let password = proxy.password {
            let user = Array(username.utf8), pass = Array(password.utf8)
            try await socket.write([1, UInt8(user.count)] + user + [UInt8(pass.count)] + pass)
            guard try await reader.read(exactly: 2) == [1, 0] else { throw refused("authentication failed") }
        }
        try await socket.write([5, 1, 0, target.isIPv6 ? 4 : 1] + target.addressBytes + [UInt8(target.port >> 8), UInt8(target.port & 0xFF)])
        let header = try await reader.read(exactly: 4)
        guard header[0] == 5 else { throw refused("malformed reply") }
        switch header[3] {
        case 1: _ = try await reader.read(exactly: 4 + 2)
        case 4: _ = try await reader.read(exactly: 16 + 2)
        case 3: _ = try await reader.read(exactly: Int(try await reader.readByte()) + 2)
        default: throw refused("malformed reply")
        }
        switch header[1] {
        case 0: break
        case 3: throw TransportError(code: .networkUnreachable, kind: .network, message: "upstream proxy: network unreachable")
        case 4: throw TransportError(code: .hostUnreachable, kind: .network, message: "upstream proxy: host unreachable")
        case 5: throw TransportError(code: .connectionRefused, kind: .network, message: "upstream proxy: connection refused")
        case 6: throw TransportError(code: .timedOut, kind: .timeout, message: "upstream proxy: TTL expired")
        default: throw refused("CONNECT failed with code \(header[1])")
        }
        guard reader.buffer.isEmpty else { throw refused("sent data before we did") }
    }
}
