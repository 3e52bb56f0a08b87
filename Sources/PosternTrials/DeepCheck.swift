import BridgeConfig
import Foundation
import PosternLinkSpec
import Synchronization
import TransportBase

/// `postern bridges test --deep` for one bridge: a transfer through it long enough to see a freeze
/// or a slow link, worded as what was observed (issue #22, item 5; docs/CONNECTION-ASSIST.md,
/// "bridges test --deep").
///
/// The transfer chosen: a real tor bootstrap through the bridge alone, in a child `postern run`
/// (on the real network that is the consensus and the microdescriptors, megabytes, all through
/// the bridge, which serves as the child's only directory cache), then, when a URL is given, a
/// download of up to `maximumBytes` through the child's SOCKS port (through the bridge, its guard).
/// For a vanilla or obfs4 bridge the child dials a counting relay on loopback (``BridgeRelay``)
/// instead of the bridge's address: the bytes the bridge sends, and when they stop, are read
/// there, on the very connections a censor on the path sees. Snowflake and webtunnel lines hold
/// placeholder addresses (the traffic goes to proxies or the url's host), so for them only the
/// bootstrap and the download are timed.
///
/// A freeze is what the relay shows while the transfer is unfinished (bootstrap before 100 %, or
/// the download not done): bytes came from the bridge, then none for ``stallAfter`` on any of its
/// connections, while they stayed open. The check ends there, without waiting out its deadline.
public struct DeepCheck: Sendable {
    /// How the deep check went, in one word; the raw values appear in `--json`.
    public struct Verdict: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }
        /// The transfer completed at a rate above ``slowRate``.
        public static let passed = Verdict(rawValue: "passed")
        /// Data from the bridge stopped while its connection stayed open and the transfer was unfinished.
        public static let froze = Verdict(rawValue: "froze")
        /// The transfer completed, at or below ``slowRate``.
        public static let slow = Verdict(rawValue: "slow")
        /// Anything else: the bootstrap or the download failed without a freeze seen.
        public static let failed = Verdict(rawValue: "failed")
    }

    /// No byte from the bridge for this long, on a transfer still wanting data, is a freeze: the
    /// threshold connection assist uses too (TransportBase's ``FlowThresholds``, stated there once).
    public static let stallAfter = FlowThresholds.stallAfter
    /// A download at or below this many bits a second, over at least ``slowBytes``, is slow (as
    /// for connection assist: ``FlowThresholds``).
    public static let slowRate = FlowThresholds.slowRate
    public static let slowBytes = FlowThresholds.slowBytes

    public var verdict: Verdict
    /// What was observed, in words (names no bridge).
    public var detail: String
    /// The whole check, from the child's start to the verdict.
    public var milliseconds: Double
    /// Time to tor's 100 % through the bridge; nil when it did not get there.
    public var bootstrapMilliseconds: Double?
    /// Bytes the bridge sent over all its connections (relayed bridges only).
    public var bridgeBytes: Int?
    /// Where data stopped on the connection that carried most (a freeze).
    public var frozeAfterBytes: Int?
    /// Body bytes the download got.
    public var downloadedBytes: Int?
    /// The download's rate, in kbit/s (body bytes from the first to the last).
    public var kilobitsPerSecond: Int?

    public init(verdict: Verdict, detail: String, milliseconds: Double, bootstrapMilliseconds: Double? = nil, bridgeBytes: Int? = nil,
                frozeAfterBytes: Int? = nil, downloadedBytes: Int? = nil, kilobitsPerSecond: Int? = nil) {
        self.verdict = verdict
        self.detail = detail
        self.milliseconds = milliseconds
        self.bootstrapMilliseconds = bootstrapMilliseconds
        self.bridgeBytes = bridgeBytes
        self.frozeAfterBytes = frozeAfterBytes
        self.downloadedBytes = downloadedBytes
        self.kilobitsPerSecond = kilobitsPerSecond
    }

    /// Whether the check dials `line` through a ``BridgeRelay``: transports whose line address is
    /// the peer the traffic goes to (vanilla, obfs4), given as an IP address.
    public static func relays(_ line: BridgeLine) -> Bool {
        (line.transport.isVanilla || line.transport == .obfs4) && !line.address.isHostName
    }

    /// The connection that froze, if the bridge's connections show a freeze now: some bytes came,
    /// the connections are open, and no byte has come on any of them for ``stallAfter``. Only
    /// asked while the transfer is unfinished (the caller knows it still wants data).
    public static func freeze(in flows: [FlowReport], stall: Duration = stallAfter) -> FlowReport? {
        let open = flows.filter { $0.isOpen && $0.connected }
        guard !open.isEmpty, open.contains(where: { $0.counts.bytesReceived > 0 }) else { return nil }
        // The bridge is silent on every open connection (one that never sent anything counts as silent).
        let silent = open.allSatisfy { flow in
            guard let lastRead = flow.counts.lastReadAfter else { return flow.counts.age >= stall }
            return flow.counts.age - lastRead >= stall
        }
        guard silent else { return nil }
        return open.max { $0.counts.bytesReceived < $1.counts.bytesReceived }
    }

    /// "16 KB", "1.2 MB": the sizes the deep check's words use (1 KB = 1024 bytes).
    public static func size(_ bytes: Int) -> String {
        if bytes >= 1024 * 1024 { return String(format: "%.1f MB", Double(bytes) / 1_048_576) }
        return "\((bytes + 512) / 1024) KB"
    }

    /// Runs the deep check through `line` alone: a child under `directory` (removed afterwards),
    /// the plugins that serve its transport, everything within `timeout`; `download` is fetched
    /// after 100 %, up to `maximumBytes` of it.
    public static func run(through line: BridgeLine, directory: URL, plugins: [TransportPlugin], timeout: Duration,
                           download: ProbeFetch.Target?, maximumBytes: Int, torOptionsFile: String?, unsafeLogging: Bool,
                           executable: URL = ChildRun.currentExecutable) async -> DeepCheck {
        let started = ContinuousClock.now
        func elapsed() -> Double { ((ContinuousClock.now - started).seconds * 10000).rounded() / 10 }
        var relay: BridgeRelay?
        var childLine = line
        if relays(line) {
            guard let endpoint = try? TransportEndpoint(parsing: line.address.description),
                  let made = try? BridgeRelay(to: endpoint),
                  let local = BridgeAddress("127.0.0.1:\(made.port)") else {
                return DeepCheck(verdict: .failed, detail: "could not open the loopback relay for the check", milliseconds: elapsed())
            }
            relay = made
            childLine = BridgeLine(transport: line.transport, address: local, fingerprint: line.fingerprint, arguments: line.arguments)
        }
        defer { relay?.close() }
        let child: ChildRun
        do {
            child = try ChildRun(.init(directory: directory, transport: line.transport.rawValue, bridges: [childLine],
                                       plugins: plugins.filter { $0.names.contains(line.transport) },
                                       torOptionsFile: torOptionsFile, unsafeLogging: unsafeLogging, warmFrom: nil,
                                       executable: executable))
        } catch {
            return DeepCheck(verdict: .failed, detail: "could not start the child: \(error)", milliseconds: elapsed())
        }
        let result = await measure(child: child, relay: relay, started: started, timeout: timeout, download: download,
                                   maximumBytes: maximumBytes)
        // In a task of its own: when the check was cancelled, stop's grace waits must still wait.
        await Task {
            await child.stop()
            child.cleanUp()
        }.value
        return result
    }

    /// What `work` returned, or the flow that froze first while it ran (then `onFreeze` has been
    /// called, which must make `work` end: it stops the child).
    private enum Watched<T: Sendable>: Sendable {
        case done(T)
        case froze(FlowReport)
    }

    private static func watching<T: Sendable>(_ relay: BridgeRelay?, onFreeze: @escaping @Sendable () async -> Void,
                                              _ work: @escaping @Sendable () async -> T) async -> Watched<T> {
        await withTaskGroup(of: Watched<T>?.self) { group in
            group.addTask { .done(await work()) }
            if let relay {
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .milliseconds(250))
                        if let frozen = freeze(in: relay.flows) { return .froze(frozen) }
                    }
                    return nil
                }
            }
            var outcome: Watched<T>?
            while let next = await group.next() {
                guard let next else { continue }
                if outcome == nil {
                    outcome = next
                    if case .froze = next { await onFreeze() }
                    group.cancelAll()
                }
            }
            return outcome!
        }
    }

    private static func measure(child: ChildRun, relay: BridgeRelay?, started: ContinuousClock.Instant, timeout: Duration,
                                download: ProbeFetch.Target?, maximumBytes: Int) async -> DeepCheck {
        func elapsed() -> Double { ((ContinuousClock.now - started).seconds * 10000).rounded() / 10 }
        func bridgeBytes() -> Int? { relay.map { $0.flows.reduce(0) { $0 + $1.counts.bytesReceived } } }
        func froze(_ flow: FlowReport, during what: String) -> DeepCheck {
            let bytes = flow.counts.bytesReceived
            return DeepCheck(verdict: .froze,
                             detail: "froze after ~\(size(bytes)) \(what) (data stopped while the connection stayed open: a censor's freeze is the usual cause)",
                             milliseconds: elapsed(), bridgeBytes: bridgeBytes(), frozeAfterBytes: bytes)
        }
        let stopChild: @Sendable () async -> Void = { await child.stop(grace: .seconds(2)) }
        let ready = await watching(relay, onFreeze: stopChild) { await child.waitForReady(timeout: timeout) }
        let socksPort: UInt16
        switch ready {
        case .froze(let flow):
            return froze(flow, during: "during the bootstrap")
        case .done(.ready(let port)):
            socksPort = port
        case .done(.failed(let reason, _)):
            let events = child.events
            return DeepCheck(verdict: .failed, detail: "bootstrap failed: \(TrialRunner.failure(events: events, reason: reason).describedPlace)",
                             milliseconds: elapsed(), bridgeBytes: bridgeBytes())
        case .done(.timedOut):
            let events = child.events
            let place = TrialRunner.failure(events: events, reason: "no 100% within \(timeout.seconds.formatted()) s").describedPlace
            return DeepCheck(verdict: .failed, detail: "bootstrap failed: \(place)", milliseconds: elapsed(), bridgeBytes: bridgeBytes())
        }
        let bootstrapped = elapsed()
        guard let download else {
            let through = bridgeBytes().map { ", \(size($0)) from the bridge" } ?? ""
            return DeepCheck(verdict: .passed, detail: "bootstrapped in \(String(format: "%.1f", bootstrapped / 1000)) s\(through)",
                             milliseconds: elapsed(), bootstrapMilliseconds: bootstrapped, bridgeBytes: bridgeBytes())
        }
        let remaining = timeout - (ContinuousClock.now - started)
        guard remaining > .seconds(1) else {
            return DeepCheck(verdict: .failed, detail: "bootstrapped, but no time was left for the download (--deep-timeout)",
                             milliseconds: elapsed(), bootstrapMilliseconds: bootstrapped, bridgeBytes: bridgeBytes())
        }
        let fetch = ProbeFetch(target: download, maximumBytes: maximumBytes, timeout: remaining)
        let fetched = await watching(relay, onFreeze: stopChild) { () async -> Result<ProbeFetch.Result, ProbeFetch.Failure> in
            do throws(ProbeFetch.Failure) { return .success(try await fetch.run(socksPort: socksPort)) } catch { return .failure(error) }
        }
        switch fetched {
        case .froze(let flow):
            var result = froze(flow, during: "during the download")
            result.bootstrapMilliseconds = bootstrapped
            return result
        case .done(.failure(let failure)):
            return DeepCheck(verdict: .failed, detail: "bootstrapped, then the download failed after \(size(failure.bodyBytes)): \(failure.message)",
                             milliseconds: elapsed(), bootstrapMilliseconds: bootstrapped, bridgeBytes: bridgeBytes(),
                             downloadedBytes: failure.bodyBytes)
        case .done(.success(let result)):
            let rate = result.throughput.map { Int($0 * 8 / 1000) }
            let rateText = rate.map { " at ~\($0) kbit/s" } ?? ""
            let slow = rate.map { $0 * 1000 <= slowRate } == true && result.bodyBytes >= slowBytes
            let words = "bootstrapped in \(String(format: "%.1f", bootstrapped / 1000)) s, downloaded \(size(result.bodyBytes))\(rateText)"
            return DeepCheck(verdict: slow ? .slow : .passed,
                             detail: slow ? "\(words): slow (a throttle, or a slow link)" : words,
                             milliseconds: elapsed(), bootstrapMilliseconds: bootstrapped, bridgeBytes: bridgeBytes(),
                             downloadedBytes: result.bodyBytes, kilobitsPerSecond: rate)
        }
    }
}
