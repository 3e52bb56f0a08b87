/// The Tor preference (``BridgeConfig/BridgeConfiguration/torEnabled``) for people: what on and
/// off mean for an app's traffic, as `postern tor` shows it.
package enum TorPreference {
    /// With Tor on, traffic waits for Tor and never goes around it.
    package static let onExplanation = [
        "Postern's traffic (relay WebSockets, directory fetches) waits for Tor: nothing is sent until",
        "Tor is connected, and nothing goes around it (fail-closed).",
    ]

    /// With Tor off, traffic goes direct and shows the user's address.
    package static let offExplanation = [
        "With Tor off, Postern's app traffic (relay WebSockets, directory fetches) goes DIRECT:",
        "  - the servers it talks to see your IP address;",
        "  - anyone watching your network sees that you talk to them.",
        "The SOCKS listener (127.0.0.1:39050) is not served while Tor is off.",
        "Turn Tor back on with 'postern tor on'.",
    ]

    /// "tor: on" or "tor: off" (then " (it already was)" when `unchanged`: a request to set what
    /// was set), then what that means.
    package static func text(enabled: Bool, unchanged: Bool = false) -> String {
        let first = "tor: \(enabled ? "on" : "off")" + (unchanged ? " (it already was)" : "")
        return ([first] + (enabled ? onExplanation : offExplanation)).joined(separator: "\n")
    }
}
