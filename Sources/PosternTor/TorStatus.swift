/// The lifecycle of the embedded core.
public enum TorState: Sendable, Hashable {
    case idle
    case starting
    case bootstrapping
    case ready
    /// An attempt spent its whole deadline without reaching 100%. Tor keeps trying.
    case stalled
    case failed
    case stopping

    public var name: String {
        switch self {
        case .idle: "idle"
        case .starting: "starting"
        case .bootstrapping: "bootstrapping"
        case .ready: "ready"
        case .stalled: "stalled"
        case .failed: "failed"
        case .stopping: "stopping"
        }
    }
}

/// A snapshot of the core, as published on `TorManager.statusUpdates()`.
public struct TorStatus: Sendable, Hashable {
    public var state: TorState = .idle
    /// 0–100, from tor's bootstrap reports.
    public var bootstrapProgress: Int = 0
    /// tor's phase tag, e.g. "loading_descriptors".
    public var bootstrapTag: String = ""
    /// tor's phase summary, e.g. "Loading relay descriptors".
    public var bootstrapSummary: String = ""
    /// The last bootstrap warning tor gave, if any (e.g. "Connection refused").
    public var bootstrapWarning: String?
    /// True when the current attempt spent its whole deadline without reaching 100%. Cleared on
    /// every start, restart or reconfiguration, and when bootstrap completes.
    public var bootstrapDidStall: Bool = false
    public var lastError: TorCoreError?
    /// The SOCKS listener: as configured, or, for an automatic port, the one tor bound once it is
    /// known (from the start of the core; always by the time the state is ready).
    public var socks: SocksEndpoint?

    public init() {}

    /// Ready means bootstrap reached 100% and the SOCKS listener is bound.
    public var isReady: Bool { state == .ready }
    public var isStarting: Bool { state == .starting || state == .bootstrapping }
}
