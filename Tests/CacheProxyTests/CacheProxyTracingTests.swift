// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CacheTestSupport
import InMemoryTracing
import TestOriginSupport
import Testing
import Tracing

@testable import CacheProxyCore

/// Issue 32, tracing in the proxy: a server span per request, under the context the request
/// carries, with its cache status; the client's fetch and the upstream exchange under it, and the
/// upstream request carrying the exchange's context. A hit answered on the event loop is one span.
@Suite struct CacheProxyTracingTests {
    /// The context a caller's tracer put on the request (the in-memory tracer's own fields).
    static let callerContext = [(InMemoryTracer.traceIDKey, "trace-from-caller"), (InMemoryTracer.spanIDKey, "span-1")]

    @Test func aMissAndAHitAreServerSpansUnderTheCallersContext() async throws {
        let tracer = InMemoryTracer()
        let f = try await ProxyFixture.start { $0.tracer = tracer }
        f.origin.setDefault(.ok("hello", headers: [("Cache-Control", "max-age=60")]), for: "/doc?key=secret")

        let miss = try await f.send("/doc?key=secret", headers: Self.callerContext)
        #expect(miss.status == 200 && miss.cache == "MISS")
        let spans = tracer.popFinishedSpans()
        let server = try #require(spans.first { $0.kind == .server })
        #expect(server.operationName == "GET")
        #expect(server.traceID == "trace-from-caller" && server.parentSpanID == "span-1")
        #expect(server.attributes["layeredcache.cache_status"]?.toSpanAttribute() == "MISS")
        #expect(server.attributes["http.response.status_code"]?.toSpanAttribute() == 200)
        #expect(server.attributes["url.path"]?.toSpanAttribute() == "/doc")  // without the query
        let fetch = try #require(spans.first { $0.operationName == "layeredcache.fetch" })
        #expect(fetch.parentSpanID == server.spanID)
        let exchange = try #require(spans.first { $0.kind == .client })
        #expect(exchange.parentSpanID == fetch.spanID && exchange.traceID == "trace-from-caller")
        // The upstream hears the exchange's context, not the caller's span.
        let upstream = try #require(f.origin.requests.last)
        #expect(upstream.header(InMemoryTracer.traceIDKey) == "trace-from-caller")
        #expect(upstream.header(InMemoryTracer.spanIDKey) == exchange.spanID)

        // A fresh hit, answered on the event loop: one server span, a HIT.
        let hit = try await f.send("/doc?key=secret", headers: Self.callerContext)
        #expect(hit.status == 200 && hit.cache == "HIT")
        let hitSpans = tracer.popFinishedSpans()
        #expect(hitSpans.count == 1)
        let hitSpan = try #require(hitSpans.first)
        #expect(hitSpan.kind == .server && hitSpan.parentSpanID == "span-1")
        #expect(hitSpan.attributes["layeredcache.cache_status"]?.toSpanAttribute() == "HIT")
        #expect(hitSpan.attributes["http.response.status_code"]?.toSpanAttribute() == 200)
        #expect(f.origin.requestCount == 1)
        try await f.stop()
    }

    /// An upstream that fails: the server span is an error with the proxy's 502.
    @Test func anUpstreamFailureIsAnErrorSpan() async throws {
        let tracer = InMemoryTracer()
        let f = try await ProxyFixture.start { $0.tracer = tracer }
        f.origin.setDefault(.dropConnection, for: "/gone")
        let answer = try await f.send("/gone")
        #expect(answer.status == 502)
        let server = try #require(tracer.popFinishedSpans().first { $0.kind == .server })
        #expect(server.status?.code == .error)
        #expect(server.attributes["layeredcache.cache_status"]?.toSpanAttribute() == "ERROR")
        #expect(server.attributes["error.type"]?.toSpanAttribute() == "502")
        try await f.stop()
    }
}
#endif
