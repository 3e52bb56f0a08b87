/// A bootstrap status report, from `650 STATUS_CLIENT NOTICE BOOTSTRAP ...` events or from
/// `GETINFO status/bootstrap-phase` ("NOTICE BOOTSTRAP PROGRESS=50 TAG=... SUMMARY=...").
public struct BootstrapPhase: Sendable, Hashable {
    public var progress: Int
    public var tag: String
    public var summary: String
    /// Set on WARN reports: why bootstrapping is having trouble (e.g. "Connection refused").
    public var warning: String?

    public init(progress: Int, tag: String, summary: String, warning: String? = nil) {
        self.progress = progress
        self.tag = tag
        self.summary = summary
        self.warning = warning
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
        if severity == "WARN" {
            warning = keywords["WARNING"] ?? keywords["REASON"] ?? "unknown problem"
        }
        return BootstrapPhase(progress: progress, tag: keywords["TAG"] ?? "", summary: keywords["SUMMARY"] ?? "",
                              warning: warning)
    }
}
