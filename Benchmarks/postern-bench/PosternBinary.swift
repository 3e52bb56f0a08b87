import Foundation

/// A `postern` executable a benchmark drives (webtunnel's and dnstt's clients have no Debian peer,
/// so an earlier build stands in as the baseline).
struct PosternBinary {
    let label: String
    let path: String

    var isExecutable: Bool { FileManager.default.isExecutableFile(atPath: path) }
    var notExecutableMessage: String { "\(label): \(path) is not an executable (swift build -c release --product postern)" }

    /// Ours (POSTERN_BINARY, else the `postern` next to this executable), then POSTERN_BASELINE when
    /// it is set, measured interleaved with ours.
    static func underTest(_ environment: [String: String]) -> [PosternBinary] {
        let selfPath = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let ours = environment["POSTERN_BINARY"] ?? selfPath.deletingLastPathComponent().appendingPathComponent("postern").path
        var binaries = [PosternBinary(label: "postern", path: ours)]
        if let baseline = environment["POSTERN_BASELINE"], !baseline.isEmpty {
            binaries.append(PosternBinary(label: "baseline", path: baseline))
        }
        return binaries
    }
}
