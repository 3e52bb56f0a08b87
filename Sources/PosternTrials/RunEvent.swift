import Foundation

/// One line of a child's `postern run --events-json` file (the format is documented in
/// docs/AB-TRIALS.md and written by the CLI's RunEventLog).
public struct RunEvent: Codable, Sendable, Equatable {
    public var t: Double
    public var wall: Double
    public var event: String
    public var progress: Int?
    public var tag: String?
    public var summary: String?
    public var warning: String?
    public var source: String?
    public var kind: String?
    public var transport: String?
    public var message: String?
    /// On `failed`: the core error's code (invalid-configuration, filesystem, tor-exited, ...).
    public var code: String?
    /// On `ready`: the SOCKS address the child bound.
    public var socks: String?
    public var route: String?
    public var pid: Int?

    public init(t: Double, wall: Double = 0, event: String, progress: Int? = nil, tag: String? = nil, summary: String? = nil,
                warning: String? = nil, message: String? = nil, code: String? = nil, socks: String? = nil) {
        self.t = t
        self.wall = wall
        self.event = event
        self.progress = progress
        self.tag = tag
        self.summary = summary
        self.warning = warning
        self.message = message
        self.code = code
        self.socks = socks
    }

    /// Parses the complete lines of an events file; a torn last line (still being written) is left
    /// for the next read.
    public static func parse(_ text: String) -> [RunEvent] {
        let decoder = JSONDecoder()
        return text.split(separator: "\n", omittingEmptySubsequences: true).compactMap { line in
            try? decoder.decode(RunEvent.self, from: Data(line.utf8))
        }
    }
}
