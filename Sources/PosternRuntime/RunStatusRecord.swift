import Foundation
import ConnectionAssist
import PosternSystem
import PosternTor

/// What a running session publishes for `postern status`, `postern nostr` (which attaches to its
/// SOCKS port) and trial runners: a JSON
/// file replaced atomically on every change.
public struct RunStatusRecord: Codable, Sendable {
    /// One bootstrap milestone and when it was reached.
    public struct PhaseTiming: Codable, Sendable, Hashable {
        /// tor's bootstrap percentage.
        public var progress: Int
        /// tor's phase tag, e.g. "handshake_done".
        public var tag: String
        /// tor's phase summary, e.g. "Handshake with a relay done".
        public var summary: String
        /// Seconds since the core was started.
        public var seconds: Double
    }

    /// The process running the session.
    public var pid: Int32
    /// tor's state by name (``TorState/name``): idle, starting, bootstrapping, ready, stalled, failed, stopping.
    public var state: String
    /// tor's bootstrap percentage, 0–100.
    public var bootstrapProgress: Int
    /// tor's current phase tag.
    public var bootstrapTag: String
    /// tor's current phase summary.
    public var bootstrapSummary: String
    /// tor's last bootstrap warning, if any.
    public var bootstrapWarning: String?
    /// The attempt stalled (under connection assist: every route failed).
    public var bootstrapDidStall: Bool
    /// Bootstrapped and the SOCKS listener bound.
    public var isReady: Bool
    /// The SOCKS5 listener, "127.0.0.1:39050".
    public var socks: String
    /// The route in use or being tried.
    public var route: RouteName
    /// Why tor failed, when it did.
    public var lastError: String?
    /// Each bootstrap milestone reached, with its time.
    public var phases: [PhaseTiming]
    /// With `--transport auto`: which route connection assist is trying and why it left the others.
    public var assist: AssistSnapshot?
    /// When the record was made.
    public var updatedAt: Date

    /// The record of a session in process `pid` with tor's `status`, now.
    public init(pid: Int32, status: TorStatus, socks: SocksEndpoint, route: RouteName, phases: [PhaseTiming],
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

    /// The encoder of the status file: keys sorted, slashes unescaped, dates ISO 8601.
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = UTCTimestamp.encoding
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

    /// The record in `file`; throws when it is missing or does not parse.
    public static func read(from file: URL) throws -> RunStatusRecord {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = UTCTimestamp.decoding
        return try decoder.decode(RunStatusRecord.self, from: Data(contentsOf: file))
    }
}
