// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import CacheTestSupport
import CacheTiers
import Foundation
import HTTPCaching
import HTTPTypes
import TestOriginSupport
import Testing

@testable import CachingClient

/// URLCache's four request cache policies against a real origin on loopback.
@Suite struct RequestCachePolicyTests {
    static let cacheable: [(String, String)] = [("Cache-Control", "max-age=60"), ("ETag", "\"v1\"")]

    @Test func protocolPolicyStoresServesFreshAndRevalidatesWith304() async throws {
        let f = try await Fixture.make()
        f.origin.enqueue(.ok("one", headers: Self.cacheable), for: "/a")
        let first = await f.client.fetch(f.request("/a"))
        #expect(first.source == .network && first.freshness == .fresh && first.text == "one" && first.isFinal)
        #expect(first.expiresAt == f.clock.date.addingTimeInterval(60))

        f.advance(10)
        let second = await f.client.fetch(f.request("/a"))
        #expect(second.source == .cache && second.freshness == .fresh && second.text == "one")
        #expect(second.response?.headerFields[.age] == "10")
        #expect(f.origin.requestCount == 1)

        f.advance(60)
        f.origin.enqueue(
            .respond(status: 304, headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=60")]),
            for: "/a"
        )
        let third = await f.client.fetch(f.request("/a"))
        #expect(third.source == .revalidated && third.freshness == .fresh && third.text == "one")
        #expect(third.response?.headerFields[.age] == "0")
        // A 304 confirms the body: validated now, fetched when the 200 brought it.
        #expect(third.validatedAt == f.clock.date && third.fetchedAt == f.clock.date.addingTimeInterval(-70))
        #expect(f.origin.requests.last?.header("If-None-Match") == "\"v1\"")
        #expect(f.origin.requestCount == 2)
        let fourth = await f.client.fetch(f.request("/a"))
        #expect(fourth.source == .cache && fourth.freshness == .fresh)
        await f.stop()
    }

    @Test func protocolPolicyReplacesOn200AndKeepsTheEntryOn5xx() async throws {
        let f = try await Fixture.make()
        f.origin.enqueue(.ok("old", headers: Self.cacheable), for: "/b")
        _ = await f.client.fetch(f.request("/b"))
        f.advance(61)
        f.origin.enqueue(.respond(status: 503, body: Array("down".utf8)), for: "/b")
        let failed = await f.client.fetch(f.request("/b"))
        // No stale-if-error: the origin's 503 is the answer, classified; the cache is unchanged.
        #expect(failed.source == .network && failed.response?.status.code == 503 && failed.error?.code == .server)
        let kept = await f.client.fetch(f.request("/b"), policy: .cacheOnly)
        #expect(kept.text == "old" && kept.freshness == .stale(.expired))

        f.origin.enqueue(.ok("new", headers: Self.cacheable), for: "/b")
        let replaced = await f.client.fetch(f.request("/b"))
        #expect(replaced.source == .network && replaced.text == "new")
        #expect(await f.client.fetch(f.request("/b"), policy: .cacheOnly).text == "new")
        await f.stop()
    }

    @Test func protocolPolicyServesStaleIfErrorWhereTheResponseAllowsIt() async throws {
        let f = try await Fixture.make()
        f.origin.enqueue(.ok("kept", headers: [("Cache-Control", "max-age=10, stale-if-error=600")]), for: "/c")
        _ = await f.client.fetch(f.request("/c"))
        f.advance(20)
        f.origin.enqueue(.respond(status: 500), for: "/c")
        let result = await f.client.fetch(f.request("/c"))
        #expect(result.source == .cache && result.text == "kept")
        #expect(result.freshness == .stale(.revalidationFailed) && result.error?.code == .server)

        await f.origin.stop()
        let offline = await f.client.fetch(f.request("/c"))
        #expect(
            offline.text == "kept" && offline.freshness == .stale(.offline) && offline.error?.code == .noConnection,
            "\(String(describing: offline.error))"
        )
    }

    @Test func reloadIgnoringCacheDataAlwaysLoadsAndStores() async throws {
        let f = try await Fixture.make()
        f.origin.enqueue(.ok("one", headers: Self.cacheable), for: "/r")
        f.origin.enqueue(.ok("two", headers: Self.cacheable), for: "/r")
        _ = await f.client.fetch(f.request("/r"), policy: .reloadIgnoringCacheData)
        let second = await f.client.fetch(f.request("/r"), policy: .reloadIgnoringCacheData)
        #expect(second.source == .network && second.text == "two" && f.origin.requestCount == 2)
        #expect(f.origin.requests.last?.header("If-None-Match") == nil)
        #expect(await f.client.fetch(f.request("/r")).text == "two")
        // Failing, it does not fall back to the cache.
        await f.origin.stop()
        let failed = await f.client.fetch(f.request("/r"), policy: .networkOnly)
        #expect(failed.freshness == .missing && failed.body == nil)
        #expect(failed.error?.code == .noConnection, "\(String(describing: failed.error))")
    }

    @Test func returnCacheDataElseLoadUsesAnyAgeElseLoads() async throws {
        let f = try await Fixture.make()
        f.origin.enqueue(.ok("first", headers: [("Cache-Control", "max-age=1")]), for: "/e")
        let loaded = await f.client.fetch(f.request("/e"), policy: .returnCacheDataElseLoad)
        #expect(loaded.source == .network)
        f.advance(3600)
        let old = await f.client.fetch(f.request("/e"), policy: .returnCacheDataElseLoad)
        #expect(old.source == .cache && old.text == "first" && old.freshness == .stale(.expired))
        #expect(f.origin.requestCount == 1)
        await f.stop()
    }

    @Test func returnCacheDataDontLoadNeverTouchesTheNetwork() async throws {
        let f = try await Fixture.make()
        let missing = await f.client.fetch(f.request("/d"), policy: .returnCacheDataDontLoad)
        #expect(missing.freshness == .missing && missing.body == nil && missing.source == .none)
        #expect(missing.error?.code == .notCached && f.origin.requestCount == 0)

        f.origin.enqueue(.ok("", headers: [("Cache-Control", "max-age=5")]), for: "/d")
        _ = await f.client.fetch(f.request("/d"))
        f.advance(100)
        let empty = await f.client.fetch(f.request("/d"), policy: .returnCacheDataDontLoad)
        // Cached with an empty body is an answer, unlike never cached.
        #expect(empty.body == [] && empty.hasAnswer && empty.freshness == .stale(.expired) && empty.error == nil)
        #expect(f.origin.requestCount == 1)
        await f.stop()
    }

    @Test func aRequestThatSendsNoCacheRevalidates() async throws {
        let f = try await Fixture.make()
        f.origin.enqueue(.ok("v", headers: Self.cacheable), for: "/n")
        _ = await f.client.fetch(f.request("/n"))
        f.origin.enqueue(.respond(status: 304, headers: [("ETag", "\"v1\"")]), for: "/n")
        let result = await f.client.fetch(f.request("/n", headers: [.cacheControl: "no-cache"]))
        #expect(result.source == .revalidated && result.text == "v" && f.origin.requestCount == 2)
        await f.stop()
    }

    @Test func unsafeMethodsPassThroughAndInvalidate() async throws {
        let f = try await Fixture.make()
        f.origin.enqueue(.ok("list", headers: Self.cacheable), for: "/items")
        _ = await f.client.fetch(f.request("/items"))
        f.origin.enqueue(.respond(status: 201, body: Array("made".utf8)), for: "/items")
        let post = await f.client.fetch(f.request("/items", method: .post), body: Array("x".utf8))
        #expect(post.source == .network && post.response?.status.code == 201 && post.text == "made")
        #expect(f.origin.requests.last?.body == Array("x".utf8))
        let after = await f.client.fetch(f.request("/items"), policy: .cacheOnly)
        #expect(after.freshness == .missing)
        await f.stop()
    }

    @Test func aPerRequestHookCanVetoOrStripBeforeStoring() async throws {
        let f = try await Fixture.make()
        f.origin.enqueue(.ok("secret", headers: Self.cacheable + [("Set-Cookie", "a=b")]), for: "/h")
        let stripped = await f.client.fetch(f.request("/h"), willCache: .stripHeaders([.setCookie]))
        #expect(stripped.response?.headerFields[.setCookie] == "a=b")
        let cached = await f.client.fetch(f.request("/h"), policy: .cacheOnly)
        #expect(cached.text == "secret" && cached.response?.headerFields[.setCookie] == nil)

        f.origin.enqueue(.ok("nope", headers: Self.cacheable), for: "/v")
        _ = await f.client.fetch(f.request("/v"), willCache: .never(when: { _, _ in true }))
        #expect(await f.client.fetch(f.request("/v"), policy: .cacheOnly).freshness == .missing)
        await f.stop()
    }

    @Test func aZeroCapacityCacheIsAValidNoCache() async throws {
        let origin = try await TestOrigin.start(keepAlive: false)
        let cache = try ResponseCache(configuration: .init(memory: .init(capacityBytes: 0)))
        let client = CachingHTTPClient(transport: Fixture.transport, cache: cache)
        origin.setDefault(.ok("each time", headers: Self.cacheable), for: "/z")
        let request = HTTPRequest(method: .get, scheme: "http", authority: origin.authority, path: "/z")
        for _ in 0..<3 {
            let result = await client.fetch(request)
            #expect(result.source == .network && result.text == "each time" && result.error == nil)
        }
        #expect(origin.requestCount == 3)
        #expect(await client.fetch(request, policy: .cacheOnly).freshness == .missing)
        await origin.stop()
    }

    @Test func headIsAnsweredFromAStoredGetWithoutItsBody() async throws {
        let f = try await Fixture.make()
        f.origin.enqueue(.ok("full body", headers: Self.cacheable), for: "/g")
        _ = await f.client.fetch(f.request("/g"))
        let head = await f.client.fetch(f.request("/g", method: .head))
        #expect(head.source == .cache && head.body == [] && head.response?.status == .ok)
        #expect(head.response?.headerFields[.eTag] == "\"v1\"" && f.origin.requestCount == 1)
        await f.stop()
    }
}
#endif
