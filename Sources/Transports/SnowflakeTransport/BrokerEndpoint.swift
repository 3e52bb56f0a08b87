import Foundation

/// Where and how to reach the broker: the bridge line's `url=` and `fronts=` (or `front=`).
public struct BrokerEndpoint: Sendable, Hashable {
    /// The broker URL; requests resolve relative to it (keep the trailing "/").
    public let url: URL
    /// Front domains (each optionally with ":port"); one is picked per request.
    public let fronts: [String]

    public init(url: URL, fronts: [String] = []) throws(SnowflakeError) {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty else {
            throw SnowflakeError(code: .brokerURL, kind: .invalidInput, message: "the broker URL must be http(s)://host/...")
        }
        guard url.user == nil, url.password == nil else {
            throw SnowflakeError(code: .brokerURL, kind: .invalidInput, message: "the broker URL must not carry user information")
        }
        self.url = url
        self.fronts = fronts.filter { !$0.isEmpty }
    }
}
