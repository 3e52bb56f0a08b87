import Foundation
import PosternLinkSpec
import PosternSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The on-disk home of a `BridgeConfiguration`: one JSON file, `bridges.json`, in Postern's config
/// directory.
///
/// - Directory: the explicit one given to `init`, else `$POSTERN_CONFIG_DIR`, else
///   `$XDG_CONFIG_HOME/postern` (when absolute), else `~/.config/postern`. Created with mode 0700.
/// - Writes are atomic: a temporary file in the same directory (mode 0600) is written and fsynced,
///   renamed over the old file, and the directory is fsynced. A reader sees the old or the new file,
///   never a mix, even if the writer is killed.
/// - `update` holds an exclusive `flock` on `bridges.json.lock` for the whole read-modify-write, so
///   two `postern` processes never lose each other's changes.
/// - A file that does not parse, or that a newer Postern wrote, is never overwritten: every
///   operation fails with an error naming the file until the user moves it aside.
public struct BridgeStore: Sendable {
    public static let fileName = "bridges.json"
    /// The schema version this code writes and reads.
    public static let currentVersion = 1
    /// Refuse to read absurdly large files (the real one is a few KiB).
    static let maximumFileSize = 1 << 20

    public let directory: String
    /// The argument rules stored lines are read back with: a line that no longer passes them makes
    /// the file invalid, like any other damage.
    public let rules: BridgeArgumentRulebook
    public var filePath: String { directory + "/" + Self.fileName }
    var lockPath: String { filePath + ".lock" }
    var temporaryPrefix: String { Self.fileName + ".tmp-" }
    /// Names the next temporary file, given ``temporaryPrefix``: the pid and a random number, so
    /// two writers never share one. Tests replace it to plant a file at the exact name.
    var temporaryName: @Sendable (_ prefix: String) -> String = { prefix in
        prefix + "\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }

    public init(directory: String? = nil, rules: BridgeArgumentRulebook,
                environment: [String: String] = ProcessInfo.processInfo.environment) throws(BridgeConfigError) {
        self.directory = try Self.resolveDirectory(explicit: directory, environment: environment)
        self.rules = rules
    }

    /// The directory the store lives in, by the precedence described on the type.
    public static func resolveDirectory(explicit: String?, environment: [String: String]) throws(BridgeConfigError) -> String {
        if let explicit, !explicit.isEmpty { return explicit }
        if let override = environment["POSTERN_CONFIG_DIR"], !override.isEmpty { return override }
        // The XDG spec says relative values are invalid and must be ignored.
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") { return xdg + "/postern" }
        if let home = environment["HOME"], !home.isEmpty { return home + "/.config/postern" }
        if let entry = getpwuid(getuid()), let home = entry.pointee.pw_dir, home.pointee != 0 {
            return String(cString: home) + "/.config/postern"
        }
        throw BridgeConfigError(code: .noConfigDirectory, kind: .storage,
                                message: "cannot find a configuration directory: set POSTERN_CONFIG_DIR, XDG_CONFIG_HOME or HOME")
    }

    // MARK: Reading

    /// The stored configuration; defaults when there is no file yet.
    public func load() throws(BridgeConfigError) -> BridgeConfiguration {
        guard let data = try readFile() else { return BridgeConfiguration() }
        return try decode(data)
    }

    private func readFile() throws(BridgeConfigError) -> Data? {
        let descriptor = open(filePath, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 {
            let code = errno
            if code == ENOENT { return nil }
            throw storageError(.storeUnreadable, "cannot read \(filePath): \(describeErrno(code))")
        }
        defer { close(descriptor) }
        let bytes: [UInt8]
        do throws(SystemCallError) {
            bytes = try SystemCall.readAll(descriptor, maximumCount: Self.maximumFileSize)
        } catch {
            throw storageError(.storeUnreadable, "cannot read \(filePath): \(describeErrno(error.number))")
        }
        if bytes.count > Self.maximumFileSize {
            throw corrupt("it is larger than \(Self.maximumFileSize) bytes")
        }
        return Data(bytes)
    }

    private struct VersionProbe: Decodable { let version: Int? }

    /// A Bool that reads as `true` when it is missing or not a JSON boolean (the Tor preference's rule).
    private struct DefaultOnBool: Codable {
        let value: Bool
        init(_ value: Bool) { self.value = value }
        init(from decoder: any Decoder) throws {
            value = (try? decoder.singleValueContainer().decode(Bool.self)) ?? true
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(value)
        }
    }

    private struct FileV1: Codable {
        struct Bridge: Codable {
            let id: String
            let line: String
            let enabled: Bool
        }
        let version: Int
        let bridges: [Bridge]
        let transport: String?
        let torEnabled: DefaultOnBool?
        let relays: [String]?
        let plugins: [Plugin]?

        struct Plugin: Codable {
            let names: [String]
            let path: String
            let arguments: [String]
            let replacesBuiltin: Bool
        }
    }

    func decode(_ data: Data) throws(BridgeConfigError) -> BridgeConfiguration {
        let probe: VersionProbe
        do {
            probe = try JSONDecoder().decode(VersionProbe.self, from: data)
        } catch {
            throw corrupt("it is not a JSON object")
        }
        guard let version = probe.version, version >= 1 else { throw corrupt("it has no valid \"version\"") }
        guard version <= Self.currentVersion else {
            throw storageError(.storeNewerVersion,
                               "\(filePath) was written by a newer Postern (format version \(version); this one understands \(Self.currentVersion)); it was left untouched")
        }
        let file: FileV1
        do {
            file = try JSONDecoder().decode(FileV1.self, from: data)
        } catch let DecodingError.keyNotFound(key, context) {
            throw corrupt("\(Self.path(context.codingPath + [key])) is missing")
        } catch let DecodingError.typeMismatch(_, context) {
            throw corrupt("\(Self.path(context.codingPath)) has the wrong type")
        } catch let DecodingError.valueNotFound(_, context) {
            throw corrupt("\(Self.path(context.codingPath)) is null")
        } catch {
            throw corrupt("it does not have the expected structure")
        }

        var configuration = BridgeConfiguration()
        var bridges: [StoredBridge] = []
        var seenIDs = Set<BridgeID>()
        var seenIdentities = Set<BridgeLine.Identity>()
        for (offset, entry) in file.bridges.enumerated() {
            guard let id = BridgeID(entry.id), seenIDs.insert(id).inserted else {
                throw corrupt("bridge \(offset + 1) has a missing, malformed or repeated ID")
            }
            let line: BridgeLine
            do {
                line = try BridgeLine(validating: entry.line, rules: rules)
            } catch {
                throw corrupt("bridge \(id) does not parse (\(error.message))")
            }
            guard seenIdentities.insert(line.identity).inserted else { throw corrupt("bridge \(id) is stored twice") }
            bridges.append(StoredBridge(id: id, line: line, isEnabled: entry.enabled))
        }
        guard bridges.count <= BridgeConfiguration.maximumBridges else {
            throw corrupt("it holds more than \(BridgeConfiguration.maximumBridges) bridges")
        }
        if let transport = file.transport {
            guard let selection = TransportSelection(transport) else { throw corrupt("\"transport\" is not a valid transport") }
            configuration.transport = selection
        }
        configuration.torEnabled = file.torEnabled?.value ?? true
        var relays: [NostrRelayURL] = []
        for (offset, text) in (file.relays ?? []).enumerated() {
            guard let relay = NostrRelayURL(text), relay.rawValue == text, !relays.contains(relay), !relay.isBuiltin else {
                throw corrupt("relay \(offset + 1) is not a normalized, unique custom relay")
            }
            relays.append(relay)
        }
        guard relays.count <= NostrRelayURL.maximumCustom else {
            throw corrupt("it holds more than \(NostrRelayURL.maximumCustom) custom relays")
        }
        var plugins: [TransportPlugin] = []
        for (offset, entry) in (file.plugins ?? []).enumerated() {
            let plugin: TransportPlugin
            do throws(BridgeConfigError) {
                var names: [TransportName] = []
                for name in entry.names {
                    do throws(BridgeLineError) { names.append(try TransportName(validating: name)) } catch { throw BridgeConfigError(error) }
                }
                plugin = try TransportPlugin(names: names, executable: entry.path,
                                             arguments: entry.arguments, replacesBuiltin: entry.replacesBuiltin)
            } catch {
                throw corrupt("plugin \(offset + 1) is not valid (\(error.message))")
            }
            guard !plugins.contains(where: { !Set($0.names).isDisjoint(with: plugin.names) }) else {
                throw corrupt("plugin \(offset + 1) serves a transport another plugin serves too")
            }
            plugins.append(plugin)
        }
        guard plugins.count <= BridgeConfiguration.maximumPlugins else {
            throw corrupt("it holds more than \(BridgeConfiguration.maximumPlugins) plugins")
        }
        configuration.restore(bridges: bridges, relays: relays, plugins: plugins)
        return configuration
    }

    func encode(_ configuration: BridgeConfiguration) throws(BridgeConfigError) -> Data {
        let file = FileV1(
            version: Self.currentVersion,
            bridges: configuration.bridges.map { .init(id: $0.id.rawValue, line: $0.line.description, enabled: $0.isEnabled) },
            transport: configuration.transport.rawValue,
            torEnabled: DefaultOnBool(configuration.torEnabled),
            relays: configuration.customRelays.map(\.rawValue),
            // Left out when there are none, so files without plugins stay as older versions wrote them.
            plugins: configuration.plugins.isEmpty ? nil : configuration.plugins.map {
                .init(names: $0.names.map(\.rawValue), path: $0.executable, arguments: $0.arguments, replacesBuiltin: $0.replacesBuiltin)
            })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        do {
            return try encoder.encode(file) + Data("\n".utf8)
        } catch {
            throw storageError(.storeWriteFailed, "cannot encode the configuration for \(filePath)")
        }
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0 + 1)]" } ?? "\"\($0.stringValue)\"" }.joined(separator: " ")
    }

    private func corrupt(_ reason: String) -> BridgeConfigError {
        storageError(.storeCorrupt,
                     "\(filePath) is not a valid Postern configuration (\(reason)); it was left untouched, move it aside to start afresh")
    }

    private func storageError(_ code: BridgeConfigError.Code, _ message: String) -> BridgeConfigError {
        BridgeConfigError(code: code, kind: .storage, message: message)
    }

    // MARK: Writing

    /// Reads the configuration, lets `body` change it, and writes it back if it changed, all under
    /// the exclusive lock. Nothing is written when reading fails or `body` throws.
    @discardableResult
    public func update<Result>(_ body: (inout BridgeConfiguration) throws -> Result) throws -> Result {
        try createDirectory()
        let lock = try acquireLock()
        defer { withExtendedLifetime(lock) {} }
        removeStaleTemporaryFiles()
        let before = try load()
        var configuration = before
        let result = try body(&configuration)
        if configuration != before {
            try writeAtomically(try encode(configuration))
        }
        return result
    }

    private func createDirectory() throws(BridgeConfigError) {
        // Missing components are created 0700; an existing directory must be ours and is made
        // private (PrivateDirectory), since the store's lock and temporary files live beside it.
        do throws(PrivateDirectory.Failure) {
            try PrivateDirectory.prepare(directory)
        } catch {
            throw storageError(.storeWriteFailed, "the settings directory \(error)")
        }
    }

    private func acquireLock() throws(BridgeConfigError) -> ExclusiveFileLock {
        do throws(SystemCallError) {
            return try ExclusiveFileLock(path: lockPath)
        } catch where error.call == "open" {
            throw storageError(.storeLockFailed, "cannot open the lock file \(lockPath): \(describeErrno(error.number))")
        } catch {
            throw storageError(.storeLockFailed, "cannot lock \(lockPath): \(describeErrno(error.number))")
        }
    }

    /// Temporary files left by a writer that was killed. Safe to delete: we hold the lock, and
    /// every writer holds it while its temporary file exists.
    private func removeStaleTemporaryFiles() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names where name.hasPrefix(temporaryPrefix) {
            unlink(directory + "/" + name)
        }
    }

    private func writeAtomically(_ data: Data) throws(BridgeConfigError) {
        let temporaryPath = directory + "/" + temporaryName(temporaryPrefix)
        let descriptor = open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw storageError(.storeWriteFailed, "cannot create a temporary file in \(directory): \(describeErrno(errno))")
        }
        var failure: BridgeConfigError?
        do throws(SystemCallError) {
            try SystemCall.writeAll(descriptor, data)
        } catch {
            failure = storageError(.storeWriteFailed, "cannot write \(filePath): \(describeErrno(error.number))")
        }
        if failure == nil, fsync(descriptor) != 0 {
            failure = storageError(.storeWriteFailed, "cannot flush \(filePath) to disk: \(describeErrno(errno))")
        }
        close(descriptor)
        if let failure {
            unlink(temporaryPath)
            throw failure
        }
        if rename(temporaryPath, filePath) != 0 {
            let code = errno
            unlink(temporaryPath)
            throw storageError(.storeWriteFailed, "cannot replace \(filePath): \(describeErrno(code))")
        }
        // Make the rename itself durable.
        let directoryDescriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryDescriptor >= 0 {
            _ = fsync(directoryDescriptor)
            close(directoryDescriptor)
        }
    }
}

func describeErrno(_ code: Int32) -> String {
    String(cString: strerror(code))
}
