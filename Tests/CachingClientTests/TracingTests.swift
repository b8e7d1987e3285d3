// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import CacheTestSupport
import Foundation
import HTTPCaching
import HTTPTypes
import InMemoryTracing
import TestOriginSupport
import Testing
import Tracing

@testable import CachingClient

/// Issue 32, tracing: a fetch is a `layeredcache.fetch` span with its lookup, its exchange (a
/// client span whose request carries the context) and its store as children, against a real
/// origin and a real disk tier; a fresh memory hit is one span; no tracer, no spans.
@Suite struct TracingTests {
    @Test func aMissIsAFetchWithItsLookupExchangeAndStoreAndTheOriginGetsTheContext() async throws {
        let directory = TemporaryDirectory()
        let tracer = InMemoryTracer()
        let f = try await Fixture.make(directory: directory.path) { $0.tracer = tracer }
        f.origin.setDefault(.ok("hello", headers: [("Cache-Control", "max-age=60")]), for: "/doc?token=secret")
        let miss = await f.client.fetch(f.request("/doc?token=secret"))
        #expect(miss.source == .network && miss.text == "hello")

        let spans = tracer.popFinishedSpans()
        let fetch = try #require(spans.first { $0.operationName == "layeredcache.fetch" })
        #expect(fetch.parentSpanID == nil && fetch.kind == .internal)
        #expect(fetch.attributes["layeredcache.source"]?.toSpanAttribute() == "network")
        #expect(fetch.attributes["layeredcache.freshness"]?.toSpanAttribute() == "fresh")
        #expect(fetch.attributes["http.response.status_code"]?.toSpanAttribute() == 200)
        let children = spans.filter { $0.parentSpanID == fetch.spanID }
        #expect(Set(children.map(\.operationName)) == ["layeredcache.lookup", "GET", "layeredcache.store"])
        #expect(spans.count == 4)

        let exchange = try #require(children.first { $0.operationName == "GET" })
        #expect(exchange.kind == .client)
        #expect(exchange.attributes["http.request.method"]?.toSpanAttribute() == "GET")
        #expect(exchange.attributes["http.response.status_code"]?.toSpanAttribute() == 200)
        #expect(exchange.attributes["server.address"]?.toSpanAttribute() == "127.0.0.1")
        #expect(exchange.attributes["server.port"]?.toSpanAttribute() == .int64(Int64(f.origin.port)))
        // The query may carry credentials: the URL goes without it.
        let url = "http://\(f.origin.authority)/doc"
        #expect(exchange.attributes["url.full"]?.toSpanAttribute() == .string(url))

        // The origin's request carries the exchange's context, injected by the tracer.
        let received = try #require(f.origin.requests.last)
        #expect(received.header(InMemoryTracer.traceIDKey) == fetch.traceID)
        #expect(received.header(InMemoryTracer.spanIDKey) == exchange.spanID)

        // A fresh memory hit is one span, and nothing goes to the origin.
        let hit = await f.client.fetch(f.request("/doc?token=secret"))
        #expect(hit.source == .cache)
        let hitSpans = tracer.popFinishedSpans()
        #expect(hitSpans.map(\.operationName) == ["layeredcache.fetch"])
        #expect(hitSpans.first?.attributes["layeredcache.source"]?.toSpanAttribute() == "cache")
        #expect(f.origin.requestCount == 1)
        await f.stop()
    }

    /// A revalidation is an exchange with its conditions, and the 304 freshens in a store span.
    @Test func aRevalidationIsAnExchangeAndAStoreUnderItsFetch() async throws {
        let tracer = InMemoryTracer()
        let f = try await Fixture.make { $0.tracer = tracer }
        f.origin.setDefault(.ok("v1", headers: [("Cache-Control", "max-age=10"), ("ETag", "\"v1\"")]), for: "/doc")
        _ = await f.client.fetch(f.request("/doc"))
        f.advance(20)
        f.origin.setDefault(.respond(status: 304, headers: [("ETag", "\"v1\"")]), for: "/doc")
        tracer.clearFinishedSpans()
        let revalidated = await f.client.fetch(f.request("/doc"))
        #expect(revalidated.source == .revalidated && revalidated.text == "v1")
        let spans = tracer.popFinishedSpans()
        let fetch = try #require(spans.first { $0.operationName == "layeredcache.fetch" })
        #expect(fetch.attributes["layeredcache.source"]?.toSpanAttribute() == "revalidated")
        let children = spans.filter { $0.parentSpanID == fetch.spanID }
        #expect(Set(children.map(\.operationName)).isSuperset(of: ["GET", "layeredcache.store"]))
        let exchange = try #require(children.first { $0.operationName == "GET" })
        #expect(exchange.attributes["http.response.status_code"]?.toSpanAttribute() == 304)
        #expect(f.origin.requests.last?.header("If-None-Match") == "\"v1\"")
        await f.stop()
    }

    /// An origin that cannot be reached: the exchange and the fetch say so.
    @Test func aFailedExchangeMarksTheExchangeAndTheFetch() async throws {
        let tracer = InMemoryTracer()
        let f = try await Fixture.make { $0.tracer = tracer }
        f.origin.setDefault(.dropConnection, for: "/gone")
        let failed = await f.client.fetch(f.request("/gone"))
        #expect(failed.error != nil)
        let spans = tracer.popFinishedSpans()
        let fetch = try #require(spans.first { $0.operationName == "layeredcache.fetch" })
        #expect(fetch.status?.code == .error)
        #expect(fetch.attributes["error.type"]?.toSpanAttribute() == .string(failed.error!.code.description))
        let exchange = try #require(spans.first { $0.operationName == "GET" })
        #expect(exchange.parentSpanID == fetch.spanID)
        #expect(exchange.attributes["error.type"] != nil)
        #expect(!exchange.errors.isEmpty)
        await f.stop()
    }

    /// With nothing bootstrapped the tracer is the no-op one: the client keeps no tracer at all.
    @Test func theNoOpTracerMeansNoSpans() {
        #expect(FetchTracer.resolve(NoOpTracer()) == nil)
        #expect(FetchTracer.resolve(nil) == nil)  // the test process bootstraps none
        #expect(FetchTracer.resolve(InMemoryTracer()) != nil)
    }

    @Test(arguments: [
        ("example.com", 443, "example.com", 443),
        ("example.com:8080", 443, "example.com", 8080),
        ("[::1]:8080", 80, "[::1]", 8080),
        ("[::1]", 80, "[::1]", 80),
    ])
    func authoritiesSplitIntoHostAndPort(authority: String, defaultPort: Int, host: String, port: Int) {
        #expect(FetchTracer.split(authority, defaultPort: defaultPort) == (host, port))
    }
}
#endif
