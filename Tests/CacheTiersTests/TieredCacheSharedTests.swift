// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Synchronization
import Testing

@testable import CacheTiers

/// TieredCache over a shared tier, without a database: an in-process fake shared by two caches
/// (the PostgreSQL tier's own tests are in PostgresCacheTierTests).
@Suite struct TieredCacheSharedTests {
    @Test func sharedHitIsPromotedToDiskAndMemory() async throws {
        try await withTemporaryDirectory { directory in
            let shared = FakeSharedTier()
            let cache = try makeCache(directory, shared: shared)
            let value = versionedValue("k", version: 1)
            try await shared.set(entry(value), for: "k")
            #expect(await cache.entry(for: "k")?.value == value)
            #expect(cache.memory.entry(for: "k")?.value == value)
            #expect(await cache.disk?.entry(for: "k")?.value == value)
            #expect(shared.reads == 1)
        }
    }

    @Test func writesGoThroughTheQueueAndMemoryOnlyNeverReachesTheSharedTier() async throws {
        try await withTemporaryDirectory { directory in
            let shared = FakeSharedTier()
            let cache = try makeCache(directory, shared: shared)
            let queue = try #require(cache.writeThrough)
            try await cache.set(entry(versionedValue("a", version: 1)), for: "a")
            try await cache.set(entry(versionedValue("m", version: 1)), for: "m", policy: .allowedInMemoryOnly)
            try await cache.remove("a")
            // Nothing reaches the tier until run() drains the queue, in order per key.
            #expect(shared.log.isEmpty)
            queue.finish()
            await queue.drain(into: shared)
            #expect(shared.log.sorted() == ["remove a broadcast", "remove m", "set a"].sorted())
            #expect(shared.log.firstIndex(of: "set a")! < shared.log.firstIndex(of: "remove a broadcast")!)
            #expect(shared.stored["m"] == nil && shared.stored["a"] == nil)
            #expect(cache.sharedWriteStatistics.written == 3)
        }
    }

    @Test func sharesAllowedEntriesFalseKeepsWritesLocal() async throws {
        try await withTemporaryDirectory { directory in
            let shared = FakeSharedTier()
            let cache = try makeCache(directory, shared: shared, options: .init(sharesAllowedEntries: false))
            try await cache.set(entry(versionedValue("a", version: 1)), for: "a")
            cache.writeThrough?.finish()
            await cache.writeThrough?.drain(into: shared)
            #expect(shared.stored["a"] == nil && shared.log == ["remove a"])
        }
    }

    @Test func aFullQueueDropsAndCountsWritesWithoutWaiting() async throws {
        try await withTemporaryDirectory { directory in
            let shared = FakeSharedTier()
            let cache = try makeCache(directory, shared: shared, options: .init(maximumPendingBytes: 1000))
            for index in 0..<10 {
                try await cache.set(
                    entry(versionedValue("k\(index)", version: 1, size: 400)),
                    for: CacheKey("k\(index)")
                )
            }
            let statistics = cache.sharedWriteStatistics
            // Writes queue while under 1000 bytes wait: three of about 400 bytes, then none.
            let size = versionedValue("k0", version: 1, size: 400).count + 2
            #expect(statistics.dropped == 7)
            #expect(cache.writeThrough?.waitingBytes == 3 * size)
            // Every value is still in memory and on disk.
            for index in 0..<10 { #expect(await cache.entry(for: CacheKey("k\(index)")) != nil) }
        }
    }

    @Test func anotherInstancesRemovalDropsLocalCopies() async throws {
        try await withTemporaryDirectory { directory in
            let shared = FakeSharedTier()
            let cache = try makeCache(directory, shared: shared)
            try await cache.set(entry(versionedValue("a", version: 1)), for: "a")
            try await cache.set(entry(versionedValue("b", version: 1)), for: "b")
            await cache.apply(.key("a"), onTag: nil)
            #expect(cache.memory.entry(for: "a") == nil)
            #expect(await cache.disk?.entry(for: "a") == nil)
            #expect(await cache.entry(for: "b") != nil)
            await cache.apply(.all, onTag: nil)
            #expect(await cache.entry(for: "b") == nil)
        }
    }

    /// Another instance's removal (or tag purge) of a key this instance has a write of in its queue:
    /// the write lands after the other's removal, and must not bring the key back.
    @Test func aWriteQueuedBeforeAnotherInstancesRemovalDoesNotBringTheKeyBack() async throws {
        try await withTemporaryDirectory { directory in
            let shared = FakeSharedTier()
            let cache = try makeCache(directory, shared: shared)
            shared.holdWrites()
            try await cache.set(entry(versionedValue("a", version: 1)), for: "a")
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await cache.run() }
                try await waitUntil { shared.heldWrites == 1 }
                // The other instance's statement removed the row; its message arrives here.
                shared.publish(.tag("t", keys: ["a"]))
                try await waitUntil { cache.memory.entry(for: "a") == nil }
                shared.releaseWrites()
                try await waitUntil { cache.sharedWriteStatistics.written == 2 }
                group.cancelAll()
            }
            #expect(shared.stored["a"] == nil)
            #expect(shared.log == ["set a", "remove a"])
        }
    }

    /// Another instance's removal of everything, or of what was stored since a date, while this
    /// instance writes an entry it covers: the write lands after the other's statement and must
    /// not bring the key back. An entry stored before the date is not covered and stays.
    @Test(arguments: [Invalidated.all, .storedSinceBefore, .storedSinceAfter])
    func aWriteLandingAfterAnotherInstancesBulkRemovalIsRemovedAgain(_ invalidated: Invalidated) async throws {
        try await withTemporaryDirectory { directory in
            let shared = FakeSharedTier()
            let cache = try makeCache(directory, shared: shared)
            let storedAt = Date(timeIntervalSince1970: 1_000_000)
            shared.holdWrites()
            try await cache.set(CacheEntry(value: versionedValue("a", version: 1), storedAt: storedAt), for: "a")
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await cache.run() }
                try await waitUntil { shared.heldWrites == 1 }
                // The other instance's statement ran; its message arrives while the write is held.
                switch invalidated {
                case .all: shared.publish(.all)
                case .storedSinceBefore: shared.publish(.storedSince(storedAt.addingTimeInterval(-1)))
                case .storedSinceAfter: shared.publish(.storedSince(storedAt.addingTimeInterval(1)))
                }
                if invalidated != .storedSinceAfter {
                    try await waitUntil { cache.memory.entry(for: "a") == nil }
                }
                shared.releaseWrites()
                let writes = invalidated == .storedSinceAfter ? 1 : 2
                try await waitUntil { cache.sharedWriteStatistics.written == writes }
                group.cancelAll()
            }
            if invalidated == .storedSinceAfter {
                #expect(shared.stored["a"] != nil)
                #expect(shared.log == ["set a"])
            } else {
                #expect(shared.stored["a"] == nil)
                #expect(shared.log == ["set a", "remove a"])
            }
        }
    }

    enum Invalidated: Sendable, CustomTestStringConvertible {
        case all, storedSinceBefore, storedSinceAfter
        var testDescription: String {
            switch self {
            case .all: "everything"
            case .storedSinceBefore: "since a date before the entry"
            case .storedSinceAfter: "since a date after the entry (not covered)"
            }
        }
    }

    @Test func runDeliversInvalidationsAndDrainsTheQueue() async throws {
        try await withTemporaryDirectory { directory in
            let shared = FakeSharedTier()
            let cache = try makeCache(directory, shared: shared)
            try await cache.set(entry(versionedValue("a", version: 1)), for: "a")
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await cache.run() }
                try await waitUntil { shared.stored["a"] != nil }
                shared.publish(.key("a"))
                try await waitUntil { cache.memory.entry(for: "a") == nil }
                group.cancelAll()
            }
            #expect(await cache.disk?.entry(for: "a") == nil)
        }
    }

    @Test func aTagIsBroadcastAndAnotherInstancesTagReachesTheHandler() async throws {
        try await withTemporaryDirectory { directory in
            let shared = FakeSharedTier()
            let cache = try makeCache(directory, shared: shared)
            try await cache.broadcastTagInvalidation("news")
            #expect(shared.broadcasts == [.tag("news")])
            let received = TagLog()
            try await cache.set(entry(versionedValue("a", version: 1)), for: "a")
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await cache.run { tag in received.append(tag) } }
                shared.publish(.tag("sport"))
                try await waitUntil { received.tags == ["sport"] }
                group.cancelAll()
            }
            // A tag names no key here: the tier drops nothing of its own.
            #expect(await cache.entry(for: "a") != nil)
            // Without a shared tier there is no one to tell; a closed cache throws.
            try await TieredCache(memory: MemoryTier(), disk: nil).broadcastTagInvalidation("news")
            try await cache.close()
            await #expect(throws: CacheError.self) { try await cache.broadcastTagInvalidation("news") }
        }
    }

    @Test func aRemovalTheSharedTierFailedIsTriedAgainOnceItTakesAnotherOperation() async throws {
        try await withTemporaryDirectory { directory in
            let shared = FakeSharedTier()
            // The retry timer does not fire: this clock does not move.
            var options = TieredCache.SharedOptions()
            options.removalRetry = .init(clock: TestClock())
            let cache = try makeCache(directory, shared: shared, options: options)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await cache.run() }
                try await removeWhileRemovalsFail("a", cache, shared)
                // Kept pending: the shared tier's copy is not read back meanwhile.
                #expect(await cache.entry(for: "a") == nil)
                #expect(shared.stored["a"] != nil)
                shared.failRemovals(false)
                try await cache.set(entry(versionedValue("b", version: 1)), for: "b")
                try await waitUntil { shared.stored["a"] == nil }
                #expect(shared.log.last == "remove a broadcast")
                #expect(await cache.entry(for: "a") == nil)
                group.cancelAll()
            }
        }
    }

    @Test func aFailedRemovalIsTriedAgainOnItsTimerWhenNothingElseComes() async throws {
        try await withTemporaryDirectory { directory in
            let shared = FakeSharedTier()
            let clock = TestClock()
            var options = TieredCache.SharedOptions()
            options.removalRetry = .init(first: .seconds(1), longest: .seconds(4), clock: clock)
            let cache = try makeCache(directory, shared: shared, options: options)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await cache.run() }
                try await removeWhileRemovalsFail("a", cache, shared)
                // Nothing else is asked of the cache: the timer alone tries again, after at most
                // 1 s (the first delay, jittered down), then 2 s, then 4 s and no longer.
                for (attempt, delay) in [(2, 1), (3, 2), (4, 4), (5, 4)] {
                    try await waitUntil { clock.sleeperCount == 1 }
                    clock.advance(by: .seconds(delay))
                    try await waitUntil { cache.sharedWriteStatistics.failed == attempt }
                }
                #expect(shared.stored["a"] != nil)
                #expect(await cache.entry(for: "a") == nil)
                shared.failRemovals(false)
                try await waitUntil { clock.sleeperCount == 1 }
                clock.advance(by: .seconds(4))
                try await waitUntil { shared.stored["a"] == nil }
                #expect(shared.log.last == "remove a broadcast")
                #expect(cache.sharedWriteStatistics.failed == 5)
                #expect(await cache.entry(for: "a") == nil)
                group.cancelAll()
            }
        }
    }

    @Test func aTagsInvalidationDropsTheKeysItNamesBeforeTheHandlerRuns() async throws {
        try await withTemporaryDirectory { directory in
            let shared = FakeSharedTier()
            let cache = try makeCache(directory, shared: shared)
            for key: CacheKey in ["a", "b"] {
                try await cache.set(entry(versionedValue(key.string, version: 1)), for: key)
            }
            try await cache.broadcastTagInvalidation("news", removedKeys: ["a"])
            #expect(shared.broadcasts == [.tag("news", keys: ["a"])])
            let received = TagLog()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await cache.run { tag in
                        // The keys are gone by the time the layer above hears of the tag.
                        if cache.memory.entry(for: "b") == nil { received.append(tag) }
                    }
                }
                shared.publish(.tag("sport", keys: ["b"]))
                try await waitUntil { received.tags == ["sport"] }
                group.cancelAll()
            }
            #expect(await cache.disk?.entry(for: "b") == nil)
            #expect(await cache.entry(for: "a") != nil)  // its own broadcast drops nothing here
        }
    }

    @Test func anEncryptedCacheRefusesASharedTierThatCannotSealUnlessItOptsOutByName() async throws {
        try await withTemporaryDirectory { directory in
            var configuration = diskConfiguration(directory)
            configuration.encryption = DiskEncryption(key: .random())
            let disk = try DiskTier(configuration: configuration)
            #expect(throws: CacheError.self) {
                try TieredCache(memory: MemoryTier(), lowerTiers: [disk], shared: FakeSharedTier())
            }
            let cache = try TieredCache(
                memory: MemoryTier(),
                lowerTiers: [disk],
                shared: FakeSharedTier(),
                options: .init(sharesInClear: true)
            )
            // Reopening with the keys does not ask the tier to seal either.
            try await cache.close()
            try await cache.reopen(encryption: configuration.encryption)
        }
    }

    @Test(arguments: [false, true])
    func aWriteQueuedBeforeABulkRemovalIsDroppedNotWrittenAfterIt(sinceDate: Bool) async throws {
        try await withTemporaryDirectory { directory in
            let shared = FakeSharedTier()
            let cache = try makeCache(directory, shared: shared)
            let queue = try #require(cache.writeThrough)
            let older = CacheEntry(value: [1], storedAt: fixedNow.addingTimeInterval(-60))
            try await cache.set(older, for: "older")
            try await cache.set(entry(versionedValue("recent", version: 1)), for: "recent")
            if sinceDate {
                try await cache.removeEntries(storedSince: fixedNow)
            } else {
                try await cache.removeAll()
            }
            try await cache.set(entry(versionedValue("after", version: 1)), for: "after")
            queue.finish()
            await queue.drain(into: shared)
            // What the removal covers never lands after it; what it does not cover, and what came after, does.
            #expect(shared.stored["recent"] == nil)
            #expect((shared.stored["older"] != nil) == sinceDate)
            #expect(shared.stored["after"] != nil)
            #expect(cache.sharedWriteStatistics.dropped == (sinceDate ? 1 : 2))
        }
    }

    /// Stores `key` through to the shared tier, then removes it while the shared tier fails
    /// removals: the removal fails once and is kept.
    private func removeWhileRemovalsFail(_ key: CacheKey, _ cache: TieredCache, _ shared: FakeSharedTier) async throws {
        try await cache.set(entry(versionedValue(key.string, version: 1)), for: key)
        try await waitUntil { shared.stored[key] != nil }
        shared.failRemovals(true)
        try await cache.remove(key)
        try await waitUntil { cache.sharedWriteStatistics.failed == 1 }
    }

    private func makeCache(
        _ directory: TemporaryDirectory,
        shared: FakeSharedTier,
        options: TieredCache.SharedOptions = .init()
    ) throws -> TieredCache {
        let disk = try DiskTier(configuration: diskConfiguration(directory))
        return try TieredCache(memory: MemoryTier(), lowerTiers: [disk], shared: shared, options: options)
    }
}

/// Waits until `condition` holds, or fails after `timeout` of waiting (``poll(timeout:_:)``):
/// for work that another task of this process does (the write-through queue).
func waitUntil(
    timeout: Duration = .seconds(30),
    _ condition: @Sendable () async -> Bool,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    guard try await poll(timeout: timeout, condition).held else {
        Issue.record("condition not met within \(timeout)", sourceLocation: sourceLocation)
        return
    }
}
