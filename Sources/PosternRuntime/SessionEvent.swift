import ConnectionAssist
import TransportBase

/// What happens in a session, in order. Never carries a bridge address, fingerprint or cert.
public enum SessionEvent: Sendable {
    /// What changed the status.
    public enum StatusCause: Sendable {
        /// tor reported new progress or a new state.
        case tor
        /// Connection assist moved (a route tried, left or connected).
        case assist
    }
    /// The status changed.
    case status(SessionStatus, cause: StatusCause)
    /// A fixed route was chosen at the start (direct or one transport), with notes for the user.
    case fixedRoute(route: RouteName, notes: [String])
    /// Connection assist starts with these routes in this order; `probing` under the race
    /// strategy; `lastGoodFirst` names the remembered route moved to the front.
    case assistStarted(order: [RouteName], probing: Bool, lastGoodFirst: RouteName?, notes: [String])
    /// One decision of connection assist (a route chosen, probed, tried, left or connected).
    case assist(AssistEvent)
    /// Changed settings reached the running tor.
    case settingsApplied(SettingsChange)
    /// A transport's warning or error (a dial cut short by a route change is not one).
    case transportProblem(TransportEvent)
    /// Something the session could not do that does not stop it.
    case warning(SessionWarning)
}
