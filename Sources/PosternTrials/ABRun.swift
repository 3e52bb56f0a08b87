import Foundation
import PosternSystem

/// The order trials run in.
public enum TrialOrder: String, Sendable, CaseIterable {
    /// A B C A B C …: every route sees the network at nearly the same times.
    case interleaved
    /// That list shuffled with the run's seed.
    case random
}

/// A name for the network or vantage point a run was made from (`--network`), kept in the result
/// for merges and OONI measurements: 1 to 64 characters on one line, no control characters.
public struct NetworkLabel: Sendable, Hashable, CustomStringConvertible {
    /// The label as given (it round-trips: `NetworkLabel(label.text) == label`).
    public let text: String

    /// Nil for an empty label, one longer than 64 characters, or one with a line break or another
    /// control character (it is shown in tables, the HTML report and the SVG title).
    public init?(_ text: String) {
        guard !text.isEmpty, text.count <= 64, !text.contains(where: \.isNewline),
              !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return nil }
        self.text = text
    }

    public var description: String { text }
}

/// One A/B run from start to saved result: creates the run's directory in the history, runs the
/// trials (stopping them when the caller's interruption arrives), saves the result and writes the
/// optional charts and OONI files. The caller shows the events and the result.
public enum ABRun {
    /// Where to write each trial as an OONI tor measurement, and what the measurements say of the
    /// probe and the software.
    public struct OONIOutput: Sendable {
        public var file: URL
        public var probe: OONIMeasurement.Probe
        public var softwareVersion: String
        public var torVersion: String

        /// Measurements written to `file` (one JSON a line) for `probe`, naming Postern's and
        /// tor's versions.
        public init(file: URL, probe: OONIMeasurement.Probe, softwareVersion: String, torVersion: String) {
            self.file = file
            self.probe = probe
            self.softwareVersion = softwareVersion
            self.torVersion = torVersion
        }
    }

    /// What to run. ``validate()`` checks what the types cannot.
    public struct Request: Sendable {
        public var routes: [TrialRoute]
        public var trialsPerRoute: Int
        public var parallel: Int
        public var order: TrialOrder
        /// Seeds the random order and the bootstrap intervals; recorded in the result. Random
        /// unless the caller gives one.
        public var seed: UInt64
        /// Start each trial with the cached consensus of the route's last good trial.
        public var warm: Bool
        /// The http:// URL fetched through each route once it is ready, if any.
        public var probeTarget: ProbeFetch.Target?
        /// Bytes of the probe download to time; recorded in the result.
        public var probeBytes: Int
        public var torOptionsFile: String?
        public var unsafeLogging: Bool
        public var network: NetworkLabel?
        /// Further tries of a trial after a harness error.
        public var harnessRetries: Int
        /// Where the run's directory is created.
        public var history: TrialHistory
        /// Also write the charts here.
        public var svgFile: URL?
        public var ooni: OONIOutput?
        /// The `postern` binary the children run: by default the running executable, which is
        /// right for `postern ab`; an app that embeds ABRun passes the path of a `postern` binary.
        public var executable: URL

        /// The largest run a request may ask for (``validate()``): routes, trials per route,
        /// children at once, harness retries, probe bytes.
        public static let maximumRoutes = 64
        public static let maximumTrialsPerRoute = 1000
        public static let maximumParallel = 64
        public static let maximumHarnessRetries = 10
        public static let maximumProbeBytes = 1 << 34

        /// A run of `trialsPerRoute` trials of each of `routes`, `parallel` at a time, in `order`
        /// (shuffled by `seed`, drawn when nil and recorded in the result).
        public init(routes: [TrialRoute], trialsPerRoute: Int, parallel: Int, order: TrialOrder, seed: UInt64? = nil,
                    warm: Bool = false, probeTarget: ProbeFetch.Target? = nil,
                    probeBytes: Int = 1 << 20, torOptionsFile: String? = nil, unsafeLogging: Bool = false,
                    network: NetworkLabel? = nil, harnessRetries: Int = 2, history: TrialHistory, svgFile: URL? = nil,
                    ooni: OONIOutput? = nil, executable: URL = ChildRun.currentExecutable) {
            self.routes = routes
            self.trialsPerRoute = trialsPerRoute
            self.parallel = parallel
            self.order = order
            self.seed = seed ?? .random(in: 0...UInt64.max)
            self.warm = warm
            self.probeTarget = probeTarget
            self.probeBytes = probeBytes
            self.torOptionsFile = torOptionsFile
            self.unsafeLogging = unsafeLogging
            self.network = network
            self.harnessRetries = harnessRetries
            self.history = history
            self.svgFile = svgFile
            self.ooni = ooni
            self.executable = executable
        }

        /// Trials in the whole run.
        public var total: Int { routes.count * trialsPerRoute }

        /// Throws a `.usage` error with code `invalidInput` for a request that cannot run: no
        /// route, a route named twice, fewer than one trial per route or one child at a time, a
        /// negative number of harness retries, no probe bytes to time, or more of any of these
        /// than the maximums above.
        public func validate() throws(TrialError) {
            func invalid(_ message: String) -> TrialError { TrialError(.invalidInput, kind: .usage, message) }
            guard !routes.isEmpty else { throw invalid("no routes to compare") }
            guard routes.count <= Self.maximumRoutes else { throw invalid("at most \(Self.maximumRoutes) routes, not \(routes.count)") }
            var seen: Set<String> = []
            for route in routes where !seen.insert(route.name).inserted { throw invalid("the route \(route.name) is given twice") }
            guard (1...Self.maximumTrialsPerRoute).contains(trialsPerRoute) else {
                throw invalid("a run needs 1 to \(Self.maximumTrialsPerRoute) trials per route, not \(trialsPerRoute)")
            }
            guard (1...Self.maximumParallel).contains(parallel) else {
                throw invalid("a run needs 1 to \(Self.maximumParallel) children at a time, not \(parallel)")
            }
            guard (0...Self.maximumHarnessRetries).contains(harnessRetries) else {
                throw invalid("harness retries must be 0 to \(Self.maximumHarnessRetries), not \(harnessRetries)")
            }
            guard (1...Self.maximumProbeBytes).contains(probeBytes) else {
                throw invalid("the probe download times 1 to \(Self.maximumProbeBytes) bytes, not \(probeBytes)")
            }
        }
    }

    /// The run's directory exists and its trials are about to start.
    public struct Start: Sendable, CustomStringConvertible {
        public var id: String
        public var directory: URL
        public var request: Request

        /// "15 trials (obfs4, snowflake, direct × 5), 3 at a time, interleaved order, seed 8; results in DIR".
        public var description: String {
            "\(request.total) trials (\(request.routes.map(\.name).joined(separator: ", ")) × \(request.trialsPerRoute)), "
                + "\(request.parallel) at a time, \(request.order.rawValue) order, seed \(request.seed); results in \(directory.path)"
        }
    }

    /// The state of the run after a trial changed: what the live view and the log show.
    public struct Progress: Sendable {
        public var total: Int
        public var running: [TrialRunner.Live]
        public var finished: [ABResult.Trial]
        /// The trial that just finished, if that is what changed.
        public var justFinished: ABResult.Trial?
        /// The harness error that just happened, if that is what changed.
        public var harnessError: ABResult.HarnessError?

        /// "trial 3 obfs4#1: harness error (CODE), trying again: MESSAGE", for a harness error just
        /// now: worth showing whether or not anyone watches the live view.
        public var harnessErrorLine: String? {
            guard let error = harnessError else { return nil }
            return "trial \(error.trial) \(error.route)#\(error.attempt): harness error (\(error.code)), "
                + "\(error.retried ? "trying again" : "given up"): \(error.message)"
        }

        /// The live view: "[4/15 done, 3 ok] running: obfs4#2 45% loading_descriptors, ...".
        public var statusLine: String {
            let ok = finished.filter(\.succeeded).count
            let now = running.map { "\($0.label) \($0.progress)% \($0.tag)" }.joined(separator: ", ")
            return "[\(finished.count)/\(total) done, \(ok) ok] running: \(now.isEmpty ? "-" : now)"
        }

        /// One line for the trial that just finished (for a log, where the live view is not
        /// redrawn): "[4/15] trial 4 obfs4#2: ok, 100% in 3.10 s, probe first byte 0.52 s".
        public var finishedTrialLine: String? {
            guard let trial = justFinished else { return nil }
            var line = "[\(finished.count)/\(total)] trial \(trial.index) \(trial.route)#\(trial.attempt): "
            if trial.succeeded {
                line += "ok, 100% in \(ABResult.seconds(trial.bootstrapSeconds ?? 0))"
                if let ttfb = trial.probeFirstByteSeconds { line += ", probe first byte \(ABResult.seconds(ttfb))" }
            } else if trial.failedAfterBootstrap {
                line += "100% in \(ABResult.seconds(trial.bootstrapSeconds ?? 0)), then the download broke (\(trial.failure?.reason ?? "unknown reason"))"
            } else {
                line += "failed (\(trial.failure?.reason ?? "unknown reason"))"
            }
            return line
        }
    }

    /// What happens during a run, in order: one start, progress (at most one interruption among
    /// it), and the end of the trials.
    public enum Event: Sendable {
        case started(Start)
        case progress(Progress)
        /// The caller's interruption arrived: the running children are being stopped.
        case interrupting
        /// No trial runs any more; the result is being saved.
        case trialsFinished
    }

    /// A saved run.
    public struct Outcome: Sendable {
        public var result: ABResult
        /// Trials in the whole run as planned.
        public var total: Int
        /// Trials cut short by the interruption (left out: they say nothing about their route).
        public var cutShort: Int
        public var wasInterrupted: Bool

        /// For an interrupted run: how many trials finished, how many were cut short, and where the
        /// finished ones are; nil otherwise.
        public var interruptionNote: String? {
            guard wasInterrupted else { return nil }
            return "interrupted after \(result.trials.count) of \(total) trials (\(cutShort) cut short and left out); "
                + "the finished ones are kept above and in \(result.directory)"
        }
    }

    /// Runs `request` and saves its result in a new directory of its history. When `interruption`
    /// returns (it is cancelled once the trials are done), the running children are stopped and no
    /// more start; the finished trials are kept. Throws a `.usage` error for an invalid request,
    /// `filesystem` when the run's directory or files cannot be written, and ``TrialError/Code/chartsFile``
    /// or ``TrialError/Code/measurementsFile`` (after the result is saved) when `svgFile` or `ooni`'s
    /// file cannot be written.
    public static func execute(_ request: Request, interruption: @escaping @Sendable () async -> Void,
                               onEvent: @escaping @Sendable (Event) -> Void) async throws(TrialError) -> Outcome {
        try request.validate()
        let startedAt = Date()
        let (id, directory) = try request.history.createRun(startedAt: startedAt)
        onEvent(.started(Start(id: id, directory: directory, request: request)))
        let total = request.total
        let probe = request.probeTarget.map { ProbeFetch(target: $0, maximumBytes: request.probeBytes, timeout: .seconds(60)) }
        let plan = TrialRunner.Plan(routes: request.routes, trialsPerRoute: request.trialsPerRoute, parallel: request.parallel,
                                    randomOrder: request.order == .random, seed: request.seed, warm: request.warm, probe: probe,
                                    torOptionsFile: request.torOptionsFile, unsafeLogging: request.unsafeLogging, directory: directory,
                                    executable: request.executable, harnessRetries: request.harnessRetries)
        let runner = TrialRunner(plan: plan) { running, finished, justFinished, harnessError in
            onEvent(.progress(Progress(total: total, running: running, finished: finished, justFinished: justFinished,
                                       harnessError: harnessError)))
        }
        let watcher = Task {
            await interruption()
            guard !Task.isCancelled else { return }
            onEvent(.interrupting)
            await runner.interrupt()
        }
        let outcome = await runner.run()
        watcher.cancel()
        runner.removeCaches()
        onEvent(.trialsFinished)

        let result = ABResult(id: id, startedAt: startedAt, finishedAt: Date(), network: request.network?.text,
                              routes: request.routes.map(\.name), trialsPerRoute: request.trialsPerRoute, parallel: request.parallel,
                              order: request.order.rawValue, seed: request.seed, warm: request.warm, probeURL: request.probeTarget?.text,
                              probeBytes: request.probeBytes, directory: directory.path, trials: outcome.trials,
                              harnessErrors: outcome.harnessErrors)
        try TrialHistory.save(result, in: directory)
        if let file = request.svgFile {
            do throws(TrialError) { try TrialHistory.writeAtomically(Data(result.svg.utf8), to: file) } catch {
                throw TrialError(.chartsFile, error.message)
            }
        }
        if let ooni = request.ooni {
            let timeouts = Dictionary(uniqueKeysWithValues: request.routes.map { ($0.name, $0.timeout.seconds) })
            let measurements = OONIMeasurement.measurements(of: result, probe: ooni.probe, softwareVersion: ooni.softwareVersion,
                                                            torVersion: ooni.torVersion, timeouts: timeouts)
            do { try TrialHistory.writeAtomically(try OONIMeasurement.jsonLines(measurements), to: ooni.file) } catch {
                throw TrialError(.measurementsFile, "\(error)")
            }
        }
        return Outcome(result: result, total: total, cutShort: outcome.interrupted, wasInterrupted: runner.wasInterrupted)
    }
}

extension TrialError.Code {
    /// The charts file a run was asked to write too could not be written (the result is saved).
    public static let chartsFile = Self("charts-file")
    /// The OONI measurements file a run was asked to write could not be written (the result is saved).
    public static let measurementsFile = Self("measurements-file")
}
