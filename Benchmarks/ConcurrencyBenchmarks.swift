// SPDX-License-Identifier: Apache-2.0

#if Tools
import CacheTestSupport
import CacheTiers
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Aggregate gets per second of 1, 2, 8 and 64 tasks sharing one cache (this machine has 2
/// cores), the same total number of gets split among the tasks:
/// - memory hits: a `TieredCache` whose memory tier holds all 10,000 keys (1 KB values, a buffer
///   each), and that memory tier called directly, against a memory-only `URLCache` holding 1 KB
///   JSON values; a witness tier whose keys share 64 value buffers shows what a shared write (each
///   hit's reference count) costs in the same run;
/// - disk hits, cold memory tier: one `DiskTier` (its reads are `nonisolated`: they run in
///   parallel) holding 1,000 keys of 4 KB JSON, page cache warm, against a disk `URLCache` of 100
///   entries (which gets few operations: its reads list its directory); and a CPU-only control
///   (about a microsecond of arithmetic a get, nothing shared), which says whether the run had a
///   second core free on a shared machine.
///
/// Medians of the rounds; subjects interleaved round by round (memory hits: task counts too, with
/// a control row; see ``interleavedSweep(workload:operations:referenceOperations:rounds:valueBytes:entries:subjects:)``).
/// Ratio = our ops/s ÷ URLCache's at the same task count.
enum ConcurrencyBenchmarks {
    static let taskCounts = [1, 2, 8, 64]

    /// One subject: task `task` does `operations` gets.
    typealias Worker = @Sendable (_ task: Int, _ operations: Int) async -> Void

    /// A worker whose every get is `lookup(position)`, which must hit; positions are spread over
    /// a 65,536-entry random order, each task starting at its own.
    static func worker(_ lookup: @escaping @Sendable (_ position: Int) async -> Bool) -> Worker {
        { task, operations in
            for index in 0..<operations {
                let found = await lookup((index &* 7 &+ task) & 0xFFFF)
                precondition(found, "every get must hit")
            }
        }
    }

    static func run(quick: Bool) async throws -> [BenchmarkResult] {
        let rounds = quick ? 3 : 5
        var results: [BenchmarkResult] = []

        // Memory hits.
        let memoryKeys = 10_000
        let bodies = (0..<64).map { SampleData.json(approximateBytes: 1024, seed: UInt64($0)) }
        let keys = (0..<memoryKeys).map { CacheKey(URLCacheSubject.url($0)) }
        // Every key has a value buffer of its own, as in a real cache. The witness row's tier shares
        // 64 buffers among its keys, whose reference counts every hit writes from both cores: it
        // shows what a shared write costs a hit in the same run (a hit must return its value, so
        // that write is the caller's, not the tier's).
        let memory = MemoryTier(configuration: .init(capacityBytes: 256 << 20))
        let cache = TieredCache(memory: memory, disk: nil)
        let sharedValues = MemoryTier(configuration: .init(capacityBytes: 256 << 20))
        let now = Date()
        for (index, key) in keys.enumerated() {
            try await cache.set(
                CacheEntry(value: SampleData.random(count: 1024, seed: UInt64(index)), storedAt: now),
                for: key
            )
            sharedValues.set(CacheEntry(value: bodies[index % bodies.count], storedAt: now), for: key)
        }
        let memoryURLCache = URLCacheSubject(memoryCapacity: 256 << 20)
        for index in 0..<memoryKeys { memoryURLCache.store(bodies[index % bodies.count], at: index) }
        let memoryRequests = memoryURLCache.requests
        let memoryOrder = order(count: 1 << 16, modulo: memoryKeys)
        let urlCacheInMemory = memoryURLCache.cache
        results += await interleavedSweep(
            workload: "memory hit, 1 KB, 10k keys",
            operations: quick ? 200_000 : 1_000_000,
            referenceOperations: quick ? 20_000 : 200_000,
            // A memory round takes a fifth of a second: nine of them keep one slow round (another
            // process, a host's hiccup) out of the median that the scaling goal is judged by.
            rounds: quick ? rounds : 9,
            valueBytes: 1024,
            entries: memoryKeys,
            subjects: [
                (
                    "URLCache (memory only)",
                    worker { urlCacheInMemory.cachedResponse(for: memoryRequests[memoryOrder[$0]]) != nil }
                ),
                ("TieredCache", worker { await cache.entry(for: keys[memoryOrder[$0]]) != nil }),
                ("MemoryTier", worker { memory.entry(for: keys[memoryOrder[$0]]) != nil }),
                ("MemoryTier, 64 shared values", worker { sharedValues.entry(for: keys[memoryOrder[$0]]) != nil }),
            ]
        )

        // Disk hits, cold memory tier.
        let directory = TemporaryDirectory("bench-concurrency")
        defer { directory.remove() }
        let diskKeys = 1000
        let diskBodies = (0..<64).map { SampleData.json(approximateBytes: 4096, seed: UInt64($0)) }
        let disk = try DiskTier(configuration: DiskTierBenchmarks.configuration(directory))
        for index in 0..<diskKeys {
            _ = try await disk.set(CacheEntry(value: diskBodies[index % 64], storedAt: now), for: keys[index])
        }
        let diskURLCache = URLCacheSubject(disk: "bench-concurrency-urlcache")
        diskURLCache.fill(to: 100, bodies: diskBodies)
        let diskRequests = diskURLCache.requests
        let diskOrder = order(count: 1 << 16, modulo: diskKeys)
        let urlCacheOnDisk = diskURLCache.cache
        results += try await sweep(
            workload: "disk hit, 4 KB JSON, cold memory tier",
            operations: quick ? 20_000 : 100_000,
            referenceOperations: quick ? 64 : 128,
            rounds: rounds,
            valueBytes: 4096,
            entries: diskKeys,
            subjects: [
                (
                    "URLCache (disk, 100 entries)",
                    worker { urlCacheOnDisk.cachedResponse(for: diskRequests[diskOrder[$0] % 100]) != nil }
                ),
                ("DiskTier", worker { await disk.entry(for: keys[diskOrder[$0]]) != nil }),
                // No I/O and no shared state: whether this run had a second core free at all.
                ("CPU-only control", worker { position in Self.spin(position) }),
            ]
        )
        try await disk.close()
        return results
    }

    /// About a microsecond of arithmetic on nothing shared: the disk sweep's control.
    static func spin(_ position: Int) -> Bool {
        var state = UInt64(truncatingIfNeeded: position) | 1
        for _ in 0..<600 { state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
        return state != 0
    }

    static func order(count: Int, modulo: Int) -> [Int] {
        var generator = SplitMix64(seed: 21)
        return (0..<count).map { _ in Int(generator.next() % UInt64(modulo)) }
    }

    /// Runs every subject at every task count; the first subject is the reference and does
    /// `referenceOperations` in all (default: `operations`).
    static func sweep(
        workload: String,
        operations: Int,
        referenceOperations: Int? = nil,
        rounds: Int,
        valueBytes: Int,
        entries: Int,
        subjects: [(name: String, worker: Worker)]
    ) async throws -> [BenchmarkResult] {
        var results: [BenchmarkResult] = []
        for tasks in taskCounts {
            var samples = Array(repeating: [Double](), count: subjects.count)
            for round in 0..<rounds {
                let indices = round % 2 == 0 ? Array(subjects.indices) : Array(subjects.indices.reversed())
                for index in indices {
                    let total = index == 0 ? (referenceOperations ?? operations) : operations
                    samples[index].append(await opsPerSecond(tasks: tasks, operations: total, subjects[index].worker))
                }
            }
            let medians = samples.map(Harness.median)
            for (index, subject) in subjects.enumerated() {
                results.append(
                    BenchmarkResult(
                        workload: "\(workload), \(tasks) task\(tasks == 1 ? "" : "s")",
                        subject: subject.name,
                        detail: String(
                            format: "%.2fx of 1 task",
                            medians[index]
                                / (results.first { $0.subject == subject.name }?.opsPerSecond ?? medians[index])
                        ),
                        opsPerSecond: medians[index],
                        ratio: medians[index] / medians[0],
                        entries: entries,
                        valueBytes: valueBytes,
                        tasks: tasks
                    )
                )
            }
        }
        return results
    }
}
#endif
