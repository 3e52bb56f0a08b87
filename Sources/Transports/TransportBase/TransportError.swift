import PosternSystem

/// The one error type every transport throws, in the shape of every public Postern error
/// (``CodedError``).
///
/// `code` names the precise failure and can grow (transports add their own codes in extensions);
/// `kind` is the coarse category callers branch on; `message` is for people and never carries
/// bridge addresses, certificates or key material. `description` puts the code in front.
public typealias TransportError = CodedError<TransportErrorDomain>

public enum TransportErrorDomain: ErrorDomain {
    public static var defaultKind: TransportError.Kind { .internal }
    public static func describe(code: TransportError.Code, message: String) -> String { "\(code): \(message)" }
}

/// Kinds: PosternSystem's `invalidInput` (arguments or configuration rejected before any network
/// activity), `network`, `protocolViolation` (or failed authentication) and `timeout`, and:
extension TransportError.Kind {
    /// The operation was cancelled or the object was closed locally.
    public static let cancelled = Self("cancelled")
    /// A local resource or library call failed.
    public static let `internal` = Self("internal")
}

extension TransportError.Code {
    public static let invalidTransportName = Self(rawValue: "invalid-transport-name")
    public static let duplicateTransport = Self(rawValue: "duplicate-transport")
    public static let unknownTransport = Self(rawValue: "unknown-transport")
    public static let invalidArguments = Self(rawValue: "invalid-arguments")
    public static let invalidEndpoint = Self(rawValue: "invalid-endpoint")
    public static let socketFailure = Self(rawValue: "socket-failure")
    public static let connectionRefused = Self(rawValue: "connection-refused")
    public static let networkUnreachable = Self(rawValue: "network-unreachable")
    public static let hostUnreachable = Self(rawValue: "host-unreachable")
    public static let connectionReset = Self(rawValue: "connection-reset")
    public static let connectionClosed = Self(rawValue: "connection-closed")
    public static let timedOut = Self(rawValue: "timed-out")
    public static let cancelled = Self(rawValue: "cancelled")
    public static let socksProtocol = Self(rawValue: "socks-protocol")
    /// A SOCKS CONNECT to something that is not one of the run's bridges (SocksAdmission).
    public static let destinationNotAllowed = Self(rawValue: "destination-not-allowed")
    /// This process cannot tell its own loopback connections from other accounts' (no netlink
    /// sock_diag or /proc/self/fd): a listener restricted to this process's clients does not start.
    public static let clientCheckUnavailable = Self(rawValue: "client-check-unavailable")
}
