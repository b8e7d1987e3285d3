// SPDX-License-Identifier: Apache-2.0

#if Tools
import CacheTestSupport
import CacheTiers
import Foundation
import NIOCore
import PostgresCacheTier
import PostgresNIO

/// The shared tier on a real PostgreSQL server (`--filter shared`; scripts/with-postgres.sh or
/// `make bench` starts one and sets LAYEREDCACHE_POSTGRES_URL):
///
/// - a shared-tier hit (1 KiB and 4 KiB JSON) with 1 and 8 tasks, beside a bare postgres-nio
///   `SELECT` of the same row through its own pool in the same run: the physical limit;
/// - a write (1 KiB JSON, 1 task) beside a bare upsert of the same row without the check of
///   remembered removals;
/// - the CPU work of a hit beside its query: a row decoded, plain and sealed (no server needed);
/// - the delay from a removal on one instance to the key gone from the other's memory;
/// - the replay of 10,000 invalidations an instance missed while its listener was cut;
/// - the hit ratio of two instances behind a round-robin balancer on a Zipf(0.99) workload, with
///   and without the shared tier.
///
/// Not part of the default run or of `--quick`: it needs the server, so it runs when named.
enum SharedTierBenchmarks {
    static func run(quick: Bool) async throws -> [BenchmarkResult] {
        let decoding = try rowDecoding(quick: quick)
        guard let url = ProcessInfo.processInfo.environment["LAYEREDCACHE_POSTGRES_URL"] else {
            BenchmarksMain.log("shared: skipped, LAYEREDCACHE_POSTGRES_URL is not set (make bench starts a server)")
            return decoding + [
                BenchmarkResult(
                    workload: "shared-tier hit",
                    subject: "PostgresSharedTier",
                    detail: "",
                    skipped: "skipped: no LAYEREDCACHE_POSTGRES_URL"
                )
            ]
        }
        let table = "bench\(UInt32.random(in: 0...UInt32.max))"
        // A read that times out is a miss, and a miss stops the run: on a loaded machine the default
        // 250 ms is too short to measure latency with.
        let tier = try PostgresSharedTier(configuration: .init(url: url, table: table, readTimeout: .seconds(5)))
        // Rows sealed with AES-256-GCM, as an encrypted cache's are.
        let sealed = try PostgresSharedTier(
            configuration: .init(url: url, table: table + "s", readTimeout: .seconds(5), encryption: .random())
        )
        let bare = PostgresClient(configuration: try bareConfiguration(url))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await tier.run { _ in } }
            group.addTask { try await sealed.run { _ in } }
            group.addTask { await bare.run() }
            defer { group.cancelAll() }
            var results = decoding
            for size in [1024, 4096] {
                results += try await hits(tier: tier, bare: bare, size: size, quick: quick)
            }
            results += try await hits(tier: sealed, bare: bare, size: 1024, quick: quick)
            results += try await writes(tier: tier, bare: bare, quick: quick)
            results.append(try await invalidationDelay(url: url, quick: quick))
            results.append(try await replay(url: url, bare: bare, quick: quick))
            results += try await zipf(url: url, quick: quick)
            return results
        }
    }

    // MARK: Hits

    private static func hits(
        tier: PostgresSharedTier,
        bare: PostgresClient,
        size: Int,
        quick: Bool
    ) async throws -> [BenchmarkResult] {
        let keys = (0..<256).map { CacheKey("GET https://api.example.com/v1/items/\($0)?size=\(size)") }
        for (index, key) in keys.enumerated() {
            let value = SampleData.json(approximateBytes: size, seed: UInt64(index))
            try await tier.set(CacheEntry(value: value, storedAt: Date()), for: key)
        }
        let table = "\(tier.configuration.table)_v\(PostgresSharedTier.schemaVersion)"
        let isSealed = tier.configuration.encryption != nil
        // A sealed row's digest is keyed: the bare reads take the rows' own digests (the same rows).
        var sealedDigests: [Int64] = []
        if isSealed {
            for try await digest in try await bare.query("SELECT digest FROM \(unescaped: table)").decode(Int64.self) {
                sealedDigests.append(digest)
            }
        }
        let digests = isSealed ? sealedDigests : keys.map { Int64(bitPattern: KeyDigest.digest(of: $0.string)) }
        let reads = quick ? 400 : 4000
        var results: [BenchmarkResult] = []
        for tasks in [1, 8] {
            // Paired: every read of ours is next to a bare read of a row of the same size, in
            // alternating order, so that a burst of load on this shared machine falls on both.
            // Measured one after the other, the ratio of the two medians read 0.8x-2.0x from run to
            // run of the same binary.
            let (ours, physical) = try await measurePaired(
                tasks: tasks,
                reads: reads,
                count: min(keys.count, digests.count)
            ) { index in
                guard await tier.entry(for: keys[index]) != nil else {
                    throw BenchmarkFailure("shared miss for \(keys[index])")
                }
            } bare: { index in
                let now = Date().millisecondsSince1970
                let rows = try await bare.query(
                    """
                    SELECT key, metadata, value, flags, value_length, stored_at, expires_at, checksum
                    FROM \(unescaped: table) WHERE digest = \(digests[index]) AND expires_at > \(now)
                    """
                )
                var found = false
                for try await row in rows.decode(
                    (ByteBuffer, ByteBuffer, ByteBuffer, Int16, Int32, Int64, Int64, Int64).self
                ) {
                    blackHole(row)
                    found = true
                }
                guard found else { throw BenchmarkFailure("bare miss") }
            }
            func row(_ subject: String, _ detail: String, _ summary: LatencySummary) -> BenchmarkResult {
                var row = BenchmarkResult(
                    workload: "shared-tier hit \(size / 1024) KiB JSON\(isSealed ? ", sealed" : "")",
                    subject: subject,
                    detail: detail
                )
                row.take(summary)
                row.tasks = tasks
                row.valueBytes = size
                return row
            }
            let label = tasks == 1 ? "1 task" : "\(tasks) tasks"
            results += [
                row("postgres-nio SELECT (bare)", "\(label), same row and statement", physical),
                row(
                    "PostgresSharedTier.entry",
                    "\(label), + \(isSealed ? "AES-GCM open" : "verify"), LZ4 decode",
                    ours
                ),
            ]
        }
        return results
    }

    /// Two operations read side by side: each task picks an index, times `first` and `second`
    /// on it (in turn first, so that neither always runs on a warmer path), and the two are
    /// summarized apart. Operations per second are per task's time in each.
    static func measurePaired(
        tasks: Int,
        reads: Int,
        count: Int,
        _ first: @escaping @Sendable (Int) async throws -> Void,
        bare second: @escaping @Sendable (Int) async throws -> Void
    ) async throws -> (LatencySummary, LatencySummary) {
        for index in 0..<min(32, count) {  // warm both pools
            try await first(index)
            try await second(index)
        }
        let clock = ContinuousClock()
        let (a, b) = try await withThrowingTaskGroup(of: ([Double], [Double]).self) { group in
            for lane in 0..<tasks {
                group.addTask {
                    var generator = SplitMix64(seed: UInt64(lane + 1))
                    var a: [Double] = []
                    var b: [Double] = []
                    a.reserveCapacity(reads / tasks)
                    b.reserveCapacity(reads / tasks)
                    for read in 0..<(reads / tasks) {
                        let index = Int(generator.next() % UInt64(count))
                        for turn in read.isMultiple(of: 2) ? [0, 1] : [1, 0] {
                            let before = clock.now
                            try await (turn == 0 ? first : second)(index)
                            let elapsed = Harness.nanoseconds(of: clock.now - before)
                            if turn == 0 { a.append(elapsed) } else { b.append(elapsed) }
                        }
                    }
                    return (a, b)
                }
            }
            var a: [Double] = []
            var b: [Double] = []
            for try await (partA, partB) in group {
                a += partA
                b += partB
            }
            return (a.sorted(), b.sorted())
        }
        func summary(_ latencies: [Double]) -> LatencySummary {
            LatencySummary(
                p50: Harness.percentile(latencies, 0.5),
                p99: Harness.percentile(latencies, 0.99),
                p999: Harness.percentile(latencies, 0.999),
                opsPerSecond: Double(latencies.count) / (latencies.reduce(0, +) / Double(tasks)) * 1e9
            )
        }
        return (summary(a), summary(b))
    }

    // MARK: Invalidation

    /// Remove on one instance, then poll the other's memory every 50 µs until the key is gone.
    private static func invalidationDelay(url: String, quick: Bool) async throws -> BenchmarkResult {
        let table = "benchinv\(UInt32.random(in: 0...UInt32.max))"
        let (a, b) = try (instance(url: url, table: table), instance(url: url, table: table))
        let samples = quick ? 20 : 1000
        let delays = try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await a.cache.run() }
            group.addTask { try await b.cache.run() }
            defer { group.cancelAll() }
            let clock = ContinuousClock()
            let ready = clock.now + .seconds(10)
            while !(a.shared.isListening && b.shared.isListening) && clock.now < ready {
                try await Task.sleep(for: .milliseconds(1))
            }
            var delays: [Double] = []
            for index in 0..<samples {
                let key = CacheKey("GET https://api.example.com/invalidate/\(index)")
                let entry = CacheEntry(value: SampleData.json(approximateBytes: 1024), storedAt: Date())
                try await a.cache.set(entry, for: key)
                b.cache.memory.set(entry, for: key)
                let start = clock.now
                try await a.cache.remove(key)
                let deadline = start + .seconds(5)
                while b.cache.memory.entry(for: key) != nil && clock.now < deadline {
                    try await Task.sleep(for: .microseconds(50))
                }
                delays.append(Harness.nanoseconds(of: clock.now - start))
            }
            return delays.sorted()
        }
        var row = BenchmarkResult(
            workload: "shared-tier invalidation delay",
            subject: "PostgresSharedTier NOTIFY",
            detail: "remove on A -> gone from B's memory"
        )
        row.p50Nanos = Harness.percentile(delays, 0.5)
        row.p99Nanos = Harness.percentile(delays, 0.99)
        row.p999Nanos = Harness.percentile(delays, 0.999)
        return row
    }

    // MARK: Zipf

    /// Two instances behind a round-robin balancer, each with a memory tier holding about 5% of the
    /// keys: the hit ratio over both, with and without the shared tier.
    private static func zipf(url: String, quick: Bool) async throws -> [BenchmarkResult] {
        let keyCount = quick ? 2000 : 10_000
        let requests = quick ? 4000 : 40_000
        let valueBytes = 1024
        let memoryBytes = keyCount / 20 * (valueBytes + 200)
        var results: [BenchmarkResult] = []
        for shared in [false, true] {
            let table = "benchzipf\(UInt32.random(in: 0...UInt32.max))"
            let instances = try (0..<2).map { _ in
                try instance(url: url, table: table, memoryBytes: memoryBytes, shared: shared)
            }
            let (hits, sharedHits) = try await withThrowingTaskGroup(of: Void.self) { group in
                for instance in instances { group.addTask { try await instance.cache.run() } }
                defer { group.cancelAll() }
                let zipf = ZipfSampler(count: keyCount, exponent: 0.99)
                var generator = SplitMix64(seed: 99)
                var hits = 0
                for request in 0..<requests {
                    let key = CacheKey("GET https://api.example.com/zipf/\(zipf.next(using: &generator))")
                    let cache = instances[request % 2].cache
                    if await cache.entry(for: key) != nil {
                        hits += 1
                    } else {
                        let value = SampleData.json(approximateBytes: valueBytes)
                        try await cache.set(CacheEntry(value: value, storedAt: Date()), for: key)
                    }
                }
                return (hits, instances.reduce(0) { $0 + ($1.sharedTier?.statistics.hits ?? 0) })
            }
            let ratio = Double(hits) / Double(requests) * 100
            let fromShared = Double(sharedHits) / Double(requests) * 100
            var row = BenchmarkResult(
                workload: "two instances, Zipf(0.99), \(keyCount) keys, memory 5% each",
                subject: shared ? "TieredCache + PostgresSharedTier" : "TieredCache (memory only)",
                detail: String(format: "hit ratio %.1f%% (shared tier %.1f%%)", ratio, fromShared)
            )
            row.hitRatios = ["all": Double(hits) / Double(requests), "shared": Double(sharedHits) / Double(requests)]
            results.append(row)
        }
        return results
    }

    // MARK: Support

    struct Instance: Sendable {
        let cache: TieredCache
        let sharedTier: PostgresSharedTier?
        var shared: PostgresSharedTier { sharedTier! }
    }

    static func instance(
        url: String,
        table: String,
        memoryBytes: Int = 64 << 20,
        shared: Bool = true,
        configure: (inout PostgresSharedTier.Configuration) -> Void = { _ in },
        lowerTiers: [any CacheTier] = [],
        options: TieredCache.SharedOptions = .init()
    ) throws -> Instance {
        let memory = MemoryTier(configuration: .init(capacityBytes: memoryBytes))
        guard shared else { return Instance(cache: TieredCache(memory: memory, disk: nil), sharedTier: nil) }
        var configuration = PostgresSharedTier.Configuration(url: url, table: table)
        configure(&configuration)
        let tier = try PostgresSharedTier(configuration: configuration)
        let cache = try TieredCache(memory: memory, lowerTiers: lowerTiers, shared: tier, options: options)
        return Instance(cache: cache, sharedTier: tier)
    }

    private static func bareConfiguration(_ url: String) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url), let host = components.host else {
            throw BenchmarkFailure("not a PostgreSQL URL")
        }
        var configuration = PostgresClient.Configuration(
            host: host,
            port: components.port ?? 5432,
            username: components.user ?? "postgres",
            password: components.password,
            database: String(components.path.dropFirst()),
            tls: .disable
        )
        configuration.options.maximumConnections = 8
        return configuration
    }
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
#endif
