import Foundation
@testable import PosternTrials

/// Results made by hand, shaped like the ones a run writes.
enum Fixtures {
    static let start = Date(timeIntervalSince1970: 1_796_000_000)

    static func trial(_ index: Int, _ route: String, attempt: Int, bootstrap: Double?, probeFirstByte: Double? = nil,
                      throughput: Double? = nil, brokeAfter: Int? = nil) -> ABResult.Trial {
        var milestones = [ABResult.Milestone(progress: 0, tag: "starting", seconds: 0.1),
                          ABResult.Milestone(progress: 10, tag: "conn_done", seconds: 0.4)]
        if let bootstrap { milestones.append(ABResult.Milestone(progress: 100, tag: "done", seconds: bootstrap)) }
        var trial = ABResult.Trial(index: index, route: route, attempt: attempt, warm: false, succeeded: bootstrap != nil,
                                   firstByteSeconds: bootstrap == nil ? nil : 0.3, bootstrapSeconds: bootstrap, milestones: milestones,
                                   probeFirstByteSeconds: probeFirstByte, probeBytes: probeFirstByte == nil ? nil : 1 << 20,
                                   throughputBytesPerSecond: throughput, failure: nil, eventsFile: "trial-\(index)/events.jsonl",
                                   socksPort: bootstrap == nil ? nil : UInt16(40000 + index), startedAt: start.addingTimeInterval(Double(index)))
        if bootstrap == nil {
            trial.failure = .init(stage: .bootstrap, progress: 10, tag: "conn_done", reason: "no 100% within 20 s")
        }
        if let brokeAfter {
            trial.succeeded = false
            trial.throughputBytesPerSecond = nil
            trial.probeBytes = brokeAfter
            trial.failure = .init(stage: .afterBootstrap, progress: 100, tag: "done",
                                  reason: "the probe download failed: the download stopped after \(brokeAfter) of 1048576 bytes",
                                  probe: .broken, bodyBytes: brokeAfter)
        }
        return trial
    }

    /// obfs4 fast and always through; snowflake slower; direct blocked.
    static func threeRoutes(network: String? = nil, harnessErrors: [ABResult.HarnessError] = [], id: String = "20261201T100000Z-1") -> ABResult {
        var trials: [ABResult.Trial] = []
        var index = 1
        for attempt in 1...5 {
            trials.append(trial(index, "obfs4", attempt: attempt, bootstrap: 3.0 + Double(attempt) * 0.4,
                                probeFirstByte: 0.4 + Double(attempt) * 0.05, throughput: 600_000 + Double(attempt) * 100_000))
            index += 1
            trials.append(trial(index, "snowflake", attempt: attempt, bootstrap: 8.0 + Double(attempt) * 0.6,
                                probeFirstByte: 1.0 + Double(attempt) * 0.1, throughput: 2_000_000 + Double(attempt) * 150_000,
                                brokeAfter: attempt == 5 ? 65536 : nil))
            index += 1
            trials.append(trial(index, "direct", attempt: attempt, bootstrap: nil))
            index += 1
        }
        return ABResult(id: id, startedAt: start, finishedAt: start.addingTimeInterval(120), network: network,
                        routes: ["obfs4", "snowflake", "direct"], trialsPerRoute: 5, parallel: 3, order: "interleaved", seed: 8,
                        warm: false, probeURL: "http://web.postern.test:8080/blob.bin", probeBytes: 1 << 20,
                        directory: "/tmp/ab/\(id)", trials: trials, harnessErrors: harnessErrors)
    }

    static func harnessError(trial: Int, route: String, try attemptTry: Int, retried: Bool) -> ABResult.HarnessError {
        ABResult.HarnessError(trial: trial, route: route, attempt: 1, attemptTry: attemptTry, code: .childConfiguration,
                              message: "127.0.0.1:40001 is already in use by another program", retried: retried)
    }
}
