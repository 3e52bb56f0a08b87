import PosternTestSupport
import Foundation
import Testing

/// `postern bridges test` for dnstt (issue #23): under the bed's `shutdown` censor (only DNS to
/// the bed's unbound gets out), the three bed lines (doh, dot, udp) pass the resolver, Noise and
/// stream stages, while a line with a wrong pubkey reaches the resolver and fails at Noise: the
/// dnstt stand-in (Tests/Support/dnstt-testbed) acknowledges the handshake message and never
/// answers it. No resolver, domain or key appears in the output.
extension TestBedSuite {
    @Test func bridgesTestReportsDnsttStages() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let lines = Self.dnsttPaths.map { bed[$0] }
        try #require(lines.allSatisfy { $0.hasPrefix("dnstt ") }, "the test bed's dnstt stack is not up")
        let udp = lines[2]
        // Another placeholder address (the store keeps one line per transport and address) and a
        // key the server does not hold.
        let wrongKey = udp.split(separator: " ").map { word -> String in
            if word.hasPrefix("192.0.2.4:") { return "192.0.2.4:9" }
            if word.hasPrefix("pubkey=") { return "pubkey=" + String(repeating: "5a", count: 32) }
            return String(word)
        }.joined(separator: " ")
        try #require(wrongKey != udp)
        try bed.setCensor("shutdown")
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("dnstt-health")
        defer { try? FileManager.default.removeItem(at: config) }
        for line in lines + [wrongKey] {
            let add = try await ProcessRunner.run(ProcessRunner.postern, ["bridges", "add", "--config-dir", config.path, line])
            #expect(add.status == 0, "bridges add: \(add.stderr)")
        }
        let started = ContinuousClock.now
        let result = try await ProcessRunner.run(ProcessRunner.postern, ["bridges", "test", "--json", "--timeout", "5", "--config-dir", config.path],
                                                 environment: ProcessInfo.processInfo.environment.merging(["SSL_CERT_FILE": bed["TB_DNSTT_CA"]]) { $1 })
        print("bridges test (dnstt) in \(ContinuousClock.now - started):\n\(result.stdout)")
        #expect(result.status == 1, "the wrong key is dead: \(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let results = try #require(report["bridges"] as? [[String: Any]])
        try #require(results.count == 4, "\(results)")
        func step(_ health: [String: Any], _ key: String) -> (result: String?, detail: String?) {
            let step = health[key] as? [String: Any]
            return (step?["result"] as? String, step?["detail"] as? String)
        }
        for (health, kind) in zip(results.prefix(3), ["doh", "dot", "udp"]) {
            #expect(health["alive"] as? Bool == true, "\(kind): \(health)")
            #expect(step(health, "tcp").result == "skipped", "no TCP to the placeholder address: \(health)")
            for key in ["resolver", "handshake", "stream"] {
                #expect(step(health, key).result == "ok", "\(kind) \(key): \(health)")
            }
            #expect(step(health, "resolver").detail?.contains("over \(kind)") == true, "\(health)")
        }
        let dead = results[3]
        #expect(dead["alive"] as? Bool == false)
        #expect(step(dead, "resolver").result == "ok", "the resolver answered: \(dead)")
        #expect(step(dead, "handshake").result == "failed", "\(dead)")
        #expect(step(dead, "handshake").detail?.contains("acknowledged our Noise handshake message, but no Noise reply came") == true, "\(dead)")
        #expect(step(dead, "stream").result == "skipped", "\(dead)")
        #expect((dead["reason"] as? String)?.hasPrefix("Noise handshake failed") == true, "\(dead)")
        // The check has its own bound: 5 s for the handshake, with room for a loaded machine.
        #expect(ContinuousClock.now - started < .seconds(25))
        for line in lines + [wrongKey] {
            var secrets = TestBed.bridgeSecrets(line)
            for word in line.split(separator: " ") {
                for key in ["pubkey=", "domain=", "udp=", "dot=", "doh="] where word.hasPrefix(key) {
                    secrets.append(String(word.dropFirst(key.count)))
                }
            }
            for secret in secrets where !secret.isEmpty {
                #expect(!result.stdout.contains(secret) && !result.stderr.contains(secret), "bridge data in the output")
            }
        }
    }
}
