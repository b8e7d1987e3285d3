// SPDX-License-Identifier: Apache-2.0

#if Tools
import CacheTestSupport
import Foundation
import HTTPCaching
import HTTPTypes
import Hummingbird
import HummingbirdLayeredCache
import Logging
import NIOCore

/// `ResponseCacheMiddleware` on a Hummingbird route, in the same run: the route's handler alone
/// (it encodes a JSON list of 20 items, about 1 KB, and writes the body), then the same requests
/// through the middleware, answered from the cache (a hit: lookup, `Age`, body from memory).
/// Requests go straight to the middleware and handler (no sockets), so the figures are the
/// middleware's own cost against the handler's. Ratio = hits per second ÷ the handler's.
enum MiddlewareBenchmarks {
    struct Item: Codable, Sendable {
        var id: Int
        var name: String
        var price: Double
    }

    struct Context: RequestContext {
        struct Source: RequestContextSource { let logger: Logger }
        var coreContext: CoreRequestContextStorage
        init(source: Source) { coreContext = .init(source: source) }
    }

    /// Collects a response body as the server would write it.
    struct CountingWriter: ResponseBodyWriter {
        var bytes = 0
        mutating func write(_ buffer: ByteBuffer) async throws { bytes += buffer.readableBytes }
        consuming func finish(_ trailingHeaders: HTTPFields?) async throws { blackHole(bytes) }
    }

    static func run(quick: Bool) async throws -> [BenchmarkResult] {
        let batches = quick ? 50 : 500
        let batchSize = 100
        let rounds = quick ? 3 : 7
        let items = (0..<20).map { Item(id: $0, name: "item \($0)", price: Double($0) * 1.5) }
        let handler: @Sendable (Request, Context) async throws -> Response = { _, _ in
            let body = try JSONEncoder().encode(items)
            return Response(
                status: .ok,
                headers: [.contentType: "application/json", .cacheControl: "max-age=3600"],
                body: .init(byteBuffer: ByteBuffer(bytes: body))
            )
        }
        let middleware = try ResponseCacheMiddleware<Context>()
        let context = Context(source: .init(logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })))
        let head = HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: "/items")
        func request() -> Request { Request(head: head, body: .init(buffer: ByteBuffer())) }
        // Store the answer once; every timed call through the middleware is a hit.
        try await middleware.handle(request(), context: context, next: handler).body.write(CountingWriter())

        let clock = ContinuousClock()
        func round(
            _ respond: (Request) async throws -> Response
        ) async throws -> (
            p50: Double, p99: Double, opsPerSecond: Double
        ) {
            var perCall: [Double] = []
            for _ in 0..<batches {
                let start = clock.now
                for _ in 0..<batchSize {
                    try await respond(request()).body.write(CountingWriter())
                }
                perCall.append(Harness.nanoseconds(of: clock.now - start) / Double(batchSize))
            }
            return Harness.summarize(perCall, operationsEach: batchSize)
        }
        var alone: [(p50: Double, p99: Double, opsPerSecond: Double)] = []
        var hits: [(p50: Double, p99: Double, opsPerSecond: Double)] = []
        for index in 0..<rounds {
            let handlerFirst = index % 2 == 0
            if handlerFirst { alone.append(try await round { try await handler($0, context) }) }
            hits.append(try await round { try await middleware.handle($0, context: context, next: handler) })
            if !handlerFirst { alone.append(try await round { try await handler($0, context) }) }
        }
        let reference = Harness.median(alone.map(\.opsPerSecond))
        let workload = "Hummingbird route, JSON of 20 items (~1 KB)"
        return [
            ("handler alone", "encodes and writes the JSON", alone),
            ("ResponseCacheMiddleware hit", "memory tier, Age added", hits),
        ].map { subject, detail, samples in
            let opsPerSecond = Harness.median(samples.map(\.opsPerSecond))
            return BenchmarkResult(
                workload: workload,
                subject: subject,
                detail: detail,
                opsPerSecond: opsPerSecond,
                p50Nanos: Harness.median(samples.map(\.p50)),
                p99Nanos: Harness.median(samples.map(\.p99)),
                ratio: opsPerSecond / reference
            )
        }
    }
}
#endif
