// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Testing

@testable import CacheTiers

/// Batches in the disk log: a group of sets and removals that a crash keeps whole
/// (`DiskStore.commit`, `DiskTier.commit`).
@Suite struct DiskBatchTests {
    static func entry(_ text: String) -> CacheEntry {
        CacheEntry(value: Array(text.utf8), metadata: Array("m-\(text)".utf8), storedAt: fixedNow)
    }

    /// What the store holds for `keys`, as text (nil for none).
    static func state(_ store: DiskStore, _ keys: [String]) -> [String?] {
        keys.map { key in store.entry(for: CacheKey(key)).map { String(decoding: $0.value, as: UTF8.self) } }
    }

    static let keys = ["a", "b", "c", "d"]
    static let old: [String?] = ["a1", "b1", "c1", nil]
    /// What the batch of ``commitBatch(_:)`` leaves.
    static let new: [String?] = ["a3", nil, "c1", "d2"]

    /// The old state: a, b and c stored one by one.
    static func storeOld(_ store: DiskStore) throws {
        for (key, value) in zip(keys, old) { if let value { try store.set(entry(value), for: CacheKey(key)) } }
    }

    /// Sets a twice (the later value wins), removes b, sets d, removes e (never stored: no record).
    static func commitBatch(_ store: DiskStore) throws {
        try store.commit([
            .set(entry("a2"), for: CacheKey("a")), .remove(CacheKey("b")), .set(entry("d2"), for: CacheKey("d")),
            .set(entry("a3"), for: CacheKey("a")), .remove(CacheKey("e")),
        ])
    }

    static func configuration(_ directory: TemporaryDirectory, encrypted: Bool) -> DiskTier.Configuration {
        var configuration = diskConfiguration(directory)
        if encrypted { configuration.encryption = DiskEncryption(key: EncryptionTests.keyA) }
        return configuration
    }

    @Test(arguments: [false, true])
    func aBatchAppliesInOrderAndSurvivesAReopenAndACompaction(encrypted: Bool) throws {
        let directory = TemporaryDirectory("batch")
        defer { directory.remove() }
        let configuration = Self.configuration(directory, encrypted: encrypted)
        var store = try DiskStore(configuration: configuration)
        try Self.storeOld(store)
        try Self.commitBatch(store)
        #expect(Self.state(store, Self.keys) == Self.new)
        #expect(store.entry(for: CacheKey("a"))?.metadata == Array("m-a3".utf8))
        try store.close()
        try FileManager.default.removeItem(atPath: configuration.directory + "/index.lcx")  // replay it all
        store = try DiskStore(configuration: configuration)
        #expect(Self.state(store, Self.keys) == Self.new)
        #expect(store.recovery.droppedBatches == 0 && store.recovery.truncatedBytes == 0)
        _ = try store.compact(threshold: 1.0)
        try store.close()
        try FileManager.default.removeItem(atPath: configuration.directory + "/index.lcx")
        store = try DiskStore(configuration: configuration)
        #expect(Self.state(store, Self.keys) == Self.new)
        try store.close()
        let report = try DiskStore.verify(directory: configuration.directory, encryption: configuration.encryption)
        #expect(report.corruptRecords == 0 && report.tornRecords == 0 && report.unauthenticatedRecords == 0)
    }

    /// The segment cut at every length from before the batch to its end (a torn write, a crash
    /// in the middle of it): reopened, the store holds the old state, never a mix; the whole
    /// batch holds the new one. The cut tail is gone from the file after the reopen.
    @Test func aBatchCutAnywhereLeavesTheOldState() async throws {
        let directory = TemporaryDirectory("batch-cut")
        defer { directory.remove() }
        let configuration = Self.configuration(directory, encrypted: false)
        let setUp = try Self.oldStateThenBatch(configuration)
        let (segment, before) = (setUp.segment, setUp.before)
        try setUp.store.close()
        let whole = try FileSurgery.read(segment)
        #expect(whole.count > before + RecordFormat.batchMarkerSize)
        // Every length inside the marker, then every third: each record's header, key and value
        // are cut many times over. Off the pool: 150 opens would hold a thread of it.
        let lengths =
            Array(before..<(before + RecordFormat.batchMarkerSize))
            + Array(stride(from: before + RecordFormat.batchMarkerSize, to: whole.count, by: 3)) + [whole.count]
        let wrong = try await offThePool {
            var wrong: [String] = []
            for length in lengths {
                try FileSurgery.write(Array(whole[..<length]), to: segment)
                try? FileManager.default.removeItem(atPath: configuration.directory + "/index.lcx")
                let store = try DiskStore(configuration: configuration)
                let complete = length == whole.count
                let state = Self.state(store, Self.keys)
                let cut = store.recovery.truncatedBytes
                try store.close()
                if state != (complete ? Self.new : Self.old) || cut != (complete ? 0 : length - before)
                    || FileSurgery.size(segment) != (complete ? whole.count : before)
                {
                    wrong.append("cut at \(length) of \(whole.count): \(state), \(cut) bytes cut")
                }
            }
            return wrong
        }
        #expect(wrong.isEmpty, "\(wrong.prefix(3))")
    }

    /// A byte flipped in a batch's marker or inside its second record, with a set after the
    /// batch: the whole batch is dropped (the old state of its keys; with the marker lost, its
    /// records are not taken one by one), the later set holds, and the drop is reported.
    @Test(arguments: [true, false])
    func damageInsideABatchDropsAllOfIt(inTheMarker: Bool) throws {
        let directory = TemporaryDirectory("batch-damage")
        defer { directory.remove() }
        let configuration = Self.configuration(directory, encrypted: false)
        let setUp = try Self.oldStateThenBatch(configuration)
        var store = setUp.store
        let (segment, before) = (setUp.segment, setUp.before)
        try store.set(Self.entry("z1"), for: CacheKey("z"))
        try store.close()
        // The marker, then the first record (a's "a2"), then the second (b's tombstone).
        let bytes = try FileSurgery.read(segment)
        let first = try #require(
            Array(bytes[(before + RecordFormat.batchMarkerSize)...]).withUnsafeBytes { RecordFormat.parseHeader($0) }
        )
        let second = before + RecordFormat.batchMarkerSize + first.recordLength
        try FileSurgery.flip(segment, at: inTheMarker ? before + 44 : second + 45)
        try FileManager.default.removeItem(atPath: configuration.directory + "/index.lcx")
        store = try DiskStore(configuration: configuration)
        #expect(Self.state(store, Self.keys) == Self.old)
        #expect(Self.state(store, ["z"]) == ["z1"])
        #expect(store.recovery.droppedBatches == 1 && store.recovery.corruptRegions == 1)
        try store.close()
    }

    /// An entry over the admission limit, or a batch larger than a segment: a clear error, not a
    /// byte written, nothing changed.
    @Test func aBatchThatCannotBeWrittenWholeWritesNothing() throws {
        let directory = TemporaryDirectory("batch-refused")
        defer { directory.remove() }
        let configuration = diskConfiguration(directory, capacity: 1 << 20, segment: 256 << 10)
        let store = try DiskStore(configuration: configuration)
        try Self.storeOld(store)
        let segment = configuration.directory + "/" + (try #require(Self.lastSegment(configuration)))
        let before = try FileSurgery.read(segment)
        let tooLarge = CacheEntry(value: SampleData.random(count: 200_000, seed: 1), metadata: [], storedAt: fixedNow)
        #expect {
            try store.commit([.set(Self.entry("a9"), for: CacheKey("a")), .set(tooLarge, for: CacheKey("big"))])
        } throws: { error in
            (error as? CacheError)?.code == .valueTooLarge && "\(error)".contains("admission limit")
        }
        let pieces = (0..<8).map {
            CacheEntry(value: SampleData.random(count: 40_000, seed: UInt64($0)), metadata: [], storedAt: fixedNow)
        }
        #expect {
            try store.commit(pieces.enumerated().map { .set($1, for: CacheKey("piece\($0)")) })
        } throws: { error in
            (error as? CacheError)?.code == .valueTooLarge && "\(error)".contains("larger than a segment")
        }
        #expect(Self.state(store, Self.keys) == Self.old)
        #expect(try FileSurgery.read(segment) == before)
        try store.commit([])
        try store.commit([.remove(CacheKey("never"))])
        #expect(try FileSurgery.read(segment) == before)
        try store.close()
    }

    /// The actor's door: the same batch through `DiskTier.commit`.
    @Test func theTierCommitsABatch() async throws {
        let directory = TemporaryDirectory("batch-tier")
        defer { directory.remove() }
        let tier = try DiskTier(configuration: diskConfiguration(directory))
        try await tier.set(Self.entry("a1"), for: CacheKey("a"))
        try await tier.commit([.set(Self.entry("b2"), for: CacheKey("b")), .remove(CacheKey("a"))])
        #expect(await tier.entry(for: CacheKey("a")) == nil)
        #expect(await tier.entry(for: CacheKey("b"))?.value == Array("b2".utf8))
        try await tier.close()
    }

    /// A plain store holding the old state, then the batch: the store, its segment's path, and
    /// the segment's length before the batch.
    static func oldStateThenBatch(
        _ configuration: DiskTier.Configuration
    ) throws -> (store: DiskStore, segment: String, before: Int) {
        let store = try DiskStore(configuration: configuration)
        try storeOld(store)
        let segment = configuration.directory + "/" + (try #require(lastSegment(configuration)))
        let before = try #require(FileSurgery.size(segment))
        try commitBatch(store)
        return (store, segment, before)
    }

    static func lastSegment(_ configuration: DiskTier.Configuration) -> String? {
        (try? FileManager.default.contentsOfDirectory(atPath: configuration.directory))?
            .filter { $0.hasPrefix("segment-") }.sorted().last
    }
}
