// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import CacheTiers
import Foundation
import HTTPTypes
import Testing

@testable import HTTPCaching

/// RFC 9111 §3: what a cache of each mode may store.
@Suite struct CacheRulesStorabilityTests {
    // MARK: §3 Storability

    @Test(arguments: [
        // (mode shared?, method, status, response fields, request fields, storable)
        (false, "GET", 200, [(String, String)](), [(String, String)](), true),
        (false, "POST", 200, [("Cache-Control", "max-age=60")], [], false),
        (false, "GET", 500, [], [], false),  // not heuristically cacheable, no explicit freshness
        (false, "GET", 500, [("Cache-Control", "max-age=60")], [], true),
        (false, "GET", 404, [], [], true),
        (false, "GET", 206, [("Cache-Control", "max-age=60")], [], false),  // no Content-Range: not partial content
        (false, "GET", 200, [("Cache-Control", "no-store")], [], false),
        (false, "GET", 200, [], [("Cache-Control", "no-store")], false),
        (false, "GET", 200, [("Cache-Control", "private")], [], true),
        (true, "GET", 200, [("Cache-Control", "private, max-age=60")], [], false),
        (true, "GET", 200, [("Cache-Control", "max-age=60")], [("Authorization", "Bearer x")], false),  // §3.5
        (true, "GET", 200, [("Cache-Control", "public, max-age=60")], [("Authorization", "Bearer x")], true),
        (true, "GET", 200, [("Cache-Control", "s-maxage=60")], [("Authorization", "Bearer x")], true),
        (true, "GET", 200, [("Cache-Control", "must-revalidate")], [("Authorization", "Bearer x")], true),
        (false, "GET", 200, [("Cache-Control", "max-age=60")], [("Authorization", "Bearer x")], true),
        (false, "GET", 200, [("Vary", "*")], [], false),
        (false, "GET", 299, [("Expires", "Sun, 06 Nov 2094 08:49:37 GMT")], [], true),
        // Never usable: an invalid max-age (stale at once) and nothing to revalidate or serve stale with.
        (false, "GET", 200, [("Cache-Control", "max-age=garbage")], [], false),
        (false, "GET", 200, [("Cache-Control", "max-age=-5")], [], false),
        (true, "GET", 200, [("Cache-Control", "max-age=-5")], [], false),
        (false, "GET", 200, [("Cache-Control", "max-age=-5"), ("ETag", "\"v\"")], [], true),
        (
            false, "GET", 200, [("Cache-Control", "max-age=x"), ("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT")], [],
            true
        ),
        (false, "GET", 200, [("Cache-Control", "max-age=x, stale-if-error=60")], [], true),
        (true, "GET", 200, [("Cache-Control", "max-age=x, s-maxage=60")], [], true),
        (false, "GET", 200, [("Cache-Control", "max-age=0")], [], true),  // valid 0: a client's TTLs may use it
        // Conflicting values with 0 among them are invalid freshness too (§4.2.1); an invalid
        // s-maxage is what a shared cache goes by.
        (true, "GET", 200, [("Cache-Control", "max-age=3600, max-age=0")], [], false),
        (false, "GET", 200, [("Cache-Control", "max-age=3600"), ("Cache-Control", "max-age=0")], [], false),
        (true, "GET", 200, [("Cache-Control", "max-age=3600, max-age=60")], [], true),
        (true, "GET", 200, [("Cache-Control", "max-age=0, max-age=3600"), ("ETag", "\"v\"")], [], true),
        (true, "GET", 200, [("Cache-Control", "s-maxage=-5")], [], false),
        (true, "GET", 200, [("Cache-Control", "s-maxage=60, s-maxage=0")], [], false),
        (true, "GET", 200, [("Cache-Control", "s-maxage=-5, stale-while-revalidate=30")], [], true),
        (true, "GET", 200, [("Cache-Control", "max-age=60, s-maxage=0")], [], true),  // a valid 0
    ])
    func storability(
        shared: Bool,
        method: String,
        status: Int,
        responseFields: [(String, String)],
        requestFields: [(String, String)],
        storable: Bool
    ) {
        let rules = shared ? CacheRulesTests.shared : CacheRulesTests.private_
        let request = CacheRulesTests.request(requestFields, method: HTTPRequest.Method(method)!)
        #expect(rules.isStorable(CacheRulesTests.response(status, responseFields), for: request) == storable)
    }
}

extension CacheRulesStorabilityTests {
    /// Issue 34 item 4 (RFC 9110 §15.1, RFC 9111 §4.2.2): every heuristically cacheable status,
    /// 501 among them, is stored and gets a heuristic lifetime from `Last-Modified`; a status the
    /// RFC does not list (206 aside, which is partial), such as 599 or 500, only with explicit
    /// freshness, never a heuristic.
    @Test(arguments: [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501, 500, 502, 599, 299])
    func heuristicFreshnessIsForTheListedStatuses(status: Int) {
        let listed = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501].contains(status)
        let request = CacheRulesTests.request()
        for rules in [CacheRulesTests.private_, CacheRulesTests.shared] {
            let heuristic = CacheRulesTests.response(
                status,
                [("Date", "Sun, 06 Nov 1994 08:49:37 GMT"), ("Last-Modified", "Sun, 06 Nov 1994 06:49:37 GMT")]
            )
            #expect(rules.isStorable(heuristic, for: request) == listed)
            let lifetime = rules.freshnessLifetime(of: heuristic, responseTime: CacheRulesTests.t0)
            #expect(lifetime == (listed ? 720 : 0))  // a tenth of the two hours since modified
            let explicit = CacheRulesTests.response(status, [("Cache-Control", "max-age=60")])
            #expect(rules.isStorable(explicit, for: request))
            #expect(rules.freshnessLifetime(of: explicit, responseTime: CacheRulesTests.t0) == 60)
        }
    }
}
