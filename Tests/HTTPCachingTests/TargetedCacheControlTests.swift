// SPDX-License-Identifier: Apache-2.0

import CacheTiers
import Foundation
import HTTPTypes
import Testing

@testable import HTTPCaching

/// RFC 9213 targeted cache control, and RFC 9111 §5.2.2.3 `must-understand`.
@Suite struct TargetedCacheControlTests {
    typealias T = CacheRulesTests

    @Test(arguments: [
        // (response fields, shared storable, shared lifetime, private lifetime)
        ([("Cache-Control", "max-age=10"), ("CDN-Cache-Control", "max-age=600")], true, 600.0, 10.0),
        ([("Cache-Control", "no-store"), ("CDN-Cache-Control", "max-age=600")], true, 600.0, 0.0),
        ([("Cache-Control", "max-age=600"), ("CDN-Cache-Control", "no-store")], false, 0.0, 600.0),
        ([("Cache-Control", "max-age=600"), ("CDN-Cache-Control", "private")], false, 0.0, 600.0),
        ([("Cache-Control", "s-maxage=600"), ("CDN-Cache-Control", "max-age=5")], true, 5.0, 0.0),
        ([("Cache-Control", "max-age=60"), ("CDN-Cache-Control", "  ")], true, 60.0, 60.0),  // empty: ignored
        ([("cdn-cache-control", "max-age=30")], true, 30.0, 0.0),
    ])
    func cdnCacheControlWinsInASharedCache(
        fields: [(String, String)],
        sharedStorable: Bool,
        sharedLifetime: Double,
        privateLifetime: Double
    ) {
        let response = T.response(200, fields)
        #expect(T.shared.isStorable(response, for: T.request()) == sharedStorable)
        #expect(T.shared.freshnessLifetime(of: response, responseTime: T.t0) == sharedLifetime)
        #expect(T.private_.freshnessLifetime(of: response, responseTime: T.t0) == privateLifetime)
    }

    /// Issue 34 item 1 (RFC 9213 §2.1, RFC 8941): a targeted field that is not a valid Structured
    /// Field Dictionary, or gives a known directive a value of the wrong type, is ignored as a
    /// whole, and Cache-Control (`max-age=60`) decides; a valid one is obeyed.
    @Test(arguments: [
        ("MAX-AGE=30", 60.0),  // keys are lowercase
        ("max-age=\"30\"", 60), ("max-age=30.5", 60), ("max-age=thirty", 60), ("no-store=1", 60),
        ("max-age=30, no-store=\"yes\"", 60), ("max-age=(30 40)", 60), ("max-age=30,,", 60),
        ("max-age=99999999999999999", 60), ("no-store, max-age=1;a=\"x", 60),
        // Valid: a Boolean false is the directive's absence; parameters and unknown directives of
        // any type are ignored; `none` (RFC 9213 §3.1) is valid and says nothing.
        ("no-store=?0, max-age=30", 30), ("max-age=30;x=1, ext=\"v\", y=(1 2)", 30), ("none", 0),
    ])
    func anInvalidTargetedFieldIsIgnoredAsAWhole(cdn: String, sharedLifetime: Double) {
        let response = T.response(200, [("Cache-Control", "max-age=60"), ("CDN-Cache-Control", cdn)])
        #expect(T.shared.freshnessLifetime(of: response, responseTime: T.t0) == sharedLifetime)
        #expect(T.shared.isStorable(response, for: T.request()))
        #expect(T.private_.freshnessLifetime(of: response, responseTime: T.t0) == 60)
    }

    @Test(arguments: ["private", "private=\"set-cookie\"", "no-store", "no-store=?1"])
    func aValidTargetedFieldKeepsASharedCacheOut(cdn: String) {
        let response = T.response(200, [("Cache-Control", "max-age=60"), ("CDN-Cache-Control", cdn)])
        #expect(!T.shared.isStorable(response, for: T.request()))
        #expect(T.private_.isStorable(response, for: T.request()))
    }

    @Test func cdnNoCacheMakesASharedCacheRevalidate() {
        let stored = T.stored([
            ("Cache-Control", "max-age=600"), ("CDN-Cache-Control", "max-age=600, no-cache"), ("ETag", "\"a\""),
        ])
        #expect(T.shared.decide(T.request(), stored: [stored], now: T.t0).action == .revalidate)
        #expect(T.private_.decide(T.request(), stored: [stored], now: T.t0).action == .useStored)
    }

    @Test func theTargetListIsConfigurableAndOrdered() {
        let surrogate = HTTPField.Name("Surrogate-Control")!
        let rules = CacheRules(mode: .shared, targetedCacheControl: [surrogate, .cdnCacheControl])
        let both = T.response(200, [("Surrogate-Control", "max-age=7"), ("CDN-Cache-Control", "max-age=9")])
        #expect(rules.freshnessLifetime(of: both, responseTime: T.t0) == 7)
        let cdnOnly = T.response(200, [("CDN-Cache-Control", "max-age=9"), ("Cache-Control", "max-age=1")])
        #expect(rules.freshnessLifetime(of: cdnOnly, responseTime: T.t0) == 9)
        let none = CacheRules(mode: .shared, targetedCacheControl: [])
        #expect(none.freshnessLifetime(of: cdnOnly, responseTime: T.t0) == 1)
    }

    /// Through a ResponseCache: the facts parsed at store time carry the shared view.
    @Test func aSharedResponseCacheServesByCDNCacheControl() async throws {
        let shared = try ResponseCache(configuration: .init(mode: .shared))
        let privateCache = try ResponseCache(configuration: .init(mode: .private))
        let request = ResponseCacheTests.request("https://example.com/cdn")
        let response = ResponseCacheTests.response(
            "x",
            [(.cacheControl, "max-age=0, must-revalidate"), (.cdnCacheControl, "max-age=600"), (.eTag, "\"v\"")]
        )
        for cache in [shared, privateCache] { _ = try await cache.storeCachedResponse(response, for: request) }
        let later = ResponseCacheTests.requestTime.addingTimeInterval(60)
        #expect(await shared.decision(for: request, now: later).action == .useStored)
        #expect(await privateCache.decision(for: request, now: later).action == .revalidate)
    }

    @Test(arguments: [
        // (status, response Cache-Control, storable)
        (200, "no-store, must-understand, max-age=60", true),
        (404, "must-understand, no-store, max-age=60", true),
        (299, "must-understand, no-store, max-age=60", false),  // a status this cache does not know
        (299, "must-understand, max-age=60", false),
        (200, "no-store, max-age=60", false),
    ])
    func mustUnderstandStoresUnderstoodStatusesDespiteNoStore(status: Int, cacheControl: String, storable: Bool) {
        let response = T.response(status, [("Cache-Control", cacheControl)])
        for rules in [T.shared, T.private_] {
            #expect(rules.isStorable(response, for: T.request()) == storable)
        }
    }

    @Test func interimResponsesAreNeverStored() {
        for status in [100, 103] {
            let response = T.response(status, [("Cache-Control", "max-age=60, public")])
            #expect(T.shared.reasonNotToStore(response, for: T.request()) == "interim status \(status)")
        }
    }

    @Test(arguments: [
        // (request Cache-Control, response Cache-Control, age, action)
        ("no-cache", "max-age=600, immutable", 10.0, CacheDecision.Action.useStored),
        ("max-age=0", "max-age=600, immutable", 10.0, .useStored),
        ("no-cache", "max-age=600", 10.0, .revalidate),
        ("no-cache", "max-age=600, immutable", 700.0, .revalidate),  // stale: validated as usual
        ("no-cache", "max-age=600, immutable, no-cache", 10.0, .revalidate),
    ])
    func immutableAnswersAReloadWhileFresh(
        requestCacheControl: String,
        responseCacheControl: String,
        age: Double,
        action: CacheDecision.Action
    ) {
        let stored = T.stored([("Cache-Control", responseCacheControl), ("ETag", "\"a\"")])
        let request = T.request([("Cache-Control", requestCacheControl)])
        for rules in [T.shared, T.private_] {
            #expect(rules.decide(request, stored: [stored], now: T.t0.addingTimeInterval(age)).action == action)
        }
    }
}
