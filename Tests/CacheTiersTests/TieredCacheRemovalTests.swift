// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Synchronization
import Testing

@testable import CacheTiers

/// A completed removal is final: no read that raced it brings the value back, at any tier
/// boundary (issue 38, item 4). The races are staged with gates, not timing.
@Suite struct TieredCacheRemovalTests {
    /// How a test removes the key.
    enum Removal: CaseIterable, Sendable {
        case key, all, storedSince

        func run(on cache: TieredCache) async throws {
            switch self {
            case .key: try await cache.remove("k")
            case .all: try await cache.removeAll()
            case .storedSince: try await cache.removeEntries(storedSince: fixedNow)
            }
        }
    }

    static func cache(over lower: GatedTier, shared: FakeSharedTier? = nil) -> TieredCache {
        // A plain lower tier: nothing to seal, so making the cache cannot fail.
        try! TieredCache(
            memory: MemoryTier(configuration: .init(capacityBytes: 1 << 20, shardCount: 1)),
            lowerTiers: [lower],
            shared: shared
        )
    }

    /// A cache over a gated lower tier that holds `value` for "k" below memory only.
    static func cacheHoldingBelowMemory(_ value: [UInt8]) async throws -> (GatedTier, TieredCache) {
        let lower = GatedTier()
        let cache = Self.cache(over: lower)
        try await cache.set(entry(value), for: "k")
        cache.memory.removeAll()
        return (lower, cache)
    }

    /// The reported race: the removal has taken the key out of memory and is removing it below;
    /// a read misses memory, finds the lower tier's copy and is held there; the removal
    /// completes; the read goes on and would promote. Afterwards the key is gone, every round.
    @Test(arguments: Removal.allCases)
    func aReadThatOverlapsARemovalDoesNotPromote(removal: Removal) async throws {
        for round in 0..<20 {
            let (lower, cache) = try await Self.cacheHoldingBelowMemory([UInt8(round)])

            await lower.gate(.removal)
            let remover = Task { try await removal.run(on: cache) }
            await lower.waitUntilHeld(.removal)
            await lower.gate(.read)
            let reader = Task { await cache.entry(for: "k") }
            await lower.waitUntilHeld(.read)
            lower.release(.removal)
            try await remover.value
            lower.release(.read)
            // Overlapping the removal, the read may answer with what it found.
            #expect(await reader.value?.value ?? [UInt8(round)] == [UInt8(round)])
            #expect(cache.memory.entry(for: "k") == nil, "round \(round)")
            #expect(await cache.entry(for: "k") == nil, "round \(round)")
        }
    }

    /// The read looked before the removal began and is held after its lower-tier read while the
    /// removal runs to completion; it then goes on to promote. The key stays gone.
    @Test(arguments: Removal.allCases)
    func aReadHeldAcrossAWholeRemovalDoesNotPromote(removal: Removal) async throws {
        for round in 0..<20 {
            let (lower, cache) = try await Self.cacheHoldingBelowMemory([UInt8(round)])

            await lower.gate(.read)
            let reader = Task { await cache.entry(for: "k") }
            await lower.waitUntilHeld(.read)
            try await removal.run(on: cache)
            lower.release(.read)
            #expect(await reader.value?.value == [UInt8(round)])
            #expect(cache.memory.entry(for: "k") == nil, "round \(round)")
            #expect(await cache.entry(for: "k") == nil, "round \(round)")
        }
    }

    /// The shared tier's removal is queued: until it is written, a read does not fetch the
    /// shared tier's copy (nor promote it into memory and the lower tiers).
    @Test func aQueuedSharedRemovalHidesTheSharedCopy() async throws {
        let lower = GatedTier()
        let shared = FakeSharedTier()
        let cache = Self.cache(over: lower, shared: shared)
        try await shared.set(entry([1]), for: "k")
        #expect(await cache.entry(for: "k")?.value == [1])
        #expect(try await cache.remove("k"))
        // No run(): the removal waits in the queue, and the shared tier still holds the key.
        #expect(shared.stored["k"] != nil)
        #expect(await cache.entry(for: "k") == nil)
        #expect(cache.memory.entry(for: "k") == nil)
        #expect(await lower.contains("k") == false)

        // Once the removal is written, the shared tier is read again.
        let queue = try #require(cache.writeThrough)
        queue.finish()
        await queue.drain(into: shared)
        try await shared.set(entry([2]), for: "k")
        #expect(await cache.entry(for: "k")?.value == [2])
    }

    /// A shared hit being promoted is writing the lower tier when a removal begins: the removal
    /// waits for that write and removes it, so neither memory nor the lower tier keeps the value.
    @Test(arguments: Removal.allCases)
    func aSharedPromotionInFlightIsRemovedByTheRemoval(removal: Removal) async throws {
        for round in 0..<10 {
            let lower = GatedTier()
            let shared = FakeSharedTier()
            let cache = Self.cache(over: lower, shared: shared)
            try await shared.set(entry([UInt8(round)]), for: "k")

            await lower.gate(.set)
            let reader = Task { await cache.entry(for: "k") }
            await lower.waitUntilHeld(.set)
            let finished = Flag()
            let remover = Task {
                try await removal.run(on: cache)
                finished.set()
            }
            // The removal either waits for the promotion or (without the ledger) completes.
            while cache.removals.waitingRemovals == 0 && !finished.isSet {
                await Task.yield()
            }
            lower.release(.set)
            #expect(await reader.value?.value == [UInt8(round)])
            try await remover.value
            #expect(cache.memory.entry(for: "k") == nil, "round \(round)")
            #expect(await lower.contains("k") == false, "round \(round)")
            if removal == .key {
                #expect(await cache.entry(for: "k") == nil, "round \(round)")
            }
        }
    }

    /// With a real disk tier and two readers reading the key throughout, no round's removal is
    /// undone: once `remove` has returned, the remover's own read misses, and so does every read
    /// after the readers stopped.
    @Test func noResurrectionUnderConcurrentReadersOverADiskTier() async throws {
        try await withTemporaryDirectory { directory in
            let cache = TieredCache(
                memory: MemoryTier(configuration: .init(capacityBytes: 1 << 20)),
                disk: try DiskTier(configuration: diskConfiguration(directory))
            )
            var resurrections = 0
            for round in 0..<200 {
                let key = CacheKey("k\(round)")
                try await cache.set(entry(versionedValue(key.string, version: round)), for: key)
                cache.memory.remove(key)
                let stop = Flag()
                resurrections += try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<2 {
                        group.addTask {
                            while !stop.isSet { _ = await cache.entry(for: key) }
                            return 0
                        }
                    }
                    try await cache.remove(key)
                    let found = await cache.entry(for: key) != nil
                    stop.set()
                    try await group.waitForAll()
                    return found ? 1 : 0
                }
                if await cache.entry(for: key) != nil || cache.memory.entry(for: key) != nil { resurrections += 1 }
            }
            #expect(resurrections == 0)
            try await cache.disk?.close()
        }
    }
}

/// A flag one task sets and others read.
private final class Flag: Sendable {
    private let value = Atomic<Bool>(false)

    var isSet: Bool { value.load(ordering: .acquiring) }

    func set() { value.store(true, ordering: .releasing) }
}
