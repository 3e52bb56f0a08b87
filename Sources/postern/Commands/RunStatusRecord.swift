import Foundation
import PosternCore

/// What a running `postern run` publishes for `postern status` (and for trial runners): a JSON
/// file replaced atomically on every change.
struct RunStatusRecord: Codable, Sendable {
    struct PhaseTiming: Codable, Sendable {
        var progress: Int
        var tag: String
        var summary: String
        /// Seconds since the core was started.
        var seconds: Double
    }

    var pid: Int32
    var state: String
    var bootstrapProgress: Int
    var bootstrapTag: String
    var bootstrapSummary: String
    var bootstrapWarning: String?
    var bootstrapDidStall: Bool
    var isReady: Bool
    var socks: String
    var route: String
    var lastError: String?
    var phases: [PhaseTiming]
    /// With `--transport auto`: which route connection assist is trying and why it left the others.
    var assist: AssistSnapshot?
    var updatedAt: Date

    init(pid: Int32, status: TorStatus, socks: SocksEndpoint, route: String, phases: [PhaseTiming],
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

    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    /// Written to a temporary file in the same directory, then renamed over the old one.
    func write(to file: URL) throws {
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let data = try Self.encoder().encode(self)
        let temporary = file.deletingLastPathComponent().appendingPathComponent(".\(file.lastPathComponent).\(pid).tmp")
        guard FileManager.default.createFile(atPath: temporary.path, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw CommandFailure("cannot write \(temporary.path)")
        }
        guard rename(temporary.path, file.path) == 0 else {
            unlink(temporary.path)
            throw CommandFailure("cannot replace \(file.path): \(String(cString: strerror(errno)))")
        }
    }

    static func read(from file: URL) throws -> RunStatusRecord {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(RunStatusRecord.self, from: Data(contentsOf: file))
    }
}
