import Foundation
import PosternSystem

extension GeoCoordinate {
    /// "LAT,LON" in degrees ("48.85,2.35", blanks around either number allowed), latitude within
    /// ±90 and longitude within ±180; nil otherwise.
    public init?(parsing text: String) {
        let parts = text.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 2, let latitude = parts[0], let longitude = parts[1], (-90...90).contains(latitude),
              (-180...180).contains(longitude) else { return nil }
        self.init(latitude: latitude, longitude: longitude)
    }
}

/// A relay of the directory as `postern geo show --json` lists it.
public struct GeoRelayListing: Encodable, Hashable, Sendable {
    /// The relay's WebSocket URL.
    public let url: String
    /// Degrees north.
    public let latitude: Double
    /// Degrees east.
    public let longitude: Double

    /// `relay`'s address and coordinates.
    public init(_ relay: GeoRelay) {
        url = relay.url
        latitude = relay.latitude
        longitude = relay.longitude
    }

    /// The relays as a table: RELAY (its URL), LATITUDE, LONGITUDE.
    public static func table(_ relays: [GeoRelay]) -> String {
        PlainText.table(header: ["RELAY", "LATITUDE", "LONGITUDE"], rows: relays.map { [$0.url, String($0.latitude), String($0.longitude)] })
    }
}

/// What one refresh through tor did (``GeoRelayDirectory/refresh(from:cacheFile:through:force:readinessTimeout:)``),
/// with its text and JSON forms.
public struct GeoRefreshReport: Hashable, Sendable {
    /// What the refresh did; nil when tor was wanted and not ready within `readinessTimeout`, so
    /// nothing was fetched.
    public let outcome: GeoRefreshOutcome?
    /// The relays the directory holds afterwards (the cache's when nothing was fetched).
    public let relays: Int
    /// How long the refresh waited for tor to be ready.
    public let readinessTimeout: Duration

    /// A refresh's `outcome` (nil: tor was not ready within `readinessTimeout`, nothing was
    /// fetched) and the relays the cache then holds.
    public init(outcome: GeoRefreshOutcome?, relays: Int, readinessTimeout: Duration) {
        self.outcome = outcome
        self.relays = relays
        self.readinessTimeout = readinessTimeout
    }

    /// Fetched, or not due: the directory is current.
    public var succeeded: Bool {
        switch outcome {
        case .fetched?, .notDue?: true
        default: false
        }
    }

    /// The outcome in a word: fetched, not-due, tor-not-ready (within the deadline or when the
    /// fetch would start), backing-off, failed.
    public var outcomeName: String {
        switch outcome {
        case .fetched?: "fetched"
        case .notDue?: "not-due"
        case nil, .skippedTorNotReady?: "tor-not-ready"
        case .backingOff?: "backing-off"
        case .failed?: "failed"
        }
    }

    /// A sentence for people; for a failure it also says that the cache is unchanged.
    public var text: String {
        switch outcome {
        case nil: "tor was not ready within \(Int(min(readinessTimeout.seconds, Duration.longestUserWait))) s; nothing was fetched, the cache is unchanged"
        case .fetched(let count)?: "fetched \(count) relays"
        case .notDue?: "not due: the cache (\(relays) relays) is less than 24 h old; --force fetches anyway"
        case .backingOff(let until)?: "backing off after failures until \(until)"
        case .skippedTorNotReady?: "tor is wanted and not ready: nothing was fetched, the cache is unchanged"
        case .failed(let error)?: "fetch failed: \(error.message); the cache is unchanged"
        }
    }

    /// `{"outcome":"fetched","relays":2}`, one line.
    public var jsonLine: String {
        var count = relays
        if case .fetched(let fetched)? = outcome { count = fetched }
        return #"{"outcome":"\#(outcomeName)","relays":\#(count)}"#
    }
}

extension GeoRelayDirectory {
    /// Fetches the directory at `sourceURL` into `cacheFile` through `activation` when due (always
    /// with `force`). With the Tor preference on it waits up to `readinessTimeout` for tor and
    /// fetches nothing if tor is not ready by then; with it off it fetches at once, directly.
    public static func refresh(from sourceURL: URL, cacheFile: URL, through activation: NetworkActivationService, force: Bool,
                               readinessTimeout: Duration) async -> GeoRefreshReport {
        let directory = GeoRelayDirectory(sourceURL: sourceURL, cacheFile: cacheFile, http: ProxiedHTTPClient(activation: activation))
        let ready = await activation.torWanted ? await activation.waitForRoute(timeout: readinessTimeout) : true
        let outcome = ready ? await directory.refresh(force: force) : nil
        return GeoRefreshReport(outcome: outcome, relays: await directory.relays.count, readinessTimeout: readinessTimeout)
    }
}
