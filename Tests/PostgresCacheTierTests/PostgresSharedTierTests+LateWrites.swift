// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
import CacheTestSupport
import CacheTiers
import Foundation
import Synchronization
import Testing

@testable import PostgresCacheTier

/// A write that reaches the table after a removal that covers it (an instance queued it before it
/// heard of the removal, and its writer ran late) is refused: the table remembers its removals for
/// the log's retention, by key and in bulk, and a row whose entry was stored before one is not
/// written. The clock is the tier's own, injected.
extension PostgresSharedTierTests {
    @Test(arguments: LateWrite.allCases)
    func aWriteOfAnEntryStoredBeforeARemovalIsRefused(_ removal: LateWrite) async throws {
        let clock = Mutex(Date(timeIntervalSince1970: 2_000_000_000))
        let tier = try PostgresSharedTier(
            configuration: .init(
                url: try TestDatabase.requireURL(),
                table: TestDatabase.uniqueTable(),
                // Generous: under the whole suite a first connection queues (and a read that
                // timed out would pass for a refused write).
                readTimeout: .seconds(30),
                writeTimeout: .seconds(30),
                connectTimeout: .seconds(30),
                now: { clock.withLock { $0 } }
            )
        )
        let key: CacheKey = "GET https://example.com/late"
        let other: CacheKey = "GET https://example.com/other"
        let before = clock.withLock { $0 }
        try await Self.running(tier) {
            try await tier.set(CacheEntry(value: [1], storedAt: before), for: key)
            clock.withLock { $0 += 10 }
            switch removal {
            case .key: try await tier.remove(key, broadcast: true)
            case .keyWithoutMessage: try await tier.remove(key, broadcast: false)
            case .tag: try await tier.broadcast(.tag("t", keys: [key]))
            case .all: try await tier.removeAll()
            case .storedSince: try await tier.removeEntries(storedSince: before)
            }
            clock.withLock { $0 += 10 }
            // The late write of the entry stored before the removal: refused.
            try await tier.set(CacheEntry(value: [2], storedAt: before), for: key)
            #expect(await tier.entry(for: key) == nil)
            #expect(tier.statistics.lateWritesRefused == 1)
            // An entry stored after the removal is written.
            let after = clock.withLock { $0 }
            try await tier.set(CacheEntry(value: [3], storedAt: after), for: key)
            #expect(await tier.entry(for: key)?.value == [3])
            // A key's removal covers that key only; a bulk removal covers what it removes only.
            try await tier.set(CacheEntry(value: [4], storedAt: before.addingTimeInterval(-1)), for: other)
            let otherStored = await tier.entry(for: other) != nil
            #expect(otherStored == (removal != .all))
            // Past the log's retention the removal is forgotten with the log.
            clock.withLock { $0 += PostgresSharedTier.seconds(tier.configuration.invalidationLogRetention) + 60 }
            await tier.sweep()
            try await tier.set(CacheEntry(value: [6], storedAt: before), for: key)
            #expect(await tier.entry(for: key)?.value == [6])
        }
    }

    enum LateWrite: CaseIterable, Sendable {
        case key, keyWithoutMessage, tag, all, storedSince
    }
}
#endif
