import Foundation

/// Why one connection towards a route's peer failed, as a typed value (never matched by text).
public struct ConnectionProblem: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let refused = ConnectionProblem(rawValue: "refused")
    public static let reset = ConnectionProblem(rawValue: "reset")
    public static let timeout = ConnectionProblem(rawValue: "timeout")
    public static let noRoute = ConnectionProblem(rawValue: "no-route")
    /// The peer answered with the wrong identity (a man in the middle, or a wrong fingerprint).
    public static let identity = ConnectionProblem(rawValue: "identity")
    /// A read or write failed mid-handshake (a DPI box tearing down TLS looks like this).
    public static let ioError = ConnectionProblem(rawValue: "io-error")
    /// A transport's own handshake failed (obfs4 reply wrong, snowflake broker or proxy failed).
    public static let handshake = ConnectionProblem(rawValue: "handshake")
    public static let other = ConnectionProblem(rawValue: "other")
    /// Connected, our first packet went out, and nothing came back within the limit (a transport's
    /// handshake timeout): what a censor that judges first packets leaves behind.
    public static let silentAfterFirstPacket = ConnectionProblem(rawValue: "silent-after-first-packet")
    /// Postern did not connect at all: the ip:port was held back or busy at its own gate
    /// (TransportBase's EndpointGate). Never evidence about the network.
    public static let heldBack = ConnectionProblem(rawValue: "held-back")

    /// A tor REASON keyword (ORCONN or BOOTSTRAP) as a problem; nil for reasons that say nothing
    /// about the route (DONE: closed on purpose; RESOURCELIMIT, PT_MISSING: local; MISC).
    public init?(torReason: String) {
        switch torReason.uppercased() {
        case "CONNECTREFUSED": self = .refused
        case "CONNECTRESET": self = .reset
        case "TIMEOUT": self = .timeout
        case "NOROUTE": self = .noRoute
        case "IDENTITY": self = .identity
        case "IOERROR": self = .ioError
        default: return nil
        }
    }

    /// A transport's typed dial error (TransportError's code and kind) as a problem.
    public init(transportCode code: String, kind: String) {
        switch code {
        case "connection-refused": self = .refused
        case "connection-reset": self = .reset
        case "network-unreachable", "host-unreachable": self = .noRoute
        case "timed-out": self = .timeout
        default:
            if kind == "timeout" { self = .timeout } else if code.hasPrefix("obfs4-") || code.hasPrefix("snowflake-") {
                self = .handshake
            } else { self = .other }
        }
    }
}

