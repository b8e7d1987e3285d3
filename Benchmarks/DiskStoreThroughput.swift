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
        return results
    }
}
#endif
