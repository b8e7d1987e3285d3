// SPDX-License-Identifier: Apache-2.0

#if Tools
import CacheTestSupport
import CacheTiers
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Memory hit, disk hit, store and remove for each value size (1 KB, 16 KB, 256 KB by default),
/// ours against Foundation's `URLCache` in the same run. Values are JSON API bodies.
///
/// - Memory hit: a warm `MemoryTier` against a memory-only `URLCache` holding the same keys and
///   bodies; gets timed in batches of 100, interleaved round by round.
/// - Disk hit, cold memory tier: `DiskTier.entry(for:)` (what a `TieredCache` read does after a
///   memory miss), page cache warm, each get timed on its own.
/// - Store: `DiskTier.set` of fresh keys into an empty directory (fsync `never`); remove: every
///   key removed again. Each operation timed on its own; fresh directory each round.
/// - URLCache on disk (memory capacity 0) fills 100 entries (20 with `--quick`: its stores),
///   reads them at random and removes them: its disk operations list its directory, so it gets
///   100 entries where we get 1,000 (200 at 256 KB) — which favours URLCache.
///
/// Ratio = our ops/s ÷ URLCache's.
enum ValueSizeBenchmarks {
    static let defaultSizes = [1 << 10, 16 << 10, 256 << 10]

    static func run(quick: Bool) async throws -> [BenchmarkResult] {
        try await run(quick: quick, sizes: nil)
    }

    static func run(quick: Bool, sizes: [Int]?) async throws -> [BenchmarkResult] {
        var results: [BenchmarkResult] = []
        for size in sizes ?? defaultSizes {
            let keyCount = size >= 128 << 10 ? 200 : 1000
            let bodies = (0..<keyCount).map { SampleData.json(approximateBytes: size, seed: UInt64($0)) }
            results += memoryHit(bodies: bodies, valueBytes: size, quick: quick)
            results += try await diskOperations(bodies: bodies, valueBytes: size, quick: quick)
        }
        return results
    }

    static func label(_ bytes: Int) -> String {
        bytes >= 1 << 20 ? "\(bytes >> 20) MB" : bytes >= 1 << 10 ? "\(bytes >> 10) KB" : "\(bytes) B"
    }

    // MARK: Memory

    static func memoryHit(bodies: [[UInt8]], valueBytes: Int, quick: Bool) -> [BenchmarkResult] {
        let batches = quick ? 100 : 500
        let rounds = quick ? 3 : 7
        let keys = (0..<bodies.count).map { CacheKey(URLCacheSubject.url($0)) }
        let capacity = bodies.count * (valueBytes + 4096) * 2
        let tier = MemoryTier(
            configuration: .init(capacityBytes: capacity, maximumEntryCount: bodies.count * 2, admissionFraction: 0.5)
        )
        let now = Date()
        for (key, body) in zip(keys, bodies) {
            precondition(tier.set(CacheEntry(value: body, storedAt: now), for: key))
        }
        let urlCache = URLCacheSubject(memoryCapacity: capacity)
        for (index, body) in bodies.enumerated() { urlCache.store(body, at: index) }
        let requests = urlCache.requests
        var generator = SplitMix64(seed: 11)
        let order = (0..<batches * MemoryTierBenchmarks.batchSize).map { _ in
            Int(generator.next() % UInt64(bodies.count))
        }
        let subjects: [(name: String, lookup: MemoryTierBenchmarks.Lookup)] = [
            (
                "URLCache (memory only)",
                { order, range in
                    var hits = 0
                    for index in range where urlCache.cache.cachedResponse(for: requests[order[index]]) != nil {
                        hits += 1
                    }
                    return hits
                }
            ),
            (
                "MemoryTier",
                { order, range in
                    var hits = 0
                    for index in range where tier.entry(for: keys[order[index]]) != nil { hits += 1 }
                    return hits
                }
            ),
        ]
        var samples = Array(repeating: [LatencySummary](), count: subjects.count)
        for round in 0..<rounds {
            for index in round % 2 == 0 ? [0, 1] : [1, 0] {
                let measured = MemoryTierBenchmarks.timeBatches(order: order, batches: batches, subjects[index].lookup)
                samples[index].append(
                    LatencySummary(
                        p50: measured.p50,
                        p99: measured.p99,
                        p999: .nan,
                        opsPerSecond: measured.opsPerSecond
                    )
                )
            }
        }
        let medians = samples.map(LatencySummary.median)
        return zip(subjects, medians).map { subject, median in
            var result = BenchmarkResult(
                workload: "memory hit, \(label(valueBytes)) values",
                subject: subject.name,
                detail: "\(bodies.count) keys, batches of 100",
                entries: bodies.count,
                valueBytes: valueBytes
            )
            result.take(median)
            result.p999Nanos = nil
            result.ratio = median.opsPerSecond / medians[0].opsPerSecond
            return result
        }
    }

    // MARK: Disk

    static func diskOperations(bodies: [[UInt8]], valueBytes: Int, quick: Bool) async throws -> [BenchmarkResult] {
        let rounds = quick ? 1 : 3
        let gets = quick ? 2_000 : 20_000
        let keys = (0..<bodies.count).map { CacheKey(URLCacheSubject.url($0)) }
        let clock = ContinuousClock()
        var stores: [LatencySummary] = []
        var hits: [LatencySummary] = []
        var removes: [LatencySummary] = []
        var generator = SplitMix64(seed: 13)
        let order = (0..<gets).map { _ in Int(generator.next() % UInt64(bodies.count)) }
        for _ in 0..<rounds {
            let directory = TemporaryDirectory("bench-values")
            defer { directory.remove() }
            let tier = try DiskTier(configuration: DiskTierBenchmarks.configuration(directory))
            let now = Date()
            var recorder = LatencyRecorder()
            for (key, body) in zip(keys, bodies) {
                let entry = CacheEntry(value: body, storedAt: now)
                let start = clock.now
                let stored = try await tier.set(entry, for: key)
                recorder.record(Harness.nanoseconds(of: clock.now - start))
                precondition(stored)
            }
            stores.append(recorder.summary)
            for key in keys {
                let warm = await tier.entry(for: key)
                precondition(warm != nil)
            }
            recorder = LatencyRecorder()
            for index in order {
                let start = clock.now
                let entry = await tier.entry(for: keys[index])
                recorder.record(Harness.nanoseconds(of: clock.now - start))
                precondition(entry != nil)
            }
            hits.append(recorder.summary)
            recorder = LatencyRecorder()
            for key in keys {
                let start = clock.now
                let removed = try await tier.remove(key)
                recorder.record(Harness.nanoseconds(of: clock.now - start))
                precondition(removed)
            }
            removes.append(recorder.summary)
            try await tier.close()
        }

        // URLCache: one round of 100 entries.
        let urlCacheEntries = quick ? 20 : 100
        let urlCache = URLCacheSubject(disk: "bench-values-urlcache")
        var urlStores = LatencyRecorder()
        for index in 0..<urlCacheEntries { urlStores.record(urlCache.store(bodies[index % bodies.count], at: index)) }
        var urlHits = LatencyRecorder()
        for _ in 0..<(quick ? 10 : 50) { urlHits.record(urlCache.get(Int(generator.next() % UInt64(urlCacheEntries)))) }
        var urlRemoves = LatencyRecorder()
        for index in 0..<urlCacheEntries { urlRemoves.record(urlCache.remove(index)) }

        let size = label(valueBytes)
        let workloads: [(workload: String, ours: [LatencySummary], theirs: LatencySummary, detail: String)] = [
            ("disk hit, \(size) values, cold memory tier", hits, urlHits.summary, "page cache warm"),
            ("disk store, \(size) values", stores, urlStores.summary, "fresh keys, fsync never"),
            ("disk remove, \(size) values", removes, urlRemoves.summary, "every key"),
        ]
        var results: [BenchmarkResult] = []
        for (workload, ours, theirs, detail) in workloads {
            var reference = BenchmarkResult(
                workload: workload,
                subject: "URLCache",
                detail: "Foundation, disk, \(urlCacheEntries) entries",
                ratio: 1,
                entries: urlCacheEntries,
                valueBytes: valueBytes
            )
            reference.take(theirs)
            var measured = BenchmarkResult(
                workload: workload,
                subject: "DiskTier",
                detail: "\(detail), \(bodies.count) entries",
                entries: bodies.count,
                valueBytes: valueBytes
            )
            measured.take(LatencySummary.median(ours))
            measured.ratio = measured.opsPerSecond! / theirs.opsPerSecond
            results += [reference, measured]
        }
        return results
    }
}
#endif
