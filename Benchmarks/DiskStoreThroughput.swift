// SPDX-License-Identifier: Apache-2.0

#if Tools
import CacheTestSupport
import CacheTiers
import Foundation

/// `DiskTier.set` of fresh keys into an empty directory: 1 KB and 4 KB JSON values (ops/s), 64 KB
/// JSON and random values (MB/s of value bytes before compression). Fsync policy `never`, capacity
/// large enough that nothing is retired; each set timed on its own.
enum DiskStoreThroughput {
    static func run(quick: Bool) async throws -> [BenchmarkResult] {
        var results: [BenchmarkResult] = []
        let cases: [(name: String, bytes: Int, values: [[UInt8]], count: Int)] = [
            (
                "1 KB JSON", 1024, (0..<64).map { SampleData.json(approximateBytes: 1024, seed: UInt64($0)) },
                quick ? 20_000 : 200_000
            ),
            (
                "4 KB JSON", 4096, (0..<64).map { SampleData.json(approximateBytes: 4096, seed: UInt64($0)) },
                quick ? 10_000 : 100_000
            ),
            (
                "64 KB JSON", 64 << 10, (0..<16).map { SampleData.json(approximateBytes: 64 << 10, seed: UInt64($0)) },
                quick ? 500 : 5_000
            ),
            (
                "64 KB random", 64 << 10, (0..<16).map { SampleData.random(count: 64 << 10, seed: UInt64($0)) },
                quick ? 500 : 5_000
            ),
        ]
        let clock = ContinuousClock()
        for (name, valueBytes, values, count) in cases {
            var rounds: [LatencySummary] = []
            var megabytesPerSecond: [Double] = []
            for _ in 0..<(quick ? 1 : 3) {
                let directory = TemporaryDirectory("bench-store")
                defer { directory.remove() }
                let tier = try DiskTier(configuration: DiskTierBenchmarks.configuration(directory))
                let now = Date()
                var recorder = LatencyRecorder()
                var bytes = 0
                for index in 0..<count {
                    let value = values[index % values.count]
                    let entry = CacheEntry(value: value, storedAt: now)
                    let key = CacheKey("https://api.example.com/v1/items/\(index)")
                    let start = clock.now
                    let stored = try await tier.set(entry, for: key)
                    recorder.record(Harness.nanoseconds(of: clock.now - start))
                    precondition(stored)
                    bytes += value.count
                }
                try await tier.close()
                let summary = recorder.summary
                rounds.append(summary)
                megabytesPerSecond.append(Double(bytes) / Double(count) * summary.opsPerSecond / 1e6)
            }
            var result = BenchmarkResult(
                workload: "disk store, \(name), fresh keys",
                subject: "DiskTier",
                detail: "fsync never, \(count) sets into an empty directory",
                megabytesPerSecond: Harness.median(megabytesPerSecond),
                valueBytes: valueBytes
            )
            result.take(LatencySummary.median(rounds))
            results.append(result)
        }
        return results + (try await batches(quick: quick))
    }

    /// A refresh's worth of writes (an index and 50 entities: 51 values of 1 KB JSON over fresh
    /// keys) as one `DiskTier.commit` against 51 `DiskTier.set` calls; each group timed on its own.
    /// Ratio: the batch's groups per second ÷ the one-by-one's.
    static func batches(quick: Bool) async throws -> [BenchmarkResult] {
        let values = (0..<51).map { SampleData.json(approximateBytes: 1024, seed: UInt64($0)) }
        let groups = quick ? 200 : 2_000
        let clock = ContinuousClock()
        var single: [LatencySummary] = []
        var batched: [LatencySummary] = []
        for round in 0..<(quick ? 1 : 3) {
            for asBatch in round % 2 == 0 ? [false, true] : [true, false] {
                let directory = TemporaryDirectory("bench-batch")
                defer { directory.remove() }
                let tier = try DiskTier(configuration: DiskTierBenchmarks.configuration(directory))
                let now = Date()
                var recorder = LatencyRecorder()
                for group in 0..<groups {
                    let changes: [DiskTier.Change] = values.enumerated().map { index, value in
                        .set(CacheEntry(value: value, storedAt: now), for: CacheKey("query/\(group)/\(index)"))
                    }
                    let start = clock.now
                    if asBatch {
                        try await tier.commit(changes)
                    } else {
                        for case .set(let entry, let key) in changes { try await tier.set(entry, for: key) }
                    }
                    recorder.record(Harness.nanoseconds(of: clock.now - start))
                }
                try await tier.close()
                if asBatch { batched.append(recorder.summary) } else { single.append(recorder.summary) }
            }
        }
        func row(_ detail: String, _ rounds: [LatencySummary]) -> BenchmarkResult {
            var result = BenchmarkResult(
                workload: "disk store, 51 × 1 KB JSON (a refresh), fresh keys",
                subject: "DiskTier",
                detail: detail,
                valueBytes: 1024
            )
            result.take(LatencySummary.median(rounds))
            return result
        }
        var one = row("51 set calls", single)
        one.ratio = 1
        var batch = row("one commit, whole across a crash", batched)
        batch.ratio = batch.opsPerSecond! / one.opsPerSecond!
        return [one, batch]
    }
}
#endif
