extension Duration {
    /// The duration in seconds, for rendering and JSON (the runtime, the A/B runner, the CLI).
    public var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }

    /// The longest wait a user may ask for anywhere (a timeout, a ceiling): one week. Options
    /// refuse more, so that no number a user types reaches a conversion that could trap.
    public static let longestUserWait: Double = 604_800

    /// `seconds` to the millisecond; NaN and negatives are zero and anything above
    /// ``longestUserWait`` is that, so no input can trap the conversion.
    public static func clampedSeconds(_ seconds: Double) -> Duration {
        guard seconds > 0 else { return .zero }
        return .milliseconds(Int64(Swift.min(seconds, longestUserWait) * 1000))
    }
}
