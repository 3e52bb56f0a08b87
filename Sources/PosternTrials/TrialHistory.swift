import Foundation

/// Earlier runs: `<directory>/<id>/result.json`, newest last; and the atomic file writes every
/// result file goes through.
public struct TrialHistory: Sendable {
    public let directory: URL

    public init(directory: URL) { self.directory = directory }

    /// Every result that decodes; a run directory without one (still running, or cut short
    /// before it wrote its result) is skipped.
    public func load() -> [ABResult] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.compactMap { name in
            try? Self.loadRun(at: directory.appendingPathComponent(name))
        }.sorted { $0.startedAt < $1.startedAt }
    }

    /// The result kept in one run's directory.
    public static func loadRun(at runDirectory: URL) throws(TrialError) -> ABResult {
        let file = runDirectory.appendingPathComponent("result.json")
        guard let data = FileManager.default.contents(atPath: file.path) else {
            throw TrialError(.filesystem, kind: .usage, "\(runDirectory.path) holds no A/B result (no readable result.json)")
        }
        do {
            return try ABResult.decode(data)
        } catch {
            throw TrialError(.badResult, "\(file.path): \(error.message)")
        }
    }

    /// Replaces `file` atomically (temporary file in the same directory, mode 0600, renamed over):
    /// a reader sees the old file or the new one, never half of one.
    public static func writeAtomically(_ data: Data, to file: URL) throws(TrialError) {
        let temporary = file.deletingLastPathComponent().appendingPathComponent(".\(file.lastPathComponent).\(getpid()).tmp")
        guard FileManager.default.createFile(atPath: temporary.path, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw TrialError(.filesystem, "cannot write \(temporary.path)")
        }
        guard rename(temporary.path, file.path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary.path)
            throw TrialError(.filesystem, "cannot replace \(file.path): \(reason)")
        }
    }
}
