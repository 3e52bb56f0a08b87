import BridgeConfig
import Foundation
import PosternTor

/// How one outbound connection leaves the machine.
public enum NetworkRoute: Sendable, Hashable, CustomStringConvertible {
    /// Through the embedded tor's SOCKS5 listener, names resolved at the exit (socks5h).
    case tor(SocksEndpoint)
    /// In the clear: only ever chosen when the Tor preference is off.
    case direct

    public var description: String {
        switch self {
        case .tor(let socks): "tor via \(socks)"
        case .direct: "direct"
        }
    }
}

/// Decides whether Tor may run and how app traffic leaves: the single switch between proxied and
/// direct.
///
/// Tor runs when the activation policy (set by the host app, e.g. "foreground only") permits AND
/// the persisted Tor preference is on. Every fail-closed guard is conditioned on the PREFERENCE
/// alone: with it on, traffic goes through Tor or nowhere, whether or not the policy currently lets
/// Tor run; with it off, traffic goes direct (a real change in exposure the settings surface must
/// state).
public actor NetworkActivationService {
    /// bitchat's constants: one wait is awaitReady's 75 s, a connection gives up after 3 waits.
    public static let defaultReadinessWait: Duration = .seconds(75)
    /// Waits for readiness a connection makes before it gives up (``AppLayerError/Code/gaveUpWaitingForTor``).
    public static let maximumReadinessWaits = 3

    private let store: BridgeStore?
    private let readiness: TorReadinessSource
    /// The SOCKS5 listener app traffic goes through while Tor is wanted.
    public let socks: SocksEndpoint
    /// How long one wait for readiness lasts.
    public let readinessWait: Duration
    private var activationPolicyPermits = true
    /// Used when there is no store (tests, embedders that persist elsewhere).
    private var inMemoryPreference = true

    /// - Parameters:
    ///   - store: where the Tor preference persists; nil keeps it in memory (default on).
    ///   - readiness: the embedded tor (a ``TorManager``).
    ///   - readinessWait: how long one wait for readiness lasts (75 s in the app; shorter in tests).
    public init(store: BridgeStore?, readiness: TorReadinessSource, socks: SocksEndpoint = .default,
                readinessWait: Duration = NetworkActivationService.defaultReadinessWait) {
        self.store = store
        self.readiness = readiness
        self.socks = socks
        self.readinessWait = readinessWait
    }

    /// The persisted preference. A missing, non-boolean or unreadable value counts as ON: failing
    /// to read a setting must never open the clear path.
    public var torPreference: Bool {
        guard let store else { return inMemoryPreference }
        return (try? store.load().torEnabled) ?? true
    }

    /// Turns the Tor preference on or off (persisted in the store when there is one); throws when the
    /// store cannot be written.
    public func setTorPreference(_ enabled: Bool) throws {
        guard let store else {
            inMemoryPreference = enabled
            return
        }
        try store.update { $0.torEnabled = enabled }
    }

    /// The host app's activation policy (e.g. false while backgrounded).
    public var activationPermitted: Bool { activationPolicyPermits }
    /// Lets the host app allow or forbid running tor now (e.g. false while backgrounded).
    public func setActivationPermitted(_ permitted: Bool) { activationPolicyPermits = permitted }

    /// Whether the embedded tor should be running now.
    public var shouldRunTor: Bool { activationPolicyPermits && torPreference }

    /// Whether the fail-closed guards apply: the preference, not live readiness.
    public var torWanted: Bool { torPreference }

    /// True when the tor behind this service is ready now.
    public func torIsReady() async -> Bool { await readiness.torIsReady() }

    /// The route for a connection that must not wait: `.direct` with the preference off, Tor when
    /// it is on and ready, otherwise `nil` (the caller skips or queues; nothing goes in the clear).
    public func routeWithoutWaiting() async -> NetworkRoute? {
        guard torPreference else { return .direct }
        return await readiness.torIsReady() ? .tor(socks) : nil
    }

    /// Whether a route comes within `timeout`: ``routeWithoutWaiting()`` asked every 250 ms, for a
    /// one-shot fetch that gives up instead of queueing (`postern geo refresh`).
    public func waitForRoute(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if await routeWithoutWaiting() != nil { return true }
            try? await Task.sleep(for: .milliseconds(250))
        }
        return false
    }

    /// The route for a connection that may wait: with the preference off, `.direct` at once (waiting
    /// on a stopped client would burn the timeout); with it on, up to ``maximumReadinessWaits``
    /// waits for readiness, then ``AppLayerError/Code/gaveUpWaitingForTor`` — never direct.
    public func routeWaitingForTor() async throws(AppLayerError) -> NetworkRoute {
        guard torPreference else { return .direct }
        for _ in 0..<Self.maximumReadinessWaits {
            if await readiness.waitUntilTorReady(timeout: readinessWait) { return .tor(socks) }
            if Task.isCancelled { break }
            // The preference may have been switched off while we waited.
            if !torPreference { return .direct }
        }
        throw AppLayerError(.gaveUpWaitingForTor, kind: .blocked,
                            "Tor is wanted and did not become ready after \(Self.maximumReadinessWaits) waits; nothing was sent")
    }
}
