// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Testing

@testable import CacheTiers

@Suite struct MemoryShardS3FIFOTests {
    /// An entry for a key of `keyBytes` characters that costs exactly `cost` bytes.
    static func entry(cost: Int, keyBytes: Int = 1, storedAt seconds: Double = 0) -> CacheEntry {
        CacheEntry(
            value: [UInt8](repeating: 0xAB, count: cost - keyBytes - CacheEntry.overheadBytes),
            storedAt: Date(timeIntervalSince1970: seconds)
        )
    }

    static func keys(_ prefix: String, _ count: Int) -> [CacheKey] {
        (0..<count).map { CacheKey("\(prefix)\($0)") }
    }

    /// Checks every queue, ghost and total of the shard against the reference.
    static func matches(_ shard: borrowing MemoryShard, _ reference: ReferenceS3FIFO) -> Bool {
        let queues = shard.queues
        return queues.small == reference.smallKeys && queues.main == reference.mainKeys
            && queues.ghosts == reference.ghostDigests && shard.totalCost == reference.totalCost
            && shard.count == reference.count && shard.evictions == reference.evictions
    }

    // MARK: Hand-made sequences

    @Test func oneTimeScanDoesNotEvictTheHotSet() {
        // Room for 100 entries; the hot set is 10 keys read twice each, then 1,000 keys are
        // scanned once (a miss, then a set), reading the hot set again now and then.
        let hot = Self.keys("hot", 10)
        let scan = Self.keys("scan", 1000)
        var shard = MemoryShard(costLimit: 1 << 20, countLimit: 100, policy: .s3FIFO)
        var reference = ReferenceS3FIFO(costLimit: 1 << 20, countLimit: 100, maximumEntryCost: 1 << 20)
        var lru = MemoryShard(costLimit: 1 << 20, countLimit: 100, policy: .lru)
        let value = Self.entry(cost: 200)
        for key in hot {
            shard.set(value, for: key)
            _ = reference.set(value, for: key)
            lru.set(value, for: key)
        }
        for _ in 0..<2 {
            for key in hot {
                #expect(shard.entry(for: key) == reference.entry(for: key))
                _ = lru.entry(for: key)
            }
        }
        for (step, key) in scan.enumerated() {
            #expect(shard.entry(for: key) == nil && reference.entry(for: key) == nil)
            shard.set(value, for: key)
            _ = reference.set(value, for: key)
            _ = lru.entry(for: key)
            lru.set(value, for: key)
            guard Self.matches(shard, reference) else {
                Issue.record("scan step \(step): shard and reference differ")
                return
            }
        }
        #expect(hot.allSatisfy { shard.peek($0) != nil }, "S3-FIFO keeps the hot set through the scan")
        #expect(Set(shard.queues.main) == Set(hot))
        #expect(shard.count == 100)
        #expect(hot.allSatisfy { lru.peek($0) == nil }, "LRU loses the hot set to the same scan")
    }

    @Test func hitMarksWithoutReordering() {
        var shard = MemoryShard(costLimit: 10_000, countLimit: 10, policy: .s3FIFO)
        for key in ["a", "b", "c"] as [CacheKey] { shard.set(Self.entry(cost: 100), for: key) }
        let before = shard.keysByRecency
        #expect(before == ["c", "b", "a"])
        for expected in [1, 2, 3, 3] {
            #expect(shard.entry(for: "a") != nil)
            #expect(shard.frequency(of: "a") == expected)
        }
        #expect(shard.keysByRecency == before)
        #expect(shard.frequency(of: "b") == 0)
        #expect(shard.peek("b") != nil)
        #expect(shard.frequency(of: "b") == 0, "peek is not a read")
    }

    @Test func smallQueueEvictsOnceReadKeysAndPromotesTwiceReadOnes() {
        // Count budget 10: the small queue's share is 1 entry, the main queue's 9.
        var shard = MemoryShard(costLimit: 100_000, countLimit: 10, policy: .s3FIFO)
        let keys = Self.keys("k", 10)
        for key in keys { shard.set(Self.entry(cost: 100, keyBytes: 2), for: key) }
        _ = shard.entry(for: keys[0])  // read once: not enough
        _ = shard.entry(for: keys[1])
        _ = shard.entry(for: keys[1])  // read twice: moves to main
        shard.set(Self.entry(cost: 100), for: "x")
        #expect(shard.peek(keys[0]) == nil)
        #expect(shard.queues.ghosts == [keys[0].digest])
        #expect(shard.queues.main.isEmpty)
        shard.set(Self.entry(cost: 100), for: "y")
        // k1 moved to main, then k2 (never read) was evicted.
        #expect(shard.queues.main == [keys[1]])
        #expect(shard.queues.ghosts == [keys[0].digest, keys[2].digest])
        #expect(shard.evictions == 2)
    }

    @Test func ghostKeySetAgainGoesToTheMainQueue() {
        var shard = MemoryShard(costLimit: 100_000, countLimit: 10, policy: .s3FIFO)
        let keys = Self.keys("k", 10)
        for key in keys { shard.set(Self.entry(cost: 100, keyBytes: 2), for: key) }
        shard.set(Self.entry(cost: 100), for: "x")  // evicts k0 into the ghosts
        #expect(shard.queues.ghosts == [keys[0].digest])
        shard.set(Self.entry(cost: 100, keyBytes: 2), for: keys[0])
        #expect(shard.queues.main == [keys[0]])
        #expect(shard.queues.ghosts == [keys[1].digest])
    }

    @Test func mainQueueReinsertsReadEntries() {
        var shard = MemoryShard(costLimit: 100_000, countLimit: 10, policy: .s3FIFO)
        let keys = Self.keys("k", 10)
        // Fill the main queue through the ghosts: set, evict, set again.
        for key in keys { shard.set(Self.entry(cost: 100, keyBytes: 2), for: key) }
        for key in Self.keys("x", 9) { shard.set(Self.entry(cost: 100, keyBytes: 2), for: key) }
        for key in keys.prefix(9) { shard.set(Self.entry(cost: 100, keyBytes: 2), for: key) }
        #expect(shard.queues.main == Array(keys.prefix(9).reversed()))
        #expect(shard.queues.small == ["x8"])
        _ = shard.entry(for: keys[0])  // the main queue's oldest was read: a second chance
        _ = shard.entry(for: "x8")
        _ = shard.entry(for: "x8")  // read twice: x8 moves to the main queue, which is then over
        shard.set(Self.entry(cost: 100), for: "y")
        #expect(shard.peek(keys[0]) != nil)
        #expect(shard.peek(keys[1]) == nil)
        #expect(shard.frequency(of: keys[0]) == 0)
        #expect(shard.queues.main == [keys[0], "x8"] + Array(keys[2..<9].reversed()))
        #expect(shard.queues.small == ["y"])
        #expect(shard.evictions == 19)
    }

    @Test func setOfAHeldKeyKeepsItsQueueAndFrequency() {
        var shard = MemoryShard(costLimit: 100_000, countLimit: 10, policy: .s3FIFO)
        shard.set(Self.entry(cost: 100), for: "a")
        shard.set(Self.entry(cost: 100), for: "b")
        _ = shard.entry(for: "a")
        shard.set(Self.entry(cost: 300), for: "a")
        #expect(shard.keysByRecency == ["a", "b"])
        #expect(shard.frequency(of: "a") == 1)
        #expect(shard.totalCost == 400)
    }

    @Test func removeAllForgetsTheGhosts() {
        var shard = MemoryShard(costLimit: 100_000, countLimit: 10, policy: .s3FIFO)
        for key in Self.keys("k", 11) { shard.set(Self.entry(cost: 100, keyBytes: 2), for: key) }
        #expect(shard.queues.ghosts.count == 1)
        shard.removeAll()
        #expect(shard.queues.ghosts.isEmpty && shard.isEmpty && shard.totalCost == 0)
    }

    @Test func ghostQueueIsBoundedAndCompacts() {
        var ghosts = GhostQueue(costLimit: 1000, countLimit: 5)
        for digest in 1...8 as ClosedRange<UInt64> { ghosts.insert(digest, cost: 100) }
        #expect(ghosts.digests == [4, 5, 6, 7, 8])
        let removed = ghosts.remove(6)
        let removedAgain = ghosts.remove(6)
        #expect(removed && !removedAgain)
        ghosts.insert(9, cost: 700)  // 100 × 4 + 700 = 1100: the oldest goes
        #expect(ghosts.digests == [5, 7, 8, 9])
        ghosts.insert(10, cost: 100)
        #expect(ghosts.digests == [7, 8, 9, 10] && ghosts.totalCost == 1000)
        ghosts.insert(11, cost: 2000)  // above the limit: not remembered
        #expect(ghosts.count == 4)
        // Many inserts and removals keep the ring proportional to the live ghosts.
        for digest in 100..<10_000 as Range<UInt64> {
            ghosts.insert(digest, cost: 1)
            if digest % 3 == 0 { ghosts.remove(digest) }
        }
        // 9,999 was removed last, after the count limit had made room for it.
        #expect(ghosts.digests == [9994, 9995, 9997, 9998])
    }

    // MARK: Random sequences

    @Test(
        arguments: [
            (costLimit: 4000, countLimit: 30),
            (costLimit: 20_000, countLimit: 12),
        ],
        [1, 2, 3] as [UInt64]
    )
    func randomSequenceMatchesReference(limits: (costLimit: Int, countLimit: Int), seed: UInt64) {
        var generator = SplitMix64(seed: seed)
        let keys = randomSequenceKeys(count: 60)
        var shard = MemoryShard(
            costLimit: limits.costLimit,
            countLimit: limits.countLimit,
            maximumEntryCost: 900,
            policy: .s3FIFO
        )
        var reference = ReferenceS3FIFO(
            costLimit: limits.costLimit,
            countLimit: limits.countLimit,
            maximumEntryCost: 900
        )
        var mainQueueUsed = false
        for step in 0..<5000 {
            // Reads twice as often as the shared generator, so that entries reach the main queue.
            var operation = RandomOperation.next(keys: keys, maximumValueBytes: 1000, using: &generator)
            if case .set(let key, _) = operation, generator.next() % 2 == 0 { operation = .get(key) }
            operation.apply(to: &shard, and: &reference, step: step)
            guard Self.matches(shard, reference) else {
                Issue.record("step \(step) (\(operation)): shard and reference differ")
                return
            }
            #expect(shard.totalCost <= limits.costLimit && shard.count <= limits.countLimit)
            mainQueueUsed = mainQueueUsed || !shard.queues.main.isEmpty
        }
        #expect(shard.hits == reference.hits)
        #expect(shard.misses == reference.misses)
        #expect(shard.admissionRefusals == reference.admissionRefusals)
        #expect(shard.evictions > 0 && shard.admissionRefusals > 0 && shard.hits > 0)
        #expect(mainQueueUsed)
    }

    // MARK: Through the tier

    @Test(arguments: [11, 12] as [UInt64])
    func tierMatchesReference(seed: UInt64) {
        // Budgets this small make the tier fall back to one shard, so the policy is exact.
        let configuration = MemoryTier.Configuration(
            capacityBytes: 4000,
            maximumEntryCount: 30,
            admissionFraction: 0.225,
            shardCount: 16,
            evictionPolicy: .s3FIFO
        )
        let tier = MemoryTier(configuration: configuration)
        #expect(tier.shardCount == 1)
        var reference = ReferenceS3FIFO(costLimit: 4000, countLimit: 30, maximumEntryCost: 900)
        var generator = SplitMix64(seed: seed)
        let keys = randomSequenceKeys(count: 60)
        for step in 0..<4000 {
            let operation = RandomOperation.next(keys: keys, maximumValueBytes: 1000, using: &generator)
            operation.apply(to: tier, and: &reference, step: step)
            guard tier.usage == .init(bytes: reference.totalCost, entryCount: reference.count) else {
                Issue.record("step \(step) (\(operation)): usage \(tier.usage) differs from the reference")
                return
            }
        }
        #expect(tier.statistics.evictions == reference.evictions)
        #expect(tier.statistics.admissionRefusals == reference.admissionRefusals)
    }

    @Test func promotionAfterAWriteIsRefused() {
        var shard = MemoryShard(costLimit: 100_000, countLimit: 10, policy: .s3FIFO)
        guard case .miss(let generation) = shard.lookup("a") else {
            Issue.record("an empty shard must miss")
            return
        }
        shard.set(Self.entry(cost: 100), for: "b")
        #expect(!shard.promote(Self.entry(cost: 100), for: "a", ifUnchangedSince: generation).stored)
        guard case .miss(let fresh) = shard.lookup("a") else {
            Issue.record("a must still miss")
            return
        }
        #expect(shard.promote(Self.entry(cost: 100), for: "a", ifUnchangedSince: fresh).stored)
        #expect(shard.queues.small.first == "a")
    }
}
