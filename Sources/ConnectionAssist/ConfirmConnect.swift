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

    /// answered / silent / refused; nil when the connect said neither (no route, or Postern itself
    /// did not send it), which is no evidence.
    public func callAsFunction(_ endpoint: TransportEndpoint) async -> CensorReader.Confirmation? {
        do {
            let socket = try await dialer.connect(to: endpoint, timeout: timeout)
            socket.close()
            return .answered
        } catch let error as TransportError {
            switch error.code {
            case .timedOut: return .silent
            case .connectionRefused: return .refused
            default: return nil
            }
        } catch {
            return nil
        }
    }
}
