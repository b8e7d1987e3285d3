// SPDX-License-Identifier: Apache-2.0

import Foundation
import Testing

@testable import CacheTiers

/// The memory tier's reader-writer locks (``ShardArray``): reads of one shard run together under
/// their processors' slots, writes take every slot. Run under `--sanitize=thread` these tests are
/// the check that the reads' one write to the shard (a node's frequency) is atomic and that the
/// slots' counters are only touched under their locks.
@Suite struct ShardArrayTests {
    static func shard() -> MemoryShard {
        MemoryShard(costLimit: 1 << 20, countLimit: 1000, policy: .s3FIFO)
    }

    @Test func readerCountIsAPowerOfTwoAtMostThirtyTwo() {
        #expect(ShardArray(count: 1, readerCount: 0) { _ in Self.shard() }.readerCount == 1)
        #expect(ShardArray(count: 1, readerCount: 3) { _ in Self.shard() }.readerCount == 4)
        #expect(ShardArray(count: 1, readerCount: 32) { _ in Self.shard() }.readerCount == 32)
        #expect(
            ShardArray(count: 1, readerCount: 100) { _ in Self.shard() }.readerCount == ShardArray.maximumReaderCount
        )
        #expect(ShardArray(count: 1) { _ in Self.shard() }.readerCount >= 1)
    }

    @Test func concurrentReadsCountEveryLookupAndMarkFrequencyAtMostToItsMaximum() async {
        let shards = ShardArray(count: 2, readerCount: 4) { _ in Self.shard() }
        let key = CacheKey("hot")
        shards.write(1) { _ = $0.set(CacheEntry(value: [1, 2, 3], storedAt: Date()), for: key) }
        let readsPerTask = 2000
        let found = await withTaskGroup(of: Int.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var found = 0
                    for index in 0..<readsPerTask {
                        let probe = index % 2 == 0 ? key : CacheKey("cold-\(task)")
                        found += shards.read(1) { shard, counts in
                            guard let slot = shard.find(probe) else {
                                counts.misses += 1
                                return 0
                            }
                            counts.hits += 1
                            shard.markRead(slot)
                            return shard.entry(at: slot).value == [1, 2, 3] ? 1 : 0
                        }
                        // A write between reads, as a set from another task would make.
                        if index % 100 == 0 { shards.write(0) { _ = $0.remove(CacheKey("absent")) } }
                    }
                    return found
                }
            }
            return await group.reduce(0, +)
        }
        #expect(found == 8 * readsPerTask / 2)
        let counts = shards.readCounts(1)
        #expect(counts.hits == 8 * readsPerTask / 2)
        #expect(counts.misses == 8 * readsPerTask / 2)
        #expect(shards.readCounts(0).hits + shards.readCounts(0).misses == 0)
        #expect(shards.write(1) { $0.frequency(of: key) } == Int(MemoryShard.maximumFrequency))
    }
}
