extension BridgeHealth {
    /// What `postern bridges test --deep` measured through one bridge (PosternTrials'
    /// `DeepCheck`), as `--json` carries it: the verdict in one word, the words, and the figures.
    /// Names no bridge.
    public struct Transfer: Codable, Sendable, Hashable {
        /// "passed", "froze", "slow" or "failed".
        public var verdict: String
        /// What was observed ("froze after ~16 KB during the bootstrap (data stopped while the
        /// connection stayed open: a censor's freeze is the usual cause)").
        public var detail: String
        /// The whole deep check.
        public var milliseconds: Double
        /// Time to tor's 100 % through the bridge; nil when it did not get there.
        public var bootstrapMilliseconds: Double?
        /// Bytes the bridge sent over all its connections (vanilla and obfs4 bridges, read at the
        /// check's loopback relay); nil for transports whose line address is a placeholder.
        public var bridgeBytes: Int?
        /// Where data stopped, on the connection that carried most (a freeze).
        public var frozeAfterBytes: Int?
        /// Body bytes of the download (`--deep-url`).
        public var downloadedBytes: Int?
        /// The download's rate in kbit/s.
        public var kilobitsPerSecond: Int?

        /// A transfer's result: `verdict` and `detail` with the figures measured (nil: not measured).
        public init(verdict: String, detail: String, milliseconds: Double, bootstrapMilliseconds: Double? = nil,
                    bridgeBytes: Int? = nil, frozeAfterBytes: Int? = nil, downloadedBytes: Int? = nil, kilobitsPerSecond: Int? = nil) {
            self.verdict = verdict
            self.detail = detail
            self.milliseconds = milliseconds
            self.bootstrapMilliseconds = bootstrapMilliseconds
            self.bridgeBytes = bridgeBytes
            self.frozeAfterBytes = frozeAfterBytes
            self.downloadedBytes = downloadedBytes
            self.kilobitsPerSecond = kilobitsPerSecond
        }

        /// The table's step: ok for "passed" and "slow" (the bridge carried the transfer), failed
        /// otherwise.
        public var step: Step {
            Step(result: verdict == "passed" || verdict == "slow" ? .ok : .failed, milliseconds: milliseconds, detail: detail)
        }
    }
}
