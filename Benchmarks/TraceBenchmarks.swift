// SPDX-License-Identifier: Apache-2.0

#if Tools
import CacheTestSupport
import CacheTiers
import Foundation

/// Hit ratio on a production trace: Twitter's cache cluster 52 (1,000,000 requests to 143,542
/// objects; CC BY 4.0, Twitter; Yang, Yue, Rashmi, OSDI 2020), replayed through the memory tier
/// with each eviction policy and through `TieredCache`, at capacities of 1% and 10% of the
/// trace's footprint (and 50%, where the default 16 shards are all in use).
///
/// Every request is a lookup; a miss is followed by a set of the object (a read-through cache),
/// and a hit does not change the stored size, as in the trace's reference simulation. The key is
/// the object id as 16 hex digits and the value has the object's size, so an entry costs its size
/// plus 80 bytes (16 of key, the tier's 64 of overhead); capacities are fractions of the footprint
/// counted the same way. An LRU simulation in this file replays the trace with the same costs in
/// the same run (the tier's one-shard LRU must equal it exactly), and once more with sizes alone,
/// which must give the trace README's reference figures (LRU 0.3415 / 0.2091).
enum TraceBenchmarks {
    /// The default trace, relative to the package root.
    static let defaultPath = "../shared/traces/twitter_cluster52.csv.gz"
    /// What an entry costs beyond its value: the 16-byte key and ``CacheEntry``'s overhead.
    static let keyBytes = 16
    static var entryOverhead: Int { keyBytes + 64 }

    static func run(quick: Bool, path: String?) async throws -> [BenchmarkResult] {
        let path = path ?? defaultPath
        guard FileManager.default.fileExists(atPath: path) else {
            BenchmarksMain.log("trace: skipped, no trace file at \(path) (pass --trace FILE)")
            return []
        }
        let trace = try Trace(gzipPath: path, limit: quick ? 100_000 : nil)
        BenchmarksMain.log(
            "trace: \(trace.requests.count) requests, \(trace.objectCount) objects, footprint "
                + "\(trace.footprint(overhead: 0)) B (sizes) / \(trace.footprint(overhead: entryOverhead)) B (costs)"
        )
        let rounds = quick ? 1 : 3
        var results: [BenchmarkResult] = []
        // 50%: large enough for the default 16 shards to be in use (each needs 1 MiB).
        for percent in [1, 10, 50] {
            results += try await replays(trace, percent: percent, rounds: rounds)
        }
        return results
    }

    // MARK: Replays

    /// The rows for one capacity; each memory replay runs `rounds` times on a fresh cache (ops/s is
    /// the median; the miss ratio is the same every time).
    static func replays(_ trace: Trace, percent: Int, rounds: Int) async throws -> [BenchmarkResult] {
        let capacity = trace.footprint(overhead: entryOverhead) * percent / 100
        let sizeCapacity = trace.footprint(overhead: 0) * percent / 100
        let workload = "trace twitter52, \(percent)% of footprint"
        var results: [BenchmarkResult] = []

        /// A row; its JSON `hitRatios` are hits ÷ requests per tier (the one tier, unless given).
        func row(
            _ subject: String,
            _ detail: String,
            _ replay: TraceReplay,
            hitRatios: [String: Double]? = nil
        ) -> BenchmarkResult {
            BenchmarkResult(
                workload: workload,
                subject: subject,
                detail: String(format: "miss ratio %.4f; ", replay.missRatio) + detail,
                opsPerSecond: replay.requestsPerSecond,
                hitRatios: hitRatios ?? ["memory": 1 - replay.missRatio]
            )
        }

        let referenceBySize = TraceReplay.median(rounds) {
            TraceReplay.referenceLRU(trace, capacity: sizeCapacity, overhead: 0)
        }
        results.append(
            row(
                "reference LRU",
                "simulation, sizes only (README, whole trace: 0.3415 / 0.2091), \(sizeCapacity) B",
                referenceBySize
            )
        )
        let reference = TraceReplay.median(rounds) {
            TraceReplay.referenceLRU(trace, capacity: capacity, overhead: entryOverhead)
        }
        results.append(row("reference LRU", "simulation, costs as the tier counts them, \(capacity) B", reference))

        for policy in [MemoryTier.EvictionPolicy.lru, .s3FIFO] {
            for shardCount in [1, 16] {
                let configuration = MemoryTier.Configuration(
                    capacityBytes: capacity,
                    maximumEntryCount: Int(Int32.max),
                    shardCount: shardCount,
                    evictionPolicy: policy
                )
                let replay = TraceReplay.median(rounds) {
                    TraceReplay.memory(trace, tier: MemoryTier(configuration: configuration))
                }
                let shards = MemoryTier.effectiveShardCount(for: configuration)
                let vsReference = (replay.missRatio / reference.missRatio - 1) * 100
                results.append(
                    row(
                        "MemoryTier \(policy)",
                        "shardCount \(shardCount) (\(shards) in use), "
                            + String(format: "%+.1f%% misses against the reference LRU", vsReference),
                        replay
                    )
                )
            }
        }

        if percent == 1 {
            // Memory 1% of the footprint over a disk tier holding 10%.
            let directory = TemporaryDirectory("bench-trace")
            defer { directory.remove() }
            let disk = try DiskTier(
                configuration: .init(directory: directory.path, capacityBytes: capacity * 10, fsync: .never)
            )
            let memory = MemoryTier(configuration: .init(capacityBytes: capacity, maximumEntryCount: Int(Int32.max)))
            let replay = try await TraceReplay.tiered(trace, cache: TieredCache(memory: memory, disk: disk))
            try await disk.close()
            let memoryHitRatio = Double(memory.statistics.hits) / Double(trace.requests.count)
            results.append(
                row(
                    "TieredCache",
                    "memory \(capacity) B (s3fifo) over disk \(capacity * 10) B; "
                        + String(format: "memory hit ratio %.4f", memoryHitRatio),
                    replay,
                    hitRatios: ["memory": memoryHitRatio, "disk": 1 - replay.missRatio - memoryHitRatio]
                )
            )
        }
        return results
    }
}
#endif
