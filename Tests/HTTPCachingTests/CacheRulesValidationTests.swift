// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import CacheTiers
import Foundation
import HTTPTypes
import Testing

@testable import HTTPCaching

/// RFC 9111 §4.3: conditional requests and freshening with a 304.
@Suite struct CacheRulesValidationTests {
    // MARK: §4.3 Validation

    /// Linux URLCache defect: it never validated. Every stored ETag goes into If-None-Match.
    @Test func conditionalRequestCarriesEveryValidator() {
        let stored = [
            CacheRulesTests.stored([("ETag", "\"a\""), ("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT")]),
            CacheRulesTests.stored([("ETag", "W/\"b\"")]),
            CacheRulesTests.stored([("ETag", "garbage")]),
        ]
        let conditional = CacheRulesTests.private_.conditionalRequest(for: CacheRulesTests.request(), stored: stored)
        #expect(conditional.headerFields[.ifNoneMatch] == "\"a\", W/\"b\"")
        #expect(conditional.headerFields[.ifModifiedSince] == "Sun, 06 Nov 1994 08:49:37 GMT")
        // Heuristically fresh for a day (10% of 29 years, capped); stale after it.
        #expect(
            CacheRulesTests.private_.decide(CacheRulesTests.request(), stored: stored, now: CacheRulesTests.t0).action
                == .useStored
        )
        let decision = CacheRulesTests.private_.decide(
            CacheRulesTests.request(),
            stored: stored,
            now: CacheRulesTests.t0.addingTimeInterval(86_401)
        )
        #expect(decision.action == .revalidate)
        #expect(decision.request?.headerFields[.ifNoneMatch] == "\"a\", W/\"b\"")
        // Nothing to validate with: the plain request.
        #expect(
            CacheRulesTests.private_.conditionalRequest(
                for: CacheRulesTests.request(),
                stored: [CacheRulesTests.stored([])]
            ) == CacheRulesTests.request()
        )
    }

    @Test(arguments: [
        // (304 fields, selected indices) over stored: 0 "a" strong, 1 W/"b", 2 Last-Modified only
        ([("ETag", "\"a\"")], [0]),
        ([("ETag", "W/\"b\"")], [1]),
        ([("ETag", "W/\"a\"")], [0]),  // weak comparison
        ([("ETag", "\"zzz\"")], [Int]()),
        ([("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT")], [2]),
        ([(String, String)](), []),  // several stored, no validator: none
    ])
    func notModifiedSelection(fields: [(String, String)], selected: [Int]) {
        let stored = [
            CacheRulesTests.stored([("ETag", "\"a\"")]),
            CacheRulesTests.stored([("ETag", "W/\"b\"")]),
            CacheRulesTests.stored([("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT")]),
        ]
        #expect(CacheRules.selectForFreshening(stored, notModified: CacheRulesTests.response(304, fields)) == selected)
    }

    /// §4.3.4 and §3.2: a 304 replaces stored fields by name, but not Content-Length or hop-by-hop.
    @Test func notModifiedFreshensStoredFields() {
        let stored = CacheRulesTests.stored([
            ("Cache-Control", "max-age=10"), ("ETag", "\"a\""), ("Content-Length", "1"), ("X-Keep", "yes"),
            ("Age", "100"),
        ])
        let later = CacheRulesTests.t0.addingTimeInterval(100)
        let updated = CacheRules.freshened(
            stored,
            with: CacheRulesTests.response(
                304,
                [("Cache-Control", "max-age=60"), ("Content-Length", "0"), ("Connection", "close")]
            ),
            requestTime: later,
            responseTime: later
        )
        #expect(updated.response.headerFields[.cacheControl] == "max-age=60")
        #expect(updated.response.headerFields[.contentLength] == "1")
        #expect(updated.response.headerFields[.connection] == nil)
        #expect(updated.response.headerFields[.age] == nil)
        #expect(updated.response.headerFields[HTTPField.Name("X-Keep")!] == "yes")
        #expect(updated.validatedAt == later && updated.responseTime == later)
        #expect(updated.body == stored.body)
        #expect(
            CacheRulesTests.private_.decide(
                CacheRulesTests.request(),
                stored: [updated],
                now: later.addingTimeInterval(30)
            ).action
                == .useStored
        )
    }

    /// §4.3.5: a HEAD response freshens the stored GET, or shows it changed.
    @Test func headFreshening() {
        let stored = CacheRulesTests.stored([
            ("ETag", "\"a\""), ("Content-Length", "1"), ("Cache-Control", "max-age=1"),
        ])
        let same = CacheRules.freshenedByHead(
            stored,
            head: CacheRulesTests.response(200, [("ETag", "\"a\""), ("Cache-Control", "max-age=99")]),
            requestTime: CacheRulesTests.t0,
            responseTime: CacheRulesTests.t0
        )
        #expect(same?.response.headerFields[.cacheControl] == "max-age=99")
        let changed = CacheRules.freshenedByHead(
            stored,
            head: CacheRulesTests.response(200, [("ETag", "\"b\"")]),
            requestTime: CacheRulesTests.t0,
            responseTime: CacheRulesTests.t0
        )
        #expect(changed == nil)
    }
}
