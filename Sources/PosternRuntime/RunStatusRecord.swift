import Foundation
import ConnectionAssist
import PosternTor

/// What a running session publishes for `postern status`, `postern nostr` (which attaches to its
/// SOCKS port) and trial runners: a JSON
/// file replaced atomically on every change.
public struct RunStatusRecord: Codable, Sendable {
    public struct PhaseTiming: Codable, Sendable, Hashable {
        public var progress: Int
        public var tag: String
        public var summary: String
        /// Seconds since the core was started.
        public var seconds: Double
    }

    public var pid: Int32
    public var state: String
    public var bootstrapProgress: Int
    public var bootstrapTag: String
    public var bootstrapSummary: String
    public var bootstrapWarning: String?
    public var bootstrapDidStall: Bool
    public var isReady: Bool
    public var socks: String
    public var route: String
    public var lastError: String?
    public var phases: [PhaseTiming]
    /// With `--transport auto`: which route connection assist is trying and why it left the others.
    public var assist: AssistSnapshot?
    public var updatedAt: Date

    public init(pid: Int32, status: TorStatus, socks: SocksEndpoint, route: String, phases: [PhaseTiming],
         assist: AssistSnapshot? = nil) {
        self.pid = pid
        state = status.state.name
        bootstrapProgress = status.bootstrapProgress
        bootstrapTag = status.bootstrapTag
        bootstrapSummary = status.bootstrapSummary
        bootstrapWarning = status.bootstrapWarning
        // Under connection assist a stall means every route failed.
        bootstrapDidStall = assist?.allFailed ?? status.bootstrapDidStall
        isReady = status.isReady
        self.socks = socks.description
        self.route = route
        lastError = status.lastError?.message
        self.phases = phases
        self.assist = assist
        updatedAt = Date()
    }

    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    /// Written to a temporary file in the same directory, then renamed over the old one.
    public func write(to file: URL) throws {
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let data = try Self.encoder().encode(self)
        let temporary = file.deletingLastPathComponent().appendingPathComponent(".\(file.lastPathComponent).\(pid).tmp")
        guard FileManager.default.createFile(atPath: temporary.path, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw SessionError(.file, "cannot write \(temporary.path)")
        }
        guard rename(temporary.path, file.path) == 0 else {
            unlink(temporary.path)
            throw SessionError(.file, "cannot replace \(file.path): \(String(cString: strerror(errno)))")
        }
    }

    public static func read(from file: URL) throws -> RunStatusRecord {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(RunStatusRecord.self, from: Data(contentsOf: file))
    }
}
