// SPDX-License-Identifier: Apache-2.0

#if Tools
import AsyncHTTPClientTransport
import CacheTestSupport
import CacheTiers
import CachingClient
import HTTPCaching
import HTTPTypes
import TestOriginSupport

/// What a miss costs the cache, beside what it costs to ask the origin: every request a new URL
/// against a NIO origin on loopback answering a 1 KB JSON with `max-age=3600`, in one run:
/// - `transport alone`: `HTTPClientTransport.send` straight to the origin (the origin's and the
///   HTTP client's cost, no cache: the reference, 1.00x);
/// - `fetch miss → store`: `CachingHTTPClient.fetch` (protocol policy): lookup, plan, the same
///   exchange, store; and the same with `coalescing: .byCacheKey` (cache-proxy's setting);
/// - the cache's parts without a network, on the same responses: `lookup, miss` and `store`
///   (`storeCachedResponse(_:for:)` through the lookup, hooks and rules included).
/// Each operation is timed alone; ratio = ops/s ÷ the transport's.
enum ClientMissBenchmarks {
    static func run(quick: Bool) async throws -> [BenchmarkResult] {
        let count = quick ? 300 : 3000
        let rounds = quick ? 3 : 5
        let body = SampleData.json(approximateBytes: 1024, seed: 9)
        let origin = try await TestOrigin.start()
        defer { Task { await origin.stop() } }
        origin.setFallback(.respond(status: 200, headers: [("Cache-Control", "max-age=3600")], body: body))
        let transport = HTTPClientTransport()
        let clock = ContinuousClock()
        var serial = 0
        func nextRequest() -> HTTPRequest {
            serial += 1
            return HTTPRequest(method: .get, scheme: "http", authority: origin.authority, path: "/items/\(serial)?v=1")
        }
        // Warm the connection pool and the origin.
        for _ in 0..<50 { _ = try await transport.send(nextRequest(), body: nil, timeout: .seconds(10)) }

        var transportRounds: [LatencySummary] = []
        var fetchRounds: [LatencySummary] = []
        var byKeyRounds: [LatencySummary] = []
        var lookupRounds: [LatencySummary] = []
        var storeRounds: [LatencySummary] = []
        for round in 0..<rounds {
            let cache = try ResponseCache(configuration: .init(memory: .init(capacityBytes: 512 << 20)))
            let client = CachingHTTPClient(transport: transport, cache: cache)
            let byKey = CachingHTTPClient(
                transport: transport,
                cache: cache,
                configuration: .init(coalescing: .byCacheKey)
            )
            func viaTransport() async throws -> LatencySummary {
                var recorder = LatencyRecorder()
                for _ in 0..<count {
                    let request = nextRequest()
                    let start = clock.now
                    let answer = try await transport.send(request, body: nil, timeout: .seconds(10))
                    let elapsed = clock.now - start
                    precondition(answer.body.count == body.count)
                    recorder.record(Harness.nanoseconds(of: elapsed))
                }
                return recorder.summary
            }
            func viaClient(_ client: CachingHTTPClient) async -> LatencySummary {
                var recorder = LatencyRecorder()
                for _ in 0..<count {
                    let request = nextRequest()
                    let start = clock.now
                    let result = await client.fetch(request)
                    let elapsed = clock.now - start
                    precondition(result.source == .network && result.body?.count == body.count)
                    recorder.record(Harness.nanoseconds(of: elapsed))
                }
                return recorder.summary
            }
            if round % 2 == 0 {
                transportRounds.append(try await viaTransport())
                fetchRounds.append(await viaClient(client))
                byKeyRounds.append(await viaClient(byKey))
            } else {
                byKeyRounds.append(await viaClient(byKey))
                fetchRounds.append(await viaClient(client))
                transportRounds.append(try await viaTransport())
            }
            // The cache's own parts, on a fresh cache and the same kind of response.
            let parts = try ResponseCache(configuration: .init(memory: .init(capacityBytes: 512 << 20)))
            let response = HTTPResponse(
                status: .ok,
                headerFields: [.cacheControl: "max-age=3600", .contentType: "application/json"]
            )
            var lookups = LatencyRecorder()
            var stores = LatencyRecorder()
            for _ in 0..<count {
                let request = nextRequest()
                let lookupStart = clock.now
                let lookup = await parts.lookup(request)
                let lookupEnd = clock.now
                let now = parts.configuration.now()
                let cached = CachedResponse(response: response, body: body, requestTime: now, responseTime: now)
                let storeStart = clock.now
                let stored = try await parts.storeCachedResponse(cached, for: lookup)
                let storeEnd = clock.now
                precondition(lookup.stored == nil && stored)
                lookups.record(Harness.nanoseconds(of: lookupEnd - lookupStart))
                stores.record(Harness.nanoseconds(of: storeEnd - storeStart))
            }
            lookupRounds.append(lookups.summary)
            storeRounds.append(stores.summary)
        }
        let reference = LatencySummary.median(transportRounds).opsPerSecond
        let rows: [(String, String, [LatencySummary])] = [
            ("HTTPClientTransport", "transport alone (origin on loopback)", transportRounds),
            ("CachingHTTPClient", "fetch miss → origin → store", fetchRounds),
            ("CachingHTTPClient", "the same, coalescing by cache key", byKeyRounds),
            ("ResponseCache", "lookup, miss (no network)", lookupRounds),
            ("ResponseCache", "store through the lookup (no network)", storeRounds),
        ]
        return rows.map { subject, detail, samples in
            let summary = LatencySummary.median(samples)
            return BenchmarkResult(
                workload: "client miss, 1 KB body, loopback origin",
                subject: subject,
                detail: detail,
                opsPerSecond: summary.opsPerSecond,
                p50Nanos: summary.p50,
                p99Nanos: summary.p99,
                ratio: summary.opsPerSecond / reference,
                p999Nanos: summary.p999
            )
        }
    }
}
#endif
