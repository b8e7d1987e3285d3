// SPDX-License-Identifier: Apache-2.0

#if Vapor
import CacheTestSupport
import CacheTiers
import Foundation
import HTTPCaching
import HTTPTypes
import InMemoryTracing
import Synchronization
import Testing
import Tracing
import Vapor
import VaporLayeredCache
import VaporTesting

/// The middleware on a real `Application`: in memory (Vapor's testing module) and over a real
/// port. The rules are the shared request engine's (HTTPCachingTests and the Hummingbird
/// middleware's tests cover them one by one); these tests show the Vapor door runs them all.
@Suite struct HTTPCacheMiddlewareTests {
    final class Counter: Sendable {
        private let value = Mutex(0)
        func increment() { value.withLock { $0 += 1 } }
        var count: Int { value.withLock { $0 } }
    }

    /// An application behind the middleware, on a manual clock, with routes that count calls.
    static func withApp(
        disk directory: String? = nil,
        delegate: (any ResponseCacheDelegate)? = nil,
        tracer: (any Tracer)? = nil,
        _ body: (Application, HTTPCacheMiddleware, ManualDate) async throws -> Void
    ) async throws {
        let clock = ManualDate()
        let middleware = try HTTPCacheMiddleware(
            configuration: .init(
                cache: .init(
                    disk: directory.map { DiskTier.Configuration(directory: $0) },
                    mode: .shared,
                    now: clock.now
                ),
                delegate: delegate,
                cacheStatusName: "LayeredCache",
                tracer: tracer
            )
        )
        try await VaporTesting.withApp { app in
            app.middleware.use(middleware)
            app.lifecycle.use(CacheLifecycle(middleware.cache))
            try await body(app, middleware, clock)
        }
    }

    /// The `Host` of the requests over a real port.
    static let host: HTTPHeaders = ["Host": "app.example"]

    @Test func storesThenAnswersWithAgeWithoutTheRoute() async throws {
        try await Self.withApp { app, _, clock in
            let calls = Counter()
            app.get("items") { _ in
                calls.increment()
                return Response(status: .ok, headers: ["Cache-Control": "max-age=60", "ETag": "\"v1\""], body: "hello")
            }
            let tester = try app.testing()
            try await tester.test(.GET, "items") { response in
                #expect(response.status == .ok && response.body.string == "hello")
                #expect(response.headers.first(name: "Cache-Status") == "LayeredCache; fwd=uri-miss")
            }
            clock.advance(by: 10)
            try await tester.test(.GET, "items") { response in
                #expect(response.status == .ok && response.body.string == "hello")
                #expect(response.headers.first(name: "Age") == "10")
                #expect(response.headers.first(name: "Cache-Status") == "LayeredCache; hit; ttl=50")
                #expect(response.headers.first(name: "Content-Length") == "5")
            }
            try await tester.test(.GET, "items", headers: ["If-None-Match": "\"v1\""]) { response in
                #expect(response.status == .notModified && response.body.readableBytes == 0)
            }
            try await tester.test(.HEAD, "items") { response in
                #expect(response.status == .ok && response.body.readableBytes == 0)
                #expect(response.headers.first(name: "Content-Length") == "5")
            }
            #expect(calls.count == 1)
        }
    }

    @Test func revalidatesAStaleAnswerWithTheRouteAndA304() async throws {
        try await Self.withApp { app, _, clock in
            let calls = Counter()
            app.get("items") { request in
                calls.increment()
                let headers: HTTPHeaders = ["Cache-Control": "max-age=10", "ETag": "\"v1\""]
                if request.headers.first(name: "If-None-Match") == "\"v1\"" {
                    return Response(status: .notModified, headers: headers)
                }
                return Response(status: .ok, headers: headers, body: "items")
            }
            let tester = try app.testing()
            try await tester.test(.GET, "items") { #expect($0.body.string == "items") }
            clock.advance(by: 20)
            try await tester.test(.GET, "items") { response in
                #expect(response.status == .ok && response.body.string == "items")
                #expect(response.headers.first(name: "Cache-Status") == "LayeredCache; fwd=stale; fwd-status=304")
            }
            try await tester.test(.GET, "items") { response in
                #expect(response.headers.first(name: "Cache-Status") == "LayeredCache; hit; ttl=10")
            }
            #expect(calls.count == 2)
        }
    }

    /// A 304 that selects nothing stored sends the request again as it came: the route sees the
    /// client's own conditions (none here), not the revalidation's.
    @Test func a304ThatSelectsNothingStoredSendsTheRequestAgainAsItCame() async throws {
        try await Self.withApp { app, _, clock in
            let seen = Mutex<[String?]>([])
            app.get("items") { request in
                let condition = request.headers.first(name: "If-None-Match")
                seen.withLock { $0.append(condition) }
                if condition != nil {
                    return Response(status: .notModified, headers: ["Cache-Control": "max-age=10", "ETag": "\"v2\""])
                }
                let version = seen.withLock { $0.count } == 1 ? "v1" : "v2"
                return Response(
                    status: .ok,
                    headers: ["Cache-Control": "max-age=10", "ETag": "\"\(version)\""],
                    body: .init(string: version)
                )
            }
            let tester = try app.testing()
            try await tester.test(.GET, "items") { #expect($0.body.string == "v1") }
            clock.advance(by: 20)
            try await tester.test(.GET, "items") { response in
                #expect(response.status == .ok && response.body.string == "v2")
                #expect(response.headers.first(name: "Cache-Status") == "LayeredCache; fwd=stale")
            }
            #expect(seen.withLock { $0 } == [nil, "\"v1\"", nil])
        }
    }

    @Test func aPOSTInvalidatesItsTarget() async throws {
        try await Self.withApp { app, _, _ in
            let version = Mutex(1)
            app.get("items") { _ in
                Response(headers: ["Cache-Control": "max-age=60"], body: .init(string: "v\(version.withLock { $0 })"))
            }
            app.post("items") { _ in
                version.withLock { $0 += 1 }
                return Response(status: .noContent)
            }
            let tester = try app.testing()
            try await tester.test(.GET, "items") { #expect($0.body.string == "v1") }
            try await tester.test(.GET, "items") { #expect($0.body.string == "v1") }
            try await tester.test(.POST, "items") { #expect($0.status == .noContent) }
            try await tester.test(.GET, "items") { #expect($0.body.string == "v2") }
        }
    }

    /// A visitor's own data — a session cookie set on the answer, an answer to a request with
    /// credentials — is never stored for the next visitor, and never reaches the disk; the
    /// delegate strips what it is asked to from what is stored.
    @Test func oneVisitorsDataIsNeverStoredForTheNext() async throws {
        let directory = TemporaryDirectory("vapor-middleware-privacy")
        defer { directory.remove() }
        try await Self.withApp(disk: directory.path, delegate: StripSecret()) { app, _, _ in
            let calls = Counter()
            app.get("session") { _ in
                calls.increment()
                let response = Response(headers: ["Cache-Control": "max-age=60"], body: "welcome")
                response.cookies["session"] = .init(string: "9b2e61c04f7d4a13b8e5")
                return response
            }
            app.get("me") { _ in
                calls.increment()
                return Response(headers: ["Cache-Control": "max-age=60"], body: "account-4d1c77e0a9")
            }
            app.get("public") { _ in
                calls.increment()
                return Response(
                    headers: ["Cache-Control": "max-age=60", "X-Secret": "e41b0c9a77d2f3186b5a"],
                    body: "public-control-8c3f"
                )
            }
            let tester = try app.testing()
            for _ in 0..<2 {
                try await tester.test(.GET, "session") { #expect($0.headers.first(name: "Set-Cookie") != nil) }
                try await tester.test(.GET, "me", headers: ["Authorization": "Bearer t0k3n"]) {
                    #expect($0.body.string == "account-4d1c77e0a9")
                }
            }
            try await tester.test(.GET, "public") { #expect($0.headers.first(name: "X-Secret") != nil) }
            try await tester.test(.GET, "public") { response in
                #expect(response.headers.first(name: "Cache-Status") == "LayeredCache; hit; ttl=60")
                #expect(response.headers.first(name: "X-Secret") == nil)
            }
            #expect(calls.count == 5)
        }
        let written = DiskScan.bytes(under: directory.path)
        #expect(DiskScan.contains(written, "public-control-8c3f"))
        for secret in ["9b2e61c04f7d4a13b8e5", "account-4d1c77e0a9", "e41b0c9a77d2f3186b5a"] {
            #expect(!DiskScan.contains(written, secret))
        }
    }

    struct StripSecret: ResponseCacheDelegate {
        func willCache(_ response: CachedResponse, for request: HTTPRequest) async -> CachedResponse? {
            var response = response
            response.response.headerFields[values: HTTPField.Name("X-Secret")!] = []
            return response
        }
    }

    /// A stream of a known length within the limit is stored (a file from `req.fileio`); a stream
    /// of unknown length passes through untouched and is not stored.
    @Test func streamsOfAKnownLengthAreStoredAndOthersPassThrough() async throws {
        try await Self.withApp { app, _, _ in
            let calls = Counter()
            app.get("known") { _ in
                calls.increment()
                return Response(
                    headers: ["Cache-Control": "max-age=60"],
                    body: .init(
                        asyncStream: { writer in
                            try await writer.writeBuffer(ByteBuffer(string: "chunk-1;"))
                            try await writer.writeBuffer(ByteBuffer(string: "chunk-2"))
                            try await writer.write(.end)
                        },
                        count: 15
                    )
                )
            }
            app.get("unknown") { _ in
                calls.increment()
                return Response(
                    headers: ["Cache-Control": "max-age=60"],
                    body: .init(asyncStream: { writer in
                        try await writer.writeBuffer(ByteBuffer(string: "live-"))
                        try await writer.writeBuffer(ByteBuffer(string: "feed"))
                        try await writer.write(.end)
                    })
                )
            }
            // The tester starts the server on a new port for each request: one Host keeps one key.
            let tester = try app.testing(method: .running(port: 0))
            for _ in 0..<2 {
                try await tester.test(.GET, "known", headers: Self.host) {
                    #expect($0.body.string == "chunk-1;chunk-2")
                }
                try await tester.test(.GET, "unknown", headers: Self.host) { #expect($0.body.string == "live-feed") }
            }
            #expect(calls.count == 3)
        }
    }

    @Test func onlyIfCachedWithNothingStoredIs504() async throws {
        try await Self.withApp { app, _, _ in
            app.get("items") { _ in "never" }
            try await app.testing().test(.GET, "items", headers: ["Cache-Control": "only-if-cached"]) { response in
                #expect(response.status == .gatewayTimeout)
                #expect(response.headers.first(name: "Cache-Status") == "LayeredCache; fwd=request")
            }
        }
    }

    /// Over a real port: the answer a socket client gets from the cache is the route's, byte for
    /// byte, and the application's shutdown closes the cache.
    @Test func overARealPortAndShutdownClosesTheCache() async throws {
        var cache: ResponseCache?
        try await Self.withApp { app, middleware, _ in
            cache = middleware.cache
            app.get("big") { _ in
                Response(
                    headers: ["Cache-Control": "max-age=60"],
                    body: .init(string: String(repeating: "0123456789", count: 5_000))
                )
            }
            let tester = try app.testing(method: .running(port: 0))
            for status in ["LayeredCache; fwd=uri-miss", "LayeredCache; hit; ttl=60"] {
                try await tester.test(.GET, "big", headers: Self.host) { response in
                    #expect(response.body.string == String(repeating: "0123456789", count: 5_000))
                    #expect(response.headers.first(name: "Cache-Status") == status)
                }
            }
        }
        #expect(cache?.isOpen == false)
    }

    /// The request's span as Vapor's `TracingMiddleware` makes it with the bootstrapped tracer
    /// (which a test process cannot bootstrap for one test): kept on the request, not in the task.
    struct RequestSpan: AsyncMiddleware {
        let tracer: InMemoryTracer
        func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
            let parent = request.serviceContext
            return try await tracer.withSpan("GET", context: parent, ofKind: .server) { span in
                request.serviceContext = span.context
                defer { request.serviceContext = parent }
                return try await next.respond(to: request)
            }
        }
    }

    @Test func aTracedRequestHasTheMiddlewaresSpanWithItsCacheStatusUnderTheRequestsSpan() async throws {
        let tracer = InMemoryTracer()
        try await VaporTesting.withApp { app in
            let middleware = try HTTPCacheMiddleware(
                configuration: .init(cache: .init(mode: .shared, now: ManualDate().now), tracer: tracer)
            )
            app.middleware.use(RequestSpan(tracer: tracer))
            app.middleware.use(middleware)
            app.get("items") { _ in Response(headers: ["Cache-Control": "max-age=60"], body: "x") }
            let tester = try app.testing()
            try await tester.test(.GET, "items") { _ in }
            try await tester.test(.GET, "items") { _ in }
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
