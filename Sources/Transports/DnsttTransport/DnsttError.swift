import PosternCrypto
import PosternSystem
import TurboTunnel

/// The one public error type of the dnstt transport (``CodedError``): open sets of codes and kinds.
/// Messages never contain the resolver, the tunnel domain or the server's public key: on a
/// censored network those are the bridge's secrets.
public typealias DnsttError = CodedError<DnsttErrorDomain>

public enum DnsttErrorDomain: ErrorDomain {
    public static var defaultKind: DnsttError.Kind { .protocolViolation }
}

extension DnsttError.Code {
    /// A DNS message that does not parse (a length past the end, a bad name, trailing bytes).
    public static let dnsMalformed = Self("dns-malformed")
    /// A DNS response that parses but does not carry a dnstt payload (spec §3.2: not a response,
    /// an error RCODE, not exactly one answer, an answer outside the domain or not TXT).
    public static let responseNotUsable = Self("response-not-usable")
    /// The tunnel domain leaves no room for KCP packets of at least 80 bytes in a 255-octet name.
    public static let domainTooLong = Self("domain-too-long")
    /// A packet or a query that does not fit the name (our own input).
    public static let queryTooLong = Self("query-too-long")
    /// A Noise frame on the KCP stream with an impossible length.
    public static let noiseFrameMalformed = Self("noise-frame-malformed")
    /// The server's Noise handshake message, or the acknowledgement of the smux stream's opening,
    /// did not arrive within the handshake deadline.
    public static let handshakeTimeout = Self("handshake-timeout")
    /// No KCP data came down for the silence limit (2 min, smux's keepalive timeout).
    public static let downstreamSilent = Self("downstream-silent")
    /// Data waited to be sent without any progress for the send-stall limit.
    public static let sendStalled = Self("send-stalled")
    /// KCP sent a segment 20 times without an acknowledgement.
    public static let deadLink = Self("dead-link")
    /// The session or its resolver link has ended.
    public static let closed = Self("closed")
    /// The resolver link failed (a socket error, the resolver unreachable).
    public static let linkFailed = Self("link-failed")
}

extension DnsttError {
    /// A Noise failure (PosternCrypto) as a dnstt error: the same code (`noise-…`), kind and message.
    public init(noise error: NoiseError) {
        self.init(code: Code(rawValue: error.code.rawValue), kind: Kind(rawValue: error.kind.rawValue), message: error.message)
    }

    /// A KCP or smux failure (TurboTunnel) as a dnstt error: the same code (`kcp-…`, `smux-…`),
    /// kind and message (the message names the peer by the label the session gave).
    public init(turboTunnel error: TurboTunnelError) {
        self.init(code: Code(rawValue: error.code.rawValue), kind: Kind(rawValue: error.kind.rawValue), message: error.message)
    }
}
