/// One header field of an HTTP/2 request or response. Response names arrive lower-cased (RFC 9113
/// section 8.2.1 makes upper case a malformed message, which nghttp2 refuses); request names must be
/// sent lower-cased, and ``HTTP2Request`` lower-cases them.
public struct HTTP2Header: Sendable, Equatable {
    public let name: String
    public let value: String

    public init(name: String, value: String) {
        self.name = name.lowercased()
        self.value = value
    }
}

/// A request for ``HTTP2Connection``: the pseudo-header fields, then `headers`, then `body`.
public struct HTTP2Request: Sendable {
    public var method: String
    /// `:authority`: the host (and port, when not the scheme's default) the request is for. With
    /// domain fronting this is the real service, while TLS's server name is the front.
    public var authority: String
    /// `:path`: origin-form, starting with "/".
    public var path: String
    public var scheme: String
    public var headers: [HTTP2Header]
    /// Sent as DATA frames after the header block; nil sends the header block with END_STREAM.
    public var body: [UInt8]?

    public init(method: String, authority: String, path: String, scheme: String = "https",
                headers: [HTTP2Header] = [], body: [UInt8]? = nil) {
        self.method = method
        self.authority = authority
        self.path = path
        self.scheme = scheme
        self.headers = headers
        self.body = body
    }
}

/// A complete response: the final `:status`, the other header fields in the order received, and
/// the body (its size within the limit the request gave).
public struct HTTP2Response: Sendable, Equatable {
    public let status: Int
    public let headers: [HTTP2Header]
    public let body: [UInt8]

    /// The first value of `lowercaseName`, nil when absent.
    public func value(_ lowercaseName: String) -> String? { headers.first { $0.name == lowercaseName }?.value }
}

/// The SETTINGS and connection window a client opens with. These are inside TLS, so a censor on
/// the path never sees them; the server (or a CDN in front of it) does, and `firefox` makes it see
/// what Firefox sends rather than nghttp2's defaults.
public struct HTTP2ClientSettings: Sendable, Equatable {
    public var headerTableSize: UInt32
    public var enablePush: Bool
    public var initialWindowSize: UInt32
    public var maxFrameSize: UInt32
    /// The increment of the first connection-level WINDOW_UPDATE (0 sends none).
    public var connectionWindowIncrement: UInt32

    /// Firefox's opening as published in the Akamai HTTP/2 fingerprint format
    /// (`1:65536;2:0;4:131072;5:16384|12517377|0|m,p,a,s`, Shuster and Gerson, "Passive Fingerprinting
    /// of HTTP/2 Clients", Black Hat EU 2017, updated for Firefox after priority frames were
    /// dropped): HEADER_TABLE_SIZE 65536, ENABLE_PUSH 0, INITIAL_WINDOW_SIZE 131072,
    /// MAX_FRAME_SIZE 16384, a connection WINDOW_UPDATE of 12517377, no PRIORITY frames, and the
    /// pseudo-header order :method, :path, :authority, :scheme (``HTTP2Connection`` sends that order).
    /// Taken from the published fingerprint, not measured against firefox-esr here (its frames are
    /// inside TLS; reading them would take its key log).
    public static let firefox = HTTP2ClientSettings(headerTableSize: 65_536, enablePush: false, initialWindowSize: 131_072,
                                                    maxFrameSize: 16_384, connectionWindowIncrement: 12_517_377)

    public init(headerTableSize: UInt32, enablePush: Bool, initialWindowSize: UInt32, maxFrameSize: UInt32, connectionWindowIncrement: UInt32) {
        self.headerTableSize = headerTableSize
        self.enablePush = enablePush
        self.initialWindowSize = initialWindowSize
        self.maxFrameSize = maxFrameSize
        self.connectionWindowIncrement = connectionWindowIncrement
    }
}
