// SPDX-License-Identifier: Apache-2.0

#if Tools
import CacheTestSupport
import CacheTiers
import Dispatch
import Foundation
import Metrics
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The memory tier against Foundation's memory-only `URLCache` on the same workload, in the same
/// run: 10,000 keys holding 1 KB values each, all warm, read in a random order. Our rows name the
/// eviction policy: the default S3-FIFO (a hit raises a frequency) and LRU (a hit moves a node).
///
/// - Hit latency: one task; gets are timed in batches of 100 (so that the clock's own cost is
///   spread over many gets), and p50 / p99 are over those batches. Ops/s is the total. Besides the
///   default tier: one shard, a counting metrics backend (every hit increments a shared atomic),
///   and a bare `MemoryShard` with no lock and no metrics (the floor).
/// - Concurrency: 1 and 2 tasks (the machine has 2 cores) reading random keys of one shared tier;
///   aggregate ops/s. Two rows calibrate it: one private tier per task (nothing shared: the
///   ceiling for this memory-bound access pattern) and a control that only does arithmetic (it
///   must show 2.00x, or the run did not get two cores).
/// - Metrics: the cost of one swift-metrics counter increment, with no backend bootstrapped and
///   with an atomic backend.
///
/// Ratio = our ops/s ÷ URLCache's ops/s on the same workload (a speed ratio: 10x is ten times as
/// fast).
enum MemoryTierBenchmarks {
    static let keyCount = 10_000
    static let valueBytes = 1024
    static let batchSize = 100

    static func run(quick: Bool) async throws -> [BenchmarkResult] {
        let fixture = Fixture()
        var results = hitLatency(fixture, quick: quick)
        results += await concurrency(fixture, quick: quick)
        results += counterIncrement(quick: quick)
        return results
    }

    // MARK: Fixture

    /// The same keys and values for every subject.
    struct Fixture: Sendable {
        let keys: [CacheKey]
        let entries: [CacheEntry]
        let requests: [URLRequest]
        let responses: [CachedURLResponse]

        init() {
            keys = (0..<keyCount).map { CacheKey("https://api.example.com/v1/items/\($0)?fields=all") }
            let values = (0..<keyCount).map { SampleData.random(count: valueBytes, seed: UInt64($0)) }
            let storedAt = Date()
            entries = values.map { CacheEntry(value: $0, metadata: [], storedAt: storedAt) }
            requests = keys.map { URLRequest(url: URL(string: $0.string)!) }
            responses = zip(requests, values).map { request, value in
                let response = HTTPURLResponse(
                    url: request.url!,
                    statusCode: 200,
                    httpVersion: "HTTP/1.1",
                    headerFields: ["Content-Type": "application/octet-stream"]
                )!
                return CachedURLResponse(response: response, data: Data(value), storagePolicy: .allowedInMemoryOnly)
            }
        }

        func warmTier(_ configuration: MemoryTier.Configuration, metrics: (any MetricsFactory)? = nil) -> MemoryTier {
            let tier =
                metrics.map { MemoryTier(configuration: configuration, metricsFactory: $0) }
                ?? MemoryTier(configuration: configuration)
            for (key, entry) in zip(keys, entries) { precondition(tier.set(entry, for: key)) }
            precondition(tier.usage.entryCount == keyCount, "the tier must hold every key")
            return tier
        }

        func warmURLCache() -> URLCache {
            #if canImport(FoundationNetworking)
            // swift-corelibs-foundation has no `directory:` initializer; `diskPath: nil` is the same.
            let cache = URLCache(memoryCapacity: 64 << 20, diskCapacity: 0, diskPath: nil)
            #else
            let cache = URLCache(memoryCapacity: 64 << 20, diskCapacity: 0, directory: nil)
            #endif
            for (request, response) in zip(requests, responses) {
                cache.storeCachedResponse(response, for: request)
            }
            precondition(requests.allSatisfy { cache.cachedResponse(for: $0) != nil }, "URLCache must hold every key")
            return cache
        }

        /// Random key indices, the same for every subject given the same seed.
        func order(count: Int, seed: UInt64) -> [Int] {
            var generator = SplitMix64(seed: seed)
            return (0..<count).map { _ in Int(generator.next() % UInt64(keyCount)) }
        }
    }

    // MARK: Hit latency

    /// Gets the keys at `order[range]`; returns how many hit.
    typealias Lookup = (_ order: [Int], _ range: Range<Int>) -> Int

    static func hitLatency(_ fixture: Fixture, quick: Bool) -> [BenchmarkResult] {
        let batches = quick ? 200 : 1000
        let rounds = quick ? 3 : 11
        let order = fixture.order(count: batches * batchSize, seed: 1)
        let keys = fixture.keys
        let requests = fixture.requests

        let tier = fixture.warmTier(.init())
        let lruTier = fixture.warmTier(.init(evictionPolicy: .lru))
        let oneShard = fixture.warmTier(.init(shardCount: 1))
        let counted = fixture.warmTier(.init(), metrics: AtomicMetricsFactory())
        var shard = MemoryShard(costLimit: 64 << 20, countLimit: 100_000, policy: .s3FIFO)
        for (key, entry) in zip(keys, fixture.entries) { shard.set(entry, for: key) }
        let urlCache = fixture.warmURLCache()

        func tierLookup(_ tier: MemoryTier) -> Lookup {
            { order, range in
                var hits = 0
                for index in range where tier.entry(for: keys[order[index]]) != nil { hits += 1 }
                return hits
            }
        }
        let subjects: [(name: String, detail: String, lookup: Lookup)] = [
            (
                "URLCache (memory only)", "Foundation",
                { order, range in
                    var hits = 0
                    for index in range where urlCache.cachedResponse(for: requests[order[index]]) != nil { hits += 1 }
                    return hits
                }
            ),
            ("MemoryTier", "16 shards, s3fifo, no metrics backend", tierLookup(tier)),
            ("MemoryTier", "16 shards, lru, no metrics backend", tierLookup(lruTier)),
            ("MemoryTier", "1 shard, s3fifo, no metrics backend", tierLookup(oneShard)),
            ("MemoryTier", "16 shards, s3fifo, atomic metrics backend", tierLookup(counted)),
            (
                "MemoryShard", "bare s3fifo: no lock, no metrics",
                { order, range in
                    var hits = 0
                    for index in range where shard.entry(for: keys[order[index]]) != nil { hits += 1 }
                    return hits
                }
            ),
        ]

        var perRound = Array(repeating: [(p50: Double, p99: Double, opsPerSecond: Double)](), count: subjects.count)
        for round in 0..<rounds {
            let indices = round % 2 == 0 ? Array(subjects.indices) : Array(subjects.indices.reversed())
            for index in indices {
                perRound[index].append(timeBatches(order: order, batches: batches, subjects[index].lookup))
            }
        }
        let medians = perRound.map { samples in
            (
                p50: Harness.median(samples.map(\.p50)),
                p99: Harness.median(samples.map(\.p99)),
                opsPerSecond: Harness.median(samples.map(\.opsPerSecond))
            )
        }
        let reference = medians[0].opsPerSecond
        return zip(subjects, medians).map { subject, median in
            BenchmarkResult(
                workload: "memory hit, 1 KB values, 10k keys",
                subject: subject.name,
                detail: subject.detail,
                opsPerSecond: median.opsPerSecond,
                p50Nanos: median.p50,
                p99Nanos: median.p99,
                ratio: median.opsPerSecond / reference,
                entries: keyCount,
                valueBytes: valueBytes
            )
        }
    }

    /// Times `batches` batches of `batchSize` gets; returns per-get p50 and p99 over the batches, and
    /// the gets per second over all of them.
    static func timeBatches(
        order: [Int],
        batches: Int,
        _ lookup: Lookup
    ) -> (p50: Double, p99: Double, opsPerSecond: Double) {
        let clock = ContinuousClock()
        var recorder = LatencyRecorder()
        var hits = 0
        for batch in 0..<batches {
            let start = clock.now
            hits += lookup(order, batch * batchSize..<(batch + 1) * batchSize)
            recorder.record(Harness.nanoseconds(of: clock.now - start), operations: batchSize)
        }
        precondition(hits == batches * batchSize, "every get must hit")
        let summary = recorder.summary
        return (summary.p50, summary.p99, summary.opsPerSecond)
    }

    // MARK: Concurrency

    static func concurrency(_ fixture: Fixture, quick: Bool) async -> [BenchmarkResult] {
        let operations = quick ? 50_000 : 300_000
        let rounds = quick ? 3 : 7
        let taskCounts = [1, 2]
        let orders = (0..<taskCounts.max()!).map { fixture.order(count: operations, seed: 100 + UInt64($0)) }
        let keys = fixture.keys
        let requests = fixture.requests

        let tier = fixture.warmTier(.init())
        let lruTier = fixture.warmTier(.init(evictionPolicy: .lru))
        let oneShard = fixture.warmTier(.init(shardCount: 1))
        let counted = fixture.warmTier(.init(), metrics: AtomicMetricsFactory())
        let urlCache = fixture.warmURLCache()

        func tierWorker(_ tier: MemoryTier) -> @Sendable (Int) -> Void {
            { worker in
                var hits = 0
                for index in orders[worker] where tier.entry(for: keys[index]) != nil { hits += 1 }
                precondition(hits == operations)
            }
        }
        let subjects: [(name: String, detail: String, worker: @Sendable (Int) -> Void)] = [
            (
                "URLCache (memory only)", "Foundation",
                { worker in
                    var hits = 0
                    for index in orders[worker] where urlCache.cachedResponse(for: requests[index]) != nil { hits += 1 }
                    precondition(hits == operations)
                }
            ),
            ("MemoryTier", "16 shards, s3fifo", tierWorker(tier)),
            ("MemoryTier", "16 shards, lru", tierWorker(lruTier)),
            ("MemoryTier", "1 shard, s3fifo", tierWorker(oneShard)),
            ("MemoryTier", "16 shards, s3fifo, atomic metrics", tierWorker(counted)),
            // The ceiling for this access pattern on this machine: nothing shared between tasks.
            (
                "MemoryTier", "one private tier per task",
                { worker in
                    let tier = [tier, oneShard][worker]
                    var hits = 0
                    for index in orders[worker] where tier.entry(for: keys[index]) != nil { hits += 1 }
                    precondition(hits == operations)
                }
            ),
            // Checks that the machine gave the run two cores: this must show 2.00x.
            (
                "control", "arithmetic only, no memory",
                { worker in
                    var generator = SplitMix64(seed: UInt64(worker))
                    var sum: UInt64 = 0
                    for _ in 0..<operations * 20 { sum &+= generator.next() }
                    blackHole(sum)
                }
            ),
        ]

        // samples[subject][taskCount index] = aggregate ops/s per round
        var samples = Array(
            repeating: Array(repeating: [Double](), count: taskCounts.count),
            count: subjects.count
        )
        for round in 0..<rounds {
            let indices = round % 2 == 0 ? Array(subjects.indices) : Array(subjects.indices.reversed())
            for index in indices {
                for (position, tasks) in taskCounts.enumerated() {
                    let nanos = await runTasks(tasks, subjects[index].worker)
                    samples[index][position].append(Double(tasks * operations) / nanos * 1e9)
                }
            }
        }
        let medians = samples.map { $0.map(Harness.median) }
        var results: [BenchmarkResult] = []
        for (position, tasks) in taskCounts.enumerated() {
            for (index, subject) in subjects.enumerated() {
                let opsPerSecond = medians[index][position]
                let scaling = opsPerSecond / medians[index][0]
                // The control's "operations" are not gets: only its scaling means anything.
                let isControl = subject.name == "control"
                results.append(
                    BenchmarkResult(
                        workload: "memory get, random keys, \(tasks) task\(tasks == 1 ? "" : "s")",
                        subject: subject.name,
                        detail: subject.detail + (tasks == 1 ? "" : String(format: " (%.2fx of 1 task)", scaling)),
                        opsPerSecond: isControl ? nil : opsPerSecond,
                        ratio: isControl ? nil : opsPerSecond / medians[0][position]
                    )
                )
            }
        }
        return results
    }

    /// Runs `worker(0..<count)` as `count` child tasks at once and returns the elapsed nanoseconds.
    ///
    /// The caller awaits the group, so that no thread of the concurrency pool is blocked while the
    /// tasks run. (This used to block the calling thread on a semaphore, assuming it was the main
    /// thread; but the benchmarks' `run()` executes on the pool, so one of this 2-core machine's two
    /// pool threads sat blocked and "2 tasks" ran one after the other: the control read 1.00x in
    /// every run.)
    static func runTasks(_ count: Int, _ worker: @escaping @Sendable (Int) -> Void) async -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<count {
                group.addTask { worker(index) }
            }
        }
        return Harness.nanoseconds(of: clock.now - start)
    }

    // MARK: Metrics

    static func counterIncrement(quick: Bool) -> [BenchmarkResult] {
        let increments = quick ? 1_000_000 : 10_000_000
        let rounds = quick ? 3 : 11
        let noop = Counter(label: "noop", dimensions: [], handler: NOOPMetricsHandler.instance)
        let atomic = Counter(label: "atomic", dimensions: [], handler: AtomicMetricsFactory.AtomicCounter())
        let times = try! Harness.interleavedMedians(
            rounds: rounds,
            subjects: [
                { for _ in 0..<increments { noop.increment() } },
                { for _ in 0..<increments { atomic.increment() } },
            ]
        )
        return zip(["no backend (NOOP handler)", "atomic backend, one task"], times).map { name, nanos in
            BenchmarkResult(
                workload: "swift-metrics Counter.increment()",
                subject: name,
                detail: "\(increments) increments",
                opsPerSecond: Double(increments) / nanos * 1e9,
                p50Nanos: nanos / Double(increments)
            )
        }
    }
}

/// A minimal real metrics backend: every counter is one shared atomic, as in-process backends
/// (Prometheus client, StatsD aggregators) keep them.
final class AtomicMetricsFactory: MetricsFactory {
    final class AtomicCounter: CounterHandler {
        let value = Atomic<Int64>(0)
        func increment(by amount: Int64) { value.add(amount, ordering: .relaxed) }
        func reset() { value.store(0, ordering: .relaxed) }
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler { AtomicCounter() }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        NOOPMetricsHandler.instance
    }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler { NOOPMetricsHandler.instance }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}
}
#endif
