// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CacheTestSupport
import Foundation
import NIOHTTP1
import TestOriginSupport
import Testing

@testable import CacheProxyCore
@testable import cache_proxy

/// `PURGE` (issue 31, purge by URL): only with the purge token, and then every variant of the URL
/// goes; without the token nothing is purged.
@Suite struct CacheProxyPurgeTests {
    static let token = "s3cret-purge-token-0123456789"
    static let purge = HTTPMethod.RAW(value: "PURGE")

    @Test func aPurgeWithTheTokenRemovesEveryVariantOfTheURL() async throws {
        let f = try await ProxyFixture.start(purgeToken: Self.token)
        f.origin.setDefault(
            .ok("v", headers: [("Cache-Control", "max-age=600"), ("Vary", "Accept-Language")]),
            for: "/doc"
        )
        f.origin.setDefault(.ok("kept", headers: [("Cache-Control", "max-age=600")]), for: "/other")
        for language in ["en", "fr"] { _ = try await f.send("/doc", headers: [("Accept-Language", language)]) }
        _ = try await f.send("/other")
        #expect(try await f.send("/doc", headers: [("Accept-Language", "fr")]).cache == "HIT")

        for refused in [[], [("Authorization", "Bearer wrong-token-0123456789abc")], [("Authorization", Self.token)]] {
            let answer = try await f.send("/doc", method: Self.purge, headers: refused)
            #expect(answer.status == 401 && answer.headers["WWW-Authenticate"] == ["Bearer"])
            #expect(try await f.send("/doc", headers: [("Accept-Language", "en")]).cache == "HIT")
        }

        let purged = try await f.send("/doc", method: Self.purge, headers: [("Authorization", "bearer \(Self.token)")])
        #expect(purged.status == 200 && purged.body == "purged\n" && purged.cache == "PURGE")
        for language in ["en", "fr"] {
            #expect(try await f.send("/doc", headers: [("Accept-Language", language)]).cache == "MISS")
        }
        #expect(try await f.send("/other").cache == "HIT")
        #expect(f.counter(ProxyMetrics.purgesLabel) == 1)
        #expect(f.origin.requests.allSatisfy { $0.method != "PURGE" })  // never forwarded
        try await f.stop()
    }

    /// `PURGE /prefix*`: with the token, every response whose URL starts with it goes (a query and a
    /// longer path included); without it, or with a wrong one, 401 and nothing goes.
    @Test func aBanWithTheTokenRemovesEveryURLUnderThePrefix() async throws {
        let f = try await ProxyFixture.start(purgeToken: Self.token)
        let banned = ["/static/a.css", "/static/b.js?v=2", "/static-old/c"]
        let kept = ["/stat", "/api/static/d", "/"]
        for path in banned + kept {
            f.origin.setDefault(.ok(path, headers: [("Cache-Control", "max-age=600")]), for: path)
            _ = try await f.send(path)
            #expect(try await f.send(path).cache == "HIT")
        }
        for refused in [[], [("Authorization", "Bearer wrong-token-0123456789abc")]] {
            let answer = try await f.send("/static*", method: Self.purge, headers: refused)
            #expect(answer.status == 401 && answer.headers["WWW-Authenticate"] == ["Bearer"])
            for path in banned { #expect(try await f.send(path).cache == "HIT") }
        }

        let answer = try await f.send(
            "/static*",
            method: Self.purge,
            headers: [("Authorization", "Bearer \(Self.token)")]
        )
        #expect(answer.status == 200 && answer.body == "banned 3\n" && answer.cache == "PURGE")
        for path in banned { #expect(try await f.send(path).cache == "MISS") }
        for path in kept { #expect(try await f.send(path).cache == "HIT") }
        #expect(f.origin.requests.allSatisfy { $0.method != "PURGE" })  // never forwarded
        try await f.stop()
    }

    @Test func withoutATokenPurgeIsNotAllowed() async throws {
        let f = try await ProxyFixture.start()
        f.origin.setDefault(.ok("v", headers: [("Cache-Control", "max-age=600")]), for: "/doc")
        _ = try await f.send("/doc")
        let answer = try await f.send("/doc", method: Self.purge, headers: [("Authorization", "Bearer \(Self.token)")])
        #expect(answer.status == 405 && answer.headers["Allow"].first?.contains("GET") == true)
        #expect(try await f.send("/doc").cache == "HIT")
        try await f.stop()
    }

    @Test func theTokenComesFromAFileOnlyItsOwnerReads() throws {
        let directory = TemporaryDirectory("purge-token")
        defer { directory.remove() }
        let path = directory.path + "/token"
        func write(_ text: String, mode: Int) throws {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        }
        try write(Self.token + "\n", mode: 0o600)
        #expect(try CacheProxyCommand.purgeToken(file: path) == Self.token)
        for (text, mode) in [(Self.token, 0o644), ("short", 0o600), ("with a space in it, long enough", 0o600)] {
            try write(text, mode: mode)
            #expect(throws: CacheProxyCommand.KeyFileError.self) { try CacheProxyCommand.purgeToken(file: path) }
        }
        #expect(Purger.isBearer("Bearer \(Self.token)", Array(Self.token.utf8)))
        #expect(!Purger.isBearer("Bearer \(Self.token)x", Array(Self.token.utf8)))
        #expect(!Purger.isBearer("Basic \(Self.token)", Array(Self.token.utf8)))
    }
}
#endif
