// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import CacheTestSupport
import CacheTiers
import Foundation
import HTTPCaching
import HTTPTypes
import Synchronization
import TestOriginSupport
import Testing

@testable import CachingClient

/// ``Coalescing/byCacheKey`` (issue 31): requests for one URL wait on one exchange whatever their
/// other fields; the answer reaches a waiter only through the cache, by its own request.
@Suite struct CoalescingByKeyTests {
    static func make(mode: ResponseCache.Mode = .shared) async throws -> Fixture {
        try await Fixture.make(keepAlive: true, mode: mode) { $0.coalescing = .byCacheKey }
    }

    /// Fetches `requests` concurrently once the first is at the origin, opens `gate` once every
    /// one waits on a flight, and returns the answers in the order of `requests`.
    static func fetchTogether(_ f: Fixture, _ requests: [HTTPRequest], gate: TestOrigin.Gate) async -> [FetchResult] {
        await withTaskGroup(of: (Int, FetchResult).self) { group in
            group.addTask { (0, await f.client.fetch(requests[0])) }
            await f.origin.waitForRequests(1)
            for (index, request) in requests.enumerated().dropFirst() {
                group.addTask { (index, await f.client.fetch(request)) }
            }
            while f.client.flights.waiterCount < requests.count { await Task.yield() }
            gate.open()
            var answers = [FetchResult?](repeating: nil, count: requests.count)
            for await (index, answer) in group { answers[index] = answer }
            return answers.map { $0! }
        }
    }

    @Test func aThousandClientsWithTheirOwnUserAgentsMakeOneRequest() async throws {
        let f = try await Self.make()
        let gate = TestOrigin.Gate()
        f.origin.enqueue(.hold(gate, then: .ok("cold", headers: [("Cache-Control", "max-age=60")])), for: "/cold")
        let requests = (0..<1_000).map { f.request("/cold", headers: [.userAgent: "client/\($0)"]) }
        let answers = await Self.fetchTogether(f, requests, gate: gate)
        #expect(answers.allSatisfy { $0.text == "cold" && $0.freshness.isFresh })
        #expect(answers[0].source == .network && answers.dropFirst().allSatisfy { $0.source == .cache })
        #expect(f.origin.requestCount == 1)
        await f.stop()
    }

    @Test func waitersOfAnotherVariantAskAgainOncePerVariant() async throws {
        let f = try await Self.make()
        let gate = TestOrigin.Gate()
        let vary = [("Cache-Control", "max-age=60"), ("Vary", "Accept-Language")]
        f.origin.enqueue(.hold(gate, then: .ok("en", headers: vary + [("Content-Language", "en")])), for: "/v")
        f.origin.enqueue(.ok("fr", headers: vary + [("Content-Language", "fr")]), for: "/v")
        let languages = ["en", "en", "fr", "en", "fr", "fr"]
        let requests = languages.enumerated().map { index, language in
            f.request("/v", headers: [.acceptLanguage: language, .userAgent: "client/\(index)"])
        }
        let answers = await Self.fetchTogether(f, requests, gate: gate)
        #expect(answers.map(\.text) == languages)
        #expect(f.origin.requestCount == 2)
        await f.stop()
    }

    @Test func aPrivateAnswerGoesOnlyToTheRequestThatAskedForIt() async throws {
        let f = try await Self.make()
        let gate = TestOrigin.Gate()
        f.origin.enqueue(
            .hold(gate, then: .ok("for client 0", headers: [("Cache-Control", "private, max-age=60")])),
            for: "/me"
        )
        f.origin.setDefault(.ok("asked alone", headers: [("Cache-Control", "private, max-age=60")]), for: "/me")
        let requests = (0..<3).map { f.request("/me", headers: [.userAgent: "client/\($0)"]) }
        let answers = await Self.fetchTogether(f, requests, gate: gate)
        #expect(answers.map(\.text) == ["for client 0", "asked alone", "asked alone"])
        #expect(f.origin.requestCount == 3)
        // Hit-for-miss: the URL's requests no longer wait on one another's exchanges for a while.
        let at = f.cache.configuration.now().timeIntervalSinceReferenceDate
        let key = try #require(ResponseCache.primaryKey(for: requests[0])?.string)
        #expect(f.client.uncacheableKeys.withLock { $0.isMarked(key, at: at) })
        #expect(!f.client.uncacheableKeys.withLock { $0.isMarked(key, at: at + UncacheableKeys.duration) })
        await f.stop()
    }

    @Test func anErrorAnswerReachesWaitersAsAFailureWithoutItsContent() async throws {
        let f = try await Self.make()
        let gate = TestOrigin.Gate()
        f.origin.enqueue(.hold(gate, then: .respond(status: 503, body: Array("client 0's error page".utf8))), for: "/e")
        let requests = (0..<3).map { f.request("/e", headers: [.userAgent: "client/\($0)"]) }
        let answers = await Self.fetchTogether(f, requests, gate: gate)
        #expect(answers[0].response?.status.code == 503 && answers[0].text == "client 0's error page")
        #expect(answers.dropFirst().allSatisfy { $0.response == nil && $0.error?.code == .server })
        #expect(f.origin.requestCount == 1)
        await f.stop()
    }

    @Test func identicalRequestsCoalescingStaysTheDefault() async throws {
        let f = try await Fixture.make(keepAlive: true, mode: .shared)
        #expect(f.client.configuration.coalescing == .identicalRequests)
        f.origin.setDefault(.ok("x", headers: [("Cache-Control", "max-age=60")]), for: "/d")
        let gate = TestOrigin.Gate()
        f.origin.enqueue(.hold(gate, then: .ok("x", headers: [("Cache-Control", "max-age=60")])), for: "/d")
        async let first = f.client.fetch(f.request("/d", headers: [.userAgent: "a"]))
        await f.origin.waitForRequests(1)
        let second = await f.client.fetch(f.request("/d", headers: [.userAgent: "b"]))
        gate.open()
        _ = await first
        #expect(second.source == .network && f.origin.requestCount == 2)
        await f.stop()
    }
}
#endif
