import Foundation

/// The judge's log and counters (scripts/testbed-censors starts it; it appends to the log and
/// rewrites the counters' JSON once a second and on every decision).
struct FingerprintJudgeRecords: Sendable {
    let log: URL
    let stats: URL

    init(_ bed: TestBed) {
        log = URL(fileURLWithPath: bed.directory).appendingPathComponent("logs/censor-fingerprint.out")
        stats = URL(fileURLWithPath: bed.directory).appendingPathComponent("fingerprint.ready.stats")
    }

    /// The log's size now: `lines(after:)` reads only what was written since.
    var logSize: Int { (try? Data(contentsOf: log).count) ?? 0 }

    func lines(after offset: Int) -> [String] {
        guard let data = try? Data(contentsOf: log), data.count >= offset else { return [] }
        return String(decoding: data[offset...], as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// Flows blocked by `rule` since the judge started.
    func blocked(by rule: String) -> Int {
        guard let data = try? Data(contentsOf: stats),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let blocked = object["blocked"] as? [String: Any] else { return 0 }
        return blocked[rule] as? Int ?? 0
    }
}
