// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CacheTestSupport
import HTTPCaching
import NIOHTTP1
import TestOriginSupport
import Testing

@testable import CacheProxyCore

/// Freshness, validation, Vary, invalidation and HEAD through a real proxy on loopback.
@Suite struct CacheProxyFreshnessTests {
    static let fresh: [(String, String)] = [("Cache-Control", "max-age=60"), ("X-Origin", "yes")]

    @Test func hitsReplayTheStoredHeadersWithAGrowingAge() async throws {
        let f = try await ProxyFixture.start()
        f.origin.setDefault(.ok("fresh", headers: Self.fresh), for: "/a")
        let miss = try await f.send("/a")
        #expect(miss.status == 200 && miss.body == "fresh" && miss.cache == "MISS" && miss.age == nil)

        f.advance(5)
        let hit = try await f.send("/a")
        #expect(hit.status == 200 && hit.body == "fresh" && hit.cache == "HIT" && hit.age == 5)
        #expect(hit.headers["X-Origin"] == ["yes"] && hit.headers["Cache-Control"] == ["max-age=60"])
        f.advance(10)
        #expect(try await f.send("/a").age == 15)
        #expect(f.origin.requestCount == 1)

        f.advance(50)  // 65 s old, 60 s fresh, no validator: fetched again
        let refetched = try await f.send("/a")
        #expect(refetched.cache == "MISS" && refetched.age == nil && f.origin.requestCount == 2)
        #expect(f.counter(ProxyMetrics.hitsLabel) == 2 && f.counter(ProxyMetrics.missesLabel) == 2)
        try await f.stop()
    }

    @Test func aLargeBodyIsServedFromOneBufferAndNeverAfterItsRecordIsReplaced() async throws {
        let f = try await ProxyFixture.start()
        let old = String(repeating: "a", count: 65_536)
        let new = String(repeating: "b", count: 65_536)
        f.origin.enqueue(.ok(old, headers: [("Cache-Control", "max-age=10")]), for: "/big")
        f.origin.enqueue(.ok(new, headers: [("Cache-Control", "max-age=10")]), for: "/big")
        #expect(try await f.send("/big").cache == "MISS")
        for _ in 0..<2 {
            let hit = try await f.send("/big")
            #expect(hit.status == 200 && hit.cache == "HIT" && hit.body == old)
            #expect(hit.headers["Content-Length"] == ["65536"])
        }
        let ranged = try await f.send("/big", headers: [("Range", "bytes=65530-")])
        #expect(ranged.status == 206 && ranged.body == "aaaaaa")
        f.advance(20)  // stale, no validator: fetched again, the record replaced
        let refetched = try await f.send("/big")
        #expect(refetched.cache == "MISS" && refetched.body == new)
        for _ in 0..<2 {
            let hit = try await f.send("/big")
            #expect(hit.cache == "HIT" && hit.body == new)
        }
        #expect(f.origin.requestCount == 2)
        try await f.stop()
    }

    @Test func aStaleResponseIsRevalidatedWith304AndServedWithItsBody() async throws {
        let f = try await ProxyFixture.start()
        f.origin.enqueue(.ok("v1", headers: [("Cache-Control", "max-age=10"), ("ETag", "\"v1\"")]), for: "/v")
        _ = try await f.send("/v")
        f.advance(20)
        f.origin.enqueue(
            .respond(status: 304, headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=10")]),
            for: "/v"
        )
        let revalidated = try await f.send("/v")
        #expect(revalidated.status == 200 && revalidated.body == "v1" && revalidated.cache == "REVALIDATED")
        #expect(revalidated.age == 0)
        #expect(f.origin.requests.last?.header("If-None-Match") == "\"v1\"")
        f.advance(4)
        let hit = try await f.send("/v")
        #expect(hit.cache == "HIT" && hit.age == 4 && hit.body == "v1" && f.origin.requestCount == 2)
        #expect(f.counter(ProxyMetrics.revalidationsLabel) == 1)

        // The user's own conditional request is answered by the cache with a 304.
        let notModified = try await f.send("/v", headers: [("If-None-Match", "W/\"v0\", \"v1\"")])
        #expect(notModified.status == 304 && notModified.body.isEmpty && notModified.cache == "HIT")
        #expect(notModified.headers["ETag"] == ["\"v1\""] && f.origin.requestCount == 2)
        let changed = try await f.send("/v", headers: [("If-None-Match", "\"v0\"")])
        #expect(changed.status == 200 && changed.body == "v1")
        try await f.stop()
    }

    @Test func varyKeepsOneVariantPerRequestFieldValue() async throws {
        let f = try await ProxyFixture.start()
        let headers = [("Cache-Control", "max-age=60"), ("Vary", "Accept-Language")]
        f.origin.enqueue(.ok("hello", headers: headers), for: "/greeting")
        f.origin.enqueue(.ok("bonjour", headers: headers), for: "/greeting")
        let english = try await f.send("/greeting", headers: [("Accept-Language", "en")])
        let french = try await f.send("/greeting", headers: [("Accept-Language", "fr")])
        #expect(english.body == "hello" && french.body == "bonjour" && f.origin.requestCount == 2)
        #expect(f.origin.requests.last?.header("Accept-Language") == "fr")
        let englishAgain = try await f.send("/greeting", headers: [("Accept-Language", "en")])
        let frenchAgain = try await f.send("/greeting", headers: [("Accept-Language", "fr")])
        #expect(englishAgain.body == "hello" && englishAgain.cache == "HIT")
        #expect(frenchAgain.body == "bonjour" && frenchAgain.cache == "HIT" && f.origin.requestCount == 2)
        try await f.stop()
    }

    @Test func aPostPassesThroughAndInvalidatesTheStoredResponse() async throws {
        let f = try await ProxyFixture.start()
        f.origin.enqueue(.ok("old", headers: Self.fresh), for: "/doc")
        _ = try await f.send("/doc")
        #expect(try await f.send("/doc").cache == "HIT")

        f.origin.enqueue(.respond(status: 201, body: Array("created".utf8)), for: "/doc")
        let posted = try await f.send("/doc", method: .POST, body: "x=1")
        #expect(posted.status == 201 && posted.body == "created" && posted.cache == "MISS")
        let post = f.origin.requests.last
        #expect(post?.method == "POST" && post?.body == Array("x=1".utf8))

        f.origin.enqueue(.ok("new", headers: Self.fresh), for: "/doc")
        let after = try await f.send("/doc")
        #expect(after.body == "new" && after.cache == "MISS" && f.origin.requestCount == 3)
        try await f.stop()
    }

    @Test func headIsAnsweredFromAStoredGet() async throws {
        let f = try await ProxyFixture.start()
        f.origin.enqueue(.ok("twelve bytes", headers: Self.fresh), for: "/h")
        _ = try await f.send("/h")
        f.advance(3)
        let head = try await f.send("/h", method: .HEAD)
        #expect(head.status == 200 && head.body.isEmpty && head.cache == "HIT" && head.age == 3)
        #expect(head.headers["Content-Length"] == ["12"] && f.origin.requestCount == 1)
        try await f.stop()
    }

    @Test func requestFieldsThatMeanNothingToACacheAreIgnored() async throws {
        let f = try await ProxyFixture.start()
        f.origin.setDefault(.ok("p", headers: Self.fresh), for: "/p")
        let meaningless = [("Pragma", "foo"), ("Cache-Control", "nothing-to-see-here")]
        _ = try await f.send("/p", headers: meaningless)
        // Forwarded unchanged on the miss…
        #expect(f.origin.requests.last?.header("Pragma") == "foo")
        #expect(f.origin.requests.last?.header("Cache-Control") == "nothing-to-see-here")
        // …and not read as no-cache on the next request.
        #expect(try await f.send("/p", headers: meaningless).cache == "HIT")
        #expect(try await f.send("/p", headers: [("Pragma", "foo")]).cache == "HIT")
        #expect(f.origin.requestCount == 1)
        // A real no-cache does go to the origin.
        #expect(try await f.send("/p", headers: [("Cache-Control", "no-cache")]).cache == "MISS")
        #expect(f.origin.requestCount == 2)
        try await f.stop()
    }

    @Test func theCacheStatusHeaderIsOffByDefault() async throws {
        let f = try await ProxyFixture.start(statusHeader: false)
        f.origin.setDefault(.ok("x", headers: Self.fresh), for: "/x")
        _ = try await f.send("/x")
        let hit = try await f.send("/x")
        #expect(hit.headers["X-Cache"].isEmpty && hit.age == 0 && f.origin.requestCount == 1)
        try await f.stop()
    }

    @Test(arguments: [ResponseCache.Mode.shared, .private])
    func anOnDiskCacheAnswersAfterARestart(mode: ResponseCache.Mode) async throws {
        try await withTemporaryDirectory("proxy") { directory in
            let first = try await ProxyFixture.start(mode: mode, directory: directory.path)
            first.origin.enqueue(.ok("kept on disk", headers: Self.fresh), for: "/d")
            #expect(try await first.send("/d").cache == "MISS")
            try await first.stopProxy()

            let second = try await ProxyFixture.start(mode: mode, directory: directory.path, origin: first.origin)
            second.advance(7)
            let hit = try await second.send("/d")
            #expect(hit.body == "kept on disk" && hit.cache == "HIT" && hit.age == 7)
            #expect(second.origin.requestCount == 1)
            try await second.stop()
        }
    }
}
#endif
