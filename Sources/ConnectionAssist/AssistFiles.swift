import Foundation
import PosternTor
import PosternSystem

/// Connection assist's two small files, both written atomically with mode 0600 (a temporary file
/// in the same directory, fsynced, then renamed over the old one; temporary files a killed writer
/// left are removed by the next write once they are a minute old):
///
/// - `last-route.json` in the state directory: the key of the route that last reached 100%
///   (`{"version":1,"route":"obfs4:yours","at":"2026-11-29T15:00:00Z"}`). No bridge data.
/// - `connection-assist.json` in the settings directory: per-kind limits
///   (`{"version":1,"limits":{"direct":"45/30","snowflake":"300/120"}}`).
public enum AssistFiles {
    public static let lastRouteFileName = "last-route.json"
    public static let settingsFileName = "connection-assist.json"

    private struct LastRoute: Codable {
        var version: Int
        var route: String
        var at: Date
    }

    private struct Settings: Codable {
        var version: Int
        var limits: [String: String]
    }

    /// The remembered route key, or nil when there is none (or the file is unreadable: assist then
    /// simply uses the default order).
    public static func readLastGoodRoute(in stateDirectory: URL) -> String? {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = UTCTimestamp.decoding
        guard let data = try? Data(contentsOf: stateDirectory.appendingPathComponent(lastRouteFileName)),
              let file = try? decoder.decode(LastRoute.self, from: data), file.version == 1 else { return nil }
        return file.route
    }

    public static func writeLastGoodRoute(_ key: String, in stateDirectory: URL, at date: Date = Date()) throws(TorCoreError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = UTCTimestamp.encoding
        guard let data = try? encoder.encode(LastRoute(version: 1, route: key, at: date)) else {
            throw TorCoreError(.filesystem, "cannot encode the last good route")
        }
        try writeAtomically(data + Data("\n".utf8), to: stateDirectory.appendingPathComponent(lastRouteFileName))
    }

    /// The limits stored in the settings directory; an absent file is no overrides.
    public static func readLimits(in configDirectory: URL) throws(TorCoreError) -> RouteLimitTable {
        let file = configDirectory.appendingPathComponent(settingsFileName)
        guard FileManager.default.fileExists(atPath: file.path) else { return RouteLimitTable() }
        guard let data = try? Data(contentsOf: file), let settings = try? JSONDecoder().decode(Settings.self, from: data),
              settings.version == 1 else {
            throw TorCoreError(.invalidConfiguration, "\(file.path) is not a valid connection assist settings file; move it aside to start afresh")
        }
        var table = RouteLimitTable()
        for (kind, text) in settings.limits.sorted(by: { $0.key < $1.key }) {
            do {
                table.set(try RouteLimits(parsing: text), forKind: try RouteLimitTable.kind(validating: kind))
            } catch {
                throw TorCoreError(.invalidConfiguration, "\(file.path): \(kind): \(error.message)")
            }
        }
        return table
    }

    public static func writeLimits(_ table: RouteLimitTable, in configDirectory: URL) throws(TorCoreError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        let settings = Settings(version: 1, limits: table.overrides.mapValues(\.description))
        guard let data = try? encoder.encode(settings) else {
            throw TorCoreError(.filesystem, "cannot encode the connection assist settings")
        }
        try writeAtomically(data + Data("\n".utf8), to: configDirectory.appendingPathComponent(settingsFileName))
    }

    /// Reads the stored limits, lets `change` alter them and writes them back, all under an
    /// exclusive lock on `connection-assist.json.lock`: two commands that change limits at once
    /// both keep their change. Returns the table as written.
    @discardableResult
    public static func updateLimits(in configDirectory: URL,
                                    _ change: (inout RouteLimitTable) -> Void) throws(TorCoreError) -> RouteLimitTable {
        try preparePrivateDirectory(configDirectory)
        let lockPath = configDirectory.appendingPathComponent(settingsFileName + ".lock").path
        let lock: ExclusiveFileLock
        do throws(SystemCallError) { lock = try ExclusiveFileLock(path: lockPath) } catch {
            throw TorCoreError(.filesystem, "cannot lock \(lockPath): \(error.reason)")
        }
        defer { withExtendedLifetime(lock) {} }
        var table = try readLimits(in: configDirectory)
        change(&table)
        try writeLimits(table, in: configDirectory)
        return table
    }

    /// Creates `directory` 0700, or checks that an existing one is ours and makes it private.
    private static func preparePrivateDirectory(_ directory: URL) throws(TorCoreError) {
        do throws(PrivateDirectory.Failure) {
            try PrivateDirectory.prepare(directory.path)
        } catch {
            throw TorCoreError(.filesystem, "the directory \(error)")
        }
    }

    /// How old a temporary file of ours must be before a writer takes it for one a killed writer
    /// left: a live writer keeps its file for the milliseconds between creating and renaming it.
    static let staleTemporaryAge: Double = 60

    /// The prefix of every temporary file written for `file`; the name goes on with the pid and a
    /// random number and ends in `.tmp`.
    static func temporaryPrefix(for file: URL) -> String { ".\(file.lastPathComponent)." }

    /// A fresh temporary name for `file`: the random part keeps two writers of one process apart.
    static func randomTemporaryName(for file: URL) -> String {
        temporaryPrefix(for: file) + "\(getpid())-\(UInt32.random(in: 0...UInt32.max)).tmp"
    }

    /// Temporary file (0600) in the same directory, fsync, rename, fsync the directory.
    /// `temporaryName` picks the temporary file's name (tests plant a file at it).
    static func writeAtomically(_ data: Data, to file: URL,
                                temporaryName: (URL) -> String = randomTemporaryName(for:)) throws(TorCoreError) {
        let directory = file.deletingLastPathComponent()
        try preparePrivateDirectory(directory)
        removeStaleTemporaryFiles(for: file)
        // A new file of our own: O_EXCL|O_NOFOLLOW never writes through a link or into a file
        // someone left at the name.
        let temporary = directory.appendingPathComponent(temporaryName(file))
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw TorCoreError(.filesystem, "cannot write \(temporary.path): \(String(cString: strerror(errno)))")
        }
        var failure: String?
        do throws(SystemCallError) { try SystemCall.writeAll(descriptor, data) } catch { failure = error.reason }
        if failure == nil, fsync(descriptor) != 0 { failure = String(cString: strerror(errno)) }
        close(descriptor)
        if let failure {
            unlink(temporary.path)
            throw TorCoreError(.filesystem, "cannot write \(temporary.path): \(failure)")
        }
        guard rename(temporary.path, file.path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary.path)
            throw TorCoreError(.filesystem, "cannot replace \(file.path): \(reason)")
        }
        let directoryDescriptor = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryDescriptor >= 0 {
            fsync(directoryDescriptor)
            close(directoryDescriptor)
        }
    }

    /// Removes temporary files for `file` that a killed writer left (random names never reuse them,
    /// so they would pile up). Only names of our own shape older than ``staleTemporaryAge``: the
    /// last-route writer takes no lock, so a younger one may be another process's write under way.
    /// The directory is private, so everything in it is ours.
    static func removeStaleTemporaryFiles(for file: URL) {
        let directory = file.deletingLastPathComponent()
        let prefix = temporaryPrefix(for: file)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        for name in names where name.hasPrefix(prefix) && name.hasSuffix(".tmp") {
            let path = directory.appendingPathComponent(name).path
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            let modified = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
            if Date().timeIntervalSince1970 - modified > staleTemporaryAge {
                unlink(path)
            }
        }
    }
}
