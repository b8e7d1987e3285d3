// SPDX-License-Identifier: Apache-2.0

import CacheTiers
import Foundation
import HTTPTypes
import Testing

@testable import HTTPCaching

/// `ResponseLookup` as the memory probe makes it: a hit makes its key only when asked.
@Suite struct ResponseLookupTests {
    func body(_ cached: CachedResponse?) -> String? {
        cached.map { String(decoding: $0.body, as: UTF8.self) }
    }

    /// A memory hit's lookup makes no key string until asked: its key is the key an unread lookup
    /// builds, the lookup found what `cachedResponse` finds, and storing through it replaces the
    /// response. A `HEAD` that finds a stored `GET` (the rest of the read) keeps the `HEAD` key.
    @Test func aMemoryHitsLookupMakesItsKeyWhenAsked() async throws {
        let cache = try ResponseCache(configuration: ResponseCacheTests.configuration(nil))
        let request = ResponseCacheTests.request("https://API.example.com:443/v1/items?x=1")
        try await cache.storeCachedResponse(ResponseCacheTests.response("one"), for: request)
        guard case .hit(let memoryHit) = cache.startLookup(request) else {
            Issue.record("a memory hit finishes in the memory tier")
            return
        }
        #expect(body(memoryHit.stored) == "one")
        let hit = cache.lookup(request, hit: memoryHit)
        #expect(hit.key == cache.unreadLookup(request).key)
        #expect(hit.key?.string == "GET https://api.example.com/v1/items?x=1")
        #expect(hit.keyed().key == hit.key)
        #expect(body(hit.stored) == "one")
        #expect(try await cache.storeCachedResponse(ResponseCacheTests.response("two"), for: hit))
        #expect(body(await cache.cachedResponse(for: request)) == "two")

        let head = ResponseCacheTests.request("https://api.example.com/v1/items?x=1", method: .head)
        guard case .pending(let pending) = cache.startLookup(head) else {
            Issue.record("a HEAD with nothing of its own goes on to the stored GET")
            return
        }
        let lookup = await cache.finishLookup(pending)
        #expect(body(lookup.stored) == "two")
        #expect(lookup.key?.string == "HEAD https://api.example.com/v1/items?x=1")
    }

    /// The default clock is the wall clock to within a scheduler tick: it lags `Date()` by at most
    /// a few milliseconds and is never ahead of it.
    @Test func theDefaultClockIsTheWallClockWithinATick() {
        let before = Date()
        let now = ResponseCache.systemNow()
        let after = Date()
        #expect(now.timeIntervalSince(before) > -0.05)
        #expect(now.timeIntervalSince(after) <= 0.001)
    }
}
