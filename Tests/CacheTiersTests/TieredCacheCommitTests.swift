// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Testing

@testable import CacheTiers

/// `TieredCache.commit`: one unit over memory and the disk tier's batch, by storage policy.
@Suite struct TieredCacheCommitTests {
    private func makeCache(_ directory: TemporaryDirectory, admission: Double = 0.05) throws -> TieredCache {
        let disk = try DiskTier(
            configuration: .init(directory: directory.path, capacityBytes: 1 << 20, admissionFraction: admission)
        )
        return TieredCache(memory: MemoryTier(), disk: disk)
    }

    private func entry(_ text: String) -> CacheEntry {
        CacheEntry(value: Array(text.utf8), storedAt: Date(timeIntervalSince1970: 1_790_000_000))
    }

    @Test func aCommitReachesMemoryAndDiskInOrder() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try makeCache(directory)
            try await cache.set(entry("old"), for: "gone")
            try await cache.commit([
                .set(entry("1"), for: "a"), .set(entry("2"), for: "a"), .remove("gone"), .set(entry("b"), for: "b"),
            ])
            #expect(cache.memory.entry(for: "a")?.value == Array("2".utf8))
            #expect(cache.memory.entry(for: "gone") == nil)
            #expect(await cache.disk?.entry(for: "a")?.value == Array("2".utf8))
            #expect(await cache.disk?.entry(for: "b")?.value == Array("b".utf8))
            #expect(await cache.disk?.entry(for: "gone") == nil)
        }
    }

    @Test func aMemoryOnlyCommitWritesNothingBelowMemory() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try makeCache(directory)
            try await cache.set(entry("on disk before"), for: "a")
            try await cache.commit(
                [.set(entry("secret-in-memory"), for: "a"), .set(entry("secret-b"), for: "b")],
                policy: .allowedInMemoryOnly
            )
            #expect(cache.memory.entry(for: "a")?.value == Array("secret-in-memory".utf8))
            #expect(await cache.disk?.entry(for: "a") == nil)  // the older value is gone too
            try await cache.disk?.close()
            for file in directory.files(in: nil) {
                let bytes = try FileSurgery.read(directory.appending(file))
                #expect(!Bytes.contains(bytes, Array("secret".utf8)), "\(file)")
            }
        }
    }

    @Test func aCommitTheDiskRefusesChangesNothing() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try makeCache(directory, admission: 0.001)
            try await cache.set(entry("kept"), for: "a")
            let large = CacheEntry(value: SampleData.random(count: 8 << 10, seed: 3), storedAt: Date())
            await #expect(throws: CacheError.self) {
                try await cache.commit([.set(entry("new"), for: "a"), .set(large, for: "large")])
            }
            #expect(cache.memory.entry(for: "a")?.value == Array("kept".utf8))
            #expect(cache.memory.entry(for: "large") == nil)
            #expect(await cache.disk?.entry(for: "a")?.value == Array("kept".utf8))
        }
    }

    @Test func aClosedCacheRefusesACommit() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try makeCache(directory)
            try await cache.close()
            await #expect(throws: CacheError.self) { try await cache.commit([.set(entry("x"), for: "x")]) }
        }
    }
}
