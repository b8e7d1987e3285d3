// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CacheTestSupport
import InMemoryTracing
import TestOriginSupport
import Testing
import Tracing

@testable import CacheProxyCore

/// A request's `Connection` field and the connection's end (RFC 9112 §9.6), over real sockets: a
/// hit that says only `keep-alive` or `close` is still answered on the event loop (one server
/// span, no fetch under it); the answer to `close`, on either path, says `Connection: close`, is
/// the connection's last, and nothing sent after that request is answered.
@Suite struct CacheProxyConnectionOptionTests {
    static let cacheable = CacheProxyRawHitTests.cacheable

    static func get(_ path: String, _ extra: String = "") -> String { CacheProxyRawHitTests.get(path, extra) }

    /// The heads of the answers in `text`, each as its lines.
    static func heads(_ text: String) -> [[String]] {
        text.split(separator: "HTTP/1.1 ", omittingEmptySubsequences: true).map { answer in
            let head = answer.split(separator: "\r\n\r\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            return head.split(separator: "\r\n").map(String.init)
        }
    }

    /// A proxy with a tracer, and `/p` stored.
    static func started() async throws -> (ProxyFixture, InMemoryTracer) {
        let tracer = InMemoryTracer()
        let f = try await ProxyFixture.start { $0.tracer = tracer }
        f.origin.setDefault(.ok("fine", headers: Self.cacheable), for: "/p")
        #expect(try await f.send("/p").cache == "MISS")
        _ = tracer.popFinishedSpans()
        return (f, tracer)
    }

    @Test func aHitAskingToCloseIsAnsweredOnTheEventLoopAndIsTheLastAnswer() async throws {
        let (f, tracer) = try await Self.started()
        // A request after the one that asked to close: a client must not send it, and the proxy
        // must not answer it.
        let outcome = await RawConnection.exchange(
            port: f.port,
            Self.get("/p", "Connection: close\r\n") + Self.get("/p")
        )
        let heads = Self.heads(outcome.text)
        #expect(heads.count == 1)
        #expect(heads.first?.contains("Connection: close") == true)
        #expect(heads.first?.contains("X-Cache: HIT") == true)
        #expect(outcome.text.hasSuffix("\r\n\r\nfine"))
        #expect(outcome.closed)
        let spans = tracer.popFinishedSpans()
        #expect(spans.count == 1, "a hit answered on the event loop is one span, without a fetch")
        #expect(spans.first?.attributes["layeredcache.cache_status"]?.toSpanAttribute() == "HIT")
        #expect(f.origin.requestCount == 1)
        try await f.stop()
    }

    @Test func hitsAskingToKeepAliveAreAnsweredOnTheEventLoop() async throws {
        let (f, tracer) = try await Self.started()
        let outcome = await RawConnection.exchange(
            port: f.port,
            Self.get("/p", "Connection: keep-alive\r\n") + Self.get("/p", "connection:  Keep-Alive \r\n")
                + Self.get("/p", "Connection: keep-alive, CLOSE\r\n")
        )
        let heads = Self.heads(outcome.text)
        #expect(heads.count == 3)
        #expect(heads.map { $0.contains("Connection: close") } == [false, false, true])
        #expect(heads.allSatisfy { $0.contains("X-Cache: HIT") })
        #expect(outcome.closed)
        #expect(tracer.popFinishedSpans().count == 3)
        #expect(f.origin.requestCount == 1)
        try await f.stop()
    }

    /// Any other option (a field the request names as hop-by-hop) is the ordinary path's, which
    /// answers `close` the same way.
    @Test func otherOptionsAndMissesTakeTheOrdinaryPathAndCloseTheSameWay() async throws {
        let (f, tracer) = try await Self.started()
        f.origin.setDefault(.ok("new", headers: Self.cacheable), for: "/n")
        let named = await RawConnection.exchange(
            port: f.port,
            Self.get("/p", "Connection: close, X-Trace\r\nX-Trace: 1\r\n") + Self.get("/p")
        )
        #expect(Self.heads(named.text).count == 1)
        #expect(Self.heads(named.text).first?.contains("Connection: close") == true)
        #expect(named.text.hasSuffix("\r\n\r\nfine") && named.closed)
        let spans = tracer.popFinishedSpans()
        #expect(spans.contains { $0.operationName == "layeredcache.fetch" }, "the ordinary path fetches")

        let miss = await RawConnection.exchange(port: f.port, Self.get("/n", "Connection: close\r\n"))
        #expect(Self.heads(miss.text).first?.contains("Connection: close") == true)
        #expect(Self.heads(miss.text).first?.contains("X-Cache: MISS") == true)
        #expect(miss.text.hasSuffix("\r\n\r\nnew") && miss.closed)
        #expect(f.origin.requestCount == 2)
        try await f.stop()
    }
}
#endif
