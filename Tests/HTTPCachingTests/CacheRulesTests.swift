// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import CacheTiers
import Foundation
import HTTPTypes
import Testing

@testable import HTTPCaching

/// The RFC 9111 rules, table by table; each table names its section.
@Suite struct CacheRulesTests {
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)
    static let private_ = CacheRules(mode: .private)
    static let shared = CacheRules(mode: .shared)

    static func fields(_ pairs: [(String, String)]) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in pairs { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return fields
    }

    static func request(_ pairs: [(String, String)] = [], method: HTTPRequest.Method = .get) -> HTTPRequest {
        HTTPRequest(
            method: method,
            scheme: "https",
            authority: "h.example",
            path: "/a/b?x=1",
            headerFields: fields(pairs)
        )
    }

    static func response(_ status: Int = 200, _ pairs: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: .init(code: status), headerFields: fields(pairs))
    }

    static func stored(_ pairs: [(String, String)], status: Int = 200, receivedAt: Date = t0) -> CachedResponse {
        CachedResponse(
            response: response(status, pairs),
            body: [1],
            requestTime: receivedAt,
            responseTime: receivedAt
        )
    }

    // MARK: §5.2 Cache-Control

    @Test(arguments: [
        ("max-age=60", 60, nil as Int?, false),
        ("MAX-AGE=60, No-Store", 60, nil, true),
        ("max-age=\"60\"", 60, nil, false),  // quoted form accepted
        ("max-age=60, max-age=10", 10, nil, false),  // duplicates: the smallest
        ("max-age=abc", 0, nil, false),  // invalid: stale (§4.2.1)
        ("max-age=-5", 0, nil, false),
        ("max-age=", 0, nil, false),
        ("max-age=99999999999999999999", 1 << 31, nil, false),  // §1.2.2
        ("s-maxage=30, max-age=60", 60, 30, false),
        ("nothing-to-see-here, max-age=5", 5, nil, false),  // unknown directives ignored
        ("private=\"set-cookie, x-a\", max-age=7", 7, nil, false),  // comma inside quotes
        (" , ,max-age=8,, ", 8, nil, false),
    ])
    func cacheControlParsing(value: String, maxAge: Int, sharedMaxAge: Int?, noStore: Bool) {
        let directives = CacheControl(parsing: value)
        #expect(directives.maxAge == maxAge)
        #expect(directives.sharedMaxAge == sharedMaxAge)
        #expect(directives.noStore == noStore)
    }

    @Test func cacheControlFieldNamesAndRequestDirectives() {
        let response = CacheControl(parsing: "private=\"Set-Cookie, X-A\", no-cache=\"Authorization\"")
        #expect(response.isPrivate && response.privateFieldNames == ["set-cookie", "x-a"])
        #expect(response.noCache && response.noCacheFieldNames == ["authorization"])
        let request = CacheControl(parsing: "max-stale, min-fresh=10, only-if-cached, stale-if-error=5")
        #expect(request.maxStale == .unlimited && request.minFresh == 10 && request.onlyIfCached)
        #expect(request.staleIfError == 5)
        #expect(CacheControl(parsing: "max-stale=20, max-stale").maxStale == .seconds(20))
        #expect(CacheControl(parsing: "max-stale=x").maxStale == nil)
        // Several lines are one list.
        let lines = CacheControl(Self.fields([("Cache-Control", "max-age=9"), ("Cache-Control", "must-revalidate")]))
        #expect(lines.maxAge == 9 && lines.mustRevalidate)
    }

    /// §5.4: Pragma: no-cache counts for a request only without Cache-Control.
    @Test func pragmaNoCache() {
        #expect(CacheControl(Self.fields([("Pragma", "no-cache")]), isRequest: true).noCache)
        #expect(!CacheControl(Self.fields([("Pragma", "no-cache")]), isRequest: false).noCache)
        #expect(
            !CacheControl(Self.fields([("Pragma", "no-cache"), ("Cache-Control", "max-age=5")]), isRequest: true)
                .noCache
        )
        #expect(!CacheControl(Self.fields([("Pragma", "foo")]), isRequest: true).noCache)
    }

    // MARK: RFC 9110 §5.6.7 HTTP dates

    @Test(arguments: [
        ("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777 as Double?),  // IMF-fixdate
        ("Sunday, 06-Nov-94 08:49:37 GMT", 784_111_777),  // obsolete RFC 850
        ("Sun Nov  6 08:49:37 1994", 784_111_777),  // asctime
        ("Thu, 01 Jan 1970 00:00:00 GMT", 0),
        ("Tue, 29 Feb 2028 23:59:59 GMT", 1_835_481_599),
        ("Wed, 29 Feb 2027 00:00:00 GMT", nil),  // not a leap year
        ("Sun, 06 Nov 1994 24:00:00 GMT", nil),
        ("Sun, 06 Nov 1994 08:49:37 UTC", nil),
        ("Sun, 6 Nov 1994 08:49:37 GMT", nil),
        ("0", nil),
        ("", nil),
        ("Sun, 06 Nov 19944 08:49:37 GMT", nil),
    ])
    func httpDates(text: String, seconds: Double?) {
        let now = Date(timeIntervalSince1970: 1_790_000_000)
        #expect(HTTPDate.parse(text, now: now)?.timeIntervalSince1970 == seconds)
    }

    @Test func httpDateFormatRoundTrips() {
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 784_111_777)) == "Sun, 06 Nov 1994 08:49:37 GMT")
        for seconds in stride(from: 0.0, to: 4_000_000_000, by: 86_399 * 37) {
            let date = Date(timeIntervalSince1970: seconds)
            #expect(HTTPDate.parse(HTTPDate.format(date)) == date)
        }
    }

    // MARK: §4.2 Freshness lifetime

    @Test(arguments: [
        // (shared?, status, fields, lifetime seconds)
        (false, 200, [("Cache-Control", "max-age=60")], 60.0),
        (false, 200, [("Cache-Control", "s-maxage=30, max-age=60")], 60),
        (true, 200, [("Cache-Control", "s-maxage=30, max-age=60")], 30),
        (false, 200, [("Date", "Tue, 14 Nov 2023 22:13:20 GMT"), ("Expires", "Tue, 14 Nov 2023 22:23:20 GMT")], 600),
        (false, 200, [("Expires", "0")], 0),  // invalid: already expired
        (false, 200, [("Cache-Control", "max-age=5"), ("Expires", "0")], 5),  // max-age wins
        (
            false, 200,
            [
                ("Date", "Tue, 14 Nov 2023 22:13:20 GMT"), ("Expires", "Tue, 14 Nov 2023 22:23:20 GMT"),
                ("Expires", "0"),
            ],
            0
        ),  // conflicting lines: stale
        // §4.2.2 heuristic: 10% of Date - Last-Modified (1000 s before) = 100 s.
        (
            false, 200,
            [("Date", "Tue, 14 Nov 2023 22:13:20 GMT"), ("Last-Modified", "Tue, 14 Nov 2023 21:56:40 GMT")], 100
        ),
        // capped at a day
        (
            false, 200,
            [("Date", "Tue, 14 Nov 2023 22:13:20 GMT"), ("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT")], 86_400
        ),
        // not heuristically cacheable
        (
            false, 500,
            [("Date", "Tue, 14 Nov 2023 22:13:20 GMT"), ("Last-Modified", "Tue, 14 Nov 2023 21:56:40 GMT")], 0
        ),
        // Linux URLCache defect: no freshness information is not "fresh forever".
        (false, 200, [(String, String)](), 0),
    ])
    func freshnessLifetime(shared: Bool, status: Int, fields: [(String, String)], lifetime: TimeInterval) {
        let rules = shared ? Self.shared : Self.private_
        #expect(rules.freshnessLifetime(of: Self.response(status, fields), responseTime: Self.t0) == lifetime)
    }

    // MARK: §4.2.3 Age

    @Test(arguments: [
        // (Date offset from response time, Age header, request→response delay, now offset, age)
        (0.0, nil as String?, 0.0, 0.0, 0.0),
        (0, nil, 0, 30, 30),  // resident time
        (-10, nil, 0, 0, 10),  // apparent age from Date
        (0, "100", 2, 5, 107),  // corrected age value: Age + delay, plus resident time
        (-300, "100", 2, 0, 300),  // the larger of apparent and corrected
        (0, "abc", 0, 0, 0),  // invalid Age ignored (§5.1)
        (0, "50, 70", 0, 0, 50),  // first member of a list
    ])
    func currentAge(
        dateOffset: TimeInterval,
        age: String?,
        delay: TimeInterval,
        nowOffset: TimeInterval,
        expected: TimeInterval
    ) {
        var pairs = [("Date", HTTPDate.format(Self.t0.addingTimeInterval(dateOffset)))]
        if let age { pairs.append(("Age", age)) }
        var stored = Self.stored(pairs)
        stored.requestTime = Self.t0.addingTimeInterval(-delay)
        #expect(CacheRules.currentAge(of: stored, now: Self.t0.addingTimeInterval(nowOffset)) == expected)
    }

    // MARK: §4.2.4, §5.2, RFC 5861 Decisions

    @Test(arguments: [
        // (shared?, response fields, request fields, age at decision, action)
        (false, [("Cache-Control", "max-age=60")], [(String, String)](), 10.0, CacheDecision.Action.useStored),
        (false, [("Cache-Control", "max-age=60")], [], 61, .revalidate),
        (false, [("Cache-Control", "max-age=60")], [("Cache-Control", "no-cache")], 10, .revalidate),
        (false, [("Cache-Control", "max-age=60")], [("Pragma", "no-cache")], 10, .revalidate),
        (false, [("Cache-Control", "max-age=60, no-cache")], [], 10, .revalidate),
        (false, [("Cache-Control", "max-age=60")], [("Cache-Control", "max-age=5")], 10, .revalidate),
        (false, [("Cache-Control", "max-age=60")], [("Cache-Control", "min-fresh=55")], 10, .revalidate),
        (false, [("Cache-Control", "max-age=60")], [("Cache-Control", "max-stale")], 1000, .useStale),
        (false, [("Cache-Control", "max-age=60")], [("Cache-Control", "max-stale=30")], 80, .useStale),
        (false, [("Cache-Control", "max-age=60")], [("Cache-Control", "max-stale=30")], 100, .revalidate),
        (false, [("Cache-Control", "max-age=60, must-revalidate")], [("Cache-Control", "max-stale")], 80, .revalidate),
        (true, [("Cache-Control", "max-age=60, proxy-revalidate")], [("Cache-Control", "max-stale")], 80, .revalidate),
        (false, [("Cache-Control", "max-age=60, proxy-revalidate")], [("Cache-Control", "max-stale")], 80, .useStale),
        (false, [("Cache-Control", "max-age=60, stale-while-revalidate=30")], [], 80, .useStaleAndRevalidate),
        (false, [("Cache-Control", "max-age=60, stale-while-revalidate=30")], [], 100, .revalidate),
        (false, [("Cache-Control", "max-age=60")], [("Cache-Control", "only-if-cached")], 100, .gatewayTimeout),
        (false, [("Cache-Control", "max-age=60")], [("Cache-Control", "only-if-cached")], 10, .useStored),
        (false, [], [], 0, .revalidate),  // no freshness information: never fresh
    ])
    func decisions(
        shared: Bool,
        responseFields: [(String, String)],
        requestFields: [(String, String)],
        age: TimeInterval,
        action: CacheDecision.Action
    ) {
        let rules = shared ? Self.shared : Self.private_
        let decision = rules.decide(
            Self.request(requestFields),
            stored: [Self.stored(responseFields)],
            now: Self.t0.addingTimeInterval(age)
        )
        #expect(decision.action == action)
        #expect(decision.age == age)
    }

    @Test func decisionsWithoutCandidatesAndForUnsafeMethods() {
        #expect(Self.private_.decide(Self.request(), stored: [], now: Self.t0).action == .fetch)
        let offline = Self.request([("Cache-Control", "only-if-cached")])
        #expect(Self.private_.decide(offline, stored: [], now: Self.t0).action == .gatewayTimeout)
        let post = Self.request(method: .post)
        #expect(
            Self.private_.decide(post, stored: [Self.stored([("Cache-Control", "max-age=60")])], now: Self.t0).action
                == .fetch
        )
    }

    /// RFC 5861 §4: stale-if-error, from the response or the request, unless must-revalidate.
    @Test(arguments: [
        ("max-age=60, stale-if-error=100", [(String, String)](), 150.0, true),
        ("max-age=60, stale-if-error=100", [], 170, false),
        ("max-age=60", [("Cache-Control", "stale-if-error=200")], 150, true),
        ("max-age=60, stale-if-error=100, must-revalidate", [], 150, false),
        ("max-age=60", [], 30, true),  // still fresh
        ("max-age=60", [], 70, false),
    ])
    func staleIfError(cacheControl: String, requestFields: [(String, String)], age: TimeInterval, allowed: Bool) {
        let decision = Self.private_.decide(
            Self.request(requestFields),
            stored: [Self.stored([("Cache-Control", cacheControl)])],
            now: Self.t0.addingTimeInterval(age)
        )
        #expect(decision.mayServeStaleOnError == allowed)
    }

    // MARK: §4.4 Invalidation

    @Test(arguments: [
        ("POST", 201, [("Location", "/a/new")], ["/a/b?x=1", "/a/new"]),
        ("PUT", 200, [("Content-Location", "c")], ["/a/b?x=1", "/a/c"]),
        ("DELETE", 204, [("Location", "https://H.EXAMPLE:443/z")], ["/a/b?x=1", "/z"]),
        ("POST", 303, [("Location", "https://other.example/z")], ["/a/b?x=1"]),  // another origin
        ("POST", 200, [("Location", "//other.example/z")], ["/a/b?x=1"]),
        ("PATCH", 500, [("Location", "/z")], [String]()),  // error status: nothing
        ("GET", 200, [("Location", "/z")], []),  // safe method
        ("FROB", 200, [(String, String)](), ["/a/b?x=1"]),  // unknown method: unsafe
    ])
    func invalidation(method: String, status: Int, fields: [(String, String)], paths: [String]) {
        let targets = CacheRules.invalidatedTargets(
            of: Self.request(method: HTTPRequest.Method(method)!),
            response: Self.response(status, fields)
        )
        #expect(targets.map { $0.path ?? "" } == paths)
        #expect(targets.allSatisfy { $0.authority == "h.example" && $0.method == .get })
    }

    // MARK: Malformed input

    /// 100,000 random and malformed values of the fields the rules read: no crash, and every
    /// decision stays within its contract.
    @Test func fuzzedHeadersNeverCrash() {
        var generator = SplitMix64(seed: 2026)
        let alphabet = Array(
            "max-age=s-maxage,no-cache\"private public must-revalidate;=,\" 0123456789-W/*\t\u{0}é".utf8
        )
        let pieces = [
            "max-age=", "s-maxage=", "no-cache", "no-store", "private", "public", "must-revalidate", "max-stale",
            "min-fresh=", "stale-while-revalidate=", "stale-if-error=", "only-if-cached", "\"", ",", "=", " ",
            "99999999999999999999999", "-1", "W/\"x\"", "*", "Sun, 06 Nov 1994 08:49:37 GMT", "GMT", "Nov",
        ]
        func randomValue() -> String {
            var text = ""
            for _ in 0..<Int(generator.next() % 8) {
                if generator.next() % 3 == 0 {
                    text += String(decoding: [alphabet[Int(generator.next() % UInt64(alphabet.count))]], as: UTF8.self)
                } else {
                    text += pieces[Int(generator.next() % UInt64(pieces.count))]
                }
            }
            return text
        }
        let names = ["Cache-Control", "Expires", "Date", "Age", "Vary", "ETag", "Last-Modified", "Pragma"]
        for round in 0..<100_000 / names.count {
            var responsePairs: [(String, String)] = []
            var requestPairs: [(String, String)] = []
            for name in names {
                if generator.next() % 2 == 0 { responsePairs.append((name, randomValue())) }
                if generator.next() % 4 == 0 { requestPairs.append((name, randomValue())) }
            }
            let stored = Self.stored(responsePairs)
            let rules = round % 2 == 0 ? Self.private_ : Self.shared
            let now = Self.t0.addingTimeInterval(TimeInterval(generator.next() % 100_000))
            let decision = rules.decide(Self.request(requestPairs), stored: [stored], now: now)
            #expect(decision.age >= 0 && decision.freshnessLifetime >= 0)
            _ = rules.isStorable(stored.response, for: Self.request(requestPairs))
            _ = CacheRules.selectForFreshening([stored], notModified: Self.response(304, responsePairs))
            _ = CacheRules.ageHeaderValue(of: stored, now: now)
        }
    }
}
