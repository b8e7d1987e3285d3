// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CacheTestSupport
import Foundation
import HTTPCaching
import HTTPTypes
import NIOHTTP1
import PostgresCacheTier
import TestOriginSupport
import Testing

@testable import CacheProxyCore

/// Tags from `Surrogate-Key` / `Cache-Tag` and purges by tag (issue 31), over real sockets.
@Suite struct CacheProxyTagTests {
    static let token = CacheProxyPurgeTests.token
    static let purge = CacheProxyPurgeTests.purge
    static let authorized = ("Authorization", "Bearer \(token)")

    /// Three URLs: two share the tag `listing`, by either field.
    static func tagged(_ origin: TestOrigin) {
        origin.setDefault(
            .ok("a", headers: [("Cache-Control", "max-age=600"), ("Surrogate-Key", "product-1  listing")]),
            for: "/a"
        )
        origin.setDefault(
            .ok("b", headers: [("Cache-Control", "max-age=600"), ("Cache-Tag", "product-2, listing")]),
            for: "/b"
        )
        origin.setDefault(
            .ok("c", headers: [("Cache-Control", "max-age=600"), ("Surrogate-Key", "product-3")]),
            for: "/c"
        )
    }

    @Test func aPurgeByTagRemovesEveryResponseTaggedWithItAndNothingElse() async throws {
        let f = try await ProxyFixture.start(purgeToken: Self.token)
        Self.tagged(f.origin)
        for path in ["/a", "/b", "/c"] {
            let miss = try await f.send(path)
            #expect(miss.cache == "MISS")
            // The tags are the operator's: not passed on, neither on a miss nor on a hit.
            #expect(miss.headers["Surrogate-Key"].isEmpty && miss.headers["Cache-Tag"].isEmpty)
            let hit = try await f.send(path)
            #expect(hit.cache == "HIT" && hit.headers["Surrogate-Key"].isEmpty && hit.headers["Cache-Tag"].isEmpty)
        }

        // Without the token, or with a wrong one: 401 and nothing purged.
        for refused in [[("Surrogate-Key", "listing")], [("Surrogate-Key", "listing"), ("Authorization", "Bearer x")]] {
            let answer = try await f.send("/", method: Self.purge, headers: refused)
            #expect(answer.status == 401)
            #expect(try await f.send("/a").cache == "HIT")
        }

        let purged = try await f.send(
            "/",
            method: Self.purge,
            headers: [Self.authorized, ("Surrogate-Key", "listing")]
        )
        #expect(purged.status == 200 && purged.body == "purged 2\n" && purged.cache == "PURGE")
        #expect(try await f.send("/a").cache == "MISS")
        #expect(try await f.send("/b").cache == "MISS")
        #expect(try await f.send("/c").cache == "HIT")

        // By Cache-Tag, two tags at once; a tag nothing carries purges nothing.
        let both = try await f.send(
            "/",
            method: Self.purge,
            headers: [Self.authorized, ("Cache-Tag", "product-3, unknown")]
        )
        #expect(both.body == "purged 1\n")
        #expect(try await f.send("/c").cache == "MISS")
        #expect(f.counter(ProxyMetrics.purgesLabel) == 2)
        try await f.stop()
    }

    @Test func tagFieldsReachClientsOnlyWhenExposed() async throws {
        let f = try await ProxyFixture.start(purgeToken: Self.token) { $0.exposesTagFields = true }
        Self.tagged(f.origin)
        #expect(try await f.send("/a").headers["Surrogate-Key"] == ["product-1  listing"])
        let hit = try await f.send("/a")
        #expect(hit.cache == "HIT" && hit.headers["Surrogate-Key"] == ["product-1  listing"])
        let purged = try await f.send(
            "/",
            method: Self.purge,
            headers: [Self.authorized, ("Surrogate-Key", "product-1")]
        )
        #expect(purged.body == "purged 1\n")
        try await f.stop()
    }

    @Test func withoutTagFieldsAPurgeCarryingOneIsAPurgeByURL() async throws {
        let f = try await ProxyFixture.start(purgeToken: Self.token) { $0.tagFields = [] }
        Self.tagged(f.origin)
        _ = try await f.send("/a")
        _ = try await f.send("/c")
        // The field passes through (nothing reads it), and the purge names /a's URL.
        #expect(try await f.send("/a").headers["Surrogate-Key"] == ["product-1  listing"])
        let purged = try await f.send(
            "/a",
            method: Self.purge,
            headers: [Self.authorized, ("Surrogate-Key", "product-3")]
        )
        #expect(purged.body == "purged\n")
        #expect(try await f.send("/a").cache == "MISS")
        #expect(try await f.send("/c").cache == "HIT")
        try await f.stop()
    }

    @Test func anOriginCannotGiveAResponseMoreThanItsShareOfTags() {
        let many = (0..<1_000).map { "t\($0)" }.joined(separator: " ")
        let long = String(repeating: "x", count: SurrogateKeys.maximumLength + 1)
        let fields: HTTPFields = [.surrogateKey: "\(long) a a,b", .cacheTag: many]
        let tags = SurrogateKeys.tags(in: fields, names: [.surrogateKey, .cacheTag])
        #expect(tags.count == SurrogateKeys.maximumCount)
        #expect(tags.prefix(3) == ["a", "b", "t0"])
        #expect(!tags.contains(long))
    }

    @Test func theAdminListenerServesMetricsHealthAndPurges() async throws {
        let f = try await ProxyFixture.start(purgeToken: Self.token) { $0.admin = .loopback(port: 0) }
        Self.tagged(f.origin)
        _ = try await f.send("/a")
        _ = try await f.send("/a")
        _ = try await f.send("/c")

        let health = try await f.send("/healthz", toAdmin: true)
        #expect(health.status == 200 && health.body == "ok\n")

        let metrics = try await f.send("/metrics", toAdmin: true)
        #expect(metrics.status == 200 && metrics.headers["Content-Type"].first?.hasPrefix("text/plain") == true)
        let lines = Set(metrics.body.split(separator: "\n").map(String.init))
        #expect(lines.contains("cache_proxy_hits_total 1"))
        #expect(lines.contains("cache_proxy_misses_total 2"))
        #expect(lines.contains { $0.hasPrefix("cache_proxy_memory_entries ") && $0 != "cache_proxy_memory_entries 0" })
        #expect(lines.contains { $0.hasPrefix("cache_proxy_memory_bytes ") && $0 != "cache_proxy_memory_bytes 0" })
        #expect(lines.contains("cache_proxy_upstream_duration_seconds_count 2"))
        #expect(lines.contains("cache_proxy_upstream_in_flight 0.0"))

        // PURGE as on the main listener: the token first, then by tag or by URL.
        #expect(
            try await f.send("/", method: Self.purge, headers: [("Surrogate-Key", "listing")], toAdmin: true).status
                == 401
        )
        let byTag = try await f.send(
            "/",
            method: Self.purge,
            headers: [Self.authorized, ("Surrogate-Key", "listing")],
            toAdmin: true
        )
        #expect(byTag.status == 200 && byTag.body == "purged 1\n")
        let byURL = try await f.send("/c", method: Self.purge, headers: [Self.authorized], toAdmin: true)
        #expect(byURL.status == 200 && byURL.body == "purged\n")
        #expect(try await f.send("/a").cache == "MISS")
        #expect(try await f.send("/c").cache == "MISS")

        #expect(try await f.send("/elsewhere", toAdmin: true).status == 404)
        #expect(try await f.send("/metrics", method: .POST, toAdmin: true).status == 405)
        #expect(f.origin.requests.allSatisfy { $0.uri != "/metrics" && $0.uri != "/healthz" })
        try await f.stop()
    }

    @Test(.enabled(if: PrivacyDatabase.isEnabled, "no PostgreSQL server (make test starts one)"))
    func aPurgeByTagReachesEveryProxyOfASharedTier() async throws {
        // With the server up throughout: a test of another suite crashes it.
        try await DatabaseServerGate.server.shared { try await purgeAcrossProxies() }
    }

    private func purgeAcrossProxies() async throws {
        let url = try #require(PrivacyDatabase.url, "CI=true but LAYEREDCACHE_POSTGRES_URL is not set")
        let table = "proxy_tags_\(UInt32.random(in: 0...UInt32.max))"
        let origin = try await TestOrigin.start(keepAlive: false)
        Self.tagged(origin)
        let tiers = try (0..<2).map { _ in
            try PostgresSharedTier(configuration: .init(url: url, table: table, sweepInterval: .seconds(3600)))
        }
        var proxies: [ProxyFixture] = []
        for tier in tiers {
            proxies.append(
                try await ProxyFixture.start(origin: origin, purgeToken: Self.token) { $0.cache.shared = tier }
            )
        }
        // An instance hears of invalidations once its listener is connected.
        #expect(try await poll(timeout: .seconds(30)) { tiers.allSatisfy(\.isListening) }.held)
        for proxy in proxies {
            _ = try await proxy.send("/a")
            #expect(try await proxy.send("/a").cache == "HIT")
        }
        let purged = try await proxies[0].send(
            "/",
            method: Self.purge,
            headers: [Self.authorized, ("Surrogate-Key", "product-1")]
        )
        #expect(purged.body == "purged 1\n")
        let other = proxies[1]
        let (held, _) = try await poll(timeout: .seconds(30)) { (try? await other.send("/a").cache) == "MISS" }
        #expect(
            held,
            "the other proxy still served /a from its own tiers; sender: \(tiers[0].statistics), other: \(tiers[1].statistics)"
        )
        // A ban by prefix on the other proxy reaches the first.
        let first = proxies[0]
        for path in ["/b", "/c"] {
            _ = try await first.send(path)
            #expect(try await first.send(path).cache == "HIT")
        }
        let banned = try await other.send("/b*", method: Self.purge, headers: [Self.authorized])
        #expect(banned.status == 200)
        let (gone, _) = try await poll(timeout: .seconds(30)) { (try? await first.send("/b").cache) == "MISS" }
        #expect(gone, "the first proxy still served /b after the other's ban")
        #expect(try await first.send("/c").cache == "HIT")
        for proxy in proxies { try await proxy.stopProxy() }
        await origin.stop()
    }

    /// With the shared tier unreachable, a purge by tag or a ban removes what this proxy holds and
    /// answers 503: the other instances did not hear of it, and the operator must try again.
    @Test func aPurgeThatCannotReachTheOtherInstancesAnswers503() async throws {
        let origin = try await TestOrigin.start(keepAlive: false)
        Self.tagged(origin)
        // Nothing listens on port 1: every statement fails at once.
        let tier = try PostgresSharedTier(
            configuration: .init(
                url: "postgres://nobody@127.0.0.1:1/none",
                sweepInterval: .seconds(3600),
                readTimeout: .milliseconds(100),
                writeTimeout: .milliseconds(200),
                connectTimeout: .milliseconds(100)
            )
        )
        let f = try await ProxyFixture.start(origin: origin, purgeToken: Self.token) { $0.cache.shared = tier }
        for path in ["/a", "/b", "/c"] {
            _ = try await f.send(path)
            #expect(try await f.send(path).cache == "HIT")
        }
        let purged = try await f.send(
            "/",
            method: Self.purge,
            headers: [Self.authorized, ("Surrogate-Key", "product-1")]
        )
        #expect(purged.status == 503 && purged.body.contains("did not reach the other instances"))
        #expect(try await f.send("/a").cache == "MISS")
        let banned = try await f.send("/b*", method: Self.purge, headers: [Self.authorized])
        #expect(banned.status == 503 && banned.body.contains("not reached"))
        #expect(try await f.send("/b").cache == "MISS")
        #expect(try await f.send("/c").cache == "HIT")
        try await f.stopProxy()
        await origin.stop()
    }
}
#endif
