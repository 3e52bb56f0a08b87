import PosternTor

/// What `AssistRunner` tells the session that runs it, besides snapshots: the session turns these
/// into its own events and lines (`package`: the runner is the session's, not an app's).
package enum AssistNotice: Sendable {
    /// Assist starts with these routes in this order.
    case started(order: [RouteName], probing: Bool, lastGoodFirst: RouteName?, notes: [String])
    /// New routes from changed settings; `nowTrying` when that moved assist to another route.
    case routesReplaced(nowTrying: RouteName?, order: [RouteName], notes: [String])
    /// One decision of the selector, in order.
    case event(AssistEvent)
    /// The route that worked could not be written to the state directory.
    case cannotRememberRoute(message: String)
    /// The per-network memory could not be written to the state directory.
    case cannotUpdateMemory(message: String)
}
