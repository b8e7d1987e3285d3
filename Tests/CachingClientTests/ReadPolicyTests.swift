// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import CacheTestSupport
import Foundation
import HTTPCaching
import HTTPTypes
import TestOriginSupport
import Testing

@testable import CachingClient

extension FreshnessClass {
    static let shortInteractive = try! FreshnessClass("interactive", softTTL: .seconds(30), hardTTL: .seconds(300))
}

/// The offline-first read policies and TTLs: online, offline, slow and failing origins.
@Suite struct ReadPolicyTests {
    static let noStore: [(String, String)] = [("Cache-Control", "max-age=0"), ("ETag", "\"e\"")]

    /// Stores `body` for `path` through a network fetch.
    func prime(_ f: Fixture, _ path: String, _ body: String, headers: [(String, String)] = noStore) async {
        f.origin.enqueue(.ok(body, headers: headers), for: path)
        _ = await f.client.fetch(f.request(path), policy: .networkOnly)
    }

    @Test func cacheFirstAnswersFreshFromCacheAndRefreshesStaleBehind() async throws {
        let f = try await Fixture.make()
        await prime(f, "/cf", "one")
        // HTTP says stale at once (max-age=0), but the soft TTL keeps it fresh for 30 s.
        f.advance(10)
        let fresh = await f.client.fetch(f.request("/cf"), policy: .cacheFirst, freshness: .shortInteractive)
        #expect(fresh.source == .cache && fresh.freshness == .fresh && fresh.text == "one")
        #expect(fresh.expiresAt == f.clock.epoch.addingTimeInterval(30))

        f.advance(40)
        f.origin.enqueue(.ok("two", headers: Self.noStore), for: "/cf")
        let stale = await f.client.fetch(f.request("/cf"), policy: .cacheFirst, freshness: .shortInteractive)
        #expect(stale.source == .cache && stale.freshness == .stale(.expired) && stale.text == "one")
        await f.client.flights.idle()
        #expect(f.origin.requestCount == 2)
        let refreshed = await f.client.fetch(f.request("/cf"), policy: .cacheFirst, freshness: .shortInteractive)
        #expect(refreshed.text == "two" && refreshed.freshness == .fresh)
        await f.stop()
    }

    @Test func cacheFirstPastTheHardTTLLoadsFirstAndFallsBackOffline() async throws {
        let f = try await Fixture.make()
        await prime(f, "/h", "old")
        f.advance(301)
        f.origin.enqueue(.respond(status: 304, headers: [("ETag", "\"e\"")]), for: "/h")
        let revalidated = await f.client.fetch(f.request("/h"), policy: .cacheFirst, freshness: .shortInteractive)
        #expect(revalidated.source == .revalidated && revalidated.freshness == .fresh && revalidated.text == "old")

        f.advance(301)
        await f.origin.stop()
        let offline = await f.client.fetch(f.request("/h"), policy: .cacheFirst, freshness: .shortInteractive)
        #expect(offline.source == .cache && offline.text == "old")
        #expect(offline.freshness == .stale(.offline) && offline.error?.code == .noConnection)
        let never = await f.client.fetch(f.request("/never"), policy: .cacheFirst)
        #expect(never.freshness == .missing && never.body == nil && never.error?.code == .noConnection)
    }

    @Test func networkFirstPrefersTheNetworkAndFallsBackOnFailure() async throws {
        let f = try await Fixture.make()
        await prime(f, "/nf", "one", headers: [("Cache-Control", "max-age=600")])
        f.origin.enqueue(.ok("two", headers: [("Cache-Control", "max-age=600")]), for: "/nf")
        let online = await f.client.fetch(f.request("/nf"), policy: .networkFirst)
        #expect(online.source == .network && online.text == "two")

        f.origin.enqueue(.respond(status: 502), for: "/nf")
        let failing = await f.client.fetch(f.request("/nf"), policy: .networkFirst)
        #expect(failing.source == .cache && failing.text == "two" && failing.freshness == .stale(.revalidationFailed))
        #expect(failing.error?.code == .server && failing.error?.response?.status.code == 502)
        await f.stop()
    }

    @Test func networkFirstAnswersFromCacheWhenTheOriginIsSlow() async throws {
        let f = try await Fixture.make()
        await prime(f, "/slow", "cached")
        let gate = TestOrigin.Gate()
        f.origin.enqueue(.hold(gate, then: .ok("late", headers: Self.noStore)), for: "/slow")
        async let pending = f.client.fetch(f.request("/slow"), policy: .networkFirst(timeout: .seconds(2)))
        await f.origin.waitForRequests(2)
        await f.clock.waitForSleepers(1)
        f.clock.advance(by: .seconds(2))
        let result = await pending
        #expect(result.source == .cache && result.text == "cached")
        #expect(result.freshness == .stale(.revalidationFailed) && result.error?.code == .timeout)
        // The request goes on and updates the cache when the origin answers.
        gate.open()
        await f.client.flights.idle()
        #expect(await f.client.fetch(f.request("/slow"), policy: .cacheOnly).text == "late")
        await f.stop()
    }

    @Test func staleWhileRevalidateYieldsTheCacheThenTheNetwork() async throws {
        let f = try await Fixture.make()
        await prime(f, "/swr", "old")
        f.advance(60)
        f.origin.enqueue(.ok("new", headers: Self.noStore), for: "/swr")
        var answers: [FetchResult] = []
        for await answer in f.client.results(for: f.request("/swr"), policy: .staleWhileRevalidate) {
            answers.append(answer)
        }
        #expect(answers.count == 2)
        #expect(answers[0].source == .cache && answers[0].text == "old" && !answers[0].isFinal)
        #expect(answers[0].freshness == .stale(.expired))
        #expect(answers[1].source == .network && answers[1].text == "new" && answers[1].isFinal)

        // Fresh by the soft TTL: one answer, no network.
        var fresh: [FetchResult] = []
        for await answer in f.client.results(
            for: f.request("/swr"),
            policy: .staleWhileRevalidate,
            freshness: .shortInteractive
        ) {
            fresh.append(answer)
        }
        #expect(fresh.count == 1 && fresh[0].isFinal && fresh[0].source == .cache && f.origin.requestCount == 2)

        // Past the hard TTL: no intermediate answer.
        f.advance(400)
        f.origin.enqueue(.ok("newer", headers: Self.noStore), for: "/swr")
        var hard: [FetchResult] = []
        for await answer in f.client.results(
            for: f.request("/swr"),
            policy: .staleWhileRevalidate,
            freshness: .shortInteractive
        ) {
            hard.append(answer)
        }
        #expect(hard.count == 1 && hard[0].source == .network && hard[0].text == "newer")
        await f.stop()
    }

    @Test func staleWhileRevalidateOfflineEndsWithTheStaleAnswerAndTheError() async throws {
        let f = try await Fixture.make()
        await prime(f, "/o", "kept")
        f.advance(60)
        await f.origin.stop()
        var answers: [FetchResult] = []
        for await answer in f.client.results(for: f.request("/o"), policy: .staleWhileRevalidate) {
            answers.append(answer)
        }
        #expect(answers.count == 2 && !answers[0].isFinal && answers[1].isFinal)
        #expect(answers[1].text == "kept" && answers[1].freshness == .stale(.offline))
        #expect(answers[1].error?.code == .noConnection)
        // The one-call API returns the final answer.
        let final = await f.client.fetch(f.request("/o"), policy: .staleWhileRevalidate)
        #expect(final.isFinal && final.freshness == .stale(.offline))
    }

    @Test func cacheOnlyAnswersAtAnyAgeAndSaysHowFresh() async throws {
        let f = try await Fixture.make()
        await prime(f, "/co", "x", headers: [("Cache-Control", "max-age=100")])
        f.advance(50)
        let fresh = await f.client.fetch(f.request("/co"), policy: .cacheOnly)
        #expect(fresh.freshness == .fresh && fresh.expiresAt == f.clock.date.addingTimeInterval(50))
        f.advance(500)
        let stale = await f.client.fetch(f.request("/co"), policy: .cacheOnly)
        #expect(stale.freshness == .stale(.expired) && stale.text == "x" && f.origin.requestCount == 1)
        await f.stop()
    }

    @Test func protocolPolicyWithTTLsServesWithinSoftRefreshesBehindWithinHard() async throws {
        let f = try await Fixture.make()
        await prime(f, "/t", "a")
        f.advance(20)
        #expect(await f.client.fetch(f.request("/t"), freshness: .shortInteractive).source == .cache)
        f.advance(20)
        f.origin.enqueue(.respond(status: 304, headers: [("ETag", "\"e\"")]), for: "/t")
        let behind = await f.client.fetch(f.request("/t"), freshness: .shortInteractive)
        #expect(behind.source == .cache && behind.freshness == .stale(.expired))
        await f.client.flights.idle()
        let after = await f.client.fetch(f.request("/t"), freshness: .shortInteractive)
        #expect(after.freshness == .fresh && after.validatedAt == f.clock.date)
        await f.stop()
    }
}
#endif
