import Testing
@testable import TransportTLS

/// The cache of verified chains: a hit only for the same name, trust source and exact chain, never
/// after its lifetime, and never more than its capacity.
@Suite struct VerifiedChainCacheTests {
    func key(_ name: String = "web.postern.test", caFile: String? = "/ca.pem", chain: [UInt8] = [1, 2, 3]) -> VerifiedChainCache.Key {
        VerifiedChainCache.Key(name: name, nameIsIPAddress: false, caFile: caFile, systemStore: [nil, nil], chain: chain)
    }

    @Test func aHitNeedsTheSameNameTrustAndChain() {
        let cache = VerifiedChainCache()
        let now = ContinuousClock.now
        #expect(!cache.contains(key(), now: now))
        cache.insert(key(), now: now)
        #expect(cache.contains(key(), now: now + .seconds(1)))
        #expect(!cache.contains(key("other.postern.test"), now: now))
        #expect(!cache.contains(key(caFile: nil), now: now))
        #expect(!cache.contains(key(chain: [1, 2, 4]), now: now))
        #expect(!cache.contains(VerifiedChainCache.Key(name: "web.postern.test", nameIsIPAddress: false, caFile: "/ca.pem",
                                                      systemStore: ["/other-bundle.pem", nil], chain: [1, 2, 3]), now: now))
    }

    @Test func entriesExpire() {
        let cache = VerifiedChainCache()
        let now = ContinuousClock.now
        cache.insert(key(), now: now)
        #expect(cache.contains(key(), now: now + VerifiedChainCache.lifetime - .milliseconds(1)))
        #expect(!cache.contains(key(), now: now + VerifiedChainCache.lifetime))
        #expect(cache.count == 0)
    }

    @Test func capacityAndSizeAreCapped() {
        let cache = VerifiedChainCache()
        let now = ContinuousClock.now
        for index in 0..<(VerifiedChainCache.capacity + 10) {
            cache.insert(key("host\(index).postern.test"), now: now + .milliseconds(index))
        }
        #expect(cache.count == VerifiedChainCache.capacity)
        // The oldest went first; the newest is there.
        #expect(!cache.contains(key("host0.postern.test"), now: now + .seconds(1)))
        #expect(cache.contains(key("host\(VerifiedChainCache.capacity + 9).postern.test"), now: now + .seconds(1)))
        cache.insert(key(chain: [UInt8](repeating: 7, count: VerifiedChainCache.chainByteLimit + 1)), now: now)
        #expect(!cache.contains(key(chain: [UInt8](repeating: 7, count: VerifiedChainCache.chainByteLimit + 1)), now: now))
    }
}
