import BridgeConfig
import Foundation
import PosternLinkSpec
import PosternSystem

/// One run of the health check as `postern bridges test` reports it: the results in the
/// candidates' order with the counts, as JSON (`bridges`, `alive`, `dead`, `seconds`, `scrubbed`)
/// or as ``text``.
public struct BridgeHealthReport: Encodable, Sendable {
    /// Each bridge's result, in the candidates' order.
    public let bridges: [BridgeHealth]
    /// Bridges whose every step passed.
    public let alive: Int
    /// Bridges flagged (a step failed).
    public let dead: Int
    /// How long the run took, rounded to milliseconds.
    public let seconds: Double
    /// Whether the lines are scrubbed (the policy is not unsafe).
    public let scrubbed: Bool
    /// The unrounded time, for the text's one decimal.
    private let elapsed: Double
    /// Whether a bootstrap was asked for (the table then has a BOOTSTRAP column).
    private let bootstrapped: Bool
    /// Whether a deep check was asked for (a DEEP column, and a line per bridge with its words).
    private let deep: Bool

    private enum CodingKeys: String, CodingKey { case bridges, alive, dead, seconds, scrubbed }

    /// The `results` of one check that took `elapsed`; `bootstrapped`: whether each bridge was
    /// also bootstrapped through (the table then has a BOOTSTRAP column).
    /// `deep`: whether each bridge also had the deep check (a DEEP column and its lines).
    public init(_ results: [BridgeHealth], elapsed: Duration, bootstrapped: Bool, deep: Bool = false, policy: LoggingPolicy) {
        bridges = results
        dead = results.filter { !$0.alive }.count
        alive = results.count - dead
        self.elapsed = elapsed.seconds
        seconds = (self.elapsed * 1000).rounded() / 1000
        scrubbed = !policy.unsafeLogging
        self.bootstrapped = bootstrapped
        self.deep = deep
    }

    /// A row per bridge: ID, TRANSPORT, TCP, TLS (only when a webtunnel bridge was tested: its
    /// HANDSHAKE is then the upgrade and the 101), RESOLVER (only when a dnstt bridge was tested:
    /// its HANDSHAKE is then Noise's), HANDSHAKE, STREAM (dnstt's stream opening, with RESOLVER), BOOTSTRAP (when asked for), STATUS
    /// ("alive" or "FAILED: what was seen": a failed step shows what happened, not that the bridge
    /// is gone, which a censor's refusal or silence cannot tell) and the BRIDGE line.
    public var table: String {
        let showsTLS = bridges.contains { $0.tls != nil }
        let showsDnstt = bridges.contains { $0.resolver != nil || $0.stream != nil }
        var header = ["ID", "TRANSPORT", "TCP"] + (showsTLS ? ["TLS"] : []) + (showsDnstt ? ["RESOLVER"] : []) + ["HANDSHAKE"]
            + (showsDnstt ? ["STREAM"] : [])
        if bootstrapped { header.append("BOOTSTRAP") }
        if deep { header.append("DEEP") }
        header += ["STATUS", "BRIDGE"]
        let rows = bridges.map { health -> [String] in
            var row = [health.id, health.transport, Self.cell(health.tcp)] + (showsTLS ? [Self.cell(health.tls)] : [])
                + (showsDnstt ? [Self.cell(health.resolver)] : [])
            row.append(Self.cell(health.handshake))
            if showsDnstt { row.append(Self.cell(health.stream)) }
            if bootstrapped { row.append(Self.cell(health.bootstrap)) }
            if deep { row.append(health.transfer?.verdict ?? Self.cell(health.deep)) }
            row += [health.alive ? "alive" : "FAILED: \(health.reason ?? "?")", health.bridge]
            return row
        }
        return PlainText.table(header: header, rows: rows)
    }

    /// "3 bridges tested in 1.2 s: 2 alive, 1 failed".
    public var summary: String {
        "\(PlainText.counted(bridges.count, "bridge")) tested in \(String(format: "%.1f", elapsed)) s: \(alive) alive, \(dead) failed"
    }

    /// With `--deep`: a line per deep-checked bridge with what the transfer showed
    /// ("obfs4-1: froze after ~16 KB during the bootstrap (...)"); empty otherwise.
    public var deepLines: [String] {
        guard deep else { return [] }
        return bridges.compactMap { health in health.transfer.map { "\(health.id): \($0.detail)" } }
    }

    /// The table, the deep check's lines (when asked for) and the summary.
    public var text: String { ([table] + deepLines + [summary]).joined(separator: "\n") }

    /// A step in a table cell: "ok 12 ms" (or "ok" without a time), "skipped", "FAILED", or "-"
    /// for a step that did not run.
    public static func cell(_ step: BridgeHealth.Step?) -> String {
        guard let step else { return "-" }
        switch step.result {
        case .ok: return step.milliseconds.map { String(format: "ok %.0f ms", $0) } ?? "ok"
        case .skipped: return "skipped"
        case .failed: return "FAILED"
        }
    }

    /// The note for built-in bridges of a transport this build has no client for
    /// (``BridgeHealthCheck/splitUntestable(_:)``): "2 built-in meek_lite bridges not tested: ...".
    public static func untestableNote(transport: String, count: Int) -> String {
        "\(PlainText.counted(count, "built-in \(transport) bridge")) not tested: this build has no \(transport) client"
    }
}

extension BridgeHealthCheck {
    /// ``run(_:bootstrap:progress:)`` timed, as a report.
    public func report(_ candidates: [Candidate], bootstrap: (@Sendable (Candidate) async -> BridgeHealth.Step)? = nil,
                       deep: (@Sendable (Candidate) async -> BridgeHealth.Transfer)? = nil,
                       progress: @escaping @Sendable (Int) -> Void = { _ in }) async -> BridgeHealthReport {
        let started = ContinuousClock.now
        let results = await run(candidates, bootstrap: bootstrap, deep: deep, progress: progress)
        return BridgeHealthReport(results, elapsed: ContinuousClock.now - started, bootstrapped: bootstrap != nil, deep: deep != nil,
                                  policy: policy)
    }
}
