import PosternLinkSpec
import PosternSystem

/// A form `postern bridges export` writes stored bridge lines in: `torrc` (``BridgeLine/torrcFragment(_:)``),
/// `json` (the array of lines bridges.torproject.org puts in QR codes) or `qr` (that array drawn as
/// a QR code, by BridgeQR).
public struct BridgeExportFormat: Hashable, Sendable, CustomStringConvertible {
    /// The format's name as `--format` takes it.
    public let rawValue: String

    /// The three formats, and all of them in the order help names them.
    public static let torrc = BridgeExportFormat(trusted: "torrc")
    public static let json = BridgeExportFormat(trusted: "json")
    public static let qr = BridgeExportFormat(trusted: "qr")
    public static let all: [BridgeExportFormat] = [.torrc, .json, .qr]

    private init(trusted rawValue: String) { self.rawValue = rawValue }

    /// One of the formats by its exact name; anything else is `invalidInput` naming the choices.
    public init(validating text: String) throws(BridgeConfigError) {
        guard let format = Self.all.first(where: { $0.rawValue == text }) else {
            throw BridgeConfigError(code: .unknownExportFormat, kind: .invalidInput, message: "unknown format '\(text)' (use torrc, json or qr)")
        }
        self = format
    }

    public var description: String { rawValue }
}

extension BridgeLine {
    /// A torrc fragment that uses `lines`: `UseBridges 1` and one `Bridge ...` line each, in full
    /// (export is the one place bridge secrets are printed).
    public static func torrcFragment(_ lines: [BridgeLine]) -> String {
        (["UseBridges 1"] + lines.map(\.torrcLine)).joined(separator: "\n")
    }
}

extension BridgeConfiguration {
    /// The bridges an export writes: `ids` in their order (every stored bridge when empty), only
    /// the enabled ones with `enabledOnly`. An unknown ID throws `unknownBridgeID`; an empty result
    /// throws `nothingToExport`, saying whether nothing is stored or nothing selected is on.
    public func bridgesToExport(ids: [BridgeID], enabledOnly: Bool) throws(BridgeConfigError) -> [StoredBridge] {
        var selected = bridges
        if !ids.isEmpty {
            selected = []
            for id in ids {
                guard let bridge = bridge(id) else {
                    throw BridgeConfigError(code: .unknownBridgeID, kind: .conflict,
                                            message: "there is no bridge with the ID \(id) (see 'postern bridges list')")
                }
                selected.append(bridge)
            }
        }
        if enabledOnly { selected = selected.filter(\.isEnabled) }
        guard !selected.isEmpty else {
            throw BridgeConfigError(code: .nothingToExport, kind: .conflict,
                                    message: bridges.isEmpty ? "there are no bridges to export (add some with 'postern bridges add')"
                                                             : "none of the selected bridges is switched on")
        }
        return selected
    }
}

extension BridgeConfigError.Code {
    public static let unknownExportFormat = Self("unknown-export-format")
    /// The export selected no bridge.
    public static let nothingToExport = Self("nothing-to-export")
}
