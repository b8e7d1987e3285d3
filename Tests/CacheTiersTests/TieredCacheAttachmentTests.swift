// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Synchronization
import Testing

@testable import CacheTiers

/// The seam upper layers read through: an attachment made once per entry and kept with it in
/// memory, and what every lower tier reports and closes.
@Suite struct TieredCacheAttachmentTests {
    final class Decoded: CacheAttachment {
        let text: String
        var memoryCost: Int { 64 + text.utf8.count }
        init(_ text: String) { self.text = text }
    }

    func makeCache(_ directory: TemporaryDirectory) throws -> TieredCache {
        TieredCache(
            memory: MemoryTier(configuration: .init(capacityBytes: 1 << 20, shardCount: 1)),
            disk: try DiskTier(configuration: diskConfiguration(directory))
        )
    }

    /// A lower-tier hit is attached once and promoted with its attachment; memory hits after it
    /// return the same object without calling `attach` again.
    @Test func aLowerTierHitIsAttachedOnceAndPromotedWithIt() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try makeCache(directory)
            try await cache.set(entry(Array("hello".utf8)), for: "k")
            cache.memory.removeAll()
            let calls = Atomic<Int>(0)
            func read() async -> CacheEntry? {
                await cache.entry(for: "k") { entry in
                    calls.add(1, ordering: .relaxed)
                    return Decoded(String(decoding: entry.value, as: UTF8.self))
                }
            }
            let first = try #require(await read())
            let second = try #require(await read())
            #expect((first.attachment as? Decoded)?.text == "hello")
            let same = (first.attachment as? Decoded) === (second.attachment as? Decoded)
            #expect(same)
            #expect(calls.load(ordering: .relaxed) == 1)
            // The attachment lives in memory only: the disk tier returns none.
            #expect(await cache.disk?.entry(for: "k")?.attachment == nil)
            // A memory entry stored without one gets one made (and is returned with it).
            try await cache.set(entry(Array("plain".utf8)), for: "m")
            let plain = try #require(await self.read(key: "m", cache))
            #expect((plain.attachment as? Decoded)?.text == "plain")
        }
    }

    /// `attachment(for:attaching:)` gives what `entry(for:attaching:)` would attach, for memory
    /// hits (with or without an attachment), lower-tier hits and misses, counting one lookup each.
    @Test func theAttachmentAloneIsWhatTheEntryWouldCarry() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try makeCache(directory)
            func attachment(_ key: CacheKey) async -> Decoded? {
                await cache.attachment(for: key) { Decoded(String(decoding: $0.value, as: UTF8.self)) } as? Decoded
            }
            try await cache.set(entry(Array("disk".utf8)), for: "d")
            cache.memory.removeAll()
            let fromDisk = try #require(await attachment("d"))
            #expect(fromDisk.text == "disk")
            #expect(await attachment("d") === fromDisk)  // promoted with it
            try await cache.set(entry(Array("plain".utf8)), for: "m")
            #expect(await attachment("m")?.text == "plain")  // a memory entry without one
            #expect(await attachment("missing") == nil)
            let counts = cache.memory.statistics
            #expect(counts.hits == 2 && counts.misses == 2)
            try await cache.close()
            #expect(await attachment("d") == nil)
        }
    }

    /// A probe by the key's bytes finds an attached memory entry without making a key, hands
    /// back the key (equal to one made from the string) and the memory answer otherwise, and the
    /// memory tier counts one lookup per probe of UTF-8 bytes.
    @Test func aProbeByBytesFindsWhatTheKeyFinds() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try makeCache(directory)
            func probe(_ key: String) -> TieredCache.MemoryProbe {
                var key = key
                return key.withUTF8 { cache.probeMemory(utf8: UnsafeRawBufferPointer($0)) }
            }
            func attach(_ entry: CacheEntry) -> (any CacheAttachment)? {
                Decoded(String(decoding: entry.value, as: UTF8.self))
            }
            let longKey = "GET https://example.com/a/fairly/long/path?with=a&query=string"
            try await cache.set(entry(Array("long".utf8)), for: CacheKey(longKey))
            cache.memory.removeAll()
            // A miss: the key comes back, and the read finishes from disk with that answer.
            guard case .notAttached(let key, let lookup) = probe(longKey) else {
                Issue.record("a cold memory tier has nothing attached")
                return
            }
            #expect(key == CacheKey(longKey) && key.digest == CacheKey(longKey).digest)
            let fromDisk = await cache.attachment(for: key, after: lookup, attaching: attach) as? Decoded
            #expect(fromDisk?.text == "long")
            // Promoted with its attachment: the next probe finds it by bytes alone.
            guard case .attached(let attached) = probe(longKey) else {
                Issue.record("the promoted entry is attached")
                return
            }
            #expect((attached as? Decoded) === fromDisk)
            // A key of the same digest but other bytes is a miss; so is an unknown short key.
            let other = longKey.replacingOccurrences(of: "query", with: "QUERY")
            if case .attached = probe(other) { Issue.record("other bytes must not hit") }
            if case .attached = probe("k") { Issue.record("an unknown key must not hit") }
            // Bytes that are not UTF-8 make their repaired string's key.
            let invalid: [UInt8] = [0x47, 0xFF, 0x48]
            if case .notAttached(let repaired, _) = invalid.withUnsafeBytes({ cache.probeMemory(utf8: $0) }) {
                #expect(repaired == CacheKey(String(decoding: invalid, as: UTF8.self)))
            } else {
                Issue.record("invalid bytes are never attached")
            }
            // One lookup a probe, but two for the bytes that are not UTF-8 (theirs and the key's).
            let counts = cache.memory.statistics
            #expect(counts.hits == 1 && counts.misses == 5)
            try await cache.close()
            guard case .closed = probe(longKey) else {
                Issue.record("a closed cache finds nothing")
                return
            }
        }
    }

    func read(key: CacheKey, _ cache: TieredCache) async -> CacheEntry? {
        await cache.entry(for: key) { Decoded(String(decoding: $0.value, as: UTF8.self)) }
    }

    /// Bytes the caller cannot use are a miss and are forgotten in every tier.
    @Test func unusableBytesAreAMissAndAreForgottenEverywhere() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try makeCache(directory)
            try await cache.set(entry([0xFF]), for: "bad")
            cache.memory.removeAll()
            #expect(await cache.entry(for: "bad") { _ in nil } == nil)
            #expect(cache.memory.entry(for: "bad") == nil)
            #expect(await cache.disk?.entry(for: "bad") == nil)
            // The same in memory.
            try await cache.set(entry([0xFE]), for: "bad2", policy: .allowedInMemoryOnly)
            #expect(await cache.entry(for: "bad2") { _ in nil } == nil)
            #expect(cache.memory.entry(for: "bad2") == nil)
        }
    }

    /// Every lower tier reports its usage through the protocol, and closes through the cache.
    @Test func lowerTiersReportUsageAndClose() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try makeCache(directory)
            try await cache.set(entry(SampleData.json(approximateBytes: 2000)), for: "a")
            let usage = await cache.usage()
            #expect(usage.lowerTiers.count == 1)
            #expect(usage.lowerTiers[0].entryCount == 1 && usage.lowerTiers[0].bytes == usage.disk?.bytes)
            try await cache.close()
            #expect(await cache.disk?.isOpen == false)
            // A closed cache finds nothing, and its memory tier holds nothing.
            #expect(!cache.isOpen)
            #expect(await cache.entry(for: "a") == nil)
            #expect(cache.memory.usage.entryCount == 0)
        }
    }
}
