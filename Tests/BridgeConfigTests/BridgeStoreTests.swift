import Foundation
import PosternLinkSpec
import Testing
@testable import BridgeConfig
#if canImport(Glibc)
import Glibc
#endif

/// A fresh directory under /tmp, removed when the test ends.
final class TemporaryDirectory {
    let path: String
    init() {
        var template = Array("/tmp/postern-store-test-XXXXXX".utf8CString)
        path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

func fileMode(_ path: String) -> mode_t {
    var info = stat()
    precondition(stat(path, &info) == 0)
    return info.st_mode & 0o777
}

func obfs4Line(_ lastOctet: Int, iatMode: Int = 0) throws -> BridgeLine {
    try BridgeLine(validating: "obfs4 198.51.100.\(lastOctet):443 \(Sample.fingerprint) cert=\(Sample.cert) iat-mode=\(iatMode)")
}

@Suite("Bridge store")
struct BridgeStoreTests {
    @Test func directoryPrecedence() throws {
        let env = ["POSTERN_CONFIG_DIR": "/env/dir", "XDG_CONFIG_HOME": "/xdg", "HOME": "/home/u"]
        #expect(try BridgeStore.resolveDirectory(explicit: "/explicit", environment: env) == "/explicit")
        #expect(try BridgeStore.resolveDirectory(explicit: nil, environment: env) == "/env/dir")
        #expect(try BridgeStore.resolveDirectory(explicit: nil, environment: ["XDG_CONFIG_HOME": "/xdg", "HOME": "/home/u"]) == "/xdg/postern")
        #expect(try BridgeStore.resolveDirectory(explicit: nil, environment: ["XDG_CONFIG_HOME": "relative", "HOME": "/home/u"]) == "/home/u/.config/postern")
        #expect(try BridgeStore.resolveDirectory(explicit: nil, environment: ["HOME": "/home/u"]) == "/home/u/.config/postern")
    }

    @Test func missingFileReadsAsDefaults() throws {
        let temporary = TemporaryDirectory()
        let configuration = try BridgeStore(directory: temporary.path + "/none").load()
        #expect(configuration == BridgeConfiguration())
        #expect(configuration.torEnabled)
        #expect(configuration.transport == .auto)
    }

    @Test func writesRoundTripWithPrivateModes() throws {
        let temporary = TemporaryDirectory()
        let directory = temporary.path + "/nested/postern"
        let store = try BridgeStore(directory: directory)
        let id = try store.update { configuration in
            let outcome = try configuration.add(try obfs4Line(7))
            configuration.transport = try TransportSelection(validating: "Snowflake")
            configuration.torEnabled = false
            try configuration.addRelay("relay.example.net")
            return outcome.id
        }
        let loaded = try store.load()
        #expect(loaded.bridges.map(\.id) == [id])
        #expect(loaded.bridges.first?.line == (try obfs4Line(7)))
        #expect(loaded.transport.rawValue == "snowflake")
        #expect(loaded.torEnabled == false)
        #expect(loaded.customRelays.map(\.rawValue) == ["wss://relay.example.net"])
        #expect(fileMode(store.filePath) == 0o600)
        #expect(fileMode(directory) == 0o700)
        #expect(fileMode(temporary.path + "/nested") == 0o700)
        let text = try String(contentsOfFile: store.filePath, encoding: .utf8)
        #expect(text.contains("\"version\" : 1"))
        #expect(!(try FileManager.default.contentsOfDirectory(atPath: directory)).contains { $0.contains(".tmp-") })
    }

    @Test func deduplicatesAndUpdatesByIdentity() throws {
        var configuration = BridgeConfiguration()
        let first = try configuration.add(try obfs4Line(7, iatMode: 0))
        #expect(first.change == .added)
        #expect(try configuration.add(try obfs4Line(7, iatMode: 0)) == .init(id: first.id, change: .unchanged))
        try configuration.setEnabled(false, for: first.id)
        let updated = try configuration.add(try obfs4Line(7, iatMode: 1))
        #expect(updated == .init(id: first.id, change: .updated))
        #expect(configuration.bridges.count == 1)
        #expect(configuration.bridges[0].isEnabled == false)
        #expect(configuration.bridges[0].line.arguments["iat-mode"] == "1")
        #expect(try configuration.add(try obfs4Line(8)).change == .added)
        #expect(configuration.bridges.count == 2)
    }

    @Test func enableDisableRemoveByID() throws {
        var configuration = BridgeConfiguration()
        let a = try configuration.add(try obfs4Line(1)).id
        let b = try configuration.add(try BridgeLine(validating: "snowflake 192.0.2.3:80 url=https://b.example/")).id
        #expect(a != b)
        try configuration.setEnabled(false, for: a)
        #expect(configuration.enabledBridges().map(\.id) == [b])
        #expect(configuration.enabledBridges(of: .obfs4).isEmpty)
        try configuration.remove(b)
        #expect(configuration.bridges.map(\.id) == [a])
        do {
            try configuration.remove(b)
            Issue.record("removed twice")
        } catch {
            #expect(error.code == .unknownBridgeID)
            #expect(error.message == "there is no bridge with the ID \(b)")
        }
    }

    @Test func capOf64BridgesHasAClearMessage() throws {
        var configuration = BridgeConfiguration()
        for index in 1...64 { try configuration.add(try obfs4Line(index)) }
        let sixtyFifth = try obfs4Line(65)
        do {
            try configuration.add(sixtyFifth)
            Issue.record("accepted a 65th bridge")
        } catch {
            #expect(error.code == .tooManyBridges && error.kind == .limit)
            #expect(error.message == "the bridge list is full (64 bridges); remove some before adding more")
        }
        // Re-adding an existing bridge is still fine at the cap.
        #expect(try configuration.add(try obfs4Line(64)).change == .unchanged)
    }

    @Test(arguments: ["{\"version\": 1, \"bridges\": [], \"torEnabled\": 0}",
                      "{\"version\": 1, \"bridges\": [], \"torEnabled\": \"no\"}",
                      "{\"version\": 1, \"bridges\": [], \"torEnabled\": null}",
                      "{\"version\": 1, \"bridges\": []}"])
    func torPreferenceReadsAsOnUnlessAStoredFalse(json: String) throws {
        let temporary = TemporaryDirectory()
        try json.write(toFile: temporary.path + "/bridges.json", atomically: false, encoding: .utf8)
        #expect(try BridgeStore(directory: temporary.path).load().torEnabled == true)
    }

    @Test func storedFalseReadsAsOff() throws {
        let temporary = TemporaryDirectory()
        try "{\"version\": 1, \"bridges\": [], \"torEnabled\": false}".write(toFile: temporary.path + "/bridges.json", atomically: false, encoding: .utf8)
        #expect(try BridgeStore(directory: temporary.path).load().torEnabled == false)
    }

    @Test(arguments: [
        ("{not json", "it is not a JSON object"),
        ("[]", "it is not a JSON object"),
        ("{\"bridges\": []}", "it has no valid \"version\""),
        ("{\"version\": 1}", "\"bridges\" is missing"),
        ("{\"version\": 1, \"bridges\": [{\"id\": \"a1b2c3\", \"line\": \"obfs4 198.51.100.7:443\", \"enabled\": true}]}",
         "bridge a1b2c3 does not parse (an obfs4 bridge needs cert= (or the older node-id= and public-key=))"),
        ("{\"version\": 1, \"bridges\": [{\"id\": \"zz\", \"line\": \"192.0.2.1:443\", \"enabled\": true}]}",
         "bridge 1 has a missing, malformed or repeated ID"),
        ("{\"version\": 1, \"bridges\": [{\"id\": \"a1b2c3\", \"line\": \"192.0.2.1:443\", \"enabled\": \"yes\"}]}",
         "\"bridges\" [1] \"enabled\" has the wrong type"),
    ])
    func corruptFilesAreNeverOverwritten(content: String, reason: String) throws {
        let temporary = TemporaryDirectory()
        let store = try BridgeStore(directory: temporary.path)
        try content.write(toFile: store.filePath, atomically: false, encoding: .utf8)
        let expected = "\(store.filePath) is not a valid Postern configuration (\(reason)); it was left untouched, move it aside to start afresh"
        for attempt in 0..<2 {
            do {
                if attempt == 0 { _ = try store.load() } else { try store.update { try $0.add(try obfs4Line(1)) } }
                Issue.record("a corrupt file was accepted")
            } catch let error as BridgeConfigError {
                #expect(error.code == .storeCorrupt && error.kind == .storage)
                #expect(error.message == expected)
                #expect(!error.message.contains("198.51.100.7"))
            }
        }
        #expect(try String(contentsOfFile: store.filePath, encoding: .utf8) == content)
    }

    @Test func newerVersionIsNeverOverwritten() throws {
        let temporary = TemporaryDirectory()
        let store = try BridgeStore(directory: temporary.path)
        let content = "{\"version\": 2, \"bridges\": {\"new\": \"shape\"}}"
        try content.write(toFile: store.filePath, atomically: false, encoding: .utf8)
        do {
            try store.update { $0.torEnabled = false }
            Issue.record("overwrote a newer file")
        } catch let error as BridgeConfigError {
            #expect(error.code == .storeNewerVersion)
            #expect(error.message == "\(store.filePath) was written by a newer Postern (format version 2; this one understands 1); it was left untouched")
        }
        #expect(try String(contentsOfFile: store.filePath, encoding: .utf8) == content)
    }

    @Test func failingUpdateBodyWritesNothing() throws {
        let temporary = TemporaryDirectory()
        let store = try BridgeStore(directory: temporary.path)
        try store.update { try $0.add(try obfs4Line(1)) }
        let before = try Data(contentsOf: URL(fileURLWithPath: store.filePath))
        #expect(throws: BridgeConfigError.self) {
            try store.update { configuration in
                try configuration.add(try obfs4Line(2))
                try configuration.remove(try BridgeID(validating: "ffffff"))
            }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: store.filePath)) == before)
    }

    @Test func staleTemporaryFilesAreCleanedUnderTheLock() throws {
        let temporary = TemporaryDirectory()
        let store = try BridgeStore(directory: temporary.path)
        let stale = temporary.path + "/bridges.json.tmp-999999-1"
        try "half a fi".write(toFile: stale, atomically: false, encoding: .utf8)
        try store.update { $0.torEnabled = false }
        #expect(!FileManager.default.fileExists(atPath: stale))
    }

    /// A link to a file of the user's, or a hard link to it, that appears at the exact name the
    /// writer then uses for its temporary file (after the stale files were cleaned) is not written
    /// through: the update fails and the file it leads to is unchanged.
    @Test(arguments: [false, true])
    func aLinkPlantedAtTheTemporaryNameIsNotWrittenThrough(hardLink: Bool) throws {
        let temporary = TemporaryDirectory()
        let victim = temporary.path + "/victim"
        try "precious\n".write(toFile: victim, atomically: false, encoding: .utf8)
        var store = try BridgeStore(directory: temporary.path)
        let directory = temporary.path
        store.temporaryName = { prefix in
            let name = prefix + "planted"
            _ = hardLink ? link(victim, directory + "/" + name) : symlink(victim, directory + "/" + name)
            return name
        }
        let error = #expect(throws: BridgeConfigError.self) { try store.update { $0.torEnabled = false } }
        #expect(error?.code == .storeWriteFailed)
        #expect(error?.message.contains("cannot create a temporary file in \(directory): File exists") == true, "\(String(describing: error))")
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n")
        #expect(!FileManager.default.fileExists(atPath: store.filePath))
    }

    @Test func concurrentUpdatesInOneProcessLoseNothing() async throws {
        let temporary = TemporaryDirectory()
        let store = try BridgeStore(directory: temporary.path)
        let failures = await withTaskGroup(of: Int.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    var failures = 0
                    for index in 1...8 {
                        do { try store.update { try $0.add(try obfs4Line(worker * 10 + index)) } } catch { failures += 1 }
                    }
                    return failures
                }
            }
            return await group.reduce(0, +)
        }
        #expect(failures == 0)
        #expect(try store.load().bridges.count == 32)
    }

    @Test func concurrentProcessesLoseNothing() throws {
        let temporary = TemporaryDirectory()
        let processes = try (0..<4).map { tag in
            try launchHelper(["add", temporary.path, String(tag), "10"])
        }
        for process in processes {
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
        }
        let configuration = try BridgeStore(directory: temporary.path).load()
        #expect(configuration.bridges.count == 40)
        #expect(Set(configuration.bridges.map(\.line.identity)).count == 40)
    }
}

/// The helper executable built next to the test bundle.
func helperExecutable() throws -> URL {
    let candidates = [
        Bundle.main.executableURL?.deletingLastPathComponent(),
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
        Bundle.module.bundleURL.deletingLastPathComponent(),
    ].compactMap { $0 }.map { $0.appendingPathComponent("BridgeStoreCrashWriter") }
    guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
        throw BridgeConfigError(code: .init("test-helper-missing"), kind: .storage,
                                message: "BridgeStoreCrashWriter not found next to the tests: \(candidates.map(\.path))")
    }
    return found
}

func launchHelper(_ arguments: [String], output: Pipe? = nil) throws -> Process {
    let process = Process()
    process.executableURL = try helperExecutable()
    process.arguments = arguments
    if let output { process.standardOutput = output }
    try process.run()
    return process
}
