// SPDX-License-Identifier: Apache-2.0

#if Hummingbird
import CacheTestSupport
import HTTPCaching
import HTTPTypes
import Hummingbird
import HummingbirdLayeredCache
import HummingbirdTesting
import InMemoryTracing
import NIOCore
import Testing
import Tracing

/// Issue 32, tracing in the middleware: a `layeredcache.middleware` span per request with the
/// answer's cache status, under the request's span.
@Suite struct ResponseCacheMiddlewareTracingTests {
    /// The request's span, as Hummingbird's `TracingMiddleware` makes it with the bootstrapped
    /// tracer (which a test process cannot bootstrap for one test).
    struct RequestSpan: RouterMiddleware {
        let tracer: InMemoryTracer
        func handle(
            _ request: Request,
            context: BasicRequestContext,
            next: (Request, BasicRequestContext) async throws -> Response
        ) async throws -> Response {
            try await tracer.withSpan("GET", ofKind: .server) { _ in try await next(request, context) }
        }
    }

    @Test func eachRequestIsASpanWithItsCacheStatusUnderTheRequestsSpan() async throws {
        let tracer = InMemoryTracer()
        let clock = ManualDate()
        let router = Router()
        router.add(middleware: RequestSpan(tracer: tracer))
        router.add(
            middleware: try ResponseCacheMiddleware<BasicRequestContext>(
                configuration: .init(cache: .init(mode: .shared, now: clock.now), tracer: tracer)
            )
        )
        router.get("/items") { _, _ in
            Response(
                status: .ok,
                headers: [.cacheControl: "max-age=60"],
                body: .init(byteBuffer: ByteBuffer(string: "[]"))
            )
        }
        try await Application(router: router).test(.router) { client in
            _ = try await client.execute(uri: "/items", method: .get)
            _ = try await client.execute(uri: "/items", method: .get)
        }
        let spans = tracer.popFinishedSpans()
        let ours = spans.filter { $0.operationName == "layeredcache.middleware" }
        #expect(
            ours.map { $0.attributes["layeredcache.cache_status"]?.toSpanAttribute() } == [
                "fwd=uri-miss", "hit; ttl=60",
            ]
        )
        #expect(ours.allSatisfy { $0.attributes["http.response.status_code"]?.toSpanAttribute() == 200 })
        let requests = spans.filter { $0.kind == .server }
        #expect(requests.count == 2)
        #expect(ours.allSatisfy { span in requests.contains { $0.spanID == span.parentSpanID } })
    }
}
#endif
