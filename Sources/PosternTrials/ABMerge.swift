import Foundation

/// `postern ab merge DIR...`: runs made from several networks or vantage points in one table,
/// per network and pooled. A network is a run's `--network` label (runs without one are their own
/// network, named by run id); runs with the same label are pooled into that network first.
///
/// The pooled figures treat every trial of a route alike, wherever it ran: they answer "which
/// route works across these places", not "which works here", and a network with more trials
/// weighs more. Harness errors stay apart, per network and in total.
public struct MergedRuns: Codable, Sendable {
    public struct Network: Codable, Sendable {
        public var label: String
        /// The ids of the runs pooled into this network.
        public var runs: [String]
        public var summaries: [ABResult.RouteSummary]
        public var best: String?
        public var harnessErrors: Int
    }

    public var routes: [String]
    public var networks: [Network]
    public var pooled: [ABResult.RouteSummary]
    public var pooledComparisons: [ABResult.Comparison]
    public var pooledBest: String?
    public var verdict: [String]

    public static func merge(_ results: [ABResult]) -> MergedRuns {
        var routes: [String] = []
        for result in results { for route in result.routes where !routes.contains(route) { routes.append(route) } }
        var labels: [String] = []
        var byLabel: [String: [ABResult]] = [:]
        for result in results {
            let label = result.network ?? result.id
            if byLabel[label] == nil { labels.append(label) }
            byLabel[label, default: []].append(result)
        }
        let networks = labels.map { label -> Network in
            let runs = byLabel[label] ?? []
            let trials = runs.flatMap(\.trials)
            let errors = runs.flatMap(\.harnessErrors)
            let present = routes.filter { route in runs.contains { $0.routes.contains(route) } }
            let summaries = present.map { route in
                ABResult.summary(route: route, trials: trials.filter { $0.route == route },
                                 harnessErrors: errors.filter { $0.route == route }.count)
            }
            let comparisons = ABResult.compare(routes: present, trials: trials, seed: runs.first?.seed ?? 0)
            return Network(label: label, runs: runs.map(\.id), summaries: summaries,
                           best: ABResult.choose(summaries, comparisons: comparisons).best, harnessErrors: errors.count)
        }
        let allTrials = results.flatMap(\.trials)
        let allErrors = results.flatMap(\.harnessErrors)
        let pooled = routes.map { route in
            ABResult.summary(route: route, trials: allTrials.filter { $0.route == route }, harnessErrors: allErrors.filter { $0.route == route }.count)
        }
        let seed = results.first?.seed ?? 0
        let comparisons = ABResult.compare(routes: routes, trials: allTrials, seed: seed)
        var merged = MergedRuns(routes: routes, networks: networks, pooled: pooled, pooledComparisons: comparisons,
                                pooledBest: ABResult.choose(pooled, comparisons: comparisons).best, verdict: [])
        merged.verdict = merged.makeVerdict()
        return merged
    }

    private func makeVerdict() -> [String] {
        var lines: [String] = []
        for network in networks {
            let anyThrough = network.summaries.contains { $0.successes > 0 }
            lines.append("\(network.label): " + (network.best.map { "best \($0)" } ?? (anyThrough ? "no clear best" : "no route got through")))
        }
        if let pooledBest {
            let everywhere = networks.allSatisfy { $0.best == pooledBest }
            lines.append("Pooled over \(networks.count) network\(networks.count == 1 ? "" : "s"): best \(pooledBest)"
                         + (everywhere ? " (best in every network)." : " (not in every network: see each one)."))
        } else {
            lines.append(pooled.contains { $0.successes > 0 } ? "Pooled: no clear best." : "Pooled: no route got through anywhere.")
        }
        for comparison in pooledComparisons where comparison.meaningful {
            lines.append("Pooled: " + ABResult.sentence(comparison))
        }
        return lines
    }
}
