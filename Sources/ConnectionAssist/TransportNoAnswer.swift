import PosternSystem
import TransportBase

extension TransportError {
    /// What a dial bounded by TransportWire's `withDeadline(_:timedOut:operation:)` fails with
    /// (assist's probes, and the bridge health check).
    package static func noAnswer(within limit: Duration) -> TransportError {
        TransportError(code: .timedOut, kind: .timeout, message: "no answer within \(PlainText.number(limit.seconds)) s")
    }
}
