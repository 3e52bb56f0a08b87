import PosternLinkSpec

/// A short, stable identifier for a stored bridge (6 lower-case hex characters). It is random, not
/// derived from the bridge, so it can be logged without revealing anything.
public struct BridgeID: Hashable, Sendable, Comparable, CustomStringConvertible, LosslessStringConvertible {
    public let rawValue: String

    public init(validating text: String) throws(BridgeConfigError) {
        guard text.utf8.count == 6, text.utf8.allSatisfy(isHexDigit) else {
            throw BridgeConfigError(code: .unknownBridgeID, kind: .invalidInput, message: "a bridge ID is 6 hexadecimal characters")
        }
        rawValue = text.lowercased()
    }

    public init?(_ description: String) {
        guard let id = try? BridgeID(validating: description) else { return nil }
        self = id
    }

    static func random<G: RandomNumberGenerator>(using generator: inout G) -> BridgeID {
        let value = UInt32.random(in: 0..<(1 << 24), using: &generator)
        let hex = String(value, radix: 16)
        return BridgeID(trusted: String(repeating: "0", count: 6 - hex.count) + hex)
    }

    private init(trusted: String) { rawValue = trusted }

    public var description: String { rawValue }
    public static func < (lhs: BridgeID, rhs: BridgeID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Which way to reach Tor: `auto` (Postern picks), `direct` (no bridges), or one transport name.
public struct TransportSelection: Hashable, Sendable, CustomStringConvertible, LosslessStringConvertible {
    public let rawValue: String

    public static let auto = TransportSelection(trusted: "auto")
    public static let direct = TransportSelection(trusted: "direct")

    public init(_ transport: TransportName) { rawValue = transport.rawValue }

    /// `auto`, `direct` or a transport name (well-known names matched ignoring case).
    public init(validating text: String) throws(BridgeConfigError) {
        let lower = text.lowercased()
        if lower == "auto" || lower == "direct" {
            rawValue = lower
        } else if let known = TransportName.known(matching: text) {
            rawValue = known.rawValue
        } else if let name = TransportName(text) {
            rawValue = name.rawValue
        } else {
            throw BridgeConfigError(code: .badTransportSelection, kind: .invalidInput,
                                    message: "the transport must be auto, direct or a transport name such as obfs4 or snowflake")
        }
    }

    public init?(_ description: String) {
        guard let value = try? TransportSelection(validating: description) else { return nil }
        self = value
    }

    private init(trusted: String) { rawValue = trusted }

    /// The transport, when one specific transport is selected.
    public var transport: TransportName? {
        self == .auto || self == .direct ? nil : TransportName(rawValue)
    }

    public var description: String { rawValue }
}

/// A bridge the user added, with its ID and on/off state.
public struct StoredBridge: Hashable, Sendable, RedactableDescription {
    public let id: BridgeID
    public internal(set) var line: BridgeLine
    public internal(set) var isEnabled: Bool

    public init(id: BridgeID, line: BridgeLine, isEnabled: Bool) {
        self.id = id
        self.line = line
        self.isEnabled = isEnabled
    }

    public func description(policy: LoggingPolicy) -> String {
        "\(id) \(isEnabled ? "on " : "off") \(line.description(policy: policy))"
    }
}

/// Everything Postern keeps in its configuration file. A plain value: edit it in memory and let
/// `BridgeStore.update` persist it.
public struct BridgeConfiguration: Hashable, Sendable {
    /// The most bridges one user can keep.
    public static let maximumBridges = 64

    public internal(set) var bridges: [StoredBridge] = []
    public var transport: TransportSelection = .auto
    /// The "Tor routing" preference. Default on; a missing or non-boolean stored value reads as on.
    public var torEnabled = true
    public internal(set) var customRelays: [NostrRelayURL] = []
    /// External transports (`postern transport plugin`), in the order they were added.
    public internal(set) var plugins: [TransportPlugin] = []

    public init() {}

    /// What `add` did with a line.
    public struct AddOutcome: Hashable, Sendable {
        public enum Change: Hashable, Sendable {
            /// A new bridge.
            case added
            /// The same bridge with the same arguments was already stored.
            case unchanged
            /// The same bridge (transport, address, fingerprint) was stored with other arguments
            /// (for example an old cert); its line was replaced and its ID and on/off state kept.
            case updated
        }
        public let id: BridgeID
        public let change: Change
    }

    /// Adds a bridge, de-duplicated by (transport, address, fingerprint).
    @discardableResult
    public mutating func add(_ line: BridgeLine) throws(BridgeConfigError) -> AddOutcome {
        var generator = SystemRandomNumberGenerator()
        return try add(line, using: &generator)
    }

    @discardableResult
    public mutating func add<G: RandomNumberGenerator>(_ line: BridgeLine, using generator: inout G) throws(BridgeConfigError) -> AddOutcome {
        if let index = bridges.firstIndex(where: { $0.line.identity == line.identity }) {
            if bridges[index].line == line { return AddOutcome(id: bridges[index].id, change: .unchanged) }
            bridges[index].line = line
            return AddOutcome(id: bridges[index].id, change: .updated)
        }
        guard bridges.count < Self.maximumBridges else {
            throw BridgeConfigError(code: .tooManyBridges, kind: .limit,
                                    message: "the bridge list is full (\(Self.maximumBridges) bridges); remove some before adding more")
        }
        var id = BridgeID.random(using: &generator)
        while bridges.contains(where: { $0.id == id }) { id = BridgeID.random(using: &generator) }
        bridges.append(StoredBridge(id: id, line: line, isEnabled: true))
        return AddOutcome(id: id, change: .added)
    }

    public func bridge(_ id: BridgeID) -> StoredBridge? { bridges.first { $0.id == id } }

    public mutating func setEnabled(_ enabled: Bool, for id: BridgeID) throws(BridgeConfigError) {
        bridges[try index(of: id)].isEnabled = enabled
    }

    @discardableResult
    public mutating func remove(_ id: BridgeID) throws(BridgeConfigError) -> StoredBridge {
        bridges.remove(at: try index(of: id))
    }

    private func index(of id: BridgeID) throws(BridgeConfigError) -> Int {
        guard let index = bridges.firstIndex(where: { $0.id == id }) else {
            throw BridgeConfigError(code: .unknownBridgeID, kind: .conflict, message: "there is no bridge with the ID \(id)")
        }
        return index
    }

    /// Enabled bridges, optionally of one transport only, in the order they were added.
    public func enabledBridges(of transport: TransportName? = nil) -> [StoredBridge] {
        bridges.filter { $0.isEnabled && (transport == nil || $0.line.transport == transport) }
    }

    /// Built-in relays followed by the custom ones.
    public var allRelays: [NostrRelayURL] { NostrRelayURL.builtin + customRelays }

    /// Normalizes and adds a custom relay.
    @discardableResult
    public mutating func addRelay(_ text: String) throws(BridgeConfigError) -> NostrRelayURL {
        let relay = try NostrRelayURL(normalizing: text)
        guard !allRelays.contains(relay) else {
            throw BridgeConfigError(code: .duplicateRelay, kind: .conflict, message: "\(relay) is already in the relay list")
        }
        guard customRelays.count < NostrRelayURL.maximumCustom else {
            throw BridgeConfigError(code: .tooManyRelays, kind: .limit,
                                    message: "you can add up to \(NostrRelayURL.maximumCustom) relays")
        }
        customRelays.append(relay)
        return relay
    }

    /// Removes a custom relay given in any form that normalizes to it.
    public mutating func removeRelay(_ text: String) throws(BridgeConfigError) {
        let relay = try NostrRelayURL(normalizing: text)
        guard let index = customRelays.firstIndex(of: relay) else {
            throw BridgeConfigError(code: .unknownRelay, kind: .conflict,
                                    message: relay.isBuiltin ? "\(relay) is built in and cannot be removed" : "\(relay) is not in the custom relay list")
        }
        customRelays.remove(at: index)
    }

    /// Restores relays read from the store without the cap check (the file was written by us).
    mutating func restore(bridges: [StoredBridge], relays: [NostrRelayURL], plugins: [TransportPlugin] = []) {
        self.bridges = bridges
        self.customRelays = relays
        self.plugins = plugins
    }
}
