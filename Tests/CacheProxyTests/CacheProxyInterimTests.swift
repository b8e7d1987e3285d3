// SPDX-License-Identifier: Apache-2.0

#if Proxy
import Foundation
import TestOriginSupport
import Testing

@testable import CacheProxyCore

/// Interim (1xx) answers pass through the proxy (RFC 9110 §15.2), to HTTP/1.1 clients only, and
/// are never stored. Read on raw connections: HTTP clients drop them.
@Suite struct CacheProxyInterimTests {
    private static let hinted: TestOrigin.Behavior = .interim(
        status: 103,
        headers: [("Link", "</s.css>; rel=preload"), ("Keep-Alive", "timeout=5")],
        then: .ok("fine", headers: [("Cache-Control", "max-age=60")])
    )

    @Test func anEarlyHintPassesThroughAndIsNotStored() async throws {
        let f = try await ProxyFixture.start()
        f.origin.setDefault(Self.hinted, for: "/h")
        let request = "GET /h HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
        let miss = await RawConnection.exchange(port: f.port, request)
        let parts = miss.text.components(separatedBy: "\r\n\r\n")
        #expect(parts.count == 3, "got: \(miss.text.debugDescription)")
        let hint = parts[0].lowercased()
        #expect(hint.hasPrefix("http/1.1 103"), "got: \(miss.text.debugDescription)")
        #expect(hint.contains("link: </s.css>; rel=preload"))
        #expect(!hint.contains("keep-alive"), "a hop-by-hop field is dropped")
        #expect(parts[1].hasPrefix("HTTP/1.1 200 OK") && parts[1].contains("X-Cache: MISS") && parts[2] == "fine")
        #expect(!parts[1].lowercased().contains("link:"), "the hint's fields stay out of the final answer")

        let hit = await RawConnection.exchange(port: f.port, request)
        #expect(hit.text.hasPrefix("HTTP/1.1 200 OK"), "got: \(hit.text.debugDescription)")
        #expect(!hit.text.contains("103") && !hit.text.lowercased().contains("link:"))
        #expect(hit.text.contains("X-Cache: HIT") && hit.text.hasSuffix("fine"))
        #expect(f.origin.requestCount == 1)
        try await f.stop()
    }

    /// An HTTP/1.0 client would read an interim answer as its final one: it gets none.
    @Test func anHTTP10ClientGetsNoInterimAnswer() async throws {
        let f = try await ProxyFixture.start()
        f.origin.setDefault(Self.hinted, for: "/h")
        let outcome = await RawConnection.exchange(port: f.port, "GET /h HTTP/1.0\r\nHost: a\r\n\r\n")
        #expect(outcome.text.hasPrefix("HTTP/1.1 200 OK"), "got: \(outcome.text.debugDescription)")
        #expect(!outcome.text.contains("103") && outcome.text.hasSuffix("fine"))
        #expect(outcome.closed, "an HTTP/1.0 request without keep-alive ends its connection")
        try await f.stop()
    }

    /// Pipelined, an HTTP/1.0 request after an HTTP/1.1 one: each is paired with its own version.
    @Test func interimAnswersFollowEachPipelinedRequestsVersion() async throws {
        let f = try await ProxyFixture.start()
        f.origin.setDefault(Self.hinted, for: "/h1")
        f.origin.setDefault(Self.hinted, for: "/h2")
        let outcome = await RawConnection.exchange(
            port: f.port,
            "GET /h1 HTTP/1.1\r\nHost: a\r\n\r\nGET /h2 HTTP/1.0\r\nHost: a\r\n\r\n"
        )
        #expect(outcome.text.components(separatedBy: " 103 ").count == 2, "got: \(outcome.text.debugDescription)")
        #expect(outcome.text.components(separatedBy: "200 OK").count == 3)
        #expect(outcome.closed)
        try await f.stop()
    }

    /// Through AsyncHTTPClient the interim answer is lost, but the final one is whole.
    @Test func overAsyncHTTPClientTheFinalAnswerStillComes() async throws {
        let f = try await ProxyFixture.start(upstreamClient: .asyncHTTPClient)
        f.origin.setDefault(Self.hinted, for: "/h")
        let outcome = await RawConnection.exchange(
            port: f.port,
            "GET /h HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
        )
        #expect(outcome.text.hasPrefix("HTTP/1.1 200 OK") && outcome.text.hasSuffix("fine"))
        try await f.stop()
    }
}
#endif
