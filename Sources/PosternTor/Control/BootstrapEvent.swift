/// A bootstrap status report, from `650 STATUS_CLIENT NOTICE BOOTSTRAP ...` events or from
/// `GETINFO status/bootstrap-phase` ("NOTICE BOOTSTRAP PROGRESS=50 TAG=... SUMMARY=...").
public struct BootstrapPhase: Sendable, Hashable {
    public var progress: Int
    public var tag: String
    public var summary: String
    /// Set on WARN reports: why bootstrapping is having trouble (e.g. "Connection refused").
    public var warning: String?
    /// Set on WARN reports that carry REASON (and COUNT, RECOMMENDATION, HOST/HOSTADDR).
    public var problem: BootstrapProblem?

    public init(progress: Int, tag: String, summary: String, warning: String? = nil, problem: BootstrapProblem? = nil) {
        self.progress = progress
        self.tag = tag
        self.summary = summary
        self.warning = warning
        self.problem = problem
    }

    /// Parses the text after "STATUS_CLIENT" (or a bootstrap-phase GETINFO value). Returns nil for
    /// other status events; throws for a bootstrap report that is malformed.
    public static func parse(statusText text: String) throws(TorCoreError) -> BootstrapPhase? {
        let (positional, keywords) = try ControlSyntax.keywordArguments(text)
        guard let actionIndex = positional.firstIndex(of: "BOOTSTRAP") else { return nil }
        let severity = actionIndex > 0 ? positional[actionIndex - 1] : "NOTICE"
        guard let progressText = keywords["PROGRESS"], let progress = Int(progressText), (0...100).contains(progress) else {
            throw TorCoreError(.controlProtocol, "bootstrap report without a PROGRESS between 0 and 100")
        }
        var warning: String?
        var problem: BootstrapProblem?
        if severity == "WARN" {
            warning = keywords["WARNING"] ?? keywords["REASON"] ?? "unknown problem"
            if let reason = keywords["REASON"], reason.utf8.count <= 64 {
                // COUNT is tor's own counter; anything that is not a small number is ignored.
                let count = keywords["COUNT"].flatMap { Int($0) }.flatMap { (0...1_000_000).contains($0) ? $0 : nil }
                problem = BootstrapProblem(reason: reason, count: count, recommendation: keywords["RECOMMENDATION"],
                                           host: keywords["HOST"] ?? keywords["HOSTADDR"])
            }
        }
        return BootstrapPhase(progress: progress, tag: keywords["TAG"] ?? "", summary: keywords["SUMMARY"] ?? "",
                              warning: warning, problem: problem)
    }
}
