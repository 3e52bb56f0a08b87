import PosternLinkSpec

/// Who opened a connection: connection assist weighs tor's own dials, its probes and the health
/// check differently, and never counts a connection it closed itself as the censor's doing.
public struct FlowOrigin: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// A transport dialling a bridge for tor.
    public static let transport = FlowOrigin(rawValue: "transport")
    /// `name`'s transport dialling a bridge for tor: the tag tells connection assist which route a
    /// flow belongs to where the address cannot (a webtunnel bridge's line holds a placeholder).
    public static func transport(_ name: TransportName) -> FlowOrigin { FlowOrigin(rawValue: "transport:\(name.rawValue)") }

    /// The transport of a tagged tor dial (``transport(_:)``); nil for any other origin.
    public var transportName: TransportName? {
        guard rawValue.hasPrefix("transport:") else { return nil }
        return TransportName(String(rawValue.dropFirst("transport:".count)))
    }

    /// A dial for tor, tagged or not.
    public var isTransportDial: Bool { self == .transport || transportName != nil }
    /// Connection assist's probe of a route.
    public static let probe = FlowOrigin(rawValue: "probe")
    /// A connect that only checks whether an address still answers after a suspicious failure.
    public static let confirm = FlowOrigin(rawValue: "confirm")
    /// `bridges test`.
    public static let healthCheck = FlowOrigin(rawValue: "health-check")
}

/// One TCP connection Postern opened, as it ended (or as it stands, for an open one).
///
/// `peer` is a bridge's address: a secret. It is kept so reports can be grouped and compared per
/// address, and never printed: `description` leaves it out.
public struct FlowReport: Sendable, CustomStringConvertible {
    public let peer: TransportEndpoint
    public let origin: FlowOrigin
    /// The connection went through the user's upstream proxy: its timings are the proxy's.
    public let throughProxy: Bool
    public let counts: FlowCounts
    /// Why it ended: nil while open or when it ended cleanly (our close after use, the peer's FIN
    /// with `endedByPeer`).
    public let error: TransportError?
    public let isOpen: Bool
    /// The peer closed its side (FIN) rather than an error or our own close.
    public let endedByPeer: Bool

    public init(peer: TransportEndpoint, origin: FlowOrigin, throughProxy: Bool, counts: FlowCounts,
                error: TransportError?, isOpen: Bool, endedByPeer: Bool) {
        self.peer = peer
        self.origin = origin
        self.throughProxy = throughProxy
        self.counts = counts
        self.error = error
        self.isOpen = isOpen
        self.endedByPeer = endedByPeer
    }

    /// True when the TCP handshake completed.
    public var connected: Bool { counts.connectedAfter != nil }

    public var description: String {
        let state = isOpen ? "open" : endedByPeer ? "ended by the peer" : error.map { "ended: \($0.code)" } ?? "closed"
        return "\(origin) flow, \(connected ? "connected" : "not connected"), sent \(counts.bytesSent) B, received \(counts.bytesReceived) B, \(state)"
    }
}
