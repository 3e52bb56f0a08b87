import Foundation
import PosternTestSupport
import Testing
@testable import PosternTrials

/// `--ooni FILE`: each trial as an OONI tor measurement, validated against the schema under
/// Schemas/ by Debian's python3-jsonschema.
@Suite struct OONISchemaTests {
    static let schema = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Schemas/ooni-tor-measurement.schema.json")
    static let debianPython = URL(fileURLWithPath: "/usr/bin/python3")

    /// Validates every line of `file`; returns the validator's complaints (empty when all pass).
    static func validate(_ file: URL) async throws -> ProcessResult {
        let script = """
        import json, sys, jsonschema
        schema = json.load(open(sys.argv[1]))
        validator = jsonschema.Draft202012Validator(schema)
        bad = 0
        for number, line in enumerate(open(sys.argv[2]), 1):
            for error in validator.iter_errors(json.loads(line)):
                bad += 1
                print(f"line {number}: {error.json_path}: {error.message}")
        sys.exit(1 if bad else 0)
        """
        return try await ProcessRunner.run(debianPython, ["-c", script, schema.path, file.path])
    }

    @Test func measurementsMatchTheSchemaAndSayWhatHappened() async throws {
        let result = Fixtures.threeRoutes(network: "bed")
        let probe = try OONIMeasurement.Probe.validated(asn: "as64496", countryCode: "ir")
        let measurements = OONIMeasurement.measurements(of: result, probe: probe, softwareVersion: "0.1.0", torVersion: "0.4.9.11",
                                                        timeouts: ["obfs4": 120, "snowflake": 300, "direct": 20])
        #expect(measurements.count == 15, "one per trial")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("postern-ooni-\(UUID()).jsonl")
        defer { try? FileManager.default.removeItem(at: file) }
        try OONIMeasurement.jsonLines(measurements).write(to: file)
        let validation = try await Self.validate(file)
        #expect(validation.status == 0, "\(validation.stdout)\(validation.stderr)")

        let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n")
        let objects = try lines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        func keys(_ object: [String: Any]) -> [String: Any] { object["test_keys"] as? [String: Any] ?? [:] }
        let snowflake = try #require(objects.first { ($0["annotations"] as? [String: Any])?["postern_ab_route"] as? String == "snowflake" })
        #expect(snowflake["test_name"] as? String == "torsf" && keys(snowflake)["transport_name"] as? String == "snowflake")
        #expect(snowflake["probe_asn"] as? String == "AS64496" && snowflake["probe_cc"] as? String == "IR")
        #expect((keys(snowflake)["bootstrap_time"] as? Double ?? 0) > 8)
        #expect(keys(snowflake)["failure"] is NSNull && snowflake["input"] is NSNull)
        let direct = try #require(objects.first { ($0["annotations"] as? [String: Any])?["postern_ab_route"] as? String == "direct" })
        #expect(direct["test_name"] as? String == "vanilla_tor" && keys(direct)["transport_name"] as? String == "vanilla")
        #expect(keys(direct)["failure"] as? String == "generic_timeout_error" && keys(direct)["bootstrap_time"] as? Double == 0)
        #expect(keys(direct)["success"] as? Bool == false && keys(direct)["tor_progress"] as? Int == 10)
        #expect(keys(direct)["tor_progress_summary"] as? String == "Connected to a relay")
        let obfs4 = try #require(objects.first { ($0["annotations"] as? [String: Any])?["postern_ab_route"] as? String == "obfs4" })
        #expect(keys(obfs4)["tor_progress_tag"] as? String == "done" && keys(obfs4)["success"] as? Bool == true)
        #expect((keys(obfs4)["tor_logs"] as? [String])?.last?.hasSuffix("[notice] Bootstrapped 100% (done)") == true)
    }

    /// Without --probe-asn/--probe-cc the probe is unknown (OONI's AS0 and ZZ); bad values are refused.
    @Test func probeLocationIsOnlyWhatTheUserGives() async throws {
        let unknown = OONIMeasurement.measurements(of: Fixtures.threeRoutes(), probe: .init(), softwareVersion: "0.1.0", torVersion: "x",
                                                   timeouts: [:])
        #expect(unknown.allSatisfy { $0.probeAsn == "AS0" && $0.probeCc == "ZZ" && $0.probeIp == "127.0.0.1" })
        for (asn, cc) in [("ASx", "IR"), ("AS1", "IRN"), ("", "IR"), ("AS1", "1r")] {
            #expect(throws: TrialError.self) { _ = try OONIMeasurement.Probe.validated(asn: asn, countryCode: cc) }
        }
    }

    /// The schema is not vacuous: a measurement that breaks it is caught.
    @Test func theSchemaRejectsAMalformedMeasurement() async throws {
        let good = OONIMeasurement.measurements(of: Fixtures.threeRoutes(), probe: .init(), softwareVersion: "0.1.0", torVersion: "x",
                                                timeouts: ["obfs4": 120, "snowflake": 300, "direct": 20])[0]
        var object = try #require(try JSONSerialization.jsonObject(with: try OONIMeasurement.jsonLines([good])) as? [String: Any])
        object["probe_cc"] = "Iran"
        var keys = object["test_keys"] as? [String: Any] ?? [:]
        keys["bootstrap_time"] = 0
        object["test_keys"] = keys
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("postern-ooni-bad-\(UUID()).jsonl")
        defer { try? FileManager.default.removeItem(at: file) }
        try (try JSONSerialization.data(withJSONObject: object) + Data("\n".utf8)).write(to: file)
        let validation = try await Self.validate(file)
        #expect(validation.status == 1, "\(validation.stdout)")
        #expect(validation.stdout.contains("probe_cc") && validation.stdout.contains("bootstrap_time"), "\(validation.stdout)")
    }
}
