// SPDX-License-Identifier: Apache-2.0

#if Tools
import CacheTestSupport
import CacheTiers
import Foundation
import HTTPCaching
import HTTPTypes

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `ResponseCache.cachedResponse(for:)` against `URLCache.cachedResponse(for:)` on memory-resident
/// entries, in the same run: 200 URLs holding fresh JSON responses (five header fields) with 1 KB,
/// 16 KB and 256 KB bodies, read in a seeded random order. Lookups are timed in batches of 100;
/// p50 / p99 are per lookup over the batches, medians of the rounds. Ratio = our lookups per
/// second ÷ URLCache's. A third row reads the same keys from the `MemoryTier` under the cache
/// (`entry(for:)` with each key made beforehand, as the memory suite reads it), so that the HTTP
/// layer's cost over its tier (issue 37: at most 1.5x the tier's p50) is measured in one run.
enum ResponseCacheBenchmarks {
    static let urlCount = 200
    static let batchSize = 100

    static func run(quick: Bool) async throws -> [BenchmarkResult] {
        var results: [BenchmarkResult] = []
        for bodyBytes in quick ? [1024] : [1024, 16 << 10, 256 << 10] {
            results += try await lookup(bodyBytes: bodyBytes, quick: quick)
        }
        return results
    }

    static func lookup(bodyBytes: Int, quick: Bool) async throws -> [BenchmarkResult] {
        let batches = quick ? 100 : 1000
        let rounds = quick ? 3 : 9
        let now = Date()
        let urls = (0..<urlCount).map { "https://api.example.com/v1/items/\($0)?fields=all" }
        let bodies = (0..<urlCount).map { SampleData.json(approximateBytes: bodyBytes, seed: UInt64($0)) }
        let headers: [(String, String)] = [
            ("Content-Type", "application/json"), ("Cache-Control", "max-age=3600"), ("ETag", "\"abc123\""),
            ("Date", "Sun, 22 Nov 2026 10:00:00 GMT"), ("Content-Length", "\(bodyBytes)"),
        ]

        let cache = try ResponseCache(configuration: .init(memory: .init(capacityBytes: 512 << 20)))
        let requests = urls.map { url in
            HTTPRequest(
                method: .get,
                scheme: "https",
                authority: "api.example.com",
                path: String(url.dropFirst("https://api.example.com".count))
            )
        }
        for (request, body) in zip(requests, bodies) {
            var fields = HTTPFields()
            for (name, value) in headers { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
            let cached = CachedResponse(
                response: HTTPResponse(status: .ok, headerFields: fields),
                body: body,
                requestTime: now,
                responseTime: now
            )
            let stored = try await cache.storeCachedResponse(cached, for: request)
            precondition(stored)
        }

        #if canImport(FoundationNetworking)
        let urlCache = URLCache(memoryCapacity: 512 << 20, diskCapacity: 0, diskPath: nil)
        #else
        let urlCache = URLCache(memoryCapacity: 512 << 20, diskCapacity: 0, directory: nil)
        #endif
        let urlRequests = urls.map { URLRequest(url: URL(string: $0)!) }
        for (request, body) in zip(urlRequests, bodies) {
            let response = HTTPURLResponse(
                url: request.url!,
                statusCode: 200,
                httpVersion: "HTTP/1.1",
                headerFields: Dictionary(uniqueKeysWithValues: headers)
            )!
            urlCache.storeCachedResponse(
                CachedURLResponse(response: response, data: Data(body), storagePolicy: .allowedInMemoryOnly),
                for: request
            )
        }

        let tierKeys = requests.map { ResponseCache.primaryKey(for: $0)! }
        var generator = SplitMix64(seed: 3)
        let order = (0..<batches * batchSize).map { _ in Int(generator.next() % UInt64(urlCount)) }
        let clock = ContinuousClock()

        /// A round of `hit` (given an index into the URLs) on every index of `order`.
        func syncRound(_ name: String, _ hit: (Int) -> Bool) -> (p50: Double, p99: Double, opsPerSecond: Double) {
            var perLookup: [Double] = []
            var hits = 0
            for batch in 0..<batches {
                let start = clock.now
                for index in order[batch * batchSize..<(batch + 1) * batchSize] where hit(index) {
                    hits += 1
                }
                perLookup.append(Harness.nanoseconds(of: clock.now - start) / Double(batchSize))
            }
            precondition(hits == order.count, "\(name) must hit every lookup")
            return Harness.summarize(perLookup, operationsEach: batchSize)
        }
        func urlCacheRound() -> (p50: Double, p99: Double, opsPerSecond: Double) {
            syncRound("URLCache") { urlCache.cachedResponse(for: urlRequests[$0]) != nil }
        }
        func tierRound() -> (p50: Double, p99: Double, opsPerSecond: Double) {
            syncRound("the memory tier") { cache.tiers.memory.entry(for: tierKeys[$0]) != nil }
        }

        func ourRound() async -> (p50: Double, p99: Double, opsPerSecond: Double) {
            var perLookup: [Double] = []
            var hits = 0
            for batch in 0..<batches {
                let start = clock.now
                for index in order[batch * batchSize..<(batch + 1) * batchSize]
                where await cache.cachedResponse(for: requests[index]) != nil {
                    hits += 1
                }
                perLookup.append(Harness.nanoseconds(of: clock.now - start) / Double(batchSize))
            }
            precondition(hits == order.count, "ResponseCache must hit every lookup")
            return Harness.summarize(perLookup, operationsEach: batchSize)
        }

        var ours: [(p50: Double, p99: Double, opsPerSecond: Double)] = []
        var theirs: [(p50: Double, p99: Double, opsPerSecond: Double)] = []
        var tier: [(p50: Double, p99: Double, opsPerSecond: Double)] = []
        for round in 0..<rounds {
            if round % 2 == 0 {
                theirs.append(urlCacheRound())
                tier.append(tierRound())
                ours.append(await ourRound())
            } else {
                ours.append(await ourRound())
                tier.append(tierRound())
                theirs.append(urlCacheRound())
            }
        }
        let workload = "cachedResponse(for:), \(bodyBytes >> 10) KB body, memory"
        let reference = Harness.median(theirs.map(\.opsPerSecond))
        return [
            ("URLCache", "Foundation, memory only", theirs), ("ResponseCache", "memory tier", ours),
            ("MemoryTier", "entry(for:) of the same keys, made beforehand", tier),
        ].map {
            subject,
            detail,
            samples in
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
