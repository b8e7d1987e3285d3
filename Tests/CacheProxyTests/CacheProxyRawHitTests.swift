// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CacheProxyCore
import TestOriginSupport
import Testing

/// Hits answered from the connection's bytes (`RawHitHandler`), over real sockets: in order with
/// the answers of requests that go the ordinary way, never for bytes the decoder frames as a
/// body, and with the idle timeout the raw path keeps.
@Suite struct CacheProxyRawHitTests {
    static let cacheable = [("Cache-Control", "max-age=60")]

    static func get(_ path: String, _ extra: String = "") -> String {
        "GET \(path) HTTP/1.1\r\nHost: a\r\n\(extra)\r\n"
    }

    /// The bodies of the answers in `text`, in order (each answer's body is what follows its
    /// blank line up to the next status line).
    static func bodies(_ text: String) -> [String] {
        text.split(separator: "HTTP/1.1 ", omittingEmptySubsequences: true).map { answer in
            answer.split(separator: "\r\n\r\n", maxSplits: 1, omittingEmptySubsequences: false).last.map(String.init)
                ?? ""
        }
    }

    @Test func hitsAroundAMissAndABodyKeepTheirOrder() async throws {
        let f = try await ProxyFixture.start()
        f.origin.setDefault(.ok("fine", headers: Self.cacheable), for: "/p")
        f.origin.setDefault(.ok("other", headers: Self.cacheable), for: "/q")
        f.origin.setDefault(.ok("posted"), for: "/r")
        #expect(try await f.send("/p").cache == "MISS")
        let post = "POST /r HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nxy"
        let outcome = await RawConnection.exchange(
            port: f.port,
            Self.get("/p") + Self.get("/q") + Self.get("/p") + post + Self.get("/p")
                + Self.get("/p", "Connection: close\r\n")
        )
        #expect(Self.bodies(outcome.text) == ["fine", "other", "fine", "posted", "fine", "fine"])
        #expect(outcome.closed)
        // /p once, /q once, /r once.
        #expect(f.origin.requestCount == 3)
        try await f.stop()
    }

    @Test func hitsAfterAMissOnTheSameConnectionAreAnsweredAgain() async throws {
        let f = try await ProxyFixture.start()
        f.origin.setDefault(.ok("fine", headers: Self.cacheable), for: "/p")
        f.origin.setDefault(.ok("other", headers: Self.cacheable), for: "/q")
        #expect(try await f.send("/p").cache == "MISS")
        let outcome = await RawConnection.exchange(
            port: f.port,
            parts: [Self.get("/q"), Self.get("/p") + Self.get("/q", "Connection: close\r\n")]
        )
        #expect(Self.bodies(outcome.text) == ["other", "fine", "other"])
        #expect(outcome.text.split(separator: "X-Cache: HIT", omittingEmptySubsequences: false).count == 3)
        #expect(f.origin.requestCount == 2)
        try await f.stop()
    }

    @Test func aHeadSplitBetweenWritesIsAnsweredWhole() async throws {
        let f = try await ProxyFixture.start()
        f.origin.setDefault(.ok("fine", headers: Self.cacheable), for: "/p")
        #expect(try await f.send("/p").cache == "MISS")
        let outcome = await RawConnection.exchange(
            port: f.port,
            parts: ["GET /p HTTP/1.1\r\nHo", "st: a\r\n\r\n" + Self.get("/p", "Connection: close\r\n")]
        )
        #expect(Self.bodies(outcome.text) == ["fine", "fine"])
        #expect(f.origin.requestCount == 1)
        try await f.stop()
    }

    /// A request that carries a `Content-Length` is the decoder's: the bytes of its body are never
    /// read as a request, even when they spell a hit.
    @Test func aBodyThatSpellsARequestIsNeverAnswered() async throws {
        let f = try await ProxyFixture.start()
        f.origin.setDefault(.ok("fine", headers: Self.cacheable), for: "/p")
        f.origin.setDefault(.ok("echo"), for: "/e")
        #expect(try await f.send("/p").cache == "MISS")
        let smuggled = Self.get("/p")
        let outcome = await RawConnection.exchange(
            port: f.port,
            "GET /e HTTP/1.1\r\nHost: a\r\nContent-Length: \(smuggled.utf8.count)\r\n\r\n" + smuggled
                + Self.get("/e", "Connection: close\r\n")
        )
        #expect(!Self.bodies(outcome.text).contains("fine"), "got: \(outcome.text.debugDescription)")
        #expect(Self.bodies(outcome.text).count <= 2)
        try await f.stop()
    }

    /// HummingbirdCore's state handler never sees a raw hit, so the raw path keeps the idle
    /// timeout: a kept-alive connection that only had hits closes once idle.
    @Test func aConnectionIdleAfterHitsCloses() async throws {
        // Long enough that a slow build (ThreadSanitizer) reads the first request before it.
        let f = try await ProxyFixture.start(configure: { $0.idleTimeout = .seconds(1) })
        f.origin.setDefault(.ok("fine", headers: Self.cacheable), for: "/p")
        #expect(try await f.send("/p").cache == "MISS")
        let outcome = await RawConnection.exchange(port: f.port, Self.get("/p") + Self.get("/p"))
        #expect(Self.bodies(outcome.text) == ["fine", "fine"])
        #expect(outcome.closed, "the idle connection must close")
        try await f.stop()
    }
}
#endif
