// SPDX-License-Identifier: Apache-2.0

#if Tools
import CacheTestSupport
import CacheTiers
import CachingClient
import Foundation
import HTTPCaching
import HTTPTypes
import Synchronization

/// `CachingHTTPClient` on its hot path and its single-flight:
/// - a fresh hit through `fetch` (protocol policy, and cache-first) against a direct
///   `ResponseCache.cachedResponse(for:)` on the same 200 memory-resident 1 KB JSON responses,
///   interleaved in one run; ratio = the client's lookups per second ÷ the direct lookup's
///   (issue 13's goal: a client hit costs at most 1.3× a direct lookup's p50);
/// - 100 concurrent identical misses against a transport that answers after 20 ms: how many
///   requests reach it (goal: exactly 1) and how long until all 100 callers have their answer.
enum CachingClientBenchmarks {
    static func run(quick: Bool) async throws -> [BenchmarkResult] {
        try await freshHit(quick: quick) + [try await concurrentMisses(quick: quick)]
    }

    /// A transport that counts requests and answers each after `delay`.
    final class CountingTransport: HTTPTransport {
        let count = Atomic<Int>(0)
        let delay: Duration
        init(delay: Duration = .zero) { self.delay = delay }
        func send(_ request: HTTPRequest, body: [UInt8]?, timeout: Duration) async throws -> HTTPTransportResponse {
            count.add(1, ordering: .relaxed)
            if delay > .zero { try await Task.sleep(for: delay) }
            return HTTPTransportResponse(
                response: HTTPResponse(status: .ok, headerFields: [.cacheControl: "max-age=3600"]),
                body: SampleData.json(approximateBytes: 1024, seed: 1)
            )
        }
    }

    static func freshHit(quick: Bool) async throws -> [BenchmarkResult] {
        let urlCount = 200
        let batchSize = 100
        let batches = quick ? 100 : 1000
        let rounds = quick ? 3 : 9
        let cache = try ResponseCache(configuration: .init(memory: .init(capacityBytes: 256 << 20)))
        let client = CachingHTTPClient(transport: CountingTransport(), cache: cache)
        let requests = (0..<urlCount).map {
            HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/v1/items/\($0)?fields=all")
        }
        for request in requests {
            let result = await client.fetch(request)
            precondition(result.source == .network)
        }
        var generator = SplitMix64(seed: 5)
        let order = (0..<batches * batchSize).map { _ in Int(generator.next() % UInt64(urlCount)) }
        let clock = ContinuousClock()

        func round(_ lookup: (HTTPRequest) async -> Bool) async -> (p50: Double, p99: Double, opsPerSecond: Double) {
            var perLookup: [Double] = []
            perLookup.reserveCapacity(batches)
            for batch in 0..<batches {
                let start = clock.now
                for index in order[batch * batchSize..<(batch + 1) * batchSize] {
                    let hit = await lookup(requests[index])
                    precondition(hit, "every lookup must hit")
                }
                perLookup.append(Harness.nanoseconds(of: clock.now - start) / Double(batchSize))
            }
            return Harness.summarize(perLookup, operationsEach: batchSize)
        }
        let subjects: [(String, String, (HTTPRequest) async -> Bool)] = [
            ("ResponseCache", "cachedResponse(for:)", { await cache.cachedResponse(for: $0) != nil }),
            ("CachingHTTPClient", "fetch, protocol policy", { await client.fetch($0).source == .cache }),
            (
                "CachingHTTPClient", "fetch, cache-first",
                { await client.fetch($0, policy: .cacheFirst).source == .cache }
            ),
        ]
        var samples = Array(repeating: [(p50: Double, p99: Double, opsPerSecond: Double)](), count: subjects.count)
        for index in 0..<rounds {
            for offset in 0..<subjects.count {
                let subject = (index + offset) % subjects.count
                samples[subject].append(await round(subjects[subject].2))
            }
        }
        return Harness.rows(
            workload: "client fresh hit, 1 KB body, memory",
            subjects: subjects.map { ($0.0, $0.1) },
            rounds: samples
        )
    }

    static func concurrentMisses(quick: Bool) async throws -> BenchmarkResult {
        let rounds = quick ? 3 : 9
        var upstream: [Int] = []
        var elapsed: [Double] = []
        let clock = ContinuousClock()
        for round in 0..<rounds {
            let cache = try ResponseCache(configuration: .init(memory: .init(capacityBytes: 16 << 20)))
            let transport = CountingTransport(delay: .milliseconds(20))
            let client = CachingHTTPClient(transport: transport, cache: cache)
            let request = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/r\(round)")
            let start = clock.now
            let answered = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<100 { group.addTask { await client.fetch(request).source == .network } }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            elapsed.append(Harness.nanoseconds(of: clock.now - start))
            precondition(answered == 100, "every caller gets the network's answer")
            upstream.append(transport.count.load(ordering: .relaxed))
        }
        return BenchmarkResult(
            workload: "100 concurrent identical misses",
            subject: "CachingHTTPClient",
            detail: "upstream requests: \(upstream.max() ?? 0) (max of \(rounds) rounds); origin 20 ms",
            opsPerSecond: 100 / (Harness.median(elapsed) / 1e9),
            p50Nanos: Harness.median(elapsed)
        )
    }
}
#endif
