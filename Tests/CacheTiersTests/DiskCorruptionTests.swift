// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import SystemPackage
import Testing

@testable import CacheTiers

@Suite struct DiskCorruptionTests {
    static let keyCount = 200

    /// Fills a store with self-describing values and closes it.
    func fill(_ directory: TemporaryDirectory, segment: Int = 64 << 10) throws -> DiskTier.Configuration {
        let configuration = diskConfiguration(directory, capacity: 64 << 20, segment: segment)
        let store = try DiskStore(configuration: configuration)
        for index in 0..<Self.keyCount {
            try store.set(entry(versionedValue("k\(index)", version: index, size: 700)), for: CacheKey("k\(index)"))
        }
        try store.close()
        return configuration
    }

    /// A directory written by a newer release (a segment of a newer format version) is refused with
    /// a clear error, and not a byte of it changes: never misread, never "repaired".
    @Test func aNewerFormatIsRefusedAndLeftAsItWas() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let configuration = try fill(directory)
        let cache = directory.appending("cache")
        let segment = try #require(directory.files(in: "cache").filter { $0.hasPrefix("segment-") }.sorted().last)
        var bytes = try FileSurgery.read(cache + "/" + segment)
        bytes[4] = 3
        try FileSurgery.write(bytes, to: cache + "/" + segment)
        let before = try directory.files(in: "cache").sorted().map { try FileSurgery.read(cache + "/" + $0) }
        #expect {
            _ = try DiskStore(configuration: configuration)
        } throws: { error in
            (error as? CacheError)?.code == .unsupportedFormat
                && "\(error)".contains("format version 3")
        }
        let after = try directory.files(in: "cache").sorted().map { try FileSurgery.read(cache + "/" + $0) }
        #expect(before == after)
    }

    /// Random byte flips inside segment files: the entries hit read as misses, every other entry
    /// is intact, and nothing returns wrong bytes. Checked with the snapshot (reads verify) and
    /// without it (replay skips the damaged region and keeps what follows).
    @Test(arguments: [true, false])
    func byteFlipsMakeMissesNeverWrongBytes(keepSnapshot: Bool) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let configuration = try fill(directory)
        let cache = directory.appending("cache")
        if !keepSnapshot { try FileManager.default.removeItem(atPath: cache + "/index.lcx") }
        var generator = SplitMix64(seed: keepSnapshot ? 11 : 12)
        let segments = directory.files(in: "cache").filter { $0.hasPrefix("segment-") }
        var flipped = 0
        for name in segments {
            let path = cache + "/" + name
            let size = try #require(FileSurgery.size(path))
            for _ in 0..<3 {
                let offset =
                    DiskStore.segmentHeaderSize + Int(generator.next() % UInt64(size - DiskStore.segmentHeaderSize))
                try FileSurgery.flip(path, at: offset, mask: UInt8(1 + generator.next() % 255))
                flipped += 1
            }
        }
        let store = try DiskStore(configuration: configuration)
        let keys = (0..<Self.keyCount).map { CacheKey("k\($0)") }
        let readers = ConcurrentReaders(store.reader, keys: keys)
        var hits = 0
        for index in 0..<Self.keyCount {
            if let found = store.entry(for: CacheKey("k\(index)")) {
                hits += 1
                #expect(found.value == versionedValue("k\(index)", version: index, size: 700), "k\(index)")
            }
        }
        #expect(readers.stop().wrong == 0)
        // Each flip damages at most one record.
        #expect(hits >= Self.keyCount - flipped)
        #expect(hits < Self.keyCount)
        #expect(store.statistics.corruptRecords > 0)
        let report = try DiskStore.verify(directory: cache)
        #expect(report.corruptRecords + report.tornRecords > 0)
    }

    /// A torn tail (a write cut short by a crash) is cut at the next open; the records before it stay.
    @Test func tornTailIsCutAndTheRestSurvives() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let configuration = diskConfiguration(directory)
        do {
            let store = try DiskStore(configuration: configuration)
            try store.set(entry(versionedValue("first", version: 1)), for: "first")
            try store.set(entry(versionedValue("second", version: 1, size: 5000)), for: "second")
        }
        let segment = directory.appending("cache/" + CacheDirectory.segmentFileName(1))
        let size = try #require(FileSurgery.size(segment))
        try FileSurgery.truncate(segment, to: size - 1234)
        let torn = try DiskStore.verify(directory: directory.appending("cache"))
        #expect(torn.tornRecords == 1 && torn.corruptRecords == 0)

        let store = try DiskStore(configuration: configuration)
        let readers = ConcurrentReaders(store.reader, keys: ["first", "second", "third"])
        #expect(store.recovery.truncatedBytes > 0)
        #expect(store.entry(for: "first")?.value == versionedValue("first", version: 1))
        #expect(store.entry(for: "second") == nil)
        try store.set(entry(versionedValue("third", version: 1)), for: "third")
        #expect(readers.stop().wrong == 0)
        try store.close()
        let clean = try DiskStore.verify(directory: directory.appending("cache"))
        #expect(clean.tornRecords == 0 && clean.corruptRecords == 0 && clean.goodRecords == 2)
    }

    /// A damaged snapshot is ignored: every segment is replayed instead; nothing is wiped.
    @Test func damagedSnapshotFallsBackToReplay() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let configuration = try fill(directory)
        let snapshot = directory.appending("cache/index.lcx")
        try FileSurgery.flip(snapshot, at: 60)
        let store = try DiskStore(configuration: configuration)
        #expect(!store.recovery.usedSnapshot)
        #expect(store.index.count == Self.keyCount)
        #expect(store.entry(for: "k42")?.value == versionedValue("k42", version: 42, size: 700))
    }

    /// Out of disk space: the write fails with a clear error, reads go on, the failed record leaves
    /// no trace, and the directory reopens intact.
    @Test(arguments: [0, 100])
    func outOfSpaceFailsCleanly(bytesBeforeFailure: Int) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let faults = FaultInjector()
        let configuration = diskConfiguration(directory, faults: faults)
        let store = try DiskStore(configuration: configuration)
        try store.set(entry(versionedValue("kept", version: 1)), for: "kept")
        try store.set(entry(versionedValue("replaced", version: 1)), for: "replaced")
        let readers = ConcurrentReaders(store.reader, keys: ["kept", "replaced", "after"])

        faults.failWrites(with: .noSpace, afterWriting: bytesBeforeFailure)
        let error = try #require(throws: CacheError.self) {
            try store.set(entry(versionedValue("replaced", version: 2)), for: "replaced")
        }
        #expect(error.code == .outOfSpace)
        #expect(store.entry(for: "kept")?.value == versionedValue("kept", version: 1))
        // The newer value is not on disk, so the older one is not served in its place.
        #expect(store.entry(for: "replaced") == nil)
        faults.reset()

        try store.set(entry(versionedValue("after", version: 1)), for: "after")
        #expect(readers.stop().wrong == 0)
        try store.close()
        let report = try DiskStore.verify(directory: directory.appending("cache"))
        #expect(report.corruptRecords == 0 && report.tornRecords == 0)
        let reopened = try DiskStore(configuration: configuration)
        #expect(reopened.entry(for: "kept")?.value == versionedValue("kept", version: 1))
        #expect(reopened.entry(for: "after")?.value == versionedValue("after", version: 1))
    }

    /// A removal that cannot be written (out of space) throws, and what it was to remove is
    /// forgotten all the same: the store never serves an entry it was told to drop. An
    /// invalidation from another instance relies on it (`TieredCache.applyHere`).
    @Test(arguments: ["key", "since", "all"])
    func aRemovalThatCannotBeWrittenStillForgets(removal: String) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let faults = FaultInjector()
        let configuration = diskConfiguration(directory, faults: faults)
        let store = try DiskStore(configuration: configuration)
        for name in ["a", "b", "c"] { try store.set(entry(versionedValue(name, version: 1)), for: CacheKey(name)) }

        faults.failWrites(with: .noSpace)
        let error = try #require(throws: CacheError.self) {
            switch removal {
            case "key": _ = try store.remove("a")
            case "since": _ = try store.removeEntries(storedSince: Date(timeIntervalSince1970: 0))
            default: try store.removeAll()
            }
        }
        #expect(error.code == .outOfSpace)
        #expect(store.entry(for: "a") == nil)
        if removal != "key" {
            #expect(store.entry(for: "b") == nil && store.entry(for: "c") == nil)
            #expect(store.index.count == 0)
        }
        faults.reset()
        try store.set(entry(versionedValue("d", version: 1)), for: "d")
        #expect(store.entry(for: "d")?.value == versionedValue("d", version: 1))
    }

    /// A segment file full of garbage opens without a crash: the garbage is cut as a damaged tail
    /// and every good entry of the other segments stays.
    @Test func garbageSegmentFileIsSkipped() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let configuration = try fill(directory)
        let stray = directory.appending("cache/" + CacheDirectory.segmentFileName(999))
        try FileSurgery.write(SampleData.random(count: 5000), to: stray)
        let store = try DiskStore(configuration: configuration)
        #expect(store.entry(for: "k1")?.value == versionedValue("k1", version: 1, size: 700))
        #expect(store.recovery.truncatedBytes > 0)
    }
}

/// Removals stay removed when the newest segment loses its tail after the snapshot was written:
/// the snapshot's knowledge before the cut is kept, not discarded for a full replay that would
/// bring removed values back.
@Suite struct TailDamageTests {
    @Test func removedKeysStayRemovedAfterTheNewestSegmentLosesItsTail() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let configuration = diskConfiguration(directory)
        do {
            let store = try DiskStore(configuration: configuration)
            for index in 0..<100 {
                try store.set(entry(versionedValue("k\(index)", version: 1)), for: CacheKey("k\(index)"))
            }
            for index in 0..<10 {
                try store.set(entry(versionedValue("late\(index)", version: 1)), for: CacheKey("late\(index)"))
            }
            for index in 0..<100 where index % 2 == 0 { _ = try store.remove(CacheKey("k\(index)")) }
            try store.close()  // the snapshot covers all of it
        }
        // The newest segment loses its tail — the tombstones of most removals — below the
        // snapshot's mark.
        let segment = directory.appending("cache/" + CacheDirectory.segmentFileName(1))
        let size = try #require(FileSurgery.size(segment))
        try FileSurgery.truncate(segment, to: size - 1500)

        let store = try DiskStore(configuration: configuration)
        for index in 0..<100 {
            let found = store.entry(for: CacheKey("k\(index)"))
            if index % 2 == 0 {
                #expect(found == nil, "k\(index) was removed and must stay removed")
            } else {
                #expect(found?.value == versionedValue("k\(index)", version: 1))
            }
        }
        // What the cut took is a miss, never wrong bytes.
        for index in 0..<10 {
            let found = store.entry(for: CacheKey("late\(index)"))
            #expect(found == nil || found?.value == versionedValue("late\(index)", version: 1))
        }
        try store.close()
    }
}
