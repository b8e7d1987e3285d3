// SPDX-License-Identifier: Apache-2.0

#if Proxy
import HTTPCaching
import HTTPTypes
import NIOHTTP1
import TestOriginSupport
import Testing

@testable import CacheProxyCore

/// Shared and private mode: what each may store (RFC 9111 §3, §3.5, §4.2.1).
@Suite struct CacheProxyModeTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var mode: ResponseCache.Mode
        var requestHeaders: [(String, String)]
        var cacheControl: String
        /// Whether the second request is a hit.
        var stored: Bool
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "shared: Authorization, max-age",
            mode: .shared,
            requestHeaders: auth,
            cacheControl: "max-age=60",
            stored: false
        ),
        Case(
            name: "shared: Authorization, public",
            mode: .shared,
            requestHeaders: auth,
            cacheControl: "public, max-age=60",
            stored: true
        ),
        Case(
            name: "shared: Authorization, s-maxage",
            mode: .shared,
            requestHeaders: auth,
            cacheControl: "s-maxage=60",
            stored: true
        ),
        Case(
            name: "shared: Authorization, must-revalidate",
            mode: .shared,
            requestHeaders: auth,
            cacheControl: "max-age=60, must-revalidate",
            stored: true
        ),
        Case(
            name: "private: Authorization, max-age",
            mode: .private,
            requestHeaders: auth,
            cacheControl: "max-age=60",
            stored: true
        ),
        Case(
            name: "shared: private",
            mode: .shared,
            requestHeaders: [],
            cacheControl: "private, max-age=60",
            stored: false
        ),
        Case(
            name: "private: private",
            mode: .private,
            requestHeaders: [],
            cacheControl: "private, max-age=60",
            stored: true
        ),
        Case(
            name: "shared: s-maxage over max-age=0",
            mode: .shared,
            requestHeaders: [],
            cacheControl: "max-age=0, s-maxage=60",
            stored: true
        ),
        Case(
            name: "private: max-age=0 despite s-maxage",
            mode: .private,
            requestHeaders: [],
            cacheControl: "max-age=0, s-maxage=60",
            stored: false
        ),
        Case(
            name: "shared: no-store",
            mode: .shared,
            requestHeaders: [],
            cacheControl: "no-store, max-age=60",
            stored: false
        ),
    ]
    static let auth = [("Authorization", "Bearer secret")]

    @Test(arguments: cases)
    func storesOnlyWhatTheModeAllows(_ c: Case) async throws {
        let f = try await ProxyFixture.start(mode: c.mode)
        f.origin.setDefault(.ok("answer", headers: [("Cache-Control", c.cacheControl)]), for: "/me")
        let first = try await f.send("/me", headers: c.requestHeaders)
        #expect(first.status == 200 && first.cache == "MISS")
        #expect(f.origin.requests.last?.header("Authorization") == c.requestHeaders.first?.1)
        f.advance(1)
        let second = try await f.send("/me", headers: c.requestHeaders)
        #expect(second.body == "answer" && (second.cache == "HIT") == c.stored)
        #expect(f.origin.requestCount == (c.stored ? 1 : 2))
        try await f.stop()
    }
}

/// RFC 9213 through a real proxy: the targeted field wins over Cache-Control in shared mode.
@Suite struct CacheProxyTargetedCacheControlTests {
    @Test func cdnCacheControlDecidesForTheProxy() async throws {
        let f = try await ProxyFixture.start()
        f.origin.setDefault(
            .ok("cdn", headers: [("Cache-Control", "no-store"), ("CDN-Cache-Control", "max-age=600")]),
            for: "/cdn"
        )
        f.origin.setDefault(
            .ok("no", headers: [("Cache-Control", "max-age=600"), ("CDN-Cache-Control", "no-store")]),
            for: "/no"
        )
        _ = try await f.send("/cdn")
        f.advance(300)
        let hit = try await f.send("/cdn")
        #expect(hit.cache == "HIT" && hit.age == 300 && hit.headers["CDN-Cache-Control"] == ["max-age=600"])
        _ = try await f.send("/no")
        #expect(try await f.send("/no").cache == "MISS")
        #expect(f.origin.requestCount == 3)
        try await f.stop()
    }

    @Test func theTargetListIsTheConfiguredOne() async throws {
        let f = try await ProxyFixture.start(targetedCacheControl: [HTTPField.Name("Surrogate-Control")!])
        f.origin.setDefault(
            .ok("s", headers: [("Surrogate-Control", "max-age=60"), ("CDN-Cache-Control", "no-store")]),
            for: "/s"
        )
        _ = try await f.send("/s")
        #expect(try await f.send("/s").cache == "HIT")
        try await f.stop()
    }

    @Test func aPrivateProxyIgnoresTargetedFields() async throws {
        let f = try await ProxyFixture.start(mode: .private)
        f.origin.setDefault(.ok("p", headers: [("CDN-Cache-Control", "max-age=600")]), for: "/p")
        _ = try await f.send("/p")
        #expect(try await f.send("/p").cache == "MISS")
        try await f.stop()
    }
}
#endif
