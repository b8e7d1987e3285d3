// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CacheProxyCore
import Foundation
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

    /// A client that reads slower than the proxy writes: 64 KB hits pipelined into a small
    /// receive buffer, so that the proxy's writes wait on the socket. Every answer comes whole,
    /// with the right bytes, in the order asked, a miss among them included. (`RawHitHandlerTests`
    /// checks the held read and the passing on, which this exchange may or may not reach.)
    @Test func aSlowReaderGetsEveryAnswerWholeAndInOrder() async throws {
        let f = try await ProxyFixture.start()
        let big = String((0..<65536).map { Character(Unicode.Scalar(UInt8(ascii: "a") + UInt8($0 % 26))) })
        f.origin.setDefault(.ok(big, headers: Self.cacheable), for: "/big")
        f.origin.setDefault(.ok("small"), for: "/small")
        #expect(try await f.send("/big").cache == "MISS")
        // 120 answers of 64 KB (7.7 MB) through a 4 KB receive buffer, more than the proxy's
        // socket can hold; the requests in separate writes, so that some may arrive while it waits.
        var parts = (0..<120).map { index in Self.get(index == 60 ? "/small" : "/big") }
        parts[parts.count - 1] = Self.get("/big", "Connection: close\r\n")
        let outcome = await RawConnection.exchange(port: f.port, parts: parts, receiveBufferBytes: 4096)
        let answers = Self.answers(outcome.bytes)
        #expect(answers.count == 120)
        let expected = Array(big.utf8)
        for (index, answer) in answers.enumerated() {
            #expect(answer.body == (index == 60 ? Array("small".utf8) : expected), "answer \(index)")
        }
        #expect(answers.filter { $0.head.contains("X-Cache: HIT") }.count == 119)
        #expect(outcome.closed)
        #expect(f.origin.requestCount == 2)
        try await f.stop()
    }

    /// The answers in `bytes`, each its head (as text) and its body, framed by `Content-Length`;
    /// what cannot be framed ends the list.
    static func answers(_ bytes: [UInt8]) -> [(head: String, body: [UInt8])] {
        var answers: [(head: String, body: [UInt8])] = []
        var start = 0
        let separator = Array("\r\n\r\n".utf8)
        while bytes.count - start >= 4 {
            guard let end = (start..<bytes.count - 3).first(where: { bytes[$0..<$0 + 4].elementsEqual(separator) })
            else { break }
            let head = String(decoding: bytes[start..<end], as: UTF8.self)
            guard
                let line = head.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("content-length:") }),
                let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)),
                end + 4 + length <= bytes.count
            else { break }
            answers.append((head, Array(bytes[end + 4..<end + 4 + length])))
            start = end + 4 + length
        }
        return answers
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
