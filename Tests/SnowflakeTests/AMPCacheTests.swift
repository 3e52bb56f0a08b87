import Foundation
import Testing
@testable import SnowflakeTransport

/// Vectors/amp-cache-urls.json: upstream's amp.CacheURL (Debian golang-snowflake-dev 2.5.1) for
/// publisher/cache URL pairs, captured by `snowflake-test-vectors -amp-cache-urls`.
struct AMPCacheVectors: Decodable {
    struct Vector: Decodable {
        var broker: String
        var cache: String
        var result: String?
        var error: Bool?
    }
    var source: String
    var vectors: [Vector]

    static func load() throws -> AMPCacheVectors {
        let url = try #require(Bundle.module.url(forResource: "amp-cache-urls", withExtension: "json", subdirectory: "Vectors"))
        return try JSONDecoder().decode(AMPCacheVectors.self, from: Data(contentsOf: url))
    }
}

@Suite struct AMPCacheURLTests {
    @Test func rewritingMatchesUpstreamCacheURL() throws {
        let vectors = try AMPCacheVectors.load()
        #expect(vectors.vectors.count >= 10)
        for vector in vectors.vectors {
            let broker = try #require(URL(string: vector.broker))
            let cache = try #require(URL(string: vector.cache))
            let result = Result { () throws(SnowflakeError) -> AMPCacheURL.Rewritten in
                try AMPCacheURL.rewrite(brokerScheme: broker.scheme!, brokerHost: broker.host!, brokerPort: broker.port,
                                        brokerPath: broker.path(percentEncoded: true), cache: cache)
            }
            switch (result, vector.result) {
            case (.success(let rewritten), let expected?):
                let text = "\(rewritten.scheme)://\(rewritten.host)\(rewritten.port.map { ":\($0)" } ?? "")\(rewritten.path)"
                #expect(text == expected, "\(vector.broker) via \(vector.cache)")
            case (.failure, nil):
                #expect(vector.error == true)
            case (.success(let rewritten), nil):
                Issue.record("\(vector.broker) via \(vector.cache): upstream refuses, we gave \(rewritten)")
            case (.failure(let error), let expected?):
                Issue.record("\(vector.broker) via \(vector.cache): upstream gives \(expected), we refused: \(error)")
            }
        }
    }

    @Test func internationalisedBrokerHostsAreRefusedNotGuessed() {
        #expect(throws: SnowflakeError.self) { try AMPCacheURL.domainPrefix("xn--bcher-kva.example") }
        #expect(throws: SnowflakeError.self) { try AMPCacheURL.domainPrefix("bücher.example") }
    }

    @Test func theAMPFormGoesToTheCacheHostAndFrontingKeepsItInHost() throws {
        let endpoint = try BrokerEndpoint(url: try #require(URL(string: "https://snowflake-broker.torproject.net/")),
                                          fronts: ["www.google.com"])
        let rendezvous = BrokerRendezvous(endpoint: endpoint, connector: PlainTCPConnector(),
                                          ampCache: URL(string: "https://cdn.ampproject.org/"))
        let target = try rendezvous.resolveAMP("0AAAAAAAAAAAA/MS4wCnt9")
        #expect(target.path == "/c/s/snowflake-broker.torproject.net/amp/client/0AAAAAAAAAAAA/MS4wCnt9")
        #expect(target.hostHeader == "snowflake--broker-torproject-net.cdn.ampproject.org")
        #expect(target.connectHost == "www.google.com" && target.tlsServerName == "www.google.com" && target.connectPort == 443)
        // Without fronts the cache's subdomain is dialled.
        let direct = BrokerRendezvous(endpoint: try BrokerEndpoint(url: endpoint.url), connector: PlainTCPConnector(),
                                      ampCache: URL(string: "https://cdn.ampproject.org/"))
        #expect(try direct.resolveAMP("0x/eA").connectHost == "snowflake--broker-torproject-net.cdn.ampproject.org")
        // Without a cache the AMP form goes to the broker itself.
        let plain = BrokerRendezvous(endpoint: try BrokerEndpoint(url: endpoint.url), connector: PlainTCPConnector())
        #expect(try plain.resolveAMP("0x/eA").path == "/amp/client/0x/eA")
    }
}
