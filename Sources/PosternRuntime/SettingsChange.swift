/// A live settings change the session applied.
public enum SettingsChange: Sendable {
    /// The transport became `auto`: connection assist took over.
    case nowConnectionAssist
    /// The route is now `route` (direct or one transport).
    case nowFixed(route: RouteName, notes: [String])
    /// Connection assist got new routes; `nowTrying` when that moved it to another route.
    case assistRoutesReplaced(nowTrying: RouteName?, order: [RouteName], notes: [String])
}
