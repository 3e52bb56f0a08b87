import Foundation
import PosternLinkSpec
import Testing
@testable import BridgeConfig
#if canImport(Glibc)
import Glibc
#endif

/// Must match `generationConfiguration` in Tests/BridgeStoreCrashWriter/main.swift.
func generationConfiguration(_ generation: Int) throws -> BridgeConfiguration {
    var configuration = BridgeConfiguration()
    for index in 0..<(1 + generation % 20) {
        let digit = String(index % 16, radix: 16).uppercased()
        let line = try BridgeLine(validating: "198.51.100.\(index + 1):\(1024 + generation % 60000) \(String(repeating: digit, count: 40))")
        try configuration.add(line)
    }
    configuration.transport = generation % 2 == 0 ? .auto : .direct
    configuration.torEnabled = generation % 3 != 0
    for relay in 0..<(generation % 9) { try configuration.addRelay("relay\(relay).example.net") }
    return configuration
}

/// Everything but the random IDs.
func content(_ configuration: BridgeConfiguration) -> [String] {
    configuration.bridges.map { "\($0.line) \($0.isEnabled)" }
        + ["transport \(configuration.transport)", "tor \(configuration.torEnabled)"]
        + configuration.customRelays.map(\.rawValue)
}

@Suite("Store crash safety")
struct CrashSafetyTests {
    /// 200 times: start a writer that rewrites the store in a loop, let it commit at least once,
    /// SIGKILL it after a random delay, and check the file is exactly the last committed
    /// generation or the one being written, never anything else.
    @Test func killedWritersLeaveOldOrNewContent() throws {
        let temporary = TemporaryDirectory()
        let store = try BridgeStore(directory: temporary.path)
        var generation = 0
        var sawInFlightCommit = 0
        var sawTemporaryFile = 0
        var totalCommits = 0
        var generator = SystemRandomNumberGenerator()

        for _ in 0..<200 {
            let pipe = Pipe()
            let process = try launchHelper(["write-loop", temporary.path, String(generation)], output: pipe)
            // Wait for the first commit so the kill lands among writes, not during start-up.
            var received = Data()
            while !String(decoding: received, as: UTF8.self).contains("\n") {
                let chunk = pipe.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                received.append(chunk)
            }
            usleep(UInt32.random(in: 0...4000, using: &generator))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal)
            received.append(pipe.fileHandleForReading.readDataToEndOfFile())

            let committed = String(decoding: received, as: UTF8.self)
                .split(separator: "\n").compactMap { $0.hasPrefix("committed ") ? Int($0.dropFirst(10)) : nil }
            let lastCommitted = try #require(committed.last, "the writer never committed")
            totalCommits += committed.count
            if (try FileManager.default.contentsOfDirectory(atPath: temporary.path)).contains(where: { $0.contains(".tmp-") }) {
                sawTemporaryFile += 1
            }

            let loaded = try store.load()
            let old = content(try generationConfiguration(lastCommitted))
            let new = content(try generationConfiguration(lastCommitted + 1))
            let found = content(loaded)
            #expect(found == old || found == new, "store holds neither generation \(lastCommitted) nor \(lastCommitted + 1)")
            if found == new { sawInFlightCommit += 1 }
            #expect(fileMode(store.filePath) == 0o600)
            generation = (found == new ? lastCommitted + 1 : lastCommitted) + 1
        }
        // Not assertions on chance, just evidence in the log that kills landed at varied points.
        print("crash-safety: 200 kills, \(totalCommits) commits, \(sawInFlightCommit) kills after rename but before the commit was reported, \(sawTemporaryFile) kills left a temporary file")
        #expect(totalCommits >= 200)
    }
}
