import PosternTestSupport
import Foundation
import Testing
@testable import PosternTor

/// The shared private Tor network (scripts/testbed), started once by `make test`; its facts come
/// from the env file named by POSTERN_TESTBED_ENV. Tests that use it run inside its namespace.
struct TestBed: Sendable {
    let values: [String: String]

    static let shared: TestBed? = {
        guard let path = ProcessInfo.processInfo.environment["POSTERN_TESTBED_ENV"],
              FileManager.default.fileExists(atPath: path) else { return nil }
        // The file is written with bash's %q quoting: let bash read it.
        guard let result = try? ProcessRunner.runBlocking(URL(fileURLWithPath: "/bin/bash"),
                                                  ["-c", "set -a; source \"$1\"; env -0", "_", path]),
              result.status == 0 else { return nil }
        var values: [String: String] = [:]
        for entry in result.stdout.split(separator: "\0") where entry.hasPrefix("TB_") {
            guard let equals = entry.firstIndex(of: "=") else { continue }
            values[String(entry[..<equals])] = String(entry[entry.index(after: equals)...])
        }
        return TestBed(values: values)
    }()

    /// True in CI or when the test bed is configured: tests must then run, not skip.
    static var isRequired: Bool { ProcessInfo.processInfo.environment["CI"] != nil || shared != nil }

    subscript(key: String) -> String {
        guard let value = values[key] else {
            Issue.record("test bed env has no \(key)")
            return ""
        }
        return value
    }

    var directory: String { self["TB_DIR"] }

    /// The page URL by host name when the test bed provides one (remote DNS at the exit).
    var pageURL: String { values["TB_HTTP_NAME_URL"] ?? self["TB_HTTP_URL"] }

    func clientOptions() throws -> [TorOption] {
        try TorOption.parseLines(String(contentsOfFile: self["TB_CLIENT_TORRC"], encoding: .utf8))
    }

    func setCensor(_ scenario: String, options: [String] = []) throws {
        let result = try ProcessRunner.runBlocking(Self.script, ["censor", scenario, "--dir", directory] + options)
        #expect(result.status == 0, "censor \(scenario): \(result.stderr)")
    }

    /// One server ip:port's counts in `censor-stats`: the client connections the censor saw
    /// (first SYNs) and how many of them it blocked.
    struct CensorPeerCount: Sendable {
        let peer: String
        let name: String
        let connections: Int
        let blocked: Int
    }

    /// `scripts/testbed censor-stats --json`: per ip:port counts since the censor was set (or the
    /// last reset), and the blocked connections in all.
    func censorStats() throws -> (peers: [CensorPeerCount], blocked: Int) {
        let result = try ProcessRunner.runBlocking(Self.script, ["censor-stats", "--json", "--dir", directory])
        try #require(result.status == 0, "censor-stats: \(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "censor-stats: \(result.stdout)")
        let peers = (json["peers"] as? [[String: Any]] ?? []).map {
            CensorPeerCount(peer: $0["peer"] as? String ?? "", name: $0["name"] as? String ?? "",
                            connections: $0["connections"] as? Int ?? 0, blocked: $0["blocked"] as? Int ?? 0)
        }
        return (peers, try #require(json["blocked_total"] as? Int, "censor-stats: \(result.stdout)"))
    }

    /// The parts of a bridge line that must never reach a log: its address (with and without the
    /// port), fingerprint and long argument values such as the obfs4 cert.
    static func bridgeSecrets(_ line: String) -> [String] {
        let words = line.split(separator: " ").map(String.init)
        var secrets: [String] = []
        for word in words {
            if word.contains(":"), let host = word.split(separator: ":").first { secrets += [word, String(host)] }
            if word.count == 40, word.allSatisfy(\.isHexDigit) { secrets.append(word) }
            if let equals = word.firstIndex(of: "="), word.distance(from: equals, to: word.endIndex) > 20 {
                secrets.append(String(word[word.index(after: equals)...]))
            }
        }
        return secrets
    }

    /// A stock Debian tor client of the test bed that uses `postern pt-client` as its managed proxy
    /// for `transport`, with `bridge` as its only bridge. Stop it with `stop()` (SIGKILL: children
    /// of the test process inherit its blocked signal mask, so SIGTERM may never be delivered).
    final class StockTorClient: Sendable {
        let dataDirectory: URL
        let socks: String
        private let process: Process
        private let pid: Int32

        /// `environment`: entries added to the test process's environment for tor (and so for the
        /// managed proxy it starts), e.g. SSL_CERT_FILE for the test bed's CA.
        init(bed: TestBed, transport: String, bridge: String, socksPort: UInt16, dataDirectory: URL,
             environment: [String: String] = [:]) throws {
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: dataDirectory.path)
            var torrc = try String(contentsOfFile: bed["TB_CLIENT_TORRC"], encoding: .utf8)
            torrc += """

            DataDirectory \(dataDirectory.path)
            SocksPort 127.0.0.1:\(socksPort)
            Log notice file \(dataDirectory.path)/tor.log
            GeoIPFile ""
            GeoIPv6File ""
            UseBridges 1
            Bridge \(bridge)
            ClientTransportPlugin \(transport) exec \(ProcessRunner.postern.path) pt-client

            """
            let torrcFile = dataDirectory.appendingPathComponent("torrc")
            try torrc.write(to: torrcFile, atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/tor")
            process.arguments = ["-f", torrcFile.path, "--quiet"]
            if !environment.isEmpty {
                process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            }
            try process.run()
            self.process = process
            pid = process.processIdentifier
            self.dataDirectory = dataDirectory
            socks = "127.0.0.1:\(socksPort)"
        }

        var log: String { (try? String(contentsOf: dataDirectory.appendingPathComponent("tor.log"), encoding: .utf8)) ?? "" }

        /// Waits for "Bootstrapped 100%" in tor's log; false after `timeout`.
        func waitForBootstrap(timeout: Duration) async throws -> Bool {
            let started = ContinuousClock.now
            while ContinuousClock.now - started < timeout {
                if log.contains("Bootstrapped 100%") { return true }
                try await Task.sleep(for: .milliseconds(500))
            }
            return false
        }

        /// tor gives a managed proxy a state directory: proof that it ran `postern pt-client`.
        var launchedManagedProxy: Bool {
            FileManager.default.fileExists(atPath: dataDirectory.appendingPathComponent("pt_state").path)
        }

        func stop() {
            kill(pid, SIGKILL)
            process.waitUntilExit()
        }
    }

    static var script: URL { ProcessRunner.packageRoot.appendingPathComponent("scripts/testbed") }

    /// Fetches `url` through a SOCKS5 proxy with remote DNS (curl --socks5-hostname).
    static func fetch(_ url: String, socks: String, timeout: Int = 60, isolation: String? = nil) throws -> ProcessResult {
        var arguments = ["--silent", "--show-error", "--max-time", "\(timeout)", "--socks5-hostname", socks]
        if let isolation { arguments += ["--proxy-user", "\(isolation):x"] }
        return try ProcessRunner.runBlocking(URL(fileURLWithPath: "/usr/bin/curl"), arguments + [url])
    }

    static func temporaryDirectory(_ name: String) -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("postern-\(name)-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
