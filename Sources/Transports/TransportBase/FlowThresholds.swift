/// The thresholds at which a flow's counts (``FlowCounts``, in a ``FlowReport``) read as a stall or
/// as slow, stated once for the two readers of flows: connection assist (ConnectionAssist's
/// `FlowObservation`) and `bridges test --deep` (PosternTrials' `DeepCheck`). They live here, with
/// the flow reports both read, because PosternTrials may not depend on ConnectionAssist; before,
/// DeepCheck held copies. Rules only one reader applies (the freeze's byte range, the slow span)
/// stay with that reader.
public enum FlowThresholds {
    /// No byte from the peer for this long, on a connection still open and still wanted, is a stall
    /// (a freeze when the other conditions of the reader's rule hold).
    public static let stallAfter: Duration = .seconds(6)
    /// Slow: at or below this many bits a second ...
    public static let slowRate = 1_000_000
    /// ... over at least this many bytes received.
    public static let slowBytes = 256 * 1024
}
