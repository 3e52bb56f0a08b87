import ConnectionAssist
import Foundation
import PosternTor

/// The state of a session: tor's status, the route it takes and connection assist's view.
public struct SessionStatus: Sendable {
    /// The embedded tor's state and bootstrap progress.
    public var tor: TorStatus
    /// "direct", "bridges (obfs4)", or "connection assist" before assist chose one.
    public var route: RouteName
    /// Connection assist's view (the transport `auto`); nil on a fixed route.
    public var assist: AssistSnapshot?
    /// Each new bootstrap milestone with the seconds since the session started.
    public var phases: [RunStatusRecord.PhaseTiming]
    /// The SOCKS5 listener: the bound one once tor has it (with port auto, the port tor chose).
    public var socks: SocksEndpoint
    /// Seconds since the session started, when this status was taken.
    public var seconds: Double

    /// True once tor bootstrapped to 100% and its SOCKS listener is bound.
    public var isReady: Bool { tor.isReady }

    /// The record `postern status` reads.
    public var record: RunStatusRecord {
        RunStatusRecord(pid: getpid(), status: tor, socks: socks, route: route, phases: phases, assist: assist)
    }
}
