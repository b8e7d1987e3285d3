// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import CacheTestSupport
import CacheTiers
import Foundation
import HTTPCaching
import HTTPTypes
import MetricsTestKit
import TestOriginSupport
import Testing

@testable import CachingClient

/// The request path: one cache lookup per request, what is stored on the request's behalf, and
/// the last good answer kept through origin errors.
@Suite struct RequestPathTests {
    static let stale: [(String, String)] = [("Cache-Control", "max-age=0"), ("ETag", "\"e1\"")]

    /// The memory tier sees exactly one lookup per request: a miss that stores, a fresh hit, and a
    /// revalidation that freshens each count one (before, a miss counted two).
    @Test func theMemoryTierCountsOneLookupPerRequest() async throws {
        let metrics = TestMetrics()
        let memory = MemoryTier(configuration: .init(), metricsFactory: metrics)
        let clock = TestClock()
        let cache = ResponseCache(
            configuration: .init(now: { clock.date }),
            tiers: TieredCache(memory: memory, disk: nil)
        )
        let origin = try await TestOrigin.start()
        let client = CachingHTTPClient(transport: Fixture.transport, cache: cache, configuration: .init(clock: clock))
        let request = HTTPRequest(method: .get, scheme: "http", authority: origin.authority, path: "/one")
        func lookups() throws -> (hits: Int64, misses: Int64) {
            (
                try metrics.expectCounter("layeredcache_memory_hits_total").totalValue,
                try metrics.expectCounter("layeredcache_memory_misses_total").totalValue
            )
        }

        origin.enqueue(.ok("body", headers: [("Cache-Control", "max-age=10"), ("ETag", "\"e1\"")]), for: "/one")
        #expect(await client.fetch(request).source == .network)
        #expect(try lookups() == (0, 1))
        #expect(await client.fetch(request).source == .cache)
        #expect(try lookups() == (1, 1))
        clock.advance(by: .seconds(20))
        origin.enqueue(
            .respond(status: 304, headers: [("ETag", "\"e1\""), ("Cache-Control", "max-age=10")]),
            for: "/one"
        )
        #expect(await client.fetch(request).source == .revalidated)
        #expect(try lookups() == (2, 1))
        await origin.stop()
    }

    /// A fresh memory hit's result reads the stored response in place: every field is the stored
    /// one, `Age` is current, and setting one field leaves the others as they were stored.
    @Test func aFreshHitReadsTheStoredResponseAndTakesChanges() async throws {
        let f = try await Fixture.make()
        let stamp = WillCache.stampStoredDate(key: "stored", now: { f.clock.date })
        f.origin.enqueue(.ok("cached", headers: [("Cache-Control", "max-age=60"), ("X-Kind", "a")]), for: "/a")
        let first = await f.client.fetch(f.request("/a"), willCache: stamp)
        try #require(first.source == .network, "\(String(describing: first.error))")
        f.advance(5)
        var hit = await f.client.fetch(f.request("/a"))
        #expect(hit.source == .cache)
        #expect(hit.text == "cached")
        #expect(hit.response?.headerFields[.age] == "5")
        #expect(hit.response?.headerFields[HTTPField.Name("X-Kind")!] == "a")
        #expect(hit.fetchedAt == first.fetchedAt)
        #expect(hit.validatedAt == first.validatedAt)
        #expect(hit.userInfo["stored"] == .date(first.fetchedAt!))
        #expect(hit.isComplete)
        hit.body = Array("changed".utf8)
        hit.isComplete = false
        #expect(hit.text == "changed")
        #expect(!hit.isComplete)
        #expect(hit.response?.headerFields[.age] == "5")
        #expect(hit.fetchedAt == first.fetchedAt)
        #expect(hit.userInfo["stored"] == .date(first.fetchedAt!))
        hit.response = HTTPResponse(status: .accepted)
        #expect(hit.response?.status == .accepted)
        #expect(hit.response?.headerFields[.age] == nil)
        #expect(hit.text == "changed")
        // The cache still holds what was stored.
        #expect(await f.client.fetch(f.request("/a")).text == "cached")
        await f.stop()
    }

    /// A fresh hit's result takes errors without losing the stored response it reads in place,
    /// and clearing an error it does not have changes nothing.
    @Test func aFreshHitsResultTakesErrorsAndKeepsItsFields() async throws {
        let f = try await Fixture.make()
        f.origin.enqueue(.ok("kept", headers: [("Cache-Control", "max-age=60")]), for: "/e")
        #expect(await f.client.fetch(f.request("/e")).source == .network)
        f.advance(2)
        var hit = await f.client.fetch(f.request("/e"))
        #expect(hit.source == .cache)
        #expect(hit.error == nil && hit.cacheError == nil)
        hit.error = nil
        hit.cacheError = CachingClientError(code: .storage, message: "full")
        hit.error = CachingClientError(code: .timeout, message: "slow")
        #expect(hit.error?.code == .timeout)
        #expect(hit.cacheError?.code == .storage)
        #expect(hit.text == "kept")
        #expect(hit.response?.headerFields[.age] == "2")
        hit.error = nil
        #expect(hit.error == nil)
        #expect(hit.cacheError?.code == .storage)
        #expect(hit.text == "kept")
        await f.stop()
    }

    /// A `HEAD` is answered fresh from the stored `GET`, without its body; the one-argument
    /// `fetch` and the full one give the same answers.
    @Test func aHeadHitHasNoBodyAndBothFetchesAgree() async throws {
        let f = try await Fixture.make()
        f.origin.enqueue(.ok("whole", headers: [("Cache-Control", "max-age=60")]), for: "/h")
        #expect(await f.client.fetch(f.request("/h")).source == .network)
        var head = f.request("/h")
        head.method = .head
        let short = await f.client.fetch(head)
        let full = await f.client.fetch(head, policy: .useProtocolCachePolicy)
        for answer in [short, full] {
            #expect(answer.source == .cache)
            #expect(answer.body == [])
            #expect(answer.response?.status == .ok)
        }
        #expect(await f.client.fetch(f.request("/h")).text == "whole")
        #expect(f.client.networkRequestCount == 1)
        await f.stop()
    }

    /// Defect 1, through the client: a 304 does not bring back a field the request's hook strips.
    @Test func theRequestsHookAppliesWhenA304Freshens() async throws {
        let f = try await Fixture.make()
        let hook = WillCache.stripCredentials
        f.origin.enqueue(.ok("me", headers: Self.stale + [("Set-Cookie", "sid=1")]), for: "/me")
        let first = await f.client.fetch(f.request("/me"), willCache: hook)
        #expect(first.response?.headerFields[.setCookie] == "sid=1")  // the caller sees it
        f.advance(5)
        f.origin.enqueue(.respond(status: 304, headers: [("ETag", "\"e1\""), ("Set-Cookie", "sid=2")]), for: "/me")
        let second = await f.client.fetch(f.request("/me"), willCache: hook)
        #expect(second.source == .revalidated && second.text == "me")
        let stored = try #require(await f.cache.cachedResponse(for: f.request("/me")))
        #expect(stored.response.headerFields[.setCookie] == nil)
        await f.stop()
    }

    /// Defect 3: an origin error does not replace the last good answer; it is returned, classified.
    @Test(arguments: [404, 410])
    func anErrorResponseKeepsTheLastGoodAnswer(status: Int) async throws {
        let f = try await Fixture.make()
        f.origin.enqueue(.ok("good", headers: Self.stale), for: "/item")
        _ = await f.client.fetch(f.request("/item"))
        f.advance(1)
        f.origin.enqueue(.respond(status: status, headers: [("Cache-Control", "max-age=600")]), for: "/item")
        let error = await f.client.fetch(f.request("/item"))
        #expect(error.response?.status.code == status && error.error?.code == .server)
        let offline = await f.client.fetch(f.request("/item"), policy: .cacheOnly)
        #expect(offline.text == "good" && offline.response?.status == .ok)
        await f.stop()
    }

    /// With nothing good stored, a cacheable 404 is stored (negative caching); under the protocol
    /// rules (cache-proxy) it also replaces a stored 200.
    @Test func errorResponsesAreStoredWhereNothingGoodIsOrUnderTheProtocolRules() async throws {
        let f = try await Fixture.make()
        f.origin.enqueue(.respond(status: 404, headers: [("Cache-Control", "max-age=600")]), for: "/gone")
        _ = await f.client.fetch(f.request("/gone"))
        #expect(await f.client.fetch(f.request("/gone"), policy: .cacheOnly).response?.status.code == 404)
        await f.stop()

        let p = try await Fixture.make { $0.errorResponses = .protocolRules }
        p.origin.enqueue(.ok("good", headers: Self.stale), for: "/item")
        _ = await p.client.fetch(p.request("/item"))
        p.advance(1)
        p.origin.enqueue(.respond(status: 404, headers: [("Cache-Control", "max-age=600")]), for: "/item")
        _ = await p.client.fetch(p.request("/item"))
        #expect(await p.client.fetch(p.request("/item"), policy: .cacheOnly).response?.status.code == 404)
        await p.stop()
    }

    /// Requests whose URLs normalize to the same key share one flight (and one backoff entry).
    @Test func equivalentURLsShareAFlight() async throws {
        let f = try await Fixture.make()
        let gate = TestOrigin.Gate()
        f.origin.enqueue(.hold(gate, then: .ok("one", headers: [("Cache-Control", "max-age=60")])), for: "/a")
        let host = f.origin.authority
        let variants = [
            HTTPRequest(method: .get, scheme: "http", authority: host, path: "/a"),
            HTTPRequest(method: .get, scheme: "HTTP", authority: host.uppercased(), path: "/a"),
            HTTPRequest(method: .get, scheme: "http", authority: host, path: "/a#fragment"),
        ]
        let lookups = await variants.asyncMap { await f.cache.lookup($0) }
        let steps = lookups.map {
            NetworkStep(
                request: $0.request,
                lookup: $0,
                body: nil,
                fallback: false,
                timeout: nil,
                freshness: .http,
                pipeline: StoragePipeline()
            )
        }
        #expect(Set(steps.map(\.flightKey)).count == 1 && Set(steps.map(\.backoffKey)).count == 1)
        async let answers = withTaskGroup(of: String?.self) { group in
            for request in variants { group.addTask { await f.client.fetch(request).text } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        await f.origin.waitForRequests(1)
        gate.open()
        #expect(await answers == ["one", "one", "one"])
        #expect(f.origin.requestCount == 1)
        await f.stop()
    }
}

extension Array {
    fileprivate func asyncMap<T>(_ transform: (Element) async -> T) async -> [T] {
        var result: [T] = []
        for element in self { result.append(await transform(element)) }
        return result
    }
}
#endif
