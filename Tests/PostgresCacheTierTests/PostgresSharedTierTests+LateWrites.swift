// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
import CacheTestSupport
import CacheTiers
import Foundation
import Testing

@testable import PostgresCacheTier

/// A write that reaches the table after another instance's removal that covers it (this instance
/// queued it before it heard of the removal, and its writer ran late) is refused: the table
/// remembers removals for the log's retention, by key and in bulk, with the instance that made
/// them, and writes no row of another instance whose entry was stored before one. The clock is
/// the tiers' own, injected.
extension PostgresSharedTierTests {
    @Test(arguments: LateWrite.allCases)
    func aWriteOfAnEntryStoredBeforeARemovalIsRefused(_ removal: LateWrite) async throws {
        let clock = ManualDate(Date(timeIntervalSince1970: 2_000_000_000))
        let table = TestDatabase.uniqueTable()
        // Two instances of one table: the writer's write reaches the table after the remover's
        // removal. An instance's own later write is never refused (its queue orders them).
        let (writer, remover) = (try Self.tier(table: table, clock: clock), try Self.tier(table: table, clock: clock))
        let key: CacheKey = "GET https://example.com/late"
        let other: CacheKey = "GET https://example.com/other"
        let before = clock.current
        try await Self.running(writer) {
            try await Self.running(remover) {
                try await writer.set(CacheEntry(value: [1], storedAt: before), for: key)
                clock.advance(by: 10)
                switch removal {
                case .key: try await remover.remove(key, broadcast: true)
                case .keyWithoutMessage: try await remover.remove(key, broadcast: false)
                case .tag: try await remover.broadcast(.tag("t", keys: [key]))
                case .all: try await remover.removeAll()
                case .storedSince: try await remover.removeEntries(storedSince: before)
                }
                clock.advance(by: 10)
                // The late write of the entry stored before the removal: refused.
                try await writer.set(CacheEntry(value: [2], storedAt: before), for: key)
                #expect(await writer.entry(for: key) == nil)
                #expect(writer.statistics.lateWritesRefused == 1)
                // The remover's own write of it is not refused: its queue orders its writes.
                try await remover.set(CacheEntry(value: [2], storedAt: before), for: key)
                #expect(await writer.entry(for: key)?.value == [2])
                try await remover.remove(key, broadcast: false)
                // An entry stored after the removal is written.
                let after = clock.current
                try await writer.set(CacheEntry(value: [3], storedAt: after), for: key)
                #expect(await writer.entry(for: key)?.value == [3])
                // A key's removal covers that key only; a bulk removal covers what it removes only.
                try await writer.set(CacheEntry(value: [4], storedAt: before.addingTimeInterval(-1)), for: other)
                let otherStored = await writer.entry(for: other) != nil
                #expect(otherStored == (removal != .all))
                // Past the log's retention the removal is forgotten with the log.
                clock.advance(by: PostgresSharedTier.seconds(writer.configuration.invalidationLogRetention) + 60)
                await writer.sweep()
                try await writer.set(CacheEntry(value: [6], storedAt: before), for: key)
                #expect(await writer.entry(for: key)?.value == [6])
            }
        }
    }

    /// A tier on `table` whose clock is `clock`, with generous timeouts: under the whole suite a
    /// first connection queues (and a read that timed out would pass for a refused write).
    static func tier(table: String, clock: ManualDate) throws -> PostgresSharedTier {
        try PostgresSharedTier(
            configuration: .init(
                url: try TestDatabase.requireURL(),
                table: table,
                readTimeout: .seconds(30),
                writeTimeout: .seconds(30),
                connectTimeout: .seconds(30),
                now: clock.now
            )
        )
    }

    enum LateWrite: CaseIterable, Sendable {
        case key, keyWithoutMessage, tag, all, storedSince
    }
}
#endif
