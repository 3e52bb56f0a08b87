extension RouteSelector {
    /// Delays between failed passes: `initial`, doubling, at most `maximum`.
    public struct Backoff: Sendable, Hashable {
        public var initial: Duration
        public var maximum: Duration
        public init(initial: Duration = .seconds(5), maximum: Duration = .seconds(120)) {
            self.initial = initial
            self.maximum = maximum
        }
        public static let standard = Backoff()

        /// The delay after the `failedPasses`-th failed pass in a row (1-based).
        public func delay(afterFailedPasses failedPasses: Int) -> Duration {
            var delay = initial
            for _ in 1..<max(failedPasses, 1) {
                delay *= 2
                if delay >= maximum { return maximum }
            }
            return min(delay, maximum)
        }
    }
}
