import PosternLinkSpec
import TransportBase

/// Reads a censor's technique from what the network did to one route's connections: pure and
/// clockless like ``RouteSelector``, so every rule is a unit test (docs/plans/CENSOR-AWARE-ASSIST.md,
/// section 2, and docs/CONNECTION-ASSIST.md).
///
/// The rules, first match wins; each names a technique only with its confirming evidence, never
/// from one flow alone:
///
/// | technique | needs |
/// |---|---|
/// | interception | a certificate that was not trusted |
/// | protocol block | a reset (or silence) right after a first packet that is not TLS, then a SYN-only confirm connect to that address (or any later connect to it) is silent, while another route's address answered |
/// | inconclusive | the same reset, but the address still answers (no cause named) |
/// | fingerprint block | a reset (or silence) right after a TLS ClientHello while another route's TLS passed |
/// | freeze | data stopped after some KB on a connection that stayed open while we wrote or tor waited on it ("seen" when two stop at sizes within 25 %) |
/// | refused | every address refused (no cause claimed: closed ports, or a censor) |
/// | address block | no address of the route answered while another route's did |
/// | nothing answers | no address answered anywhere (offline, or everything blocked; no cause claimed) |
/// | throttle | data came, slowly |
///
/// Not read here (yet): a burst block, which needs the connection history per address over time.
public enum CensorReader {
    /// A SYN-only connect made after a suspicious failure, to see whether the address still answers.
    public struct Confirmation: RawRepresentable, Sendable, Hashable, Codable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let answered = Confirmation(rawValue: "answered")
        public static let silent = Confirmation(rawValue: "silent")
        public static let refused = Confirmation(rawValue: "refused")
        /// The connect left but failed otherwise (unreachable, ...): no evidence either way, and
        /// not tried again (each try is a SYN the censor counts).
        public static let failed = Confirmation(rawValue: "failed")

        /// What a confirm connect's outcome says; nil when no packet left (Postern's gate held it
        /// back, or it was cancelled before it connected): only then may it be tried again.
        public static func of(_ error: any Error) -> Confirmation? {
            guard let error = error as? TransportError else { return .failed }
            switch error.code {
            case .timedOut: return .silent
            case .connectionRefused: return .refused
            case .heldBack, .endpointBusy, .cancelled: return nil
            default: return .failed
            }
        }
    }

    /// What one route's connections showed.
    public struct Evidence: Sendable {
        /// The route's transport (vanilla for tor's own TLS, obfs4, webtunnel, snowflake, ...).
        public var transport: TransportName
        /// Whether the transport's first data packet is a TLS ClientHello (vanilla, webtunnel,
        /// snowflake's broker) rather than random-looking bytes (obfs4).
        public var firstPacketIsTLS: Bool
        /// The route's connections, finished or open.
        public var flows: [FlowReport]
        /// Typed errors of the route's dials (a rejected certificate is only seen here).
        public var dialErrors: [TransportError]
        /// Confirm connects made after a reset or silence, per address.
        public var confirmations: [TransportEndpoint: Confirmation]
        /// Some other route's address answered meanwhile (the network is up).
        public var otherRouteAnswered: Bool
        /// Some other route's TLS handshake completed meanwhile.
        public var otherTLSPassed: Bool
        /// While tor is bootstrapping through this route: how long its bootstrap has gone without
        /// progress (nil otherwise). Tor is then waiting on the bridge, so its own connections
        /// owe it data even when tor has nothing more to write (``FlowObservation/init(_:torWaitingFor:)``).
        public var torWithoutProgress: Duration?

        public init(transport: TransportName, firstPacketIsTLS: Bool, flows: [FlowReport], dialErrors: [TransportError] = [],
                    confirmations: [TransportEndpoint: Confirmation] = [:], otherRouteAnswered: Bool, otherTLSPassed: Bool = false,
                    torWithoutProgress: Duration? = nil) {
            self.transport = transport
            self.firstPacketIsTLS = firstPacketIsTLS
            self.flows = flows
            self.dialErrors = dialErrors
            self.confirmations = confirmations
            self.otherRouteAnswered = otherRouteAnswered
            self.otherTLSPassed = otherTLSPassed
            self.torWithoutProgress = torWithoutProgress
        }
    }

    /// The route's diagnosis, or nil while the evidence names nothing.
    public static func diagnose(_ evidence: Evidence) -> RouteDiagnosis? {
        let others = TransportName.known.filter { $0 != evidence.transport }
        if evidence.dialErrors.contains(where: isUntrustedCertificate) {
            return RouteDiagnosis(technique: .interception, confidence: .seen, observed: "the certificate was not trusted",
                                  meaning: "a censor in the middle, or a wrong pin",
                                  passes: others.filter { $0 == .obfs4 || $0 == .snowflake }, rulesOutRoute: true)
        }
        // Tor's own connections through the transport are waited on while its bootstrap stands
        // still; a probe's or a confirm's are not.
        let observed = evidence.flows.map { flow in
            (flow: flow, seen: FlowObservation(flow, torWaitingFor: flow.origin.isTransportDial ? evidence.torWithoutProgress : nil))
        }
        let cut = observed.filter { $0.seen.kind == .resetAfterFirstPacket || $0.seen.kind == .silentAfterFirstPacket }
        if let first = cut.first {
            if !evidence.firstPacketIsTLS {
                // The address went silent: our SYN-only confirm connect got no answer, or a later
                // connect to it (tor's own redial) did not. The second matters when the confirm
                // came too early: a censor that adds the address to its drop set a moment after
                // the reset (a loaded decider) lets the confirm through, then drops what follows.
                let silentAfter = cut.filter { cutFlow in
                    evidence.confirmations[cutFlow.flow.peer] == .silent || observed.contains { later in
                        later.flow.peer == cutFlow.flow.peer && later.flow.counts.started > cutFlow.flow.counts.started
                            && later.seen.kind == .silentConnect
                    }
                }
                if let confirmed = silentAfter.first, evidence.otherRouteAnswered {
                    let addresses = Set(silentAfter.map(\.flow.peer)).count
                    return RouteDiagnosis(
                        technique: .protocolBlock, confidence: addresses >= 2 ? .seen : .likely,
                        observed: "\(confirmed.seen.observed), then the address went silent",
                        meaning: "most likely a block of the \(evidence.transport) protocol (fully-encrypted-traffic detection)",
                        passes: others.filter { $0 != .obfs4 && $0 != .meekLite }, rulesOutRoute: true)
                }
                if cut.contains(where: { evidence.confirmations[$0.flow.peer] == .answered }) {
                    return RouteDiagnosis(technique: .inconclusive, confidence: .likely,
                                          observed: "\(first.seen.observed); the address still answers",
                                          meaning: "", passes: [], rulesOutRoute: false)
                }
            } else if evidence.otherTLSPassed {
                return RouteDiagnosis(technique: .fingerprintBlock, confidence: .likely,
                                      observed: "\(first.seen.observed) (our first packet was a TLS ClientHello; other TLS passes)",
                                      meaning: "likely the handshake's fingerprint is blocked",
                                      passes: others.filter { $0 == .snowflake || $0 == .obfs4 }, rulesOutRoute: true)
            }
        }
        let stopped = observed.filter { $0.seen.kind == .stoppedAfterBytes }
        if let first = stopped.first {
            let sizes = stopped.map(\.seen.bytesReceived)
            let agree = sizes.count >= 2 && zip(sizes, sizes.dropFirst()).contains { a, b in
                let (low, high) = (min(a, b), max(a, b))
                return high * 4 <= low * 5  // within 25 %
            }
            return RouteDiagnosis(technique: .freeze, confidence: agree ? .seen : .likely, observed: first.seen.observed,
                                  meaning: "most likely a freeze of connections to datacentre addresses (residential proxies and CDNs pass)",
                                  passes: others.filter { $0 == .snowflake || $0 == .webtunnel }, rulesOutRoute: true)
        }
        let attempts = observed.filter { !$0.flow.isOpen }
        if !attempts.isEmpty, attempts.allSatisfy({ !$0.flow.connected }) {
            let peers = Set(attempts.map(\.flow.peer)).count
            if attempts.allSatisfy({ $0.seen.kind == .refused }) {
                return RouteDiagnosis(technique: .refusedEverywhere, confidence: .seen,
                                      observed: "refused on \(peers == 1 ? "its address" : "all \(peers) of its addresses") (closed ports, or a censor refusing for them)",
                                      meaning: "", passes: [], rulesOutRoute: true)
            }
            if attempts.allSatisfy({ $0.seen.kind == .silentConnect }) {
                if evidence.otherRouteAnswered {
                    return RouteDiagnosis(technique: .addressBlock, confidence: .likely,
                                          observed: "no answer from \(peers == 1 ? "its address" : "any of its \(peers) addresses") while others answer",
                                          meaning: "likely those addresses are blocked",
                                          passes: others.filter { $0 == .snowflake }, rulesOutRoute: true)
                }
                return RouteDiagnosis(technique: .nothingAnswers, confidence: .likely, observed: "nothing answers",
                                      meaning: "offline, or everything here is blocked", passes: [], rulesOutRoute: false)
            }
        }
        if let slow = observed.first(where: { $0.seen.kind == .slow }) {
            return RouteDiagnosis(technique: .throttle, confidence: .likely, observed: "works, slowly: \(slow.seen.observed)",
                                  meaning: "a slow link or throttling", passes: [], rulesOutRoute: false)
        }
        return nil
    }

    /// TransportTLS's `tls-certificate-rejected`, or a transport's TLS failure whose reason is a
    /// failed certificate check (webtunnel keeps OpenSSL's words in its message).
    public static func isUntrustedCertificate(_ error: TransportError) -> Bool {
        error.code.rawValue == "tls-certificate-rejected" || error.message.contains("certificate verify failed")
    }
}
