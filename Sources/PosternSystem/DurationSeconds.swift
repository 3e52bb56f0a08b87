extension Duration {
    /// The duration in seconds, for rendering and JSON (the runtime, the A/B runner, the CLI).
    public var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
