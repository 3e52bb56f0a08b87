import Testing
@testable import TransportTLS

/// The ticket cache's rules without NSS: each ticket once, newest first, expired ones never
/// handed out, and every bound (tickets per server, servers, token size, lifetime) held.
struct ResumptionTokenCacheTests {
    private func key(_ name: String, profile: String = "firefox-esr") -> ResumptionTokenCache.Key {
        ResumptionTokenCache.Key(serverName: name, sendsServerName: true, caFile: nil, profile: profile, applicationProtocols: ["http/1.1"])
    }

    @Test func eachTicketIsHandedOutOnceNewestFirst() {
        let cache = ResumptionTokenCache()
        cache.store([1], expiry: 1_000, for: key("a"), now: 0)
        cache.store([2], expiry: 1_000, for: key("a"), now: 0)
        #expect(cache.take(for: key("a"), now: 10) == [2])
        #expect(cache.take(for: key("a"), now: 10) == [1])
        #expect(cache.take(for: key("a"), now: 10) == nil)
        #expect(cache.keyCount == 0)
    }

    @Test func aTicketIsOnlyForItsOwnKey() {
        let cache = ResumptionTokenCache()
        cache.store([1], expiry: 1_000, for: key("a"), now: 0)
        #expect(cache.take(for: key("b"), now: 10) == nil)
        #expect(cache.take(for: key("a", profile: "randomized"), now: 10) == nil)
        #expect(cache.take(for: key("a"), now: 10) == [1])
    }

    @Test func expiredUnreadableEmptyAndOversizedTicketsAreNotKept() {
        let cache = ResumptionTokenCache()
        cache.store([1], expiry: 100, for: key("a"), now: 0)
        #expect(cache.take(for: key("a"), now: 100) == nil, "handed out at its expiry")
        cache.store([2], expiry: 0, for: key("a"), now: 5)  // NSS could not read it
        cache.store([], expiry: 1_000, for: key("a"), now: 5)
        cache.store([UInt8](repeating: 7, count: ResumptionTokenCache.tokenByteLimit + 1), expiry: 1_000, for: key("a"), now: 5)
        #expect(cache.count(for: key("a")) == 0)
        // A server's lifetime beyond the cap is cut to it.
        cache.store([3], expiry: .max, for: key("a"), now: 0)
        #expect(cache.take(for: key("a"), now: ResumptionTokenCache.lifetimeLimit) == nil)
    }

    @Test func ticketsPerServerAndServersAreBounded() {
        let cache = ResumptionTokenCache()
        for value in 0..<(ResumptionTokenCache.tokensPerKey + 3) {
            cache.store([UInt8(value)], expiry: 1_000, for: key("a"), now: 0)
        }
        #expect(cache.count(for: key("a")) == ResumptionTokenCache.tokensPerKey)
        for index in 0..<(ResumptionTokenCache.keyLimit + 5) {
            cache.store([1], expiry: 1_000, for: key("server\(index)"), now: 0)
        }
        #expect(cache.keyCount == ResumptionTokenCache.keyLimit)
        // The least recently stored went first: "a" and the first five servers.
        #expect(cache.count(for: key("a")) == 0)
        #expect(cache.count(for: key("server4")) == 0)
        #expect(cache.count(for: key("server5")) == 1)
    }
}
