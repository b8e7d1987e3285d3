// SPDX-License-Identifier: Apache-2.0

#if Tools
import CacheTestSupport
import CacheTiers
import Foundation

/// A mixed workload on a `TieredCache`: 90% reads and 10% writes of keys drawn from a Zipf(0.99)
/// distribution over 100,000 keys holding 1 KB JSON values. The memory tier holds 10% of the keys
/// (10,000 entries) over a disk tier that holds all of them (page cache warm). One task; each
/// operation timed on its own. A warm-up pass of the same length runs first, untimed; then the
/// hit ratio of each tier is counted from the tiers' statistics: memory hits ÷ reads and disk
/// hits ÷ reads.
///
/// URLCache would need 100,000 disk entries, and it lists its directory on every disk operation:
/// its row is an estimate from a 100-entry pilot, skipped.
enum MixedWorkloadBenchmarks {
    static let keyCount = 100_000
    static let valueBytes = 1024
    static let exponent = 0.99
    static let readFraction = 0.9

    static func run(quick: Bool) async throws -> [BenchmarkResult] {
        let operations = quick ? 50_000 : 300_000
        let rounds = quick ? 1 : 3
        let directory = TemporaryDirectory("bench-mixed")
        defer { directory.remove() }
        let bodies = (0..<64).map { SampleData.json(approximateBytes: valueBytes, seed: UInt64($0)) }
        let keys = (0..<keyCount).map { CacheKey("https://api.example.com/v1/items/\($0)?fields=all") }
        let now = Date()
        do {
            let store = try DiskStore(configuration: DiskTierBenchmarks.configuration(directory))
            for (index, key) in keys.enumerated() {
                _ = try store.set(CacheEntry(value: bodies[index % bodies.count], storedAt: now), for: key)
            }
            try store.close()
        }
        let disk = try DiskTier(configuration: DiskTierBenchmarks.configuration(directory))
        let memory = MemoryTier(
            configuration: .init(capacityBytes: keyCount * valueBytes, maximumEntryCount: keyCount / 10)
        )
        let cache = TieredCache(memory: memory, disk: disk)

        // (key index, is a write) for every operation, drawn before any timing.
        var generator = SplitMix64(seed: 17)
        let zipf = ZipfSampler(count: keyCount, exponent: exponent)
        let plan = (0..<operations).map { _ in
            (zipf.next(using: &generator), Double(generator.next() >> 11) / Double(1 << 53) >= readFraction)
        }
        let reads = plan.count { !$0.1 }

        let clock = ContinuousClock()
        var samples: [LatencySummary] = []
        var memoryRatios: [Double] = []
        var diskRatios: [Double] = []
        for round in -1..<rounds {
            let memoryBefore = memory.statistics.hits
            let diskBefore = await disk.statistics.hits
            var recorder = LatencyRecorder()
            for (index, isWrite) in plan {
                let key = keys[index]
                let start = clock.now
                if isWrite {
                    try await cache.set(CacheEntry(value: bodies[index % bodies.count], storedAt: now), for: key)
                } else {
                    let found = await cache.entry(for: key)
                    precondition(found != nil, "every key is on disk")
                }
                recorder.record(Harness.nanoseconds(of: clock.now - start))
            }
            guard round >= 0 else { continue }  // the warm-up pass
            samples.append(recorder.summary)
            memoryRatios.append(Double(memory.statistics.hits - memoryBefore) / Double(reads))
            diskRatios.append(Double(await disk.statistics.hits - diskBefore) / Double(reads))
        }
        try await disk.close()

        let workload = "mixed Zipf(0.99), 90% reads, 100k keys, memory holds 10%"
        var ours = BenchmarkResult(
            workload: workload,
            subject: "TieredCache",
            detail: String(
                format: "1 KB JSON, %d ops; hits: memory %.1f%%, disk %.1f%%",
                operations,
                Harness.median(memoryRatios) * 100,
                Harness.median(diskRatios) * 100
            ),
            entries: keyCount,
            valueBytes: valueBytes,
            hitRatios: ["memory": Harness.median(memoryRatios), "disk": Harness.median(diskRatios)]
        )
        ours.take(LatencySummary.median(samples))
        let pilot = URLCacheSubject.pilot(bodies: bodies)
        let budget = quick ? 5.0 : 240.0
        let theirs = BenchmarkResult(
            workload: workload,
            subject: "URLCache",
            detail: "Foundation, 10% memory over disk",
            entries: keyCount,
            valueBytes: valueBytes,
            skipped: URLCacheSubject.skippedNote(
                estimatedSeconds: pilot.estimatedSeconds(entries: keyCount, operations: operations),
                budgetSeconds: budget
            )
        )
        return [theirs, ours]
    }
}

/// Draws ranks 0..<count with probability proportional to 1 / (rank + 1)^exponent, by a binary
/// search of the cumulative distribution (built once).
struct ZipfSampler: Sendable {
    let cumulative: [Double]

    init(count: Int, exponent: Double) {
        var running = 0.0
        var cumulative = [Double]()
        cumulative.reserveCapacity(count)
        for rank in 1...count {
            running += 1 / pow(Double(rank), exponent)
            cumulative.append(running)
        }
        self.cumulative = cumulative.map { $0 / running }
    }

    func next(using generator: inout SplitMix64) -> Int {
        let uniform = Double(generator.next() >> 11) / Double(1 << 53)
        var low = 0
        var high = cumulative.count - 1
        while low < high {
            let middle = (low + high) / 2
            if cumulative[middle] < uniform { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
#endif
