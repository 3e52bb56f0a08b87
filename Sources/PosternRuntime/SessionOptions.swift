import ConnectionAssist
import Foundation
import PosternTor

/// How a session's tor runs (what is not a setting of the store).
public struct SessionOptions: Sendable {
    /// tor's data directory.
    public var dataDirectory: URL
    /// The SOCKS5 listener apps connect to (loopback only).
    public var socks: SocksEndpoint = .default
    /// Bootstrap deadline before a stall is reported (a fixed route; connection assist reports
    /// stalls per route).
    public var stallTimeout: Duration = .seconds(75)
    /// Extra tor options (private test networks).
    public var torOptions: [TorOption] = []
    /// Connection assist's strategy with the transport `auto`.
    public var assistStrategy: AssistStrategy = .race
    /// tor's notice-level log (may name bridges: only with unsafe logging).
    public var noticeLevelLog = false
    /// Appends the session's events as JSON lines here (docs/AB-TRIALS.md).
    public var eventsFile: URL?
    /// Publishes the status here, replaced atomically on every change, removed on stop.
    public var statusFile: URL?
    /// How often the settings are checked for changes.
    public var settingsCheckInterval: Duration = .seconds(1)

    /// The defaults, with tor's data directory at `dataDirectory`.
    public init(dataDirectory: URL) { self.dataDirectory = dataDirectory }
}
