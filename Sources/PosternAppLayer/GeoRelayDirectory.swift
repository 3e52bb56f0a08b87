import Foundation
import PosternTor
import PosternSystem

/// A relay with coordinates, from the geo relay directory.
public struct GeoRelay: Sendable, Hashable, CustomStringConvertible {
    /// Lowercased ASCII host, with ":port" when the CSV gave one.
    public let host: String
    /// Degrees north, -90…90.
    public let latitude: Double
    /// Degrees east, -180…180.
    public let longitude: Double
    /// The relay's WebSocket URL (the CSV's wss/https both mean wss).
    public var url: String { "wss://\(host)" }
    public var description: String { "\(host) (\(latitude), \(longitude))" }
}

/// A place on Earth, in degrees (WGS 84), to find the relays nearest to it.
public struct GeoCoordinate: Sendable, Hashable {
    /// Degrees north, -90…90.
    public let latitude: Double
    /// Degrees east, -180…180.
    public let longitude: Double
    /// The place at `latitude`, `longitude` (not checked: ``init(parsing:)`` checks text).
    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }
}

/// What one refresh attempt did.
public enum GeoRefreshOutcome: Sendable, Hashable {
    /// Fetched and cached; the directory now holds `relayCount` relays.
    case fetched(relayCount: Int)
    /// The Tor preference is on and Tor is not ready: nothing was sent, the cache stays.
    case skippedTorNotReady
    /// The last fetch is younger than the refresh interval: nothing was sent.
    case notDue
    /// A recent attempt failed: nothing is sent before `until`.
    case backingOff(until: Date)
    /// The fetch failed (the cache stays); the next attempt backs off.
    case failed(AppLayerError)
}

/// The geo relay directory: a CSV of relays with coordinates, validated, cached on disk, refreshed
/// every 24 h (checked hourly), retried with backoff 60 s doubling to 1 h.
///
/// The wait for Tor is keyed on the PREFERENCE (load-bearing): preference off → fetch directly, no
/// wait (waiting on a stopped client would burn the timeout and freeze the directory on its cache);
/// preference on and Tor not ready → skip, keep the cache, never fetch in the clear. A "Tor became
/// ready" event forces a fetch.
public actor GeoRelayDirectory {
    /// Seconds between fetches: 24 h.
    public static let refreshInterval: TimeInterval = 24 * 3600
    /// Seconds between checks whether a fetch is due: 1 h.
    public static let checkInterval: TimeInterval = 3600
    /// Seconds before the first retry after a failure: 60, doubling.
    public static let initialBackoff: TimeInterval = 60
    /// The longest wait between retries: 1 h.
    public static let maximumBackoff: TimeInterval = 3600
    /// The deadline of one fetch.
    public static let requestTimeout: Duration = .seconds(15)

    /// Where the CSV is fetched from.
    public let sourceURL: URL
    /// Where the last good CSV is kept.
    public let cacheFile: URL
    private let http: ProxiedHTTPClient
    private let now: @Sendable () -> Date
    private let log: AppLayerLogger?

    /// The relays of the last good fetch (or of the cache).
    public private(set) var relays: [GeoRelay] = []
    /// When the relays were fetched; nil before any fetch or cache.
    public private(set) var lastSuccessfulFetch: Date?
    /// Failed attempts since the last good one.
    public private(set) var consecutiveFailures = 0
    /// When a failed directory tries again; nil when not backing off.
    public private(set) var nextRetry: Date?
    private var loop: Task<Void, Never>?
    private var watcher: Task<Void, Never>?

    /// A directory fetching `sourceURL` through `http`, starting from `cacheFile` when it holds a
    /// valid CSV; `now` is the clock (tests pass their own).
    public init(sourceURL: URL, cacheFile: URL, http: ProxiedHTTPClient,
                now: @escaping @Sendable () -> Date = { Date() }, log: AppLayerLogger? = nil) {
        self.sourceURL = sourceURL
        self.cacheFile = cacheFile
        self.http = http
        self.now = now
        self.log = log
        // A cache that no longer validates is ignored (and replaced by the next good fetch).
        if let data = try? Data(contentsOf: cacheFile), let parsed = try? GeoRelayCSV.parse(data) {
            relays = parsed
            lastSuccessfulFetch = (try? FileManager.default.attributesOfItem(atPath: cacheFile.path)[.modificationDate]) as? Date
        }
    }

    /// bitchat's geo relay list, the directory's usual source.
    public static let defaultSource = "https://raw.githubusercontent.com/permissionlesstech/georelays/refs/heads/main/nostr_relays.csv"

    /// Where the directory is cached in a state directory (as `postern geo` keeps it).
    public static func defaultCacheFile(inStateDirectory stateDirectory: URL) -> URL {
        stateDirectory.appendingPathComponent("geo-relays.csv")
    }

    /// The relays of a cache file, without fetching: all of them, or the `count` closest to
    /// `location`. Nil when there is no cache file; a cache that does not validate is an error.
    public static func cachedRelays(in cacheFile: URL, near location: GeoCoordinate? = nil,
                                    count: Int = 5) throws(AppLayerError) -> [GeoRelay]? {
        guard let data = try? Data(contentsOf: cacheFile) else { return nil }
        let relays = try GeoRelayCSV.parse(data)
        return location.map { closest(relays, to: $0, count: count) } ?? relays
    }

    /// The `count` relays closest to `location` by great-circle (haversine) distance; ties by host.
    public func closestRelays(to location: GeoCoordinate, count: Int = 5) -> [GeoRelay] {
        Self.closest(relays, to: location, count: count)
    }

    /// The `count` relays of `relays` nearest to `location` (great-circle distance), nearest first.
    public static func closest(_ relays: [GeoRelay], to location: GeoCoordinate, count: Int) -> [GeoRelay] {
        let measured = relays.map { (relay: $0, distance: haversineKilometres(location, GeoCoordinate(latitude: $0.latitude, longitude: $0.longitude))) }
        return measured.sorted { a, b in
            a.distance != b.distance ? a.distance < b.distance : a.relay.host < b.relay.host
        }.prefix(max(0, count)).map(\.relay)
    }

    static func haversineKilometres(_ a: GeoCoordinate, _ b: GeoCoordinate) -> Double {
        let radians = Double.pi / 180
        let dLat = (b.latitude - a.latitude) * radians
        let dLon = (b.longitude - a.longitude) * radians
        let h = sin(dLat / 2) * sin(dLat / 2)
            + cos(a.latitude * radians) * cos(b.latitude * radians) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * 6371.0088 * asin(min(1, sqrt(h)))
    }

    /// One refresh attempt. `force` ignores the 24 h schedule and the backoff (used for "Tor became
    /// ready" and by callers that know better).
    @discardableResult
    public func refresh(force: Bool = false) async -> GeoRefreshOutcome {
        let current = now()
        if !force {
            if let last = lastSuccessfulFetch, current.timeIntervalSince(last) < Self.refreshInterval { return .notDue }
            if let retry = nextRetry, retry > current { return .backingOff(until: retry) }
        }
        guard let route = await http.activation.routeWithoutWaiting() else {
            log?(AppLayerLogEvent(component: "geo-directory", message: "Tor is wanted and not ready: fetch skipped, cache kept"))
            return .skippedTorNotReady
        }
        do throws(AppLayerError) {
            let response = try await http.get(sourceURL, route: route, timeout: Self.requestTimeout,
                                              maximumBytes: GeoRelayCSV.maximumBytes)
            guard response.status == 200 else {
                throw AppLayerError(.httpStatus, "directory answered HTTP \(response.status)")
            }
            let parsed = try GeoRelayCSV.parse(response.body)
            try writeCache(response.body)
            relays = parsed
            lastSuccessfulFetch = now()
            consecutiveFailures = 0
            nextRetry = nil
            return .fetched(relayCount: parsed.count)
        } catch {
            consecutiveFailures += 1
            let delay = min(Self.maximumBackoff, Self.initialBackoff * pow(2, Double(consecutiveFailures - 1)))
            nextRetry = now().addingTimeInterval(delay)
            log?(AppLayerLogEvent(component: "geo-directory", message: "fetch failed (\(error.message)); retry in \(Int(delay)) s"))
            return .failed(error)
        }
    }

    /// Starts the hourly schedule and, if given, forces a fetch whenever Tor becomes ready.
    public func start(torStatus: AsyncStream<TorStatus>? = nil) {
        guard loop == nil else { return }
        loop = Task { [weak self] in
            while !Task.isCancelled {
                guard let self else { return }
                await self.refresh()
                let wait = await self.secondsUntilNextCheck()
                try? await Task.sleep(for: .seconds(wait))
            }
        }
        if let torStatus {
            watcher = Task { [weak self] in
                var wasReady = false
                for await status in torStatus {
                    if status.isReady && !wasReady { await self?.refresh(force: true) }
                    wasReady = status.isReady
                }
            }
        }
    }

    /// Stops the hourly checks and the readiness watch that ``start(torStatus:)`` began.
    public func stop() {
        loop?.cancel()
        watcher?.cancel()
        loop = nil
        watcher = nil
    }

    private func secondsUntilNextCheck() -> Double {
        guard let retry = nextRetry else { return Self.checkInterval }
        return max(1, min(Self.checkInterval, retry.timeIntervalSince(now())))
    }

    /// Temporary file in the same directory, 0600, fsync, rename: never a half-written cache.
    private func writeCache(_ data: Data) throws(AppLayerError) {
        let directory = cacheFile.deletingLastPathComponent()
        let temporary = directory.appendingPathComponent(".\(cacheFile.lastPathComponent).tmp-\(UUID().uuidString.prefix(8))")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw CocoaError(.fileWriteUnknown) }
            let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            try handle.write(contentsOf: data)
            try handle.synchronize()
            try handle.close()
            guard rename(temporary.path, cacheFile.path) == 0 else { throw CocoaError(.fileWriteUnknown) }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw AppLayerError(.filesystem, "cannot write the directory cache \(cacheFile.path): \(error)")
        }
    }
}

/// The directory's CSV format and its validation. One bad row rejects the whole file.
///
/// The rule for this decoder, as for every decoder of network input in Postern: no byte from the
/// peer may trap, hang or grow memory without a stated cap. The body is capped at
/// ``maximumBytes`` by the HTTP client before it is parsed, rows at ``maximumRows``; numbers are
/// parsed with failable initialisers (a port outside 1…65535, a non-finite or out-of-range
/// coordinate rejects the file); errors quote at most 80 characters of a field.
public enum GeoRelayCSV {
    /// The largest CSV accepted: 512 KiB.
    public static let maximumBytes = 512 * 1024
    /// The most rows accepted.
    public static let maximumRows = 5000
    static let acceptedHeaders: [[String]] = [["relay url", "latitude", "longitude"], ["relay url", "lat", "lon"]]

    /// The relays of a CSV (header `Relay URL,Latitude,Longitude` or `...,lat,lon`); throws
    /// `invalidCSV` or `tooLarge` for a file that breaks a rule, naming the row.
    public static func parse(_ data: Data) throws(AppLayerError) -> [GeoRelay] {
        guard data.count <= maximumBytes else {
            throw reject("the file is \(data.count) bytes, more than the \(maximumBytes) allowed")
        }
        guard let text = String(data: data, encoding: .utf8) else { throw reject("the file is not UTF-8") }
        // "\r\n" is one Character in Swift, so both line ends are listed.
        var lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).map { line -> Substring in
            line.hasSuffix("\r") ? line.dropLast() : line
        }
        while let last = lines.last, last.trimmingCharacters(in: .whitespaces).isEmpty { lines.removeLast() }
        guard let header = lines.first else { throw reject("the file is empty") }
        let headerFields = header.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard acceptedHeaders.contains(headerFields) else {
            throw reject("line 1: header must be 'Relay URL,Latitude,Longitude' or 'relay url,lat,lon', found '\(header.prefix(80))'")
        }
        let rows = lines.dropFirst()
        guard !rows.isEmpty else { throw reject("the file has a header and no relays") }
        guard rows.count <= maximumRows else { throw reject("\(rows.count) rows, more than the \(maximumRows) allowed") }
        var relays: [GeoRelay] = []
        relays.reserveCapacity(rows.count)
        for (offset, row) in rows.enumerated() {
            let lineNumber = offset + 2
            let fields = row.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard fields.count == 3 else { throw reject("line \(lineNumber): \(fields.count) fields, exactly 3 required") }
            let host = try relayHost(fields[0], line: lineNumber)
            guard let latitude = Double(fields[1]), latitude.isFinite, (-90...90).contains(latitude) else {
                throw reject("line \(lineNumber): latitude '\(fields[1].prefix(40))' is not a number in -90...90")
            }
            guard let longitude = Double(fields[2]), longitude.isFinite, (-180...180).contains(longitude) else {
                throw reject("line \(lineNumber): longitude '\(fields[2].prefix(40))' is not a number in -180...180")
            }
            relays.append(GeoRelay(host: host, latitude: latitude, longitude: longitude))
        }
        return relays
    }

    /// A bare host, or a wss:// or https:// URL with no path; ASCII only; never a local name.
    static func relayHost(_ field: String, line: Int) throws(AppLayerError) -> String {
        var rest = Substring(field)
        if let schemeEnd = rest.range(of: "://") {
            let scheme = rest[..<schemeEnd.lowerBound].lowercased()
            guard scheme == "wss" || scheme == "https" else {
                throw reject("line \(line): relay '\(field.prefix(80))': scheme '\(scheme.prefix(20))' is not wss or https")
            }
            rest = rest[schemeEnd.upperBound...]
        }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty else { throw reject("line \(line): empty relay host") }
        guard rest.allSatisfy({ $0.isASCII }) else { throw reject("line \(line): relay '\(field.prefix(80))': host is not ASCII") }
        var host = rest.lowercased()
        var portSuffix = ""
        if let colon = host.lastIndex(of: ":") {
            let portText = host[host.index(after: colon)...]
            guard let port = Int(portText), (1...65535).contains(port) else {
                throw reject("line \(line): relay '\(field.prefix(80))': bad port")
            }
            portSuffix = ":\(port)"
            host = String(host[..<colon])
        }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        guard !host.isEmpty, host.count <= 253,
              labels.allSatisfy({ !$0.isEmpty && $0.count <= 63 && $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" } }) else {
            throw reject("line \(line): relay '\(field.prefix(80))': not a host name (paths, queries and credentials are not allowed)")
        }
        if host == "localhost" || host.hasSuffix(".localhost") || host.hasSuffix(".local") || host.hasSuffix(".internal") {
            throw reject("line \(line): relay '\(field.prefix(80))': local host names are not allowed")
        }
        return host + portSuffix
    }

    /// The reasons quote the directory's fields (a header, a latitude, a relay), which are the
    /// server's text: shown with their control characters made visible.
    private static func reject(_ reason: String) -> AppLayerError {
        AppLayerError(.invalidCSV, kind: .failure, "geo relay directory rejected: \(PlainText.visible(reason))")
    }
}
