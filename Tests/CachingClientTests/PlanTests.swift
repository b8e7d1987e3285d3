// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import Foundation
import HTTPCaching
import HTTPTypes
import Testing

@testable import CachingClient

/// What a call does, decided without I/O from (request, lookup, policy, freshness class, now):
/// every policy against stored responses of known age, without a socket.
@Suite struct PlanTests {
    /// A transport no plan may reach.
    struct NoNetwork: HTTPTransport {
        func send(_ request: HTTPRequest, body: [UInt8]?, timeout: Duration) async throws -> HTTPTransportResponse {
            Issue.record("a plan touched the network")
            throw CancellationError()
        }
    }

    static let stored = Date(timeIntervalSince1970: 1_800_000_000)

    struct Row: Sendable, CustomTestStringConvertible {
        var policy: CachePolicy
        var cacheControl: String?
        var age: Int
        var freshness: FreshnessClass = .http
        var requestCacheControl: String?
        var expected: String

        var testDescription: String {
            "\(policy) \(cacheControl ?? "nothing stored") age \(age) \(freshness) → \(expected)"
        }
    }

    /// The client's answers from the engine's plans, one row per kind of plan (the engine's own
    /// table, every policy, is `RequestEngineTests` in HTTPCachingTests).
    static let rows: [Row] = [
        Row(policy: .useProtocolCachePolicy, cacheControl: "max-age=60", age: 10, expected: "fresh"),
        Row(policy: .useProtocolCachePolicy, cacheControl: "max-age=60", age: 100, expected: "revalidate"),
        Row(
            policy: .useProtocolCachePolicy,
            cacheControl: "max-age=60",
            age: 100,
            requestCacheControl: "only-if-cached",
            expected: "missing"
        ),
        Row(policy: .cacheFirst, cacheControl: "max-age=60", age: 100, expected: "stale+refresh"),
        Row(policy: .staleWhileRevalidate, cacheControl: "max-age=60", age: 100, expected: "stale, then network"),
        Row(policy: .cacheOnly, cacheControl: "max-age=60", age: 1000, expected: "stale"),
        Row(policy: .cacheOnly, cacheControl: nil, age: 0, expected: "missing"),
        Row(policy: .networkOnly, cacheControl: "max-age=60", age: 10, expected: "fetch"),
    ]

    static func kind(_ plan: Plan) -> String {
        switch plan {
        case .answer(let result):
            switch result.freshness {
            case .missing: "missing"
            case .fresh: "fresh"
            default: "stale"
            }
        case .answerAndRefresh: "stale+refresh"
        case .answerThenNetwork: "stale, then network"
        case .network(let step): step.request.headerFields[.ifNoneMatch] != nil ? "revalidate" : "fetch"
        }
    }

    @Test(arguments: rows)
    func planFollowsThePolicy(_ row: Row) async throws {
        let cache = try ResponseCache(configuration: .init(now: { Self.stored }))
        let client = CachingHTTPClient(transport: NoNetwork(), cache: cache)
        var request = HTTPRequest(method: .get, scheme: "https", authority: "api.example", path: "/items")
        if let cacheControl = row.cacheControl {
            let response = HTTPResponse(status: .ok, headerFields: [.cacheControl: cacheControl, .eTag: "\"v1\""])
            let cached = CachedResponse(
                response: response,
                body: [1],
                requestTime: Self.stored,
                responseTime: Self.stored
            )
            #expect(try await cache.storeCachedResponse(cached, for: request))
        }
        if let directives = row.requestCacheControl { request.headerFields[.cacheControl] = directives }
        let lookup = await cache.lookup(request)
        let call = Call(request, nil, row.policy, row.freshness, nil)
        let plan = client.plan(call, lookup, now: Self.stored.addingTimeInterval(TimeInterval(row.age)))
        #expect(Self.kind(plan) == row.expected)
    }
}
#endif
