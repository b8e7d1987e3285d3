// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import HTTPTypes
import Testing

@testable import HTTPCaching

/// The request engine's rules in one table each, without a cache, a socket or a clock: what a
/// read does (every policy against stored responses of known age), what an origin's answer does
/// to the cache, and when a stored answer satisfies a conditional request. Each door also has its
/// end-to-end tests (the client's PlanTests and fetch tests, the middleware's, the proxy's).
@Suite struct RequestEngineTests {
    static let stored = Date(timeIntervalSince1970: 1_800_000_000)
    static let interactive = TTLRule(softTTL: .seconds(30), hardTTL: .seconds(300))
    static let gated = TTLRule(softTTL: .seconds(5), validationWindow: .seconds(30))
    static let engine = RequestEngine(rules: CacheRules(mode: .private))

    struct Row: Sendable, CustomTestStringConvertible {
        var policy: ReadPolicy
        var cacheControl: String?
        var age: Int
        var ttl: TTLRule = .http
        var requestCacheControl: String?
        var expected: String

        var testDescription: String {
            "\(policy) \(cacheControl ?? "nothing stored") age \(age) → \(expected)"
        }
    }

    static let rows: [Row] = [
        Row(policy: .useProtocol, cacheControl: "max-age=60", age: 10, expected: "fresh"),
        Row(policy: .useProtocol, cacheControl: "max-age=60", age: 100, expected: "revalidate"),
        Row(
            policy: .useProtocol,
            cacheControl: "max-age=60, stale-while-revalidate=60",
            age: 100,
            expected: "stale+refresh"
        ),
        Row(policy: .useProtocol, cacheControl: "max-age=60, no-cache", age: 10, expected: "revalidate"),
        Row(
            policy: .useProtocol,
            cacheControl: "max-age=60",
            age: 100,
            requestCacheControl: "max-stale=100",
            expected: "expired"
        ),
        Row(
            policy: .useProtocol,
            cacheControl: "max-age=60",
            age: 100,
            requestCacheControl: "only-if-cached",
            expected: "504 stale"
        ),
        Row(policy: .useProtocol, cacheControl: nil, age: 0, expected: "fetch"),
        Row(policy: .useProtocol, cacheControl: nil, age: 0, requestCacheControl: "only-if-cached", expected: "504"),
        Row(policy: .useProtocol, cacheControl: "max-age=0", age: 10, ttl: interactive, expected: "fresh"),
        Row(policy: .useProtocol, cacheControl: "max-age=0", age: 100, ttl: interactive, expected: "stale+refresh"),
        Row(
            policy: .useProtocol,
            cacheControl: "max-age=3600",
            age: 400,
            ttl: interactive,
            expected: "revalidate fallback"
        ),
        Row(
            policy: .useProtocol,
            cacheControl: "max-age=3600",
            age: 40,
            ttl: gated,
            expected: "revalidate gated fallback"
        ),
        Row(policy: .cacheFirst, cacheControl: "max-age=60", age: 10, expected: "fresh"),
        Row(policy: .cacheFirst, cacheControl: "max-age=60", age: 100, expected: "stale+refresh"),
        Row(policy: .cacheFirst, cacheControl: nil, age: 0, expected: "fetch"),
        Row(policy: .staleWhileRevalidate, cacheControl: "max-age=60", age: 10, expected: "fresh"),
        Row(policy: .staleWhileRevalidate, cacheControl: "max-age=60", age: 100, expected: "stale, then network"),
        Row(policy: .cacheThenNetwork, cacheControl: "max-age=60", age: 10, expected: "stale, then network"),
        Row(policy: .networkFirst(timeout: nil), cacheControl: "max-age=60", age: 10, expected: "revalidate fallback"),
        Row(policy: .cacheOnly, cacheControl: "max-age=60", age: 1000, expected: "expired"),
        Row(policy: .cacheOnly, cacheControl: nil, age: 0, expected: "passive missing"),
        Row(policy: .returnCacheDataDontLoad, cacheControl: nil, age: 0, expected: "passive missing"),
        Row(policy: .returnCacheDataElseLoad, cacheControl: "max-age=60", age: 1000, expected: "expired"),
        Row(policy: .returnCacheDataElseLoad, cacheControl: nil, age: 0, expected: "fetch"),
        Row(policy: .networkOnly, cacheControl: "max-age=60", age: 10, expected: "fetch"),
    ]

    static func describe(_ plan: RequestEngine.Plan) -> String {
        func exchange(_ exchange: RequestEngine.Exchange) -> String {
            var text = exchange.request.headerFields[.ifNoneMatch] != nil ? "revalidate" : "fetch"
            if exchange.isGated { text += " gated" }
            if exchange.fallback { text += " fallback" }
            return text
        }
        switch plan {
        case .answer(let offer):
            switch offer.state {
            case .fresh: return "fresh"
            case .expired: return "expired"
            case .markedStale: return "marked stale"
            case .notValidated: return "not validated"
            }
        case .answerAndRefresh: return "stale+refresh"
        case .answerThenForward(let offer, _): return offer.isFinal ? "final, then network" : "stale, then network"
        case .forward(let step): return exchange(step)
        case .missing(.passive): return "passive missing"
        case .missing(.onlyIfCached(let somethingStored)): return somethingStored ? "504 stale" : "504"
        }
    }

    @Test(arguments: rows)
    func aReadFollowsItsPolicy(_ row: Row) throws {
        var request = HTTPRequest(method: .get, scheme: "https", authority: "api.example", path: "/items")
        if let directives = row.requestCacheControl { request.headerFields[.cacheControl] = directives }
        let lookup: ResponseLookup
        if let cacheControl = row.cacheControl {
            let response = HTTPResponse(status: .ok, headerFields: [.cacheControl: cacheControl, .eTag: "\"v1\""])
            let cached = CachedResponse(
                response: response,
                body: [1],
                requestTime: Self.stored,
                responseTime: Self.stored
            )
            lookup = .answering(request, with: cached)
        } else {
            lookup = ResponseLookup(request: request, key: nil)
        }
        let read = RequestEngine.Read(request, policy: row.policy, ttl: row.ttl)
        let plan = Self.engine.plan(read, lookup: lookup, now: Self.stored.addingTimeInterval(TimeInterval(row.age)))
        #expect(Self.describe(plan) == row.expected)
    }

    /// A closed cache: the origin answers alone, unless the policy is passive.
    @Test func aClosedCacheForwardsOrIsMissing() {
        let request = HTTPRequest(method: .get, scheme: "https", authority: "api.example", path: "/items")
        let closed = ResponseLookup(request: request, key: nil, isRead: false, isCacheClosed: true)
        let active = Self.engine.plan(.init(request, policy: .cacheFirst), lookup: closed, now: Self.stored)
        #expect(Self.describe(active) == "fetch")
        let passive = Self.engine.plan(.init(request, policy: .cacheOnly), lookup: closed, now: Self.stored)
        guard case .missing(.passive(closed: true)) = passive else {
            Issue.record("a passive read of a closed cache is \(Self.describe(passive))")
            return
        }
    }

    @Test(arguments: [
        // status, method, conditional sent, expected
        (304, "GET", true, RequestEngine.Outcome.freshen),
        (304, "GET", false, .store),  // the caller's own conditions: its answer
        (200, "GET", false, .store),
        (404, "HEAD", false, .store),
        (500, "GET", true, .failed),
        (503, "GET", false, .failed),
        (429, "GET", false, .failed),
        (204, "POST", false, .invalidate),
        (303, "DELETE", false, .invalidate),
        (404, "PUT", false, .keep),
        (502, "POST", false, .failed),
    ])
    func anOriginsAnswerChangesTheCacheByItsStatus(
        status: Int,
        method: String,
        conditional: Bool,
        expected: RequestEngine.Outcome
    ) {
        let original = HTTPRequest(method: HTTPRequest.Method(method)!, scheme: "https", authority: "a", path: "/x")
        var sent = original
        if conditional { sent.headerFields[.ifNoneMatch] = "\"v1\"" }
        let response = HTTPResponse(status: .init(code: status))
        let engine = RequestEngine(rules: CacheRules(mode: .private))
        #expect(engine.outcome(of: response, sent: sent, original: original) == expected)
    }

    /// Issue 34 item 3: a shared cache stores a failure the origin made explicitly fresh, as any
    /// answer (RFC 9111 §3; Varnish and nginx do), unless a stored response may answer stale in
    /// its place; a private cache, a heuristic or zero lifetime, or an unsafe method: failed.
    @Test(arguments: [
        (503, "shared", "max-age=60", false, RequestEngine.Outcome.store),
        (500, "shared", "s-maxage=30", false, .store),
        (502, "shared", "expires", false, .store),
        (429, "shared", "max-age=5", false, .store),
        (500, "shared", "max-age=60", true, .failed),  // stale-if-error: the stored answer stays
        (501, "private", "", false, .store),  // an answer, heuristically cacheable (RFC 9110 §15.1)
        (503, "shared", "max-age=0", false, .failed),
        (503, "shared", "", false, .failed),
        (503, "shared", "s-maxage=0, max-age=60", false, .failed),
        (503, "private", "max-age=60", false, .failed),
        (503, "private", "s-maxage=60", false, .failed),
    ])
    func aSharedCacheStoresAnExplicitlyFreshFailure(
        status: Int,
        mode: String,
        cacheControl: String,
        mayAnswerStale: Bool,
        expected: RequestEngine.Outcome
    ) {
        let request = HTTPRequest(method: .get, scheme: "https", authority: "a", path: "/x")
        var fields = HTTPFields()
        if cacheControl == "expires" {
            fields[.date] = "Sun, 06 Nov 1994 08:49:37 GMT"
            fields[.expires] = "Sun, 06 Nov 1994 08:50:37 GMT"
        } else if !cacheControl.isEmpty {
            fields[.cacheControl] = cacheControl
        }
        let engine = RequestEngine(rules: CacheRules(mode: mode == "shared" ? .shared : .private))
        let response = HTTPResponse(status: .init(code: status), headerFields: fields)
        #expect(
            engine.outcome(of: response, sent: request, original: request, mayAnswerStale: mayAnswerStale) == expected
        )
        var post = request
        post.method = .post
        #expect(engine.outcome(of: response, sent: post, original: post) == (status == 501 ? .keep : .failed))
    }

    @Test(arguments: [
        ("If-None-Match", "\"a\"", true), ("If-None-Match", "W/\"a\"", true), ("If-None-Match", "*", true),
        ("If-None-Match", "\"b\", \"a\"", true), ("If-None-Match", "\"b\"", false),
        ("If-None-Match", "garbage", false), ("If-None-Match", " \"b\" ,W/\"a\"", true),
        ("If-Modified-Since", "Sun, 06 Nov 1994 08:49:37 GMT", true),
        ("If-Modified-Since", "Sun, 06 Nov 1994 08:49:36 GMT", false), ("If-Modified-Since", "garbage", false),
    ])
    func aConditionalRequestIsEvaluatedOnceForEveryDoor(name: String, value: String, notModified: Bool) {
        let response = HTTPResponse(
            status: .ok,
            headerFields: [.eTag: "\"a\"", .lastModified: "Sun, 06 Nov 1994 08:49:37 GMT"]
        )
        var request = HTTPRequest(method: .get, scheme: "http", authority: "o", path: "/")
        request.headerFields[HTTPField.Name(name)!] = value
        #expect(CacheRules.isNotModified(request, response) == notModified)
        // Only a 200 is answered 304 from storage, and only for GET and HEAD.
        #expect(
            !CacheRules.isNotModified(request, HTTPResponse(status: .notFound, headerFields: response.headerFields))
        )
        request.method = .post
        #expect(!CacheRules.isNotModified(request, response))
    }

    /// RFC 9111 §4.3.2: without `Last-Modified`, the stored response's `Date` answers an
    /// `If-Modified-Since` (issue 34, item 6).
    @Test(arguments: [
        ("Sun, 06 Nov 1994 08:49:37 GMT", true), ("Sun, 06 Nov 1994 09:00:00 GMT", true),
        ("Sun, 06 Nov 1994 08:49:36 GMT", false),
    ])
    func ifModifiedSinceIsAnsweredFromDateWithoutLastModified(since: String, notModified: Bool) {
        let response = HTTPResponse(status: .ok, headerFields: [.date: "Sun, 06 Nov 1994 08:49:37 GMT"])
        var request = HTTPRequest(method: .get, scheme: "http", authority: "o", path: "/")
        request.headerFields[.ifModifiedSince] = since
        #expect(CacheRules.isNotModified(request, response) == notModified)
        // Neither date: never "not modified".
        #expect(!CacheRules.isNotModified(request, HTTPResponse(status: .ok)))
    }
}

extension RequestEngineTests {
    /// Issue 34 item 7 (RFC 9110 §9.3.3, RFC 9111 §4): a `POST`'s 2xx with explicit freshness
    /// and a `Content-Location` that is its target URI is stored for a later `GET` of it.
    @Test(arguments: [
        // (method, status, Content-Location, Cache-Control, stored for a GET)
        ("POST", 200, "/a/p?x=1", "max-age=60", true),
        ("POST", 201, "https://a/a/p?x=1", "max-age=60", true),
        ("POST", 200, "p?x=1", "max-age=60", true),  // relative to /a/
        ("POST", 200, "HTTPS://A/a/p?x=1", "max-age=60", true),
        ("POST", 200, "/a/p", "max-age=60", false),  // not the target: the query differs
        ("POST", 200, "/a/q?x=1", "max-age=60", false),
        ("POST", 200, "https://b/a/p?x=1", "max-age=60", false),  // another origin
        ("POST", 200, "", "max-age=60", false),
        ("POST", 200, "/a/p?x=1", "", false),  // no explicit freshness
        ("POST", 200, "/a/p?x=1", "max-age=0", false),
        ("POST", 200, "/a/p?x=1", "s-maxage=60", false),  // private: s-maxage is not its freshness
        ("POST", 303, "/a/p?x=1", "max-age=60", false),
        ("PUT", 200, "/a/p?x=1", "max-age=60", false),
    ])
    func aPOSTsAnswerForItsOwnURIIsStoredForAGET(
        method: String,
        status: Int,
        contentLocation: String,
        cacheControl: String,
        stored: Bool
    ) throws {
        var fields: HTTPFields = [.contentType: "application/json", .accept: "text/plain"]
        fields[.contentLength] = "2"
        let post = HTTPRequest(
            method: HTTPRequest.Method(method)!,
            scheme: "https",
            authority: "a",
            path: "/a/p?x=1",
            headerFields: fields
        )
        var responseFields = HTTPFields()
        if !contentLocation.isEmpty { responseFields[.contentLocation] = contentLocation }
        if !cacheControl.isEmpty { responseFields[.cacheControl] = cacheControl }
        let response = HTTPResponse(status: .init(code: status), headerFields: responseFields)
        let engine = RequestEngine(rules: CacheRules(mode: .private))
        let outcome = engine.outcome(of: response, sent: post, original: post)
        #expect((outcome.storedAs != nil) == stored)
        if let get = outcome.storedAs {
            #expect(get.method == .get && get.path == post.path && get.authority == "a")
            #expect(get.headerFields[.accept] == "text/plain")
            #expect(get.headerFields[.contentType] == nil && get.headerFields[.contentLength] == nil)
            // What a GET of that URI then gets, by the rules: storable.
            #expect(engine.rules.isStorable(response, for: get))
        } else if (200..<400).contains(status) {
            #expect(outcome == .invalidate)
        }
    }
}
