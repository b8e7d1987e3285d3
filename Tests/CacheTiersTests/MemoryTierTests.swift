// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Testing

@testable import CacheTiers

@Suite struct MemoryTierTests {
    static func entry(valueBytes: Int, storedAt seconds: Double = 0) -> CacheEntry {
        CacheEntry(
            value: [UInt8](repeating: 0x5A, count: valueBytes),
            storedAt: Date(timeIntervalSince1970: seconds)
        )
    }

    // MARK: Configuration

    struct ShardCase: Sendable, CustomTestStringConvertible {
        var configuration: MemoryTier.Configuration
        var expected: Int
        var testDescription: String {
            "\(configuration.capacityBytes) B, \(configuration.maximumEntryCount) entries, "
                + "fraction \(configuration.admissionFraction), \(configuration.shardCount) shards -> \(expected)"
        }
    }

    static let shardCases: [ShardCase] = [
        ShardCase(configuration: .init(), expected: 16),
        ShardCase(configuration: .init(shardCount: 1), expected: 1),
        ShardCase(configuration: .init(shardCount: 5), expected: 8),
        // A shard must hold the largest admissible entry: 5% of 64 MiB allows 16 shards, not more.
        ShardCase(configuration: .init(shardCount: 64), expected: 16),
        ShardCase(configuration: .init(capacityBytes: 1 << 30, admissionFraction: 0.01, shardCount: 64), expected: 64),
        // 64 MiB / 128 is below 1 MiB a shard.
        ShardCase(configuration: .init(admissionFraction: 0.001, shardCount: 128), expected: 64),
        ShardCase(configuration: .init(capacityBytes: 4 << 20), expected: 4),
        ShardCase(configuration: .init(capacityBytes: (1 << 20) - 1), expected: 1),
        ShardCase(configuration: .init(maximumEntryCount: 1000), expected: 8),
        ShardCase(configuration: .init(maximumEntryCount: 100), expected: 1),
        // Each shard must be able to hold the largest admissible entry (12.8 MiB here).
        ShardCase(configuration: .init(admissionFraction: 0.2), expected: 4),
        ShardCase(configuration: .init(admissionFraction: 1), expected: 1),
        ShardCase(configuration: .init(capacityBytes: 0), expected: 1),
        ShardCase(configuration: .init(capacityBytes: Int.max, maximumEntryCount: Int.max), expected: 16),
    ]

    @Test(arguments: shardCases)
    func shardCountIsRoundedAndReducedForSmallBudgets(_ shardCase: ShardCase) {
        #expect(MemoryTier.effectiveShardCount(for: shardCase.configuration) == shardCase.expected)
        #expect(MemoryTier(configuration: shardCase.configuration).shardCount == shardCase.expected)
    }

    @Test func invalidConfigurationIsAProgrammerError() async {
        await #expect(processExitsWith: .failure) { _ = MemoryTier(configuration: .init(capacityBytes: -1)) }
        await #expect(processExitsWith: .failure) { _ = MemoryTier(configuration: .init(maximumEntryCount: -1)) }
        await #expect(processExitsWith: .failure) { _ = MemoryTier(configuration: .init(admissionFraction: 1.5)) }
        await #expect(processExitsWith: .failure) { _ = MemoryTier(configuration: .init(admissionFraction: -0.1)) }
        await #expect(processExitsWith: .failure) { _ = MemoryTier(configuration: .init(admissionFraction: .nan)) }
        await #expect(processExitsWith: .failure) { _ = MemoryTier(configuration: .init(shardCount: 0)) }
    }

    // MARK: Admission and zero capacity

    @Test func entryAboveAdmissionFractionIsRefusedAndDropsTheOlderValue() {
        // 5% of 100,000 bytes: an entry may cost at most 5,000.
        let tier = MemoryTier(configuration: .init(capacityBytes: 100_000, maximumEntryCount: 100))
        let key: CacheKey = "k"
        let overhead = 1 + CacheEntry.overheadBytes
        #expect(tier.set(Self.entry(valueBytes: 5000 - overhead), for: key))
        #expect(tier.entry(for: key) == Self.entry(valueBytes: 5000 - overhead))
        #expect(!tier.set(Self.entry(valueBytes: 5001 - overhead), for: key))
        #expect(tier.entry(for: key) == nil, "the older value must not be served after a newer one was offered")
        #expect(tier.usage == .init(bytes: 0, entryCount: 0))
        #expect(tier.statistics == .init(hits: 1, misses: 1, evictions: 0, admissionRefusals: 1))
    }

    @Test(arguments: [
        MemoryTier.Configuration(capacityBytes: 0),
        MemoryTier.Configuration(maximumEntryCount: 0),
        MemoryTier.Configuration(admissionFraction: 0),
        MemoryTier.Configuration(capacityBytes: 0, maximumEntryCount: 0, admissionFraction: 0, shardCount: 1),
    ])
    func zeroBudgetStoresNothing(_ configuration: MemoryTier.Configuration) {
        let tier = MemoryTier(configuration: configuration)
        for index in 0..<10 {
            #expect(!tier.set(Self.entry(valueBytes: index), for: CacheKey("\(index)")))
            #expect(tier.entry(for: CacheKey("\(index)")) == nil)
        }
        #expect(tier.remove("0") == nil)
        #expect(tier.removeEntries(storedSince: .distantPast) == 0)
        tier.removeAll()
        #expect(tier.usage == .init(bytes: 0, entryCount: 0))
        #expect(tier.statistics == .init(hits: 0, misses: 10, evictions: 0, admissionRefusals: 10))
    }

    // MARK: Operations across shards

    @Test func removeRemoveAllAndRemoveEntriesAcrossShards() {
        let tier = MemoryTier(configuration: .init(capacityBytes: 16 << 20, shardCount: 16))
        #expect(tier.shardCount == 16)
        let keys = (0..<200).map { CacheKey("key-\($0)") }
        for (index, key) in keys.enumerated() {
            #expect(tier.set(Self.entry(valueBytes: 100, storedAt: Double(index)), for: key))
        }
        let costPerEntry = Self.entry(valueBytes: 100).cost(keyByteCount: "key-0".utf8.count)
        #expect(tier.usage.entryCount == 200)

        #expect(tier.remove(keys[0]) == Self.entry(valueBytes: 100, storedAt: 0))
        #expect(tier.remove(keys[0]) == nil)
        #expect(tier.entry(for: keys[0]) == nil)

        // storedAt 150...199 go.
        #expect(tier.removeEntries(storedSince: Date(timeIntervalSince1970: 150)) == 50)
        #expect(tier.entry(for: keys[149]) != nil)
        #expect(tier.entry(for: keys[150]) == nil)
        #expect(tier.usage.entryCount == 149)
        let bytes = (1..<150).reduce(0) { $0 + Self.entry(valueBytes: 100).cost(keyByteCount: "key-\($1)".utf8.count) }
        #expect(tier.usage.bytes == bytes)
        #expect(costPerEntry == 5 + 100 + CacheEntry.overheadBytes)

        tier.removeAll()
        #expect(tier.usage == .init(bytes: 0, entryCount: 0))
        #expect(keys.allSatisfy { tier.entry(for: $0) == nil })
        // Statistics survive removeAll.
        #expect(tier.statistics.hits == 1)
    }

    @Test func hitSharesTheStoredBytes() {
        let tier = MemoryTier()
        let value = [UInt8](repeating: 7, count: 1024)
        tier.set(CacheEntry(value: value, storedAt: .now), for: "k")
        let hit = tier.entry(for: "k")
        let stored = value.withUnsafeBufferPointer { $0.baseAddress }
        #expect(hit?.value.withUnsafeBufferPointer { $0.baseAddress } == stored)
    }

    @Test func collidingKeysInTheTier() {
        let tier = MemoryTier()
        let alpha = CacheKey(string: "alpha", digest: 0xABCD_0000_0000_0001)
        let beta = CacheKey(string: "beta", digest: 0xABCD_0000_0000_0001)
        tier.set(Self.entry(valueBytes: 1), for: alpha)
        #expect(tier.entry(for: beta) == nil)
        #expect(tier.remove(beta) == nil)
        #expect(tier.set(Self.entry(valueBytes: 2), for: beta))
        #expect(tier.entry(for: alpha) == nil)
        #expect(tier.entry(for: beta) == Self.entry(valueBytes: 2))
        #expect(tier.usage.entryCount == 1)
    }

    @Test func lruIsExactWithOneShard() {
        // Room for exactly three entries.
        let cost = Self.entry(valueBytes: 100).cost(keyByteCount: 1)
        let tier = MemoryTier(
            configuration: .init(capacityBytes: 3 * cost, admissionFraction: 1, shardCount: 1, evictionPolicy: .lru)
        )
        for key in ["a", "b", "c"] { tier.set(Self.entry(valueBytes: 100), for: CacheKey(key)) }
        #expect(tier.entry(for: "a") != nil)
        tier.set(Self.entry(valueBytes: 100), for: "d")
        #expect(tier.entry(for: "b") == nil)
        #expect(["a", "c", "d"].allSatisfy { tier.entry(for: CacheKey($0)) != nil })
        #expect(tier.statistics.evictions == 1)
    }

    // MARK: Metrics

    @Test func metricsCountWhatStatisticsCount() {
        let metrics = CountingMetricsFactory()
        let cost = Self.entry(valueBytes: 100).cost(keyByteCount: 1)
        let tier = MemoryTier(
            configuration: .init(capacityBytes: 2 * cost, admissionFraction: 1, shardCount: 1),
            metricsFactory: metrics
        )
        #expect(
            metrics.labels == [
                "layeredcache_memory_hits_total", "layeredcache_memory_misses_total",
                "layeredcache_memory_evictions_total", "layeredcache_memory_admission_refusals_total",
            ]
        )
        tier.set(Self.entry(valueBytes: 100), for: "a")
        tier.set(Self.entry(valueBytes: 100), for: "b")
        tier.set(Self.entry(valueBytes: 100), for: "c")  // evicts a
        tier.set(Self.entry(valueBytes: 10_000), for: "d")  // refused
        _ = tier.entry(for: "a")
        _ = tier.entry(for: "b")
        _ = tier.entry(for: "c")
        let statistics = tier.statistics
        #expect(statistics == .init(hits: 2, misses: 1, evictions: 1, admissionRefusals: 1))
        #expect(metrics.value("layeredcache_memory_hits_total") == statistics.hits)
        #expect(metrics.value("layeredcache_memory_misses_total") == statistics.misses)
        #expect(metrics.value("layeredcache_memory_evictions_total") == statistics.evictions)
        #expect(metrics.value("layeredcache_memory_admission_refusals_total") == statistics.admissionRefusals)
    }

    // MARK: Random sequences against the reference model

    static let exactConfigurations: [MemoryTier.Configuration] = [
        .init(
            capacityBytes: 4000,
            maximumEntryCount: 12,
            admissionFraction: 0.225,
            shardCount: 1,
            evictionPolicy: .lru
        ),
        // Budgets this small make the tier fall back to one shard, so its LRU is exact too.
        .init(
            capacityBytes: 4000,
            maximumEntryCount: 12,
            admissionFraction: 0.225,
            shardCount: 16,
            evictionPolicy: .lru
        ),
    ]

    @Test(arguments: exactConfigurations, [11, 12] as [UInt64])
    func randomSequenceMatchesReference(configuration: MemoryTier.Configuration, seed: UInt64) {
        let tier = MemoryTier(configuration: configuration)
        #expect(tier.shardCount == 1)
        var reference = ReferenceLRU(costLimit: 4000, countLimit: 12, maximumEntryCost: 900)
        #expect(MemoryTier.admissionLimit(for: configuration) == 900)
        var generator = SplitMix64(seed: seed)
        let keys = randomSequenceKeys(count: 40)
        for step in 0..<4000 {
            let operation = RandomOperation.next(keys: keys, maximumValueBytes: 1000, using: &generator)
            operation.apply(to: tier, and: &reference, step: step)
            let usage = tier.usage
            guard usage == .init(bytes: reference.totalCost, entryCount: reference.items.count) else {
                Issue.record("step \(step) (\(operation)): usage \(usage) differs from the reference")
                return
            }
        }
        // Every key still held answers, in the reference's order, with the reference's entry.
        for item in reference.items.reversed() {
            #expect(tier.entry(for: item.key) == item.entry)
        }
        let statistics = tier.statistics
        #expect(statistics.evictions == reference.evictions)
        #expect(statistics.admissionRefusals == reference.admissionRefusals)
        #expect(statistics.hits == reference.hits + reference.items.count)
        #expect(statistics.misses == reference.misses)
    }

    // MARK: Concurrency

    /// A value that says which key and version it is: version, key length, key, then filler whose
    /// length and byte both derive from the key and the version.
    static func selfDescribingEntry(key: CacheKey, version: Int, maximumBytes: Int) -> CacheEntry {
        let mix = KeyDigest.digest(of: "\(key.string)#\(version)")
        var value: [UInt8] = []
        withUnsafeBytes(of: UInt64(version).littleEndian) { value.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt16(key.string.utf8.count).littleEndian) { value.append(contentsOf: $0) }
        value.append(contentsOf: key.string.utf8)
        value += Bytes.repeated(UInt8(truncatingIfNeeded: mix), count: Int(mix % UInt64(maximumBytes)))
        return CacheEntry(value: value, metadata: Array("v\(version)".utf8), storedAt: .distantPast)
    }

    /// The version `entry` describes, if it is exactly the entry made for `key` at that version.
    static func version(of entry: CacheEntry, for key: CacheKey, maximumBytes: Int) -> Int? {
        guard entry.value.count >= 10 else { return nil }
        let version = entry.value[0..<8].reversed().reduce(0) { $0 << 8 | Int($1) }
        let expected = selfDescribingEntry(key: key, version: version, maximumBytes: maximumBytes)
        let same =
            Bytes.equal(entry.value, expected.value) && entry.metadata == expected.metadata
            && entry.storedAt == expected.storedAt
        return same ? version : nil
    }

    enum KeyState: CustomStringConvertible {
        case stored(version: Int)
        case absent

        var description: String {
            switch self {
            case .stored(let version): "version \(version)"
            case .absent: "absent"
            }
        }
    }

    struct WorkerOutcome: Sendable {
        var failures: [String] = []
        var gets = 0
    }

    static let valueBytes = 5000

    /// One task's share of the concurrency test. The task alone writes its own keys, so it knows
    /// exactly what each must hold: a hit must be the last version it stored. Shared keys are
    /// written by every task: a hit must be some version made for that key, never another key's.
    static func runWorker(task: Int, tier: MemoryTier, sharedKeys: [CacheKey], operations: Int) -> WorkerOutcome {
        let ownKeys = (0..<300).map { CacheKey("task-\(task)-\($0)") }
        var states = [KeyState](repeating: .absent, count: ownKeys.count)
        var generator = SplitMix64(seed: UInt64(task))
        var outcome = WorkerOutcome()
        for step in 0..<operations {
            let version = task * 1_000_000 + step
            let roll = generator.next() % 100
            let shared = generator.next() % 4 == 0
            let index = Int(generator.next() % UInt64(shared ? sharedKeys.count : ownKeys.count))
            let key = shared ? sharedKeys[index] : ownKeys[index]
            switch roll {
            case 0..<50:
                outcome.gets += 1
                guard let hit = tier.entry(for: key) else { continue }  // never set, removed or evicted
                let found = Self.version(of: hit, for: key, maximumBytes: valueBytes)
                if shared {
                    if found == nil { outcome.failures.append("\(key): a hit that is not a value set for it") }
                } else if case .stored(let expected) = states[index], found == expected {
                    continue
                } else {
                    outcome.failures.append(
                        "\(key): hit \(found.map(String.init) ?? "garbage"), expected \(states[index])"
                    )
                }
            case 50..<90:
                let entry = selfDescribingEntry(key: key, version: version, maximumBytes: valueBytes)
                let stored = tier.set(entry, for: key)
                if !shared { states[index] = stored ? .stored(version: version) : .absent }
            default:
                tier.remove(key)
                if !shared { states[index] = .absent }
            }
        }
        return outcome
    }

    @Test func concurrentTasksSeeOnlyTheLastValueSetForAKey() async {
        // 4 shards of 1 MiB and 250 entries; an entry may cost at most 4,194 bytes, so some sets of
        // values up to 5,000 bytes are refused, and 2,500 keys overflow the tier.
        let configuration = MemoryTier.Configuration(
            capacityBytes: 4 << 20,
            maximumEntryCount: 1000,
            admissionFraction: 0.001,
            shardCount: 4
        )
        let tier = MemoryTier(configuration: configuration)
        #expect(tier.shardCount == 4)
        let sharedKeys = (0..<100).map { CacheKey("shared-\($0)") }

        let outcomes = await withTaskGroup(of: WorkerOutcome.self) { group in
            for task in 0..<8 {
                group.addTask { Self.runWorker(task: task, tier: tier, sharedKeys: sharedKeys, operations: 3000) }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }

        let failures = outcomes.flatMap(\.failures)
        #expect(failures.count == 0, "first failures: \(failures.prefix(5))")
        let usage = tier.usage
        #expect(usage.bytes <= configuration.capacityBytes)
        #expect(usage.entryCount <= configuration.maximumEntryCount)
        let statistics = tier.statistics
        #expect(statistics.hits + statistics.misses == outcomes.map(\.gets).reduce(0, +))
        #expect(statistics.evictions > 0, "the workload should overflow the tier")
        #expect(statistics.admissionRefusals > 0, "the workload should offer entries above admission")
        #expect(statistics.hits > 0)
    }
}
