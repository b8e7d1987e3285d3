// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import SystemPackage
import Testing

@testable import CacheTiers

/// A fixed clock for the entries' dates.
let fixedNow = Date(timeIntervalSince1970: 1_750_000_000)

func diskConfiguration(
    _ directory: TemporaryDirectory,
    capacity: Int = 64 << 20,
    segment: Int = 64 << 20,
    now: @escaping @Sendable () -> Date = { fixedNow },
    faults: FaultInjector? = nil
) -> DiskTier.Configuration {
    var configuration = DiskTier.Configuration(
        directory: directory.appending("cache"),
        capacityBytes: capacity,
        segmentBytes: segment,
        fsync: .never,
        now: now
    )
    configuration.faults = faults
    return configuration
}

/// A value that says which key and version it belongs to, so a wrong answer cannot pass.
func versionedValue(_ key: String, version: Int, size: Int = 300) -> [UInt8] {
    SampleData.versioned(key: key, version: version, size: size)
}

func entry(_ value: [UInt8], metadata: [UInt8] = [], at date: Date = fixedNow) -> CacheEntry {
    CacheEntry(value: value, metadata: metadata, storedAt: date)
}

@Suite struct DiskTierTests {
    @Test func storesAndReadsBackValuesAndMetadata() async throws {
        try await withTemporaryDirectory { directory in
            let tier = try DiskTier(configuration: diskConfiguration(directory))
            let json = SampleData.json(approximateBytes: 4096)
            #expect(try await tier.set(entry(json, metadata: [1, 2, 3]), for: "a"))
            #expect(try await tier.set(entry([]), for: "empty"))
            let readBack = try #require(await tier.entry(for: "a"))
            #expect(readBack.value == json)
            #expect(readBack.metadata == [1, 2, 3])
            #expect(readBack.storedAt == fixedNow)
            // "Cached with an empty body" is not "never cached".
            #expect(await tier.entry(for: "empty")?.value == [])
            #expect(await tier.entry(for: "missing") == nil)
            #expect(await tier.usage.entryCount == 2)
            let statistics = await tier.statistics
            #expect(statistics.hits == 2 && statistics.misses == 1)
            #expect(statistics.storedValueBytesWritten < statistics.valueBytesWritten)
            try await tier.close()
        }
    }

    @Test func overwriteRemoveAndRemoveAll() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try DiskStore(configuration: diskConfiguration(directory))
        try store.set(entry(versionedValue("k", version: 1)), for: "k")
        try store.set(entry(versionedValue("k", version: 2)), for: "k")
        #expect(store.entry(for: "k")?.value == versionedValue("k", version: 2))
        #expect(try store.remove("k"))
        #expect(try !store.remove("k"))
        #expect(store.entry(for: "k") == nil)
        for index in 0..<10 {
            try store.set(entry(versionedValue("x\(index)", version: 1)), for: CacheKey("x\(index)"))
        }
        try store.removeAll()
        #expect(store.index.count == 0)
        #expect(store.entry(for: "x3") == nil)
        try store.close()
        let reopened = try DiskStore(configuration: diskConfiguration(directory))
        #expect(reopened.index.count == 0)
        #expect(reopened.entry(for: "x3") == nil)
    }

    @Test func removeEntriesStoredSince() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try DiskStore(configuration: diskConfiguration(directory))
        let early = Date(timeIntervalSince1970: 1_000)
        let late = Date(timeIntervalSince1970: 2_000)
        try store.set(entry([1], at: early), for: "early")
        try store.set(entry([2], at: late), for: "late")
        #expect(try store.removeEntries(storedSince: Date(timeIntervalSince1970: 1_500)) == 1)
        #expect(store.entry(for: "early") != nil)
        #expect(store.entry(for: "late") == nil)
    }

    @Test func reopenAfterCleanCloseUsesTheSnapshot() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        do {
            let store = try DiskStore(configuration: diskConfiguration(directory))
            for index in 0..<500 {
                try store.set(entry(versionedValue("k\(index)", version: index)), for: CacheKey("k\(index)"))
            }
            try store.remove("k7")
            try store.close()
        }
        let store = try DiskStore(configuration: diskConfiguration(directory))
        #expect(store.recovery.usedSnapshot)
        #expect(store.recovery.replayedRecords == 0)
        #expect(store.index.count == 499)
        #expect(store.entry(for: "k7") == nil)
        for index in [0, 1, 250, 499] {
            #expect(store.entry(for: CacheKey("k\(index)"))?.value == versionedValue("k\(index)", version: index))
        }
    }

    @Test func reopenWithoutSnapshotReplaysTheLog() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        do {
            let store = try DiskStore(configuration: diskConfiguration(directory, capacity: 8 << 20, segment: 64 << 10))
            for index in 0..<300 {
                try store.set(
                    entry(versionedValue("k\(index)", version: index, size: 1000)),
                    for: CacheKey("k\(index)")
                )
            }
            try store.set(entry(versionedValue("k5", version: 99)), for: "k5")
            try store.remove("k6")
            // Snapshot in the middle, then more writes after it: the tail must be replayed.
            try store.writeSnapshot()
            try store.set(entry(versionedValue("k8", version: 100)), for: "k8")
            try store.remove("k9")
            try store.set(entry(versionedValue("new", version: 1)), for: "new")
            // No close: as after a crash.
        }
        let replayed = try DiskStore(configuration: diskConfiguration(directory, capacity: 8 << 20, segment: 64 << 10))
        #expect(replayed.recovery.usedSnapshot)
        #expect(replayed.recovery.replayedRecords == 3)
        try check(replayed)
        try replayed.close()
        try FileManager.default.removeItem(atPath: directory.appending("cache/index.lcx"))
        let full = try DiskStore(configuration: diskConfiguration(directory, capacity: 8 << 20, segment: 64 << 10))
        #expect(!full.recovery.usedSnapshot)
        #expect(full.order.count > 3)
        try check(full)

        func check(_ store: DiskStore) throws {
            #expect(store.index.count == 299)
            #expect(store.entry(for: "k5")?.value == versionedValue("k5", version: 99))
            #expect(store.entry(for: "k6") == nil)
            #expect(store.entry(for: "k8")?.value == versionedValue("k8", version: 100))
            #expect(store.entry(for: "k9") == nil)
            #expect(store.entry(for: "new")?.value == versionedValue("new", version: 1))
            #expect(store.entry(for: "k200")?.value == versionedValue("k200", version: 200, size: 1000))
        }
    }

    @Test func aSecondOpenerGetsAClearError() async throws {
        try await withTemporaryDirectory { directory in
            let first = try DiskTier(configuration: diskConfiguration(directory))
            let error = try #require(throws: CacheError.self) {
                try DiskTier(configuration: diskConfiguration(directory))
            }
            #expect(error.code == .directoryLocked)
            try await first.close()
            let second = try DiskTier(configuration: diskConfiguration(directory))
            try await second.close()
        }
    }

    @Test func filesAndDirectoryArePrivate() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try DiskStore(configuration: diskConfiguration(directory))
        try store.set(entry([1]), for: "a")
        try store.close()
        let cache = directory.appending("cache")
        let attributes = try FileManager.default.attributesOfItem(atPath: cache)
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
        for name in directory.files(in: "cache") {
            let file = try FileManager.default.attributesOfItem(atPath: cache + "/" + name)
            #expect((file[.posixPermissions] as? Int) == 0o600, "\(name)")
        }
    }

    @Test func admissionRefusesLargeValuesAndForgetsTheOldOne() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try DiskStore(configuration: diskConfiguration(directory, capacity: 1 << 20))
        try store.set(entry([1, 2, 3]), for: "big")
        // 5% of 1 MiB is 52,428 bytes; random bytes do not compress.
        #expect(try store.set(entry(SampleData.random(count: 60_000)), for: "big") == .refused)
        #expect(store.entry(for: "big") == nil)
        #expect(try store.set(entry(SampleData.random(count: 50_000)), for: "fits") == .stored)
        #expect(store.statistics.admissionRefusals == 1)
    }

    @Test func usageNeverExceedsCapacityByMoreThanOneSegment() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let capacity = 2 << 20
        let configuration = diskConfiguration(directory, capacity: capacity, segment: 256 << 10)
        let store = try DiskStore(configuration: configuration)
        var generator = SplitMix64(seed: 1)
        for index in 0..<3000 {
            let value = SampleData.random(count: 2000 + Int(generator.next() % 4000), seed: UInt64(index))
            try store.set(entry(value), for: CacheKey("k\(index)"))
            if index % 3 == 0 { _ = store.entry(for: CacheKey("k\(index / 2)")) }
            #expect(store.totalBytes <= capacity + configuration.effectiveSegmentBytes)
        }
        #expect(store.statistics.evictions > 0)
        #expect(store.statistics.secondChances > 0)
        // What is left reads back exactly.
        var hits = 0
        for index in 0..<3000 {
            if let found = store.entry(for: CacheKey("k\(index)")) {
                hits += 1
                #expect(found.value == SampleData.random(count: found.value.count, seed: UInt64(index)))
            }
        }
        #expect(hits == store.index.count)
        #expect(store.statistics.corruptRecords == 0)
        // The running total matches the files.
        let onDisk = directory.files(in: "cache").filter { $0 != "lock" && $0 != KeyedDigest.fileName }.compactMap {
            FileSurgery.size(directory.appending("cache/" + $0))
        }.reduce(0, +)
        #expect(store.totalBytes == onDisk)
    }

    @Test func readEntriesGetASecondChance() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try DiskStore(configuration: diskConfiguration(directory, capacity: 1 << 20, segment: 128 << 10))
        try store.set(entry(SampleData.random(count: 1000, seed: 1)), for: "hot")
        try store.set(entry(SampleData.random(count: 1000, seed: 2)), for: "cold")
        #expect(store.entry(for: "hot") != nil)
        for index in 0..<2000 {
            try store.set(
                entry(SampleData.random(count: 1000, seed: UInt64(index + 10))),
                for: CacheKey("filler\(index)")
            )
            if index % 100 == 0 { _ = store.entry(for: "hot") }
        }
        #expect(store.entry(for: "cold") == nil)
        #expect(store.entry(for: "hot")?.value == SampleData.random(count: 1000, seed: 1))
    }

    @Test func compactionKeepsLiveEntriesAndTombstones() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let configuration = diskConfiguration(directory, capacity: 64 << 20, segment: 64 << 10)
        let store = try DiskStore(configuration: configuration)
        for index in 0..<400 {
            try store.set(entry(versionedValue("k\(index)", version: 1, size: 1000)), for: CacheKey("k\(index)"))
        }
        for index in 0..<400 where index % 4 != 0 {
            try store.remove(CacheKey("k\(index)"))
        }
        let before = store.totalBytes
        #expect(try store.compact() > 0)
        #expect(store.totalBytes < before)
        for index in 0..<400 {
            let found = store.entry(for: CacheKey("k\(index)"))
            #expect((found != nil) == (index % 4 == 0))
            if let found { #expect(found.value == versionedValue("k\(index)", version: 1, size: 1000)) }
        }
        // Without a snapshot, the carried tombstones keep removed keys removed.
        try store.close()
        try FileManager.default.removeItem(atPath: directory.appending("cache/index.lcx"))
        let reopened = try DiskStore(configuration: configuration)
        #expect(reopened.index.count == 100)
        #expect(reopened.entry(for: "k1") == nil)
        #expect(reopened.entry(for: "k4")?.value == versionedValue("k4", version: 1, size: 1000))
    }
}
