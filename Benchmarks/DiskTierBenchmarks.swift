// SPDX-License-Identifier: Apache-2.0

#if Tools
import CacheTestSupport
import CacheTiers
import Foundation

/// The disk tier against Foundation's disk `URLCache` as the cache grows, in the same run.
///
/// - Hit at N entries: 1,000 keys hold 4 KB JSON values; the directory is filled to N entries
///   with small (100-byte) values besides, so that the index holds N entries while the hot
///   records fit the page cache. The hot records are read once to warm the page cache, then read
///   in a seeded random order, each get timed on its own (a cold memory tier: no memory tier is in
///   front). Through `DiskTier` (an actor call) and through the synchronous `DiskStore` under it.
/// - Store at N entries: `DiskTier.set` of 4 KB JSON values over random existing keys of that
///   directory, so that it holds N entries throughout; fsync policy `never`.
/// - Open: reopening that directory, with its index snapshot and with replay (snapshot deleted);
///   and the index's memory per entry (its slot array ÷ entries).
/// - Store throughput: 1 KB, 4 KB, 64 KB JSON and 64 KB random values into a fresh directory.
/// - URLCache (memory capacity 0, a disk directory) filled to N entries of the same 4 KB bodies,
///   then read and overwritten at random. A size whose estimate (from a 100-entry pilot) exceeds
///   the time budget is skipped and says so.
///
/// Ratio = our ops/s ÷ URLCache's at the same entry count (a speed ratio).
enum DiskTierBenchmarks {
    static let hotKeyCount = 1000
    static let hotValueBytes = 4096
    static let fillerValueBytes = 100
    static let defaultEntries = [1000, 10_000, 100_000, 1_000_000]
    static let quickEntries = [1000, 10_000]

    static func run(quick: Bool) async throws -> [BenchmarkResult] {
        try await run(quick: quick, entries: nil)
    }

    static func run(quick: Bool, entries: [Int]?) async throws -> [BenchmarkResult] {
        let sizes = entries ?? (quick ? quickEntries : defaultEntries)
        let reference = urlCache(sizes: sizes, quick: quick)
        var results = reference.rows
        for entries in sizes {
            results += try await hitsStoresAndOpen(
                entries: entries,
                quick: quick,
                urlCacheHits: reference.hits[entries],
                urlCacheStores: reference.stores[entries]
            )
        }
        results += try await DiskStoreThroughput.run(quick: quick)
        return results
    }

    // MARK: Ours

    static func configuration(_ directory: TemporaryDirectory) -> DiskTier.Configuration {
        DiskTier.Configuration(directory: directory.path, capacityBytes: 64 << 30, fsync: .never)
    }

    static func hotKey(_ index: Int) -> CacheKey { CacheKey(URLCacheSubject.url(index)) }

    static func key(_ index: Int) -> CacheKey { index < hotKeyCount ? hotKey(index) : CacheKey("filler/\(index)") }

    static func hitsStoresAndOpen(
        entries: Int,
        quick: Bool,
        urlCacheHits: Double?,
        urlCacheStores: Double?
    ) async throws -> [BenchmarkResult] {
        let directory = TemporaryDirectory("bench-disk")
        defer { directory.remove() }
        let now = Date()
        let gets = quick ? 5_000 : 50_000
        let rounds = quick ? 3 : 5
        let bodies = (0..<64).map { SampleData.json(approximateBytes: hotValueBytes, seed: UInt64($0)) }

        // Fill: the hot keys first, then small filler entries up to `entries`.
        var memoryPerEntry = 0.0
        // The index keeps 37 bits of each digest: of a million keys, a few share a slot (the later
        // one stays), so the index may hold a few entries fewer than were stored.
        var indexed = 0
        do {
            let store = try DiskStore(configuration: configuration(directory))
            for index in 0..<min(entries, hotKeyCount) {
                let value = SampleData.json(approximateBytes: hotValueBytes, seed: UInt64(index))
                _ = try store.set(CacheEntry(value: value, storedAt: now), for: hotKey(index))
            }
            let filler = SampleData.random(count: fillerValueBytes)
            for index in hotKeyCount..<max(entries, hotKeyCount) {
                _ = try store.set(CacheEntry(value: filler, storedAt: now), for: key(index))
            }
            memoryPerEntry = Double(store.index.memoryBytes) / Double(store.index.count)
            indexed = store.index.count
            precondition(indexed > entries - max(8, entries / 10_000))
            try store.close()
        }
        let held = entries  // min(entries, 1,000) hot keys, then filler keys up to `entries`
        let open = try openTimes(directory, expecting: indexed, rounds: quick ? 1 : 3)

        // Hits: the same random order of hot keys through the store and through the actor.
        var generator = SplitMix64(seed: UInt64(entries))
        let hotCount = min(entries, hotKeyCount)
        let keys = (0..<hotCount).map(hotKey)
        let order = (0..<gets).map { _ in Int(generator.next() % UInt64(hotCount)) }
        let clock = ContinuousClock()
        var storeRounds: [LatencySummary] = []
        var tierRounds: [LatencySummary] = []
        var setRounds: [LatencySummary] = []
        do {
            let store = try DiskStore(configuration: configuration(directory))
            for key in keys { precondition(store.entry(for: key) != nil) }
            for _ in 0..<rounds {
                var recorder = LatencyRecorder()
                for index in order {
                    let start = clock.now
                    let entry = store.entry(for: keys[index])
                    recorder.record(Harness.nanoseconds(of: clock.now - start))
                    precondition(entry?.value.count ?? 0 >= hotValueBytes)
                }
                storeRounds.append(recorder.summary)
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
                var recorder = LatencyRecorder()
                for index in order {
                    let start = clock.now
                    let entry = await tier.entry(for: keys[index])
                    recorder.record(Harness.nanoseconds(of: clock.now - start))
                    precondition(entry?.value.count ?? 0 >= hotValueBytes)
                }
                tierRounds.append(recorder.summary)
            }
            // Stores over random existing keys: the directory holds `held` entries throughout.
            let sets = quick ? 1_000 : 10_000
            for round in 0..<rounds {
                var recorder = LatencyRecorder()
                for index in 0..<sets {
                    let target = key(Int(generator.next() % UInt64(held)))
                    let entry = CacheEntry(value: bodies[(index + round) % bodies.count], storedAt: now)
                    let start = clock.now
                    let stored = try await tier.set(entry, for: target)
                    recorder.record(Harness.nanoseconds(of: clock.now - start))
                    precondition(stored)
                }
                setRounds.append(recorder.summary)
            }
            try await tier.close()
        }

        func row(
            _ workload: String,
            _ subject: String,
            _ detail: String,
            _ rounds: [LatencySummary],
            _ ref: Double?
        )
            -> BenchmarkResult
        {
            var result = BenchmarkResult(workload: "\(workload), \(held) entries", subject: subject, detail: detail)
            result.take(LatencySummary.median(rounds))
            result.ratio = ref.map { result.opsPerSecond! / $0 }
            result.entries = held
            result.valueBytes = hotValueBytes
            result.series = subject == "DiskTier" ? workload : nil
            return result
        }
        var opened = BenchmarkResult(
            workload: "disk open, \(held) entries",
            subject: "DiskTier",
            detail: String(format: "snapshot; replay %.0f ms; index %.1f B/entry", open.replay / 1e6, memoryPerEntry),
            opsPerSecond: 1e9 / open.snapshot,
            p50Nanos: open.snapshot
        )
        opened.entries = held
        return [
            row("disk hit, 4 KB JSON", "DiskTier", "actor call, page cache warm", tierRounds, urlCacheHits),
            row("disk hit, 4 KB JSON", "DiskStore", "no actor hop, page cache warm", storeRounds, urlCacheHits),
            row("disk store, 4 KB JSON", "DiskTier", "over existing keys, fsync never", setRounds, urlCacheStores),
            opened,
        ]
    }

    /// Median nanoseconds to reopen `directory` with its snapshot, and by replaying its segments.
    static func openTimes(
        _ directory: TemporaryDirectory,
        expecting count: Int,
        rounds: Int
    ) throws -> (snapshot: Double, replay: Double) {
        var snapshot: [Double] = []
        var replay: [Double] = []
        for withSnapshot in [true, false] {
            for _ in 0..<rounds {
                if !withSnapshot { try FileManager.default.removeItem(atPath: directory.appending("index.lcx")) }
                var store: DiskStore?
                let nanos = try Harness.time { store = try DiskStore(configuration: configuration(directory)) }
                precondition(store!.index.count == count)
                try store!.close()
                if withSnapshot { snapshot.append(nanos) } else { replay.append(nanos) }
            }
        }
        return (Harness.median(snapshot), Harness.median(replay))
    }

    // MARK: URLCache

    /// URLCache's disk hits and stores per second at 100 entries (the pilot size) and at each of
    /// `sizes` that fits the time budget, and their rows.
    static func urlCache(
        sizes: [Int],
        quick: Bool
    ) -> (rows: [BenchmarkResult], hits: [Int: Double], stores: [Int: Double]) {
        let budget = quick ? 5.0 : 240.0
        let bodies = (0..<hotKeyCount).map { SampleData.json(approximateBytes: hotValueBytes, seed: UInt64($0)) }
        let pilot = URLCacheSubject.pilot(bodies: bodies)
        var rows: [BenchmarkResult] = []
        var hits: [Int: Double] = [:]
        var stores: [Int: Double] = [:]
        for entries in Set([URLCacheSubject.Pilot.entries] + sizes).sorted() {
            let gets = quick ? 20 : (entries <= 100 ? 400 : 100)
            let sets = quick ? 10 : 50
            let estimate = pilot.estimatedSeconds(entries: entries, operations: gets + sets)
            var hit = BenchmarkResult(
                workload: "disk hit, 4 KB JSON, \(entries) entries",
                subject: "URLCache",
                detail: "Foundation, disk, \(gets) gets",
                entries: entries,
                valueBytes: hotValueBytes,
                series: "disk hit, 4 KB JSON"
            )
            var store = BenchmarkResult(
                workload: "disk store, 4 KB JSON, \(entries) entries",
                subject: "URLCache",
                detail: "Foundation, disk, \(sets) stores over existing keys",
                entries: entries,
                valueBytes: hotValueBytes,
                series: "disk store, 4 KB JSON"
            )
            if estimate > budget {
                hit.skipped = URLCacheSubject.skippedNote(estimatedSeconds: estimate, budgetSeconds: budget)
                store.skipped = hit.skipped
                rows += [hit, store]
                continue
            }
            let subject = URLCacheSubject(disk: "bench-urlcache")
            subject.fill(to: entries, bodies: bodies)
            var generator = SplitMix64(seed: 9)
            var getRecorder = LatencyRecorder()
            for _ in 0..<gets { getRecorder.record(subject.get(Int(generator.next() % UInt64(entries)))) }
            var setRecorder = LatencyRecorder()
            for index in 0..<sets {
                let target = Int(generator.next() % UInt64(entries))
                setRecorder.record(subject.store(bodies[index % bodies.count], at: target))
            }
            hit.take(getRecorder.summary)
            hit.ratio = 1
            store.take(setRecorder.summary)
            store.ratio = 1
            hits[entries] = hit.opsPerSecond
            stores[entries] = store.opsPerSecond
            rows += [hit, store]
        }
        return (rows, hits, stores)
    }
}
#endif
