/// A way to tor as people read it, never an address: "direct", "bridges (obfs4, built-in)",
/// "bridges given on the command line", or "connection assist" while assist has chosen none.
/// Encoded as its bare string, so status files and JSON lines read as they always did.
public struct RouteName: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The name as shown.
    public let rawValue: String

    /// A route named `rawValue`.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A route named `name`.
    public init(_ name: String) { rawValue = name }

    /// A route named by a literal, as in `status.route == "direct"`.
    public init(stringLiteral name: String) { rawValue = name }

    /// The name as shown.
    public var description: String { rawValue }

    /// No bridges, no transport: tor's own directory authorities and relays.
    public static let direct = RouteName("direct")
    /// Connection assist runs and has not chosen a route yet.
    public static let connectionAssist = RouteName("connection assist")
}
