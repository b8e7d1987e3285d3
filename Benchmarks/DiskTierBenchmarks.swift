// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import CacheTiers
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The disk tier against Foundation's disk `URLCache`, in the same run.
///
/// - Hit: 1,000 keys hold 4 KB JSON values; the directory is filled to N entries with small
///   (100-byte) values besides, so that the index holds N entries while the hot records fit the
///   page cache. The hot records are read once to warm the page cache, then read in a seeded
///   random order, each get timed on its own. Through `DiskTier` (an actor call) and through the
///   synchronous `DiskStore` under it (no actor hop).
/// - Open: reopening that directory, with its index snapshot and with replay (snapshot deleted);
///   and the index's memory per entry (its slot array ÷ entries).
/// - Store: 1 KB JSON values (ops/s) and 64 KB JSON and random values (MB/s of value bytes)
///   through `DiskTier`, fsync policy `never`, capacity large enough that nothing is retired.
/// - URLCache (memory capacity 0, a disk directory) stores and reads the same 4 KB values at 100
///   and 1,000 entries; its reads list its directory, so it gets a fixed small number of them.
///
/// Ratio = our ops/s ÷ URLCache's at the same entry count (a speed ratio).
enum DiskTierBenchmarks {
    static let hotKeyCount = 1000
    static let hotValueBytes = 4096
    static let fillerValueBytes = 100

    static func run(quick: Bool) async throws -> [BenchmarkResult] {
        var results: [BenchmarkResult] = []
        var urlCacheHits: [Int: Double] = [:]
        var urlCacheStores: [(entries: Int, storesPerSecond: Double)] = []
        for entries in quick ? [100] : [100, 1000] {
            let measured = try urlCache(entries: entries, quick: quick)
            urlCacheHits[entries] = measured.hitsPerSecond
            urlCacheStores.append((entries, measured.storesPerSecond))
            results.append(
                BenchmarkResult(
                    workload: "disk hit, 4 KB JSON, \(entries) entries",
                    subject: "URLCache",
                    detail: "Foundation, disk, \(measured.hits) gets",
                    opsPerSecond: measured.hitsPerSecond,
                    p50Nanos: measured.hitP50,
                    p99Nanos: measured.hitP99,
                    ratio: 1
                )
            )
        }
        for entries in quick ? [1000, 10_000] : [1000, 10_000, 100_000, 1_000_000] {
            results += try await hitsAndOpen(
                entries: entries,
                quick: quick,
                reference: urlCacheHits[entries] ?? urlCacheHits[1000]
            )
        }
        for (entries, storesPerSecond) in urlCacheStores {
            results.append(
                BenchmarkResult(
                    workload: "disk store, 4 KB JSON",
                    subject: "URLCache",
                    detail: "Foundation, disk, filling \(entries) entries",
                    opsPerSecond: storesPerSecond,
                    ratio: 1
                )
            )
        }
        results += try await stores(quick: quick, urlCacheStoresPerSecond: urlCacheStores.last?.storesPerSecond)
        return results
    }

    // MARK: Hits and open

    static func configuration(_ directory: TemporaryDirectory) -> DiskTier.Configuration {
        DiskTier.Configuration(directory: directory.path, capacityBytes: 8 << 30, fsync: .never)
    }

    static func hotKey(_ index: Int) -> CacheKey { CacheKey("https://api.example.com/v1/users/\(index)?page=1") }

    static func hitsAndOpen(entries: Int, quick: Bool, reference: Double?) async throws -> [BenchmarkResult] {
        let directory = TemporaryDirectory("bench-disk")
        defer { directory.remove() }
        let now = Date()
        let gets = quick ? 5_000 : 50_000
        let rounds = quick ? 3 : 5

        // Fill: the hot keys first, then small filler entries up to `entries`.
        var memoryPerEntry = 0.0
        do {
            let store = try DiskStore(configuration: configuration(directory))
            for index in 0..<min(entries, hotKeyCount) {
                let value = SampleData.json(approximateBytes: hotValueBytes, seed: UInt64(index))
                _ = try store.set(CacheEntry(value: value, storedAt: now), for: hotKey(index))
            }
            let filler = SampleData.random(count: fillerValueBytes)
            for index in hotKeyCount..<max(entries, hotKeyCount) {
                _ = try store.set(CacheEntry(value: filler, storedAt: now), for: CacheKey("filler/\(index)"))
            }
            memoryPerEntry = Double(store.index.memoryBytes) / Double(store.index.count)
            try store.close()
        }

        // Open with the snapshot, then with replay only.
        let clock = ContinuousClock()
        var snapshotOpen: [Double] = []
        var replayOpen: [Double] = []
        for _ in 0..<(quick ? 1 : 3) {
            let start = clock.now
            let store = try DiskStore(configuration: configuration(directory))
            snapshotOpen.append(Harness.nanoseconds(of: clock.now - start))
            precondition(store.index.count == max(entries, hotKeyCount))
            try store.close()
        }
        for _ in 0..<(quick ? 1 : 3) {
            try FileManager.default.removeItem(atPath: directory.appending("index.lcx"))
            let start = clock.now
            let store = try DiskStore(configuration: configuration(directory))
            replayOpen.append(Harness.nanoseconds(of: clock.now - start))
            precondition(store.index.count == max(entries, hotKeyCount))
            try store.close()
        }

        // Hits: the same random order of hot keys through the store and through the actor.
        var generator = SplitMix64(seed: UInt64(entries))
        let hotCount = min(entries, hotKeyCount)
        let keys = (0..<hotCount).map(hotKey)
        let order = (0..<gets).map { _ in Int(generator.next() % UInt64(hotCount)) }
        var storeSamples: [(p50: Double, p99: Double, opsPerSecond: Double)] = []
        var tierSamples: [(p50: Double, p99: Double, opsPerSecond: Double)] = []
        do {
            let store = try DiskStore(configuration: configuration(directory))
            for key in keys { precondition(store.entry(for: key) != nil) }
            for _ in 0..<rounds {
                var latencies: [Double] = []
                latencies.reserveCapacity(gets)
                for index in order {
                    let start = clock.now
                    let entry = store.entry(for: keys[index])
                    latencies.append(Harness.nanoseconds(of: clock.now - start))
                    precondition(entry?.value.count ?? 0 >= hotValueBytes)
                }
                storeSamples.append(Harness.summarize(latencies))
            }
            try store.close()
        }
        do {
            let tier = try DiskTier(configuration: configuration(directory))
            for key in keys {
                let warm = await tier.entry(for: key)
                precondition(warm != nil)
            }
            for _ in 0..<rounds {
                var latencies: [Double] = []
                latencies.reserveCapacity(gets)
                for index in order {
                    let start = clock.now
                    let entry = await tier.entry(for: keys[index])
                    latencies.append(Harness.nanoseconds(of: clock.now - start))
                    precondition(entry?.value.count ?? 0 >= hotValueBytes)
                }
                tierSamples.append(Harness.summarize(latencies))
            }
            try await tier.close()
        }

        let workload = "disk hit, 4 KB JSON, \(entries) entries"
        func row(
            _ subject: String,
            _ detail: String,
            _ samples: [(p50: Double, p99: Double, opsPerSecond: Double)]
        )
            -> BenchmarkResult
        {
            let opsPerSecond = Harness.median(samples.map(\.opsPerSecond))
            return BenchmarkResult(
                workload: workload,
                subject: subject,
                detail: detail,
                opsPerSecond: opsPerSecond,
                p50Nanos: Harness.median(samples.map(\.p50)),
                p99Nanos: Harness.median(samples.map(\.p99)),
                ratio: reference.map { opsPerSecond / $0 }
            )
        }
        return [
            row("DiskTier", "actor call, page cache warm", tierSamples),
            row("DiskStore", "no actor hop, page cache warm", storeSamples),
            BenchmarkResult(
                workload: "disk open, \(entries) entries",
                subject: "DiskTier",
                detail: String(
                    format: "snapshot; replay %.0f ms; index %.1f B/entry",
                    Harness.median(replayOpen) / 1e6,
                    memoryPerEntry
                ),
                opsPerSecond: 1e9 / Harness.median(snapshotOpen),
                p50Nanos: Harness.median(snapshotOpen)
            ),
        ]
    }

    // MARK: Stores

    static func stores(quick: Bool, urlCacheStoresPerSecond: Double?) async throws -> [BenchmarkResult] {
        var results: [BenchmarkResult] = []
        let cases: [(name: String, values: [[UInt8]], count: Int)] = [
            (
                "1 KB JSON", (0..<64).map { SampleData.json(approximateBytes: 1024, seed: UInt64($0)) },
                quick ? 20_000 : 200_000
            ),
            (
                "4 KB JSON", (0..<64).map { SampleData.json(approximateBytes: 4096, seed: UInt64($0)) },
                quick ? 10_000 : 100_000
            ),
            (
                "64 KB JSON", (0..<16).map { SampleData.json(approximateBytes: 64 << 10, seed: UInt64($0)) },
                quick ? 500 : 5_000
            ),
            (
                "64 KB random", (0..<16).map { SampleData.random(count: 64 << 10, seed: UInt64($0)) },
                quick ? 500 : 5_000
            ),
        ]
        let clock = ContinuousClock()
        for (name, values, count) in cases {
            var samples: [(opsPerSecond: Double, megabytesPerSecond: Double, p50: Double, p99: Double)] = []
            for _ in 0..<(quick ? 1 : 3) {
                let directory = TemporaryDirectory("bench-store")
                defer { directory.remove() }
                let tier = try DiskTier(configuration: configuration(directory))
                let now = Date()
                var latencies: [Double] = []
                latencies.reserveCapacity(count)
                var bytes = 0
                for index in 0..<count {
                    let value = values[index % values.count]
                    let entry = CacheEntry(value: value, storedAt: now)
                    let key = CacheKey("https://api.example.com/v1/items/\(index)")
                    let start = clock.now
                    let stored = try await tier.set(entry, for: key)
                    latencies.append(Harness.nanoseconds(of: clock.now - start))
                    precondition(stored)
                    bytes += value.count
                }
                try await tier.close()
                let total = latencies.reduce(0, +)
                let summary = Harness.summarize(latencies)
                samples.append((Double(count) / total * 1e9, Double(bytes) / total * 1e3, summary.p50, summary.p99))
            }
            let opsPerSecond = Harness.median(samples.map(\.opsPerSecond))
            results.append(
                BenchmarkResult(
                    workload: "disk store, \(name)",
                    subject: "DiskTier",
                    detail: "fsync never, \(count) sets",
                    megabytesPerSecond: Harness.median(samples.map(\.megabytesPerSecond)),
                    opsPerSecond: opsPerSecond,
                    p50Nanos: Harness.median(samples.map(\.p50)),
                    p99Nanos: Harness.median(samples.map(\.p99)),
                    ratio: name == "4 KB JSON" ? urlCacheStoresPerSecond.map { opsPerSecond / $0 } : nil
                )
            )
        }
        return results
    }

    // MARK: URLCache

    static func urlCache(
        entries: Int,
        quick: Bool
    ) throws -> (
        hitsPerSecond: Double, hitP50: Double, hitP99: Double, hits: Int, storesPerSecond: Double
    ) {
        let directory = TemporaryDirectory("bench-urlcache")
        defer { directory.remove() }
        #if canImport(FoundationNetworking)
        let cache = URLCache(memoryCapacity: 0, diskCapacity: 1 << 30, diskPath: directory.path)
        #else
        let cache = URLCache(memoryCapacity: 0, diskCapacity: 1 << 30, directory: URL(fileURLWithPath: directory.path))
        #endif
        let clock = ContinuousClock()
        var storeNanos = 0.0
        let requests = (0..<entries).map { URLRequest(url: URL(string: hotKey($0).string)!) }
        for (index, request) in requests.enumerated() {
            let body = SampleData.json(
                approximateBytes: index < hotKeyCount ? hotValueBytes : 1024,
                seed: UInt64(index)
            )
            let response = HTTPURLResponse(
                url: request.url!,
                statusCode: 200,
                httpVersion: "HTTP/1.1",
                headerFields: ["Content-Type": "application/json"]
            )!
            let start = clock.now
            cache.storeCachedResponse(CachedURLResponse(response: response, data: Data(body)), for: request)
            storeNanos += Harness.nanoseconds(of: clock.now - start)
        }
        let gets = quick ? 20 : (entries <= 100 ? 400 : 100)
        var generator = SplitMix64(seed: 9)
        var latencies: [Double] = []
        for _ in 0..<gets {
            let request = requests[Int(generator.next() % UInt64(entries))]
            let start = clock.now
            let found = cache.cachedResponse(for: request)
            latencies.append(Harness.nanoseconds(of: clock.now - start))
            precondition(found != nil, "URLCache must hit")
        }
        let summary = Harness.summarize(latencies)
        return (summary.opsPerSecond, summary.p50, summary.p99, gets, Double(entries) / storeNanos * 1e9)
    }
}
