// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Synchronization
import Testing

@testable import CacheTiers

/// A lower tier's read runs on the global concurrent executor, whatever executor the caller's
/// task prefers (an event loop, in cache-proxy): a disk read blocks its thread.
@Suite struct TieredCacheExecutorTests {
    /// A lower tier that holds one entry and records whether its reads ran on `executor`.
    final class RecordingTier: CacheTier {
        let executor: QueueExecutor

        init(executor: QueueExecutor) {
            self.executor = executor
        }

        let readsOnExecutor = Mutex<[Bool]>([])

        func entry(for key: CacheKey) async throws -> CacheEntry? {
            readsOnExecutor.withLock { $0.append(executor.isCurrent) }
            return CacheEntry(value: [1, 2, 3], storedAt: Date())
        }
        func set(_ entry: CacheEntry, for key: CacheKey) async throws -> Bool { true }
        func remove(_ key: CacheKey) async throws -> Bool { false }
        func removeAll() async throws {}
        func removeEntries(storedSince date: Date) async throws -> Int { 0 }
        var tierUsage: CacheUsage { CacheUsage(bytes: 0, entryCount: 0) }
        func close() async throws {}
        func reopen(encryption: DiskEncryption?) async throws {}
        func reset() async throws {}
    }

    @Test func aLowerTierIsReadOffThePreferredExecutor() async {
        let executor = QueueExecutor()
        let tier = RecordingTier(executor: executor)
        let cache = TieredCache(memory: MemoryTier(configuration: .init(capacityBytes: 1 << 20)), lowerTiers: [tier])
        let (found, callerOnExecutor) = await withTaskExecutorPreference(executor) {
            let found = await cache.entry(for: "k")
            return (found, executor.isCurrent)
        }
        #expect(found?.value == [1, 2, 3])
        #expect(callerOnExecutor, "the caller goes on where it prefers")
        #expect(tier.readsOnExecutor.withLock { $0 } == [false])
    }
}
