// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import SystemPackage
import Testing

@testable import CacheTiers

@Suite struct TieredCacheTests {
    func makeCache(
        _ directory: TemporaryDirectory,
        memoryCapacity: Int = 1 << 20,
        faults: FaultInjector? = nil
    ) throws -> TieredCache {
        let configuration = diskConfiguration(directory, faults: faults)
        let memory = MemoryTier(configuration: .init(capacityBytes: memoryCapacity, shardCount: 1))
        return TieredCache(memory: memory, disk: try DiskTier(configuration: configuration))
    }

    @Test func readsMemoryThenDiskAndPromotesDiskHits() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try makeCache(directory)
            let value = SampleData.json(approximateBytes: 4000)
            try await cache.set(entry(value, metadata: [7]), for: "a")
            #expect(cache.memory.entry(for: "a")?.value == value)
            cache.memory.removeAll()
            #expect(cache.memory.entry(for: "a") == nil)
            let fromDisk = try #require(await cache.entry(for: "a"))
            #expect(fromDisk.value == value && fromDisk.metadata == [7])
            #expect(cache.memory.entry(for: "a")?.value == value)
            #expect(await cache.entry(for: "missing") == nil)
            let usage = await cache.usage()
            #expect(usage.memory.entryCount == 1 && usage.disk?.entryCount == 1)
            #expect(cache.memoryCapacityBytes == 1 << 20)
            #expect(cache.diskCapacityBytes == cache.disk?.configuration.capacityBytes)
        }
    }

    @Test func storagePolicies() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try makeCache(directory)
            let disk = try #require(cache.disk)
            try await cache.set(entry(versionedValue("k", version: 1)), for: "k")
            // Memory only: the older disk value must not resurface after memory forgets.
            try await cache.set(entry(versionedValue("k", version: 2)), for: "k", policy: .allowedInMemoryOnly)
            #expect(await disk.entry(for: "k") == nil)
            #expect(await cache.entry(for: "k")?.value == versionedValue("k", version: 2))
            cache.memory.removeAll()
            #expect(await cache.entry(for: "k") == nil)
            // Not allowed: stored nowhere, older values gone.
            try await cache.set(entry(versionedValue("n", version: 1)), for: "n")
            try await cache.set(entry(versionedValue("n", version: 2)), for: "n", policy: .notAllowed)
            #expect(await cache.entry(for: "n") == nil)
            #expect(await disk.entry(for: "n") == nil)
        }
    }

    @Test func removeRemoveAllAndRemoveSinceReachEveryTier() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try makeCache(directory)
            let old = Date(timeIntervalSince1970: 1_000)
            let new = Date(timeIntervalSince1970: 5_000)
            try await cache.set(entry([1], at: old), for: "old")
            try await cache.set(entry([2], at: new), for: "new")
            try await cache.set(entry([3], at: new), for: "gone")
            #expect(try await cache.remove("gone"))
            #expect(try await !cache.remove("gone"))
            try await cache.removeEntries(storedSince: Date(timeIntervalSince1970: 4_000))
            #expect(await cache.entry(for: "new") == nil)
            cache.memory.removeAll()
            #expect(await cache.entry(for: "old")?.value == [1])
            #expect(await cache.entry(for: "new") == nil)
            try await cache.removeAll()
            #expect(await cache.entry(for: "old") == nil)
            #expect(await cache.usage().disk?.entryCount == 0)
        }
    }

    /// Out of disk space: the write reports the error, the memory tier keeps serving.
    @Test func diskFullKeepsServingFromMemory() async throws {
        try await withTemporaryDirectory { directory in
            let faults = FaultInjector()
            let cache = try makeCache(directory, faults: faults)
            try await cache.set(entry([1, 1]), for: "before")
            faults.failWrites(with: .noSpace)
            let error = try await #require(throws: CacheError.self) {
                try await cache.set(entry([2, 2]), for: "during")
            }
            #expect(error.code == .outOfSpace)
            #expect(await cache.entry(for: "during")?.value == [2, 2])
            #expect(await cache.entry(for: "before")?.value == [1, 1])
        }
    }

    /// A memory tier of capacity zero is a valid "no memory cache": every hit comes from disk.
    @Test func zeroCapacityMemoryTier() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try makeCache(directory, memoryCapacity: 0)
            try await cache.set(entry([9]), for: "a")
            #expect(cache.memory.usage.entryCount == 0)
            #expect(await cache.entry(for: "a")?.value == [9])
            #expect(cache.memory.usage.entryCount == 0)
        }
    }

    @Test func entriesSurviveAReopen() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let cache = try makeCache(directory)
                try await cache.set(entry(versionedValue("a", version: 3), metadata: [4, 5]), for: "a")
                try await cache.disk?.close()
            }
            let cache = try makeCache(directory)
            let found = try #require(await cache.entry(for: "a"))
            #expect(found.value == versionedValue("a", version: 3))
            #expect(found.metadata == [4, 5])
            #expect(found.storedAt == fixedNow)
        }
    }

    /// A reader that missed memory and is reading a lower tier must not put the bytes it read in
    /// front of a set or a removal that completed meanwhile.
    @Test(arguments: [false, true])
    func promotionNeverOverwritesANewerWrite(removeInstead: Bool) async throws {
        let lower = GatedTier()
        let cache = TieredCache(
            memory: MemoryTier(configuration: .init(capacityBytes: 1 << 20, shardCount: 1)),
            lowerTiers: [lower]
        )
        try await cache.set(entry([1]), for: "k")
        cache.memory.removeAll()
        await lower.gate(.read)
        async let read = cache.entry(for: "k")
        await lower.waitUntilHeld(.read)
        if removeInstead {
            try await cache.remove("k")
        } else {
            try await cache.set(entry([2]), for: "k")
        }
        lower.release(.read)
        // The racing reader answers with what it read, as of when it asked.
        #expect(await read?.value == [1])
        if removeInstead {
            #expect(cache.memory.entry(for: "k") == nil)
            #expect(await cache.entry(for: "k") == nil)
        } else {
            #expect(cache.memory.entry(for: "k")?.value == [2])
            #expect(await cache.entry(for: "k")?.value == [2])
        }
    }
}
