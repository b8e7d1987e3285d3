// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Testing

@testable import CacheTiers

/// Removal by key prefix (a ban): every tier, the other instances through the shared tier's
/// message, and what goes wrong.
@Suite struct TieredCachePrefixTests {
    @Test func aPrefixRemovesItsKeysFromEveryTierAndLeavesTheOthers() async throws {
        try await withTemporaryDirectory { directory in
            let shared = FakeSharedTier()
            let cache = try makeCache(directory, shared: shared)
            try await cache.set(entry(versionedValue("a/1", version: 1)), for: "a/1")
            try await cache.set(entry(versionedValue("a/2", version: 1)), for: "a/2")
            try await cache.set(entry(versionedValue("b/1", version: 1)), for: "b/1")
            try await cache.set(entry(versionedValue("a/3", version: 1)), for: "a/3", policy: .allowedInMemoryOnly)
            // Only on disk (memory forgot it), and only in the shared tier (another instance's).
            cache.memory.remove("a/2")
            try await shared.set(entry(versionedValue("a/9", version: 1)), for: "a/9")

            let removed = try await cache.removeEntries(withKeyPrefix: "a/")

            #expect(removed.map(\.string) == ["a/1", "a/2", "a/3", "a/9"])
            for key: CacheKey in ["a/1", "a/2", "a/3", "a/9"] {
                #expect(await cache.entry(for: key) == nil)
                #expect(await cache.disk?.entry(for: key) == nil)
            }
            #expect(await cache.entry(for: "b/1") != nil)
            // One message tells the others, and takes the shared tier's copies with it.
            #expect(shared.broadcasts == [.keyPrefix("a/", keys: removed)])
            #expect(shared.stored["a/9"] == nil)
        }
    }

    @Test func anotherInstancesPrefixDropsWhatOnlyThisInstanceHolds() async throws {
        try await withTemporaryDirectory { directory in
            let shared = FakeSharedTier()
            let cache = try makeCache(directory, shared: shared)
            try await cache.set(entry(versionedValue("a/1", version: 1)), for: "a/1")
            try await cache.set(entry(versionedValue("a/m", version: 1)), for: "a/m", policy: .allowedInMemoryOnly)
            try await cache.set(entry(versionedValue("b/1", version: 1)), for: "b/1")
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await cache.run() }
                try await waitUntil { shared.stored["a/1"] != nil }
                // The other instance knew nothing of a/m (memory-only here) nor, say, of a/1.
                shared.publish(.keyPrefix("a/", keys: []))
                try await waitUntil { cache.memory.entry(for: "a/1") == nil && cache.memory.entry(for: "a/m") == nil }
                group.cancelAll()
            }
            #expect(await cache.disk?.entry(for: "a/1") == nil)
            #expect(await cache.entry(for: "b/1") != nil)
        }
    }

    @Test func aBroadcastThatFailsIsThrownAfterTheKeysAreGoneHere() async throws {
        try await withTemporaryDirectory { directory in
            let shared = FakeSharedTier()
            let cache = try makeCache(directory, shared: shared)
            try await cache.set(entry(versionedValue("a/1", version: 1)), for: "a/1")
            shared.failBroadcasts(true)
            let error = await #expect(throws: CacheError.self) { try await cache.removeEntries(withKeyPrefix: "a/") }
            #expect(error?.code == .io)
            #expect(error?.message.contains("the other instances were not reached") == true)
            #expect(await cache.entry(for: "a/1") == nil)
            // Again, once the tier answers: harmless, and the others hear of it.
            shared.failBroadcasts(false)
            #expect(try await cache.removeEntries(withKeyPrefix: "a/").isEmpty)
            #expect(shared.broadcasts == [.keyPrefix("a/", keys: [])])
        }
    }

    @Test func anEmptyPrefixOrAClosedCacheIsRefusedAndRemovesNothing() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try TieredCache(
                memory: MemoryTier(),
                disk: DiskTier(configuration: diskConfiguration(directory))
            )
            try await cache.set(entry(versionedValue("a", version: 1)), for: "a")
            let empty = await #expect(throws: CacheError.self) { try await cache.removeEntries(withKeyPrefix: "") }
            #expect(empty?.code == .invalidArgument)
            #expect(await cache.entry(for: "a") != nil)
            try await cache.close()
            let closed = await #expect(throws: CacheError.self) { try await cache.removeEntries(withKeyPrefix: "a") }
            #expect(closed?.code == .closed)
        }
    }

    @Test func aTierThatCannotListItsKeysRefusesTheRemoval() async throws {
        let tier = GatedTier()
        let cache = TieredCache(memory: MemoryTier(), lowerTiers: [tier])
        try await cache.set(entry([1]), for: "a/1", policy: .allowedInMemoryOnly)
        let error = await #expect(throws: CacheError.self) { try await cache.removeEntries(withKeyPrefix: "a/") }
        #expect(error?.code == .invalidArgument)
        // Nothing was removed: listing comes before removing.
        #expect(await cache.entry(for: "a/1") != nil)
    }

    @Test func theDiskTierListsKeysByPrefixEncryptedOrNot() async throws {
        for encrypted in [false, true] {
            try await withTemporaryDirectory { directory in
                var configuration = diskConfiguration(directory)
                if encrypted {
                    configuration.encryption = DiskEncryption(
                        key: try EncryptionKey(bytes: Array(repeating: 7, count: 32))
                    )
                }
                let disk = try DiskTier(configuration: configuration)
                for key in [
                    "GET https://h/a", "GET https://h/a/b", "GET https://h/ab", "HEAD https://h/a", "GET https://h/b",
                ] {
                    try await disk.set(entry([1, 2, 3]), for: CacheKey(key))
                }
                _ = try await disk.remove("GET https://h/ab")
                let keys = try await disk.keys(withPrefix: "GET https://h/a").map(\.string).sorted()
                #expect(keys == ["GET https://h/a", "GET https://h/a/b"])
            }
        }
    }
}

extension TieredCachePrefixTests {
    private func makeCache(_ directory: TemporaryDirectory, shared: FakeSharedTier) throws -> TieredCache {
        let disk = try DiskTier(configuration: diskConfiguration(directory))
        return try TieredCache(memory: MemoryTier(), lowerTiers: [disk], shared: shared)
    }
}
