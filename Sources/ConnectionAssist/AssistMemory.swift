import PosternCrypto
import Foundation
import PosternTor
import PosternSystem

/// Connection assist's memory of which routes worked and failed, and how fast, per network:
/// `assist-memory.json` in the state directory (0600, written atomically like the other files).
///
/// A network is keyed by SHA-256 of a per-install random salt and the default gateway's hardware
/// address (from /proc/net/route and /proc/net/arp), so the file names no network and the key
/// means nothing on another machine. Without a gateway address (no ARP entry, a VPN, a namespace
/// with a point-to-point link) everything goes to one global slot. Scores decay with a half-life
/// of `halfLife`, so an old success or failure counts less than a new one. No bridge data: routes
/// are named by their keys ("direct", "obfs4:yours").
public struct AssistMemory: Sendable, Hashable, Codable {
    public static let fileName = "assist-memory.json"
    public static let globalNetwork = "global"
    /// How fast old outcomes fade.
    public static let halfLife: TimeInterval = 7 * 86_400
    /// At most this many networks are kept (the least recently used go).
    public static let maximumNetworks = 32
    /// How long a remembered diagnosis steers the next runs on its network: a detector or a freeze
    /// is the network's policy, not one connection's bad luck, but policies change; after a day the
    /// route is tried in its usual place again (and diagnosed again if it still cannot work).
    public static let diagnosisLifetime: TimeInterval = 86_400

    public struct RouteRecord: Sendable, Hashable, Codable {
        /// Decayed count of successes and failures, as of `updated`.
        public var successes: Double
        public var failures: Double
        /// Seconds from start to ready the last times it worked (a moving average).
        public var secondsToReady: Double?
        public var updated: Date
    }

    public struct Network: Sendable, Hashable, Codable {
        public var routes: [String: RouteRecord]
        public var used: Date
        /// Diagnoses that ruled their route out on this network, by route key (absent in files
        /// written before they were kept).
        public var diagnoses: [String: RememberedDiagnosis]? = nil
    }

    public var version = 1
    /// Random per install: the network keys are salted with it.
    public var salt: String
    public var networks: [String: Network] = [:]

    public init(salt: String = AssistMemory.newSalt()) { self.salt = salt }

    public static func newSalt() -> String {
        (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    /// The key of a network with this gateway hardware address (nil: the global slot).
    public func networkKey(gatewayHardwareAddress: String?) -> String {
        guard let address = gatewayHardwareAddress?.lowercased(), !address.isEmpty, address != "00:00:00:00:00:00" else {
            return Self.globalNetwork
        }
        return Hex.encode(Digest.sha256(Array("postern-assist-network|\(salt)|\(address)".utf8)))
    }

    /// A route's score on a network at `now`: decayed successes minus failures (0 unknown).
    public func score(_ routeKey: String, network: String, now: Date = Date()) -> Double {
        guard let record = networks[network]?.routes[routeKey] else { return 0 }
        let decay = Self.decay(from: record.updated, to: now)
        return (record.successes - record.failures) * decay
    }

    /// `keys` ordered by this network's memory: routes with a positive score first (best first,
    /// faster first among equals), then the unknown ones in their order, then those that failed
    /// (least failed first). The sort is stable: the default order breaks ties.
    public func order(_ keys: [String], network: String, now: Date = Date()) -> [String] {
        let scored = keys.enumerated().map { (index: $0.offset, key: $0.element, score: score($0.element, network: network, now: now),
                                              seconds: networks[network]?.routes[$0.element]?.secondsToReady ?? .infinity) }
        return scored.sorted { a, b in
            let groupA = a.score > 0.05 ? 0 : (a.score < -0.05 ? 2 : 1)
            let groupB = b.score > 0.05 ? 0 : (b.score < -0.05 ? 2 : 1)
            if groupA != groupB { return groupA < groupB }
            if groupA == 0, abs(a.score - b.score) > 0.5 { return a.score > b.score }
            if groupA == 0, a.seconds != b.seconds { return a.seconds < b.seconds }
            if groupA == 2, abs(a.score - b.score) > 0.05 { return a.score > b.score }
            return a.index < b.index
        }.map(\.key)
    }

    public mutating func recordSuccess(_ routeKey: String, network: String, secondsToReady: Double, now: Date = Date()) {
        update(routeKey, network: network, now: now) { record in
            record.successes += 1
            record.secondsToReady = record.secondsToReady.map { $0 * 0.5 + secondsToReady * 0.5 } ?? secondsToReady
        }
        // It worked here: whatever ruled it out no longer holds.
        networks[network]?.diagnoses?[routeKey] = nil
    }

    /// Keeps a diagnosis that rules its route out (others are not kept: they steer nothing).
    public mutating func recordDiagnosis(_ diagnosis: RouteDiagnosis, routeKey: String, network: String, now: Date = Date()) {
        guard diagnosis.rulesOutRoute else { return }
        var slot = networks[network] ?? Network(routes: [:], used: now)
        var kept = (slot.diagnoses ?? [:]).filter { now.timeIntervalSince($0.value.at) < Self.diagnosisLifetime }
        // Bounded like the routes: at most 64 per network.
        guard kept[routeKey] != nil || kept.count < 64 else { return }
        kept[routeKey] = RememberedDiagnosis(diagnosis, at: now)
        slot.diagnoses = kept
        slot.used = now
        networks[network] = slot
        if networks.count > Self.maximumNetworks, let oldest = networks.min(by: { $0.value.used < $1.value.used })?.key {
            networks[oldest] = nil
        }
    }

    /// This network's remembered diagnoses younger than ``diagnosisLifetime``, by route key (one
    /// dated in the future, a clock set back, counts as made now).
    public func diagnoses(network: String, now: Date = Date()) -> [String: RememberedDiagnosis] {
        (networks[network]?.diagnoses ?? [:]).filter { now.timeIntervalSince($0.value.at) < Self.diagnosisLifetime }
    }

    public mutating func recordFailure(_ routeKey: String, network: String, now: Date = Date()) {
        update(routeKey, network: network, now: now) { $0.failures += 1 }
    }

    private mutating func update(_ routeKey: String, network: String, now: Date, _ change: (inout RouteRecord) -> Void) {
        var slot = networks[network] ?? Network(routes: [:], used: now)
        var record = slot.routes[routeKey] ?? RouteRecord(successes: 0, failures: 0, secondsToReady: nil, updated: now)
        let decay = Self.decay(from: record.updated, to: now)
        record.successes *= decay
        record.failures *= decay
        record.updated = now
        change(&record)
        // Bounded: a count never grows past what decay can matter for.
        record.successes = min(record.successes, 100)
        record.failures = min(record.failures, 100)
        if slot.routes[routeKey] == nil, slot.routes.count >= 64 { return }
        slot.routes[routeKey] = record
        slot.used = now
        networks[network] = slot
        if networks.count > Self.maximumNetworks, let oldest = networks.min(by: { $0.value.used < $1.value.used })?.key {
            networks[oldest] = nil
        }
    }

    private static func decay(from then: Date, to now: Date) -> Double {
        let age = max(0, now.timeIntervalSince(then))
        return pow(0.5, age / halfLife)
    }

    // MARK: File

    /// The stored memory; a missing or unreadable file is a fresh memory (with a new salt).
    public static func read(in stateDirectory: URL) -> AssistMemory {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = UTCTimestamp.decoding
        let file = stateDirectory.appendingPathComponent(fileName)
        guard let data = try? Data(contentsOf: file), data.count <= 1 << 20,
              let memory = try? decoder.decode(AssistMemory.self, from: data), memory.version == 1,
              memory.salt.count == 32 else { return AssistMemory() }
        return memory
    }

    public func write(in stateDirectory: URL) throws(TorCoreError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = UTCTimestamp.encoding
        guard let data = try? encoder.encode(self) else { throw TorCoreError(.filesystem, "cannot encode the assist memory") }
        try AssistFiles.writeAtomically(data + Data("\n".utf8), to: stateDirectory.appendingPathComponent(Self.fileName))
    }

    // MARK: Which network

    /// The default gateway's hardware address: the gateway of the default route in
    /// /proc/net/route, looked up in /proc/net/arp. Nil when either is missing. Read to the end
    /// with read(2): Foundation's String(contentsOfFile:) and Data(contentsOf:) stop after the
    /// first page of a procfs table (4,050 of 30,300 bytes of /proc/net/tcp here), which would
    /// lose a gateway listed after the first ~30 routes or ~50 ARP entries.
    public static func defaultGatewayHardwareAddress(routeTable: String? = ProcessDescriptors.readWholeFile("/proc/net/route", limit: 1 << 22),
                                                     arpTable: String? = ProcessDescriptors.readWholeFile("/proc/net/arp", limit: 1 << 22)) -> String? {
        guard let routeTable, let arpTable else { return nil }
        var gateway: String?
        for line in routeTable.split(separator: "\n").dropFirst() {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            // Iface Destination Gateway Flags ...: destination 0 is the default route; the
            // gateway is a little-endian hex IPv4 address.
            guard fields.count >= 3, fields[1] == "00000000", let value = UInt32(fields[2], radix: 16), value != 0 else { continue }
            gateway = "\(value & 0xff).\((value >> 8) & 0xff).\((value >> 16) & 0xff).\(value >> 24)"
            break
        }
        guard let gateway else { return nil }
        for line in arpTable.split(separator: "\n").dropFirst() {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 4, fields[0] == gateway else { continue }
            let address = String(fields[3])
            return address == "00:00:00:00:00:00" ? nil : address
        }
        return nil
    }
}
