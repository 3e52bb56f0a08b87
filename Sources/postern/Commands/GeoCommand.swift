import Foundation
import PosternAppLayer
import PosternTor
import PosternRuntime
import PosternSystem

extension Command {
    static let geo = Command(
        name: "geo",
        summary: "Fetch and show the geo relay directory (Nostr relays with coordinates), through tor",
        details: """
        The directory is a CSV of relays with coordinates, validated (512 KiB, 5000 rows, wss hosts
        only; one bad row rejects the file) and cached in the state directory. 'refresh' fetches it
        through tor: a running 'postern run' when there is one, else a tor of this command's own with
        the stored bridges and transport; with the Tor preference on, never in the clear.
        """,
        subcommands: [.geoRefresh, .geoShow])

    static let geoRefresh = Command(
        name: "refresh",
        summary: "Fetch the directory now (when due, or always with --force) and update the cache",
        options: [
            .value("url", "URL", "the directory's CSV (default: bitchat's geo relay list)"),
            .flag("force", "fetch even when the cache is less than 24 h old"),
        ] + OptionSpec.ownTorOptions(dataDirectory: "tor-geo") + [
            .value("timeout", "SECONDS", "give up waiting for tor after this long (default 120)"),
            .flag("json", "print the outcome as JSON"),
        ],
        run: { invocation in try await GeoCommand(invocation).refresh() })

    static let geoShow = Command(
        name: "show",
        summary: "Show the cached directory, or the relays closest to a place",
        options: [
            .value("near", "LAT,LON", "the relays closest to these coordinates (haversine), ties by host"),
            .value("count", "N", "with --near: how many (default 5)"),
            .flag("json", "print the relays as JSON"),
        ],
        run: { invocation in try GeoCommand(invocation).show() })
}

struct GeoCommand {
    let invocation: Invocation

    init(_ invocation: Invocation) { self.invocation = invocation }

    var cacheFile: URL { GeoRelayDirectory.defaultCacheFile(inStateDirectory: invocation.paths.stateDirectory) }

    func refresh() async throws -> Int32 {
        try invocation.requireNoPositionals()
        let text = invocation.arguments.value("url") ?? GeoRelayDirectory.defaultSource
        guard let url = URL(string: text), ["https", "http"].contains(url.scheme?.lowercased() ?? "") else {
            throw invocation.usageError("--url '\(text)': an http(s) URL is needed")
        }
        let seconds = try invocation.positiveSeconds("timeout", default: 120)
        let tor = try await TorRoute.open(invocation, dataDirectory: invocation.paths.stateDirectory.appendingPathComponent("tor-geo"),
                                          command: "postern geo")
        let force = invocation.arguments.flag("force")
        let report = await GeoRelayDirectory.refresh(from: url, cacheFile: cacheFile, through: tor.activation, force: force,
                                                     readinessTimeout: .clampedSeconds(seconds))
        await tor.close()
        guard report.succeeded else { throw CommandFailure(report.text) }
        invocation.output.print(invocation.json ? report.jsonLine : report.text)
        return 0
    }

    func show() throws -> Int32 {
        try invocation.requireNoPositionals()
        var place: (GeoCoordinate, Int)?
        if let near = invocation.arguments.value("near") {
            guard let coordinate = GeoCoordinate(parsing: near) else {
                throw invocation.usageError("--near needs LAT,LON in degrees (e.g. 48.85,2.35), not '\(near)'")
            }
            var count = 5
            if let text = invocation.arguments.value("count") {
                guard let number = Int(text), (1...5000).contains(number) else {
                    throw invocation.usageError("--count needs a whole number from 1 to 5000, not '\(text)'")
                }
                count = number
            }
            place = (coordinate, count)
        }
        let cached: [GeoRelay]?
        do throws(AppLayerError) { cached = try GeoRelayDirectory.cachedRelays(in: cacheFile, near: place?.0, count: place?.1 ?? 5) } catch {
            throw CommandFailure("the cached directory is invalid: \(error.message)")
        }
        guard let relays = cached else { throw CommandFailure("no cached directory yet: 'postern geo refresh' fetches it") }
        try invocation.render(relays.map(GeoRelayListing.init), text: GeoRelayListing.table(relays))
        return 0
    }
}
