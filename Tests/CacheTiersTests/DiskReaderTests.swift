// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Synchronization
import Testing

@testable import CacheTiers

/// Reads running on many tasks while the writer appends, retires and compacts segments.
@Suite struct DiskReaderTests {
    static let keyCount = 200
    static let readerCount = 8

    static func key(_ index: Int) -> CacheKey { CacheKey("stress/\(index)") }

    /// A value that names its key and version; odd versions compress (a repeated stamp), even ones do
    /// not (random bytes), so that both decoding paths are checked.
    static func value(key: CacheKey, version: Int) -> [UInt8] {
        let size = 300 + (version &* 977) % 3800
        if version % 2 == 0 {
            return SampleData.versioned(key: key.string, version: version, size: size)
        }
        let stamp = Array("\(key.string)#\(version)|".utf8)
        var bytes = stamp
        while bytes.count < size { bytes += stamp }
        return bytes
    }

    /// Whether `bytes` is exactly the value of some version of `key`.
    static func isAValue(of key: CacheKey, _ bytes: [UInt8]) -> Bool {
        let prefix = Array("\(key.string)#".utf8)
        guard bytes.starts(with: prefix), let bar = bytes[prefix.count...].firstIndex(of: UInt8(ascii: "|")),
            let version = Int(String(decoding: bytes[prefix.count..<bar], as: UTF8.self))
        else { return false }
        return bytes == value(key: key, version: version)
    }

    static func configuration(
        _ directory: TemporaryDirectory,
        encryption: DiskEncryption? = nil
    ) -> DiskTier.Configuration {
        // 64 KiB segments under a 320 KiB capacity: a segment retires every few dozen writes.
        DiskTier.Configuration(
            directory: directory.path,
            capacityBytes: 320 << 10,
            segmentBytes: 64 << 10,
            fsync: .never,
            compactionThreshold: 0.9,
            encryption: encryption
        )
    }

    /// Eight tasks read at random while the writer overwrites, removes, retires (capacity) and
    /// compacts; every byte of every hit is checked, and no read ever meets a damaged record.
    @Test(arguments: [false, true])
    func readersSeeWholeRecordsWhileSegmentsRetireAndCompact(encrypted: Bool) async throws {
        try await withTemporaryDirectory("disk-reader-stress") { directory in
            let encryption =
                encrypted ? DiskEncryption(key: try EncryptionKey(bytes: [UInt8](repeating: 7, count: 32))) : nil
            let tier = try DiskTier(configuration: Self.configuration(directory, encryption: encryption))
            for index in 0..<Self.keyCount {
                try await tier.set(
                    CacheEntry(value: Self.value(key: Self.key(index), version: 0), storedAt: Date()),
                    for: Self.key(index)
                )
            }
            let progress = StressProgress()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for reader in 0..<Self.readerCount {
                    group.addTask {
                        var generator = SplitMix64(seed: UInt64(reader + 1))
                        while !progress.done.load(ordering: .relaxed) {
                            // A read does not suspend: yield, so that the writer gets a thread
                            // of the cooperative pool (two threads on a two-core machine).
                            await Task.yield()
                            let key = Self.key(Int(generator.next() % UInt64(Self.keyCount)))
                            guard let entry = await tier.entry(for: key) else { continue }
                            progress.hits.add(1, ordering: .relaxed)
                            if !Self.isAValue(of: key, entry.value) { progress.wrong.add(1, ordering: .relaxed) }
                        }
                    }
                }
                group.addTask {
                    defer { progress.done.store(true, ordering: .relaxed) }
                    var generator = SplitMix64(seed: 99)
                    for step in 1...2000 {
                        let index = Int(generator.next() % UInt64(Self.keyCount))
                        let key = Self.key(index)
                        if step % 17 == 0 {
                            try await tier.remove(key)
                        } else {
                            let value = Self.value(key: key, version: step)
                            try await tier.set(CacheEntry(value: value, storedAt: Date()), for: key)
                        }
                        if step % 100 == 0 { progress.compacted.add(try await tier.compact(), ordering: .relaxed) }
                    }
                }
                try await group.waitForAll()
            }
            let statistics = await tier.statistics
            #expect(progress.wrong.load(ordering: .relaxed) == 0)
            #expect(progress.hits.load(ordering: .relaxed) > 0)
            #expect(statistics.corruptRecords == 0)
            #expect(statistics.authenticationFailures == 0)
            #expect(statistics.evictions + statistics.secondChances > 0, "segments were retired")
            #expect(progress.compacted.load(ordering: .relaxed) > 0, "segments were compacted")
            try await tier.close()
        }
    }

    /// A segment retired while a reader holds it stays readable through the reader's reference,
    /// and its descriptor closes when the reader lets go.
    @Test func aRetiredSegmentStaysReadableForAReaderInFlight() throws {
        try withTemporaryDirectoryNow("disk-reader-handle") { directory in
            let store = try DiskStore(configuration: Self.configuration(directory))
            let key = Self.key(1)
            try store.set(CacheEntry(value: Self.value(key: key, version: 2), storedAt: Date()), for: key)
            let digest = store.reader.digest(for: key)
            guard let (location, reference) = store.index.stripe(for: digest).lookup(digest) else {
                Issue.record("no entry")
                return
            }
            try store.removeAll()  // deletes the segment the entry was in
            #expect(store.entry(for: key) == nil)
            let bytes = try DiskReader.readRecord(location, from: reference.segment.file)
            #expect(bytes.map { $0.withUnsafeBytes { RecordFormat.verifiedHeader($0) } != nil } == true)
            try store.close()
        }
    }

    /// Reads of a closed tier miss; reopening publishes a new reader.
    @Test func readsMissWhileClosedAndHitAfterReopen() async throws {
        try await withTemporaryDirectory("disk-reader-reopen") { directory in
            let tier = try DiskTier(configuration: Self.configuration(directory))
            let key = Self.key(3)
            try await tier.set(CacheEntry(value: Self.value(key: key, version: 1), storedAt: Date()), for: key)
            try await tier.close()
            #expect(await tier.entry(for: key) == nil)
            try await tier.reopen(encryption: nil)
            #expect(await tier.entry(for: key)?.value == Self.value(key: key, version: 1))
            #expect(tier.cachedEntry(for: key) != nil)
            try await tier.close()
        }
    }
}

/// `withTemporaryDirectory` for a synchronous body.
private func withTemporaryDirectoryNow<T>(_ label: String, _ body: (TemporaryDirectory) throws -> T) rethrows -> T {
    let directory = TemporaryDirectory(label)
    defer { directory.remove() }
    return try body(directory)
}

/// What the stress test's tasks share.
private final class StressProgress: Sendable {
    let done = Atomic<Bool>(false)
    let hits = Atomic<Int>(0)
    let wrong = Atomic<Int>(0)
    let compacted = Atomic<Int>(0)
}
