// SPDX-License-Identifier: Apache-2.0

#if Proxy
import Foundation
import HTTPCaching
import NIOHTTP1
import TestOriginSupport
import Testing

@testable import CacheProxyCore

/// Issue 34's rules end to end, through a real proxy (shared mode unless said) and a real origin
/// on loopback: the rule tables are in HTTPCaching's `RequestEngineTests`,
/// `CacheRulesStorabilityTests` and `RequestEngineTests.ifModifiedSince…`.
@Suite struct CacheProxyConformanceTests {
    /// The proxy's clock at start (`ManualDate`), as an origin's `Date`.
    static let date = HTTPDate.format(Date(timeIntervalSince1970: 1_790_000_000))
    static let twoHoursEarlier = HTTPDate.format(Date(timeIntervalSince1970: 1_790_000_000 - 7_200))

    /// Item 1: a `CDN-Cache-Control` that is not a valid Structured Field Dictionary, or gives a
    /// directive a value of the wrong type, is ignored as a whole: `Cache-Control` decides.
    @Test(arguments: [("max-age=5", false), ("max-age=\"5\"", true), ("MAX-AGE=5", true), ("max-age=5.0", true)])
    func anInvalidCDNCacheControlIsIgnoredWhole(cdn: String, cacheControlDecides: Bool) async throws {
        let f = try await ProxyFixture.start()
        f.origin.setDefault(
            .ok("t", headers: [("Cache-Control", "max-age=60"), ("CDN-Cache-Control", cdn)]),
            for: "/t"
        )
        _ = try await f.send("/t")
        f.advance(10)  // past the targeted 5 s, within Cache-Control's 60 s
        #expect(try await f.send("/t").cache == (cacheControlDecides ? "HIT" : "MISS"))
        try await f.stop()
    }

    /// Item 3: a fresh 5xx the origin made explicitly cacheable is reused (RFC 9111 §3); a stored
    /// answer that allows `stale-if-error` is served in its place and stays; a private cache
    /// never stores it.
    @Test func anExplicitlyFresh503IsReusedInSharedMode() async throws {
        let f = try await ProxyFixture.start()
        let down = TestOrigin.Behavior.respond(
            status: 503,
            headers: [("Cache-Control", "max-age=60")],
            body: Array("down".utf8)
        )
        f.origin.setDefault(down, for: "/down")
        #expect(try await f.send("/down").cache == "MISS")
        let again = try await f.send("/down")
        #expect(again.status == 503 && again.body == "down" && again.cache == "HIT")
        #expect(f.origin.requestCount == 1)

        f.origin.enqueue(.ok("good", headers: [("Cache-Control", "max-age=10, stale-if-error=600")]), for: "/kept")
        f.origin.setDefault(down, for: "/kept")
        _ = try await f.send("/kept")
        f.advance(20)
        for _ in 0..<2 {
            let stale = try await f.send("/kept")
            #expect(stale.status == 200 && stale.body == "good" && stale.cache == "STALE")
        }
        try await f.stop()

        let p = try await ProxyFixture.start(mode: .private)
        p.origin.setDefault(down, for: "/down")
        for _ in 0..<2 { #expect(try await p.send("/down").cache == "MISS") }
        #expect(p.origin.requestCount == 2)
        try await p.stop()
    }

    /// Item 4: a 501 is heuristically cacheable (RFC 9110 §15.1), a 599 is not.
    @Test(arguments: [(501, true), (599, false)])
    func heuristicFreshnessFollowsTheStatus(status: Int, reused: Bool) async throws {
        let f = try await ProxyFixture.start()
        let headers = [("Date", Self.date), ("Last-Modified", Self.twoHoursEarlier)]
        f.origin.setDefault(.respond(status: status, headers: headers, body: Array("x".utf8)), for: "/h")
        _ = try await f.send("/h")
        let second = try await f.send("/h")
        #expect(second.status == status && second.cache == (reused ? "HIT" : "MISS"))
        #expect(f.origin.requestCount == (reused ? 1 : 2))
        try await f.stop()
    }

    /// Item 6: `If-Modified-Since` is answered 304 from a stored fresh response without
    /// `Last-Modified` whose `Date` is not after the condition's date (RFC 9111 §4.3.2).
    @Test func ifModifiedSinceIsAnsweredFromTheStoredDate() async throws {
        let f = try await ProxyFixture.start()
        f.origin.setDefault(.ok("dated", headers: [("Date", Self.date), ("Cache-Control", "max-age=60")]), for: "/d")
        _ = try await f.send("/d")
        let current = try await f.send("/d", headers: [("If-Modified-Since", Self.date)])
        #expect(current.status == 304 && current.body.isEmpty && current.cache == "HIT")
        let older = try await f.send("/d", headers: [("If-Modified-Since", Self.twoHoursEarlier)])
        #expect(older.status == 200 && older.body == "dated" && older.cache == "HIT")
        #expect(f.origin.requestCount == 1)
        try await f.stop()
    }

    /// Item 5: a request whose `Accept-Language` prefers the stored variant's language is
    /// answered by it (as the origin would choose); one that prefers another goes upstream.
    @Test func acceptLanguageSelectsAStoredVariantByWeight() async throws {
        let f = try await ProxyFixture.start()
        let english = TestOrigin.Behavior.ok(
            "hello",
            headers: [("Cache-Control", "max-age=60"), ("Vary", "Accept-Language"), ("Content-Language", "en")]
        )
        f.origin.setDefault(english, for: "/l")
        #expect(try await f.send("/l", headers: [("Accept-Language", "en")]).cache == "MISS")
        let preferred = try await f.send("/l", headers: [("Accept-Language", "en-GB;q=0.2, en")])
        #expect(preferred.body == "hello" && preferred.cache == "HIT")
        let french = try await f.send("/l", headers: [("Accept-Language", "fr, en;q=0.5")])
        #expect(french.cache == "MISS" && f.origin.requestCount == 2)
        try await f.stop()
    }

    /// Item 7: a `POST`'s explicitly fresh answer whose `Content-Location` is its own URI
    /// answers the next `GET` of that URI (RFC 9110 §9.3.3); one for another URI does not.
    @Test func aPOSTsAnswerForItsOwnURIAnswersTheNextGET() async throws {
        let f = try await ProxyFixture.start()
        f.origin.setDefault(.ok("old", headers: [("Cache-Control", "max-age=60")]), for: "/p")
        #expect(try await f.send("/p").body == "old")  // stored, then invalidated by the POST
        f.origin.enqueue(
            .ok("made", headers: [("Cache-Control", "max-age=60"), ("Content-Location", "/p")]),
            for: "/p"
        )
        let posted = try await f.send("/p", method: .POST, body: "{}")
        #expect(posted.status == 200 && posted.body == "made")
        let get = try await f.send("/p")
        #expect(get.body == "made" && get.cache == "HIT")
        #expect(f.origin.requestCount == 2)

        f.origin.enqueue(
            .ok("elsewhere", headers: [("Cache-Control", "max-age=60"), ("Content-Location", "/other")]),
            for: "/p"
        )
        _ = try await f.send("/p", method: .POST, body: "{}")
        let after = try await f.send("/p")  // invalidated, not replaced
        #expect(after.body == "old" && after.cache == "MISS")
        try await f.stop()
    }
}
#endif
