import TransportBase

/// The SYN-only connect ``CensorReader``'s protocol-block row needs: after a reset (or silence)
/// right after our first packet, one TCP connect to the same ip:port, closed at once without a
/// byte sent, says whether the address still answers. A detector that blocks the server's ip:port
/// after flagging a flow (Wu et al., USENIX Security 2023: about 180 s) leaves it silent; a path or
/// a bridge that closed one connection leaves it answering. Nothing is sent, so the connect adds
/// no first packet for a classifier to judge.
///
/// It goes through the session's dialer as a `confirm` connection, so it is counted in the ledger
/// (and, where the process has one, spaced by its per-address discipline).
public struct ConfirmConnect: Sendable {
    public var dialer: OutboundDialer
    /// The limit for the SYN-ACK: as long as a probe's connect, so "silent" means the same.
    public var timeout: Duration

    public init(dialer: OutboundDialer, timeout: Duration = .seconds(3)) {
        self.dialer = dialer
        self.timeout = timeout
    }

    /// answered / silent / refused / failed; nil only when no packet left (the gate held it back:
    /// a probe's or tor's connection to the address is open, or it is paused), so that the caller
    /// may try again without adding a SYN to the censor's count. A silent address is paused in the
    /// gate for ``RouteDiagnosis/holds``: a detector's block lasts about 180 s, and tor's redials
    /// into it would only be more connections the censor counts (issue #22: at most 2 to a
    /// protocol-blocked bridge).
    ///
    /// While the connect waits for its answer (at most `timeout`), the address is held in the
    /// gate too: tor redials a bridge within a second or two of a reset, and each redial into a
    /// block the censor just set is one more connection it counts. The confirm itself takes the
    /// gate's place first (no confirm while a probe's or tor's connection to the address is open,
    /// none into a pause), then connects past the hold it set. An answer in time leaves the short
    /// hold to expire on its own (at most `timeout` after the connect began).
    public func callAsFunction(_ endpoint: TransportEndpoint) async -> CensorReader.Confirmation? {
        var pass: EndpointGate.Pass?
        defer { pass?.release() }
        do {
            if let gate = dialer.gate {
                pass = try await gate.admit(endpoint, as: .probe)
                gate.hold(endpoint, for: timeout)
            }
            let socket = try await dialer.gated(by: nil).connect(to: endpoint, timeout: timeout)
            socket.close()
            return .answered
        } catch {
            let answer = CensorReader.Confirmation.of(error)
            if answer == .silent { dialer.gate?.hold(endpoint, for: RouteDiagnosis.holds) }
            return answer
        }
    }
}
