import BridgeConfig
import Foundation
import Testing
@testable import PosternRuntime

/// `postern bridges test`'s report without the CLI: the table's columns and cells, the summary,
/// the JSON keys.
@Suite struct BridgeHealthReportTests {
    static func health(_ id: String, _ transport: String, tcp: BridgeHealth.Step, tls: BridgeHealth.Step? = nil,
                       handshake: BridgeHealth.Step, bootstrap: BridgeHealth.Step? = nil, reason: String? = nil) -> BridgeHealth {
        BridgeHealth(id: id, transport: transport, bridge: "\(transport) [scrubbed]", tcp: tcp, tls: tls, upgrade: nil, handshake: handshake,
                     bootstrap: bootstrap, alive: reason == nil, reason: reason)
    }

    static let ok = BridgeHealth.Step(result: .ok, milliseconds: 12.4, detail: "connected")
    static let failed = BridgeHealth.Step(result: .failed, milliseconds: 3, detail: "refused")
    static let skipped = BridgeHealth.Step(result: .skipped, detail: "")

    @Test func twoBridgesOneDeadWithoutTLSColumn() throws {
        let report = BridgeHealthReport([Self.health("a1b2c3", "obfs4", tcp: Self.ok, handshake: BridgeHealth.Step(result: .ok, detail: "")),
                                         Self.health("d4e5f6", "obfs4", tcp: Self.failed, handshake: Self.skipped, reason: "refused")],
                                        elapsed: .milliseconds(1249), bootstrapped: false, policy: .safe)
        #expect(report.alive == 1 && report.dead == 1 && report.seconds == 1.249 && report.scrubbed)
        #expect(report.text == """
            ID      TRANSPORT  TCP       HANDSHAKE  STATUS           BRIDGE
            a1b2c3  obfs4      ok 12 ms  ok         alive            obfs4 [scrubbed]
            d4e5f6  obfs4      FAILED    skipped    FAILED: refused  obfs4 [scrubbed]
            2 bridges tested in 1.2 s: 1 alive, 1 failed
            """)
        let object = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(report)) as? [String: Any])
        #expect(Set(object.keys) == ["bridges", "alive", "dead", "seconds", "scrubbed"])
        #expect((object["bridges"] as? [[String: Any]])?.map { $0["id"] as? String } == ["a1b2c3", "d4e5f6"])
    }

    /// A webtunnel result adds the TLS column (a "-" for the others); a bootstrap adds its own.
    @Test func tlsAndBootstrapColumnsWhenTheyApply() {
        let report = BridgeHealthReport([Self.health("builtin-obfs4-1", "obfs4", tcp: Self.ok, handshake: Self.ok, bootstrap: Self.failed,
                                                     reason: "bootstrap failed: refused"),
                                         Self.health("a1b2c3", "webtunnel", tcp: Self.ok, tls: Self.ok, handshake: Self.ok, bootstrap: Self.ok)],
                                        elapsed: .seconds(3), bootstrapped: true, policy: .unsafe)
        let lines = report.table.split(separator: "\n").map(String.init)
        #expect(lines[0] == "ID               TRANSPORT  TCP       TLS       HANDSHAKE  BOOTSTRAP  STATUS                             BRIDGE")
        #expect(lines[1] == "builtin-obfs4-1  obfs4      ok 12 ms  -         ok 12 ms   FAILED     FAILED: bootstrap failed: refused  obfs4 [scrubbed]")
        #expect(lines[2] == "a1b2c3           webtunnel  ok 12 ms  ok 12 ms  ok 12 ms   ok 12 ms   alive                              webtunnel [scrubbed]")
        #expect(report.summary == "2 bridges tested in 3.0 s: 1 alive, 1 failed" && !report.scrubbed)
    }

    /// A dnstt result adds RESOLVER and STREAM around HANDSHAKE (Noise's), "-" for the others;
    /// the JSON has `resolver` and `stream` only for dnstt.
    @Test func resolverAndStreamColumnsForDnstt() throws {
        var dnstt = Self.health("a1b2c3", "dnstt", tcp: Self.skipped, handshake: Self.failed, reason: "Noise handshake failed: x")
        dnstt.resolver = Self.ok
        dnstt.stream = Self.skipped
        let report = BridgeHealthReport([Self.health("d4e5f6", "obfs4", tcp: Self.ok, handshake: Self.ok), dnstt],
                                        elapsed: .seconds(5), bootstrapped: false, policy: .safe)
        let lines = report.table.split(separator: "\n").map(String.init)
        #expect(lines[0] == "ID      TRANSPORT  TCP       RESOLVER  HANDSHAKE  STREAM   STATUS                             BRIDGE")
        #expect(lines[1] == "d4e5f6  obfs4      ok 12 ms  -         ok 12 ms   -        alive                              obfs4 [scrubbed]")
        #expect(lines[2] == "a1b2c3  dnstt      skipped   ok 12 ms  FAILED     skipped  FAILED: Noise handshake failed: x  dnstt [scrubbed]")
        let object = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(report)) as? [String: Any])
        let bridges = try #require(object["bridges"] as? [[String: Any]])
        #expect(bridges[0]["resolver"] == nil && bridges[0]["stream"] == nil, "obfs4's JSON is unchanged")
        #expect((bridges[1]["resolver"] as? [String: Any])?["result"] as? String == "ok")
        #expect((bridges[1]["stream"] as? [String: Any])?["result"] as? String == "skipped")
    }

    @Test func cellsAndTheUntestableNote() {
        #expect(BridgeHealthReport.cell(nil) == "-")
        #expect(BridgeHealthReport.cell(BridgeHealth.Step(result: .ok, milliseconds: 0.6, detail: "")) == "ok 1 ms")
        #expect(BridgeHealthReport.cell(Self.skipped) == "skipped" && BridgeHealthReport.cell(Self.failed) == "FAILED")
        #expect(BridgeHealthReport.untestableNote(transport: "meek_lite", count: 1) == "1 built-in meek_lite bridge not tested: this build has no meek_lite client")
        #expect(BridgeHealthReport.untestableNote(transport: "meek_lite", count: 2).hasPrefix("2 built-in meek_lite bridges not tested"))
    }
}
