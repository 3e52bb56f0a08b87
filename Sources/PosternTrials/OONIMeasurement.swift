import Foundation

/// A trial written in the shape of OONI's tor experiments (`vanilla_tor` for direct and vanilla
/// bridges, `torsf` for snowflake; other transports use `vanilla_tor`'s keys under their own
/// `transportName`): OONI's measurement envelope (data format 0.2.0) around `testKeys` with the
/// bootstrap time, failure, last progress and its tag and summary, and the transport. So trials can
/// be read by tools made for OONI data, next to OONI's own tor measurements.
///
/// Not OONI's own output: `software_name` is postern, `report_id` is empty (never submitted), and
/// the probe's network is not looked up. `probe_asn` and `probe_cc` are what the user gave, else
/// OONI's values for "unknown" (AS0, ZZ); `probe_ip` is always 127.0.0.1, as OONI writes it when
/// the address is not to be shared. The `tor_logs` are the bootstrap milestones the child reported
/// (tor's notice lines name bridges; these never do). Schema: Tests/PosternTrialsTests/Schemas/.
public struct OONIMeasurement: Encodable, Sendable {
    public struct Annotations: Encodable, Sendable {
        public var engineName = "postern"
        public var engineVersion: String
        public var platform = "linux"
        /// The run's `--network` label, when there was one.
        public var network: String?
        /// The A/B run and trial this measurement came from.
        public var posternAbRun: String
        public var posternAbTrial: Int
        public var posternAbRoute: String

        enum CodingKeys: String, CodingKey {
            case engineName = "engine_name", engineVersion = "engine_version", platform, network
            case posternAbRun = "postern_ab_run", posternAbTrial = "postern_ab_trial", posternAbRoute = "postern_ab_route"
        }
    }

    public struct TestKeys: Sendable {
        /// Seconds to 100 %; 0 when bootstrap did not complete (as OONI writes it).
        public var bootstrapTime: Double
        /// null on success, else an OONI-style failure string.
        public var failure: String?
        /// vanilla_tor's `success`.
        public var success: Bool?
        /// vanilla_tor's `timeout`, seconds.
        public var timeout: Double?
        public var torLogs: [String]
        public var torProgress: Int
        public var torProgressTag: String
        public var torProgressSummary: String
        public var torVersion: String
        public var transportName: String
        /// torsf's keys.
        public var persistentDatadir: Bool?
        public var rendezvousMethod: String?

    }

    public var annotations: Annotations
    public var dataFormatVersion = "0.2.0"
    /// Always null: these experiments take no input.
    public var input: String?
    public var measurementStartTime: String
    public var probeAsn: String
    public var probeCc: String
    public var probeIp = "127.0.0.1"
    public var probeNetworkName = ""
    public var reportId = ""
    public var resolverAsn = "AS0"
    public var resolverIp = ""
    public var resolverNetworkName = ""
    public var softwareName = "postern"
    public var softwareVersion: String
    public var testKeys: TestKeys
    public var testName: String
    public var testRuntime: Double
    public var testStartTime: String
    public var testVersion: String

    /// Where the probe was, as the user says (nothing is looked up).
    public struct Probe: Sendable {
        public var asn: String?
        public var countryCode: String?
        public init(asn: String? = nil, countryCode: String? = nil) {
            self.asn = asn
            self.countryCode = countryCode
        }

        /// "AS1234" (or "1234"), and two letters.
        public static func validated(asn: String?, countryCode: String?) throws(TrialError) -> Probe {
            var probe = Probe()
            if let asn {
                let digits = asn.uppercased().hasPrefix("AS") ? String(asn.dropFirst(2)) : asn
                guard !digits.isEmpty, digits.count <= 10, digits.allSatisfy(\.isASCII), let number = UInt32(digits) else {
                    throw TrialError(.invalidInput, kind: .usage, "--probe-asn must be an AS number such as AS12345, not '\(asn.prefix(32))'")
                }
                probe.asn = "AS\(number)"
            }
            if let countryCode {
                guard countryCode.count == 2, countryCode.allSatisfy({ $0.isASCII && $0.isLetter }) else {
                    throw TrialError(.invalidInput, kind: .usage, "--probe-cc must be a two-letter country code, not '\(countryCode.prefix(32))'")
                }
                probe.countryCode = countryCode.uppercased()
            }
            return probe
        }
    }

    enum CodingKeys: String, CodingKey {
        case annotations, data_format_version, input, measurement_start_time, probe_asn, probe_cc, probe_ip, probe_network_name,
             report_id, resolver_asn, resolver_ip, resolver_network_name, software_name, software_version, test_keys, test_name,
             test_runtime, test_start_time, test_version
    }

    enum TestKeyNames: String, CodingKey {
        case bootstrap_time, failure, success, timeout, tor_logs, tor_progress, tor_progress_tag, tor_progress_summary, tor_version,
             transport_name, persistent_datadir, rendezvous_method, error
    }

    /// OONI writes `input` and `failure` as null rather than leaving them out.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(annotations, forKey: .annotations)
        try container.encode(dataFormatVersion, forKey: .data_format_version)
        try container.encodeNil(forKey: .input)
        try container.encode(measurementStartTime, forKey: .measurement_start_time)
        try container.encode(probeAsn, forKey: .probe_asn)
        try container.encode(probeCc, forKey: .probe_cc)
        try container.encode(probeIp, forKey: .probe_ip)
        try container.encode(probeNetworkName, forKey: .probe_network_name)
        try container.encode(reportId, forKey: .report_id)
        try container.encode(resolverAsn, forKey: .resolver_asn)
        try container.encode(resolverIp, forKey: .resolver_ip)
        try container.encode(resolverNetworkName, forKey: .resolver_network_name)
        try container.encode(softwareName, forKey: .software_name)
        try container.encode(softwareVersion, forKey: .software_version)
        var keys = container.nestedContainer(keyedBy: TestKeyNames.self, forKey: .test_keys)
        try keys.encode(testKeys.bootstrapTime, forKey: .bootstrap_time)
        if let failure = testKeys.failure { try keys.encode(failure, forKey: .failure) } else { try keys.encodeNil(forKey: .failure) }
        if let success = testKeys.success {
            try keys.encode(success, forKey: .success)
            try keys.encodeNil(forKey: .error)
        }
        try keys.encodeIfPresent(testKeys.timeout, forKey: .timeout)
        try keys.encode(testKeys.torLogs, forKey: .tor_logs)
        try keys.encode(testKeys.torProgress, forKey: .tor_progress)
        try keys.encode(testKeys.torProgressTag, forKey: .tor_progress_tag)
        try keys.encode(testKeys.torProgressSummary, forKey: .tor_progress_summary)
        try keys.encode(testKeys.torVersion, forKey: .tor_version)
        try keys.encode(testKeys.transportName, forKey: .transport_name)
        try keys.encodeIfPresent(testKeys.persistentDatadir, forKey: .persistent_datadir)
        try keys.encodeIfPresent(testKeys.rendezvousMethod, forKey: .rendezvous_method)
        try container.encode(testName, forKey: .test_name)
        try container.encode(testRuntime, forKey: .test_runtime)
        try container.encode(testStartTime, forKey: .test_start_time)
        try container.encode(testVersion, forKey: .test_version)
    }

    /// OONI's time format: UTC, "2006-01-02 15:04:05".
    static func ooniTime(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: date)
    }

    /// One measurement per trial of `result` (harness errors are not measurements of the network).
    public static func measurements(of result: ABResult, probe: Probe, softwareVersion: String, torVersion: String,
                                    timeouts: [String: Double]) -> [OONIMeasurement] {
        result.trials.map { trial in
            let transport = transportName(route: trial.route)
            let isSnowflake = transport == "snowflake"
            let last = trial.milestones.last
            let failure: String? = trial.reachedBootstrap ? nil : failureString(trial.failure)
            let logs = trial.milestones.map { milestone in
                "\(ooniTime(trial.startedAt.addingTimeInterval(milestone.seconds))) [notice] Bootstrapped \(milestone.progress)% (\(milestone.tag))"
            }
            let keys = TestKeys(bootstrapTime: trial.bootstrapSeconds ?? 0, failure: failure,
                                success: isSnowflake ? nil : trial.reachedBootstrap,
                                timeout: isSnowflake ? nil : timeouts[trial.route],
                                torLogs: logs, torProgress: last?.progress ?? 0, torProgressTag: last?.tag ?? "",
                                torProgressSummary: summary(of: last?.tag), torVersion: torVersion, transportName: transport,
                                persistentDatadir: isSnowflake ? trial.warm : nil,
                                rendezvousMethod: isSnowflake ? "domain_fronting" : nil)
            let runtime = trial.bootstrapSeconds ?? (trial.milestones.last?.seconds ?? 0)
            return OONIMeasurement(annotations: Annotations(engineVersion: softwareVersion, network: result.network,
                                                            posternAbRun: result.id, posternAbTrial: trial.index,
                                                            posternAbRoute: trial.route),
                                   measurementStartTime: ooniTime(trial.startedAt), probeAsn: probe.asn ?? "AS0",
                                   probeCc: probe.countryCode ?? "ZZ", softwareVersion: softwareVersion, testKeys: keys,
                                   testName: isSnowflake ? "torsf" : "vanilla_tor", testRuntime: runtime,
                                   testStartTime: ooniTime(result.startedAt), testVersion: isSnowflake ? "0.4.0" : "0.2.0")
        }
    }

    /// "vanilla" for direct (OONI's vanilla_tor) and vanilla bridges, else the transport's name
    /// (plugin:NAME is NAME).
    static func transportName(route: String) -> String {
        if route == "direct" { return "vanilla" }
        if route.hasPrefix("plugin:") { return String(route.dropFirst("plugin:".count)) }
        return route
    }

    /// OONI's failure strings (df-007) where one fits: a bootstrap that ran out of time is
    /// `generic_timeout_error`; anything else is `unknown_failure: reason`.
    static func failureString(_ failure: ABResult.Failure?) -> String {
        guard let failure else { return "unknown_failure: no result" }
        if failure.reason.hasPrefix("no 100% within") { return "generic_timeout_error" }
        return "unknown_failure: \(failure.reason)"
    }

    /// tor's summary of its bootstrap tags (control-spec "Bootstrap phases").
    static func summary(of tag: String?) -> String {
        let summaries = [
            "starting": "Starting", "conn_pt": "Connecting to pluggable transport", "conn_done_pt": "Connected to pluggable transport",
            "conn_proxy": "Connecting to proxy", "conn_done_proxy": "Connected to proxy", "conn": "Connecting to a relay",
            "conn_done": "Connected to a relay", "handshake": "Handshaking with a relay", "handshake_done": "Handshake with a relay done",
            "onehop_create": "Establishing an encrypted directory connection", "requesting_status": "Asking for networkstatus consensus",
            "loading_status": "Loading networkstatus consensus", "loading_keys": "Loading authority key certs",
            "requesting_descriptors": "Asking for relay descriptors", "loading_descriptors": "Loading relay descriptors",
            "enough_dirinfo": "Loaded enough directory info to build circuits",
            "ap_conn_pt": "Connecting to pluggable transport to build circuits",
            "ap_conn_done_pt": "Connected to pluggable transport to build circuits",
            "ap_conn_proxy": "Connecting to proxy to build circuits", "ap_conn_done_proxy": "Connected to proxy to build circuits",
            "ap_conn": "Connecting to a relay to build circuits", "ap_conn_done": "Connected to a relay to build circuits",
            "ap_handshake": "Finishing handshake with a relay to build circuits",
            "ap_handshake_done": "Handshake finished with a relay to build circuits", "circuit_create": "Establishing a Tor circuit",
            "done": "Done",
        ]
        guard let tag else { return "" }
        return summaries[tag] ?? tag
    }

    /// The measurements as JSON Lines (one measurement a line, OONI's report-file layout).
    public static func jsonLines(_ measurements: [OONIMeasurement]) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var data = Data()
        for measurement in measurements {
            data += try encoder.encode(measurement)
            data.append(0x0A)
        }
        return data
    }
}
