// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import Foundation
import HTTPCaching
import HTTPTypes
import TestOriginSupport
import Testing

@testable import CachingClient

/// Every policy against a stale stored entry, with the origin online, offline, failing and slow.
@Suite struct PolicyMatrixTests {
    enum Condition: String, CaseIterable, Sendable { case online, offline, failing, slow }

    static let policies: [(String, CachePolicy)] = [
        ("protocol", .useProtocolCachePolicy), ("cacheFirst", .cacheFirst), ("networkFirst", .networkFirst),
        ("staleWhileRevalidate", .staleWhileRevalidate), ("cacheOnly", .cacheOnly), ("networkOnly", .networkOnly),
        ("returnCacheDataElseLoad", .returnCacheDataElseLoad),
    ]

    /// What the final answer must be: its source, its freshness and its error's code.
    static func expected(_ policy: String, _ condition: Condition) -> (FetchResult.Source, Freshness, String?) {
        let network: (FetchResult.Source, Freshness, String?) = (.network, .fresh, nil)
        let cached: (FetchResult.Source, Freshness, String?) = (.cache, .stale(.expired), nil)
        switch (policy, condition) {
        case ("cacheOnly", _), ("returnCacheDataElseLoad", _), ("cacheFirst", _): return cached
        case (_, .online), (_, .slow): return network
        case ("protocol", .offline), ("networkOnly", .offline): return (.none, .missing, "noConnection")
        case ("protocol", .failing), ("networkOnly", .failing): return (.network, .fresh, "server")
        case (_, .offline): return (.cache, .stale(.offline), "noConnection")
        default: return (.cache, .stale(.revalidationFailed), "server")
        }
    }

    @Test(arguments: policies.map(\.0), Condition.allCases)
    func finalAnswer(policy name: String, condition: Condition) async throws {
        let policy = Self.policies.first { $0.0 == name }!.1
        let f = try await Fixture.make()
        f.origin.enqueue(.ok("old", headers: [("Cache-Control", "max-age=10"), ("ETag", "\"1\"")]), for: "/m")
        let first = await f.client.fetch(f.request("/m"))
        try #require(
            first.source == .network && first.error == nil,
            "the first fetch stores \"old\": \(first.source), \(String(describing: first.error))"
        )
        f.advance(20)
        let gate = TestOrigin.Gate()
        let fresh = TestOrigin.Behavior.ok("new", headers: [("Cache-Control", "max-age=10"), ("ETag", "\"2\"")])
        switch condition {
        case .online: f.origin.setDefault(fresh, for: "/m")
        case .offline: await f.origin.stop()
        case .failing: f.origin.setDefault(.respond(status: 503), for: "/m")
        case .slow: f.origin.setDefault(.hold(gate, then: fresh), for: "/m")
        }
        let pending = Task { await f.client.fetch(f.request("/m"), policy: policy) }
        if condition == .slow, Self.expected(name, condition).0 == .network {
            await f.origin.waitForRequests(2)
        }
        gate.open()
        let result = await pending.value
        let (source, freshness, error) = Self.expected(name, condition)
        #expect(result.source == source, "\(name) \(condition)")
        #expect(result.freshness == freshness, "\(name) \(condition)")
        #expect(result.error?.code.description == error, "\(name) \(condition): \(String(describing: result.error))")
        #expect(result.isFinal)
        if source == .cache { #expect(result.text == "old" && result.age == 20) }
        if source == .network, error == nil { #expect(result.text == "new") }
        if name == "cacheOnly" || name == "returnCacheDataElseLoad" { #expect(f.origin.requestCount == 1) }
        await f.client.flights.idle()
        await f.stop()
    }
}
#endif
