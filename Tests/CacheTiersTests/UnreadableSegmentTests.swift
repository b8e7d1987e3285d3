// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import SystemPackage
import Testing

@testable import CacheTiers

/// One segment that cannot be read costs its own entries: every other key still answers with its
/// own bytes, the damage is reported once, and writes and compaction go on (issue 33, item 4).
@Suite struct UnreadableSegmentTests {
    static let keyCount = 200
    static let valueSize = 2000
    /// The segment made unreadable: one in the middle of the log.
    static let damaged: UInt32 = 3

    static func value(_ index: Int) -> [UInt8] {
        versionedValue("k\(index)", version: index, size: valueSize)
    }

    static func newValue(_ index: Int) -> [UInt8] {
        versionedValue("new\(index)", version: 1, size: valueSize)
    }

    /// Fills a directory of 64 KiB segments and closes it.
    /// - Returns: the configuration and the segment each key's record is in.
    func fill(_ directory: TemporaryDirectory, logger: LogRecording) throws -> (DiskTier.Configuration, [UInt32]) {
        var configuration = diskConfiguration(directory, segment: 64 << 10)
        configuration.logger = logger.logger()
        let store = try DiskStore(configuration: configuration)
        for index in 0..<Self.keyCount {
            try store.set(entry(Self.value(index)), for: CacheKey("k\(index)"))
        }
        let homes = try (0..<Self.keyCount).map { index in
            try #require(store.index[store.reader.digest(for: CacheKey("k\(index)"))]?.segment)
        }
        try #require(store.order.count > 4 && homes.contains(Self.damaged))
        try store.close()
        return (configuration, homes)
    }

    /// The segment file is replaced by a directory of its name (unreadable even to root), with or
    /// without the index snapshot: the tier opens, the other segments' keys hit with their own
    /// bytes, the damaged segment's keys miss, one corrupt record and one log line report it, and
    /// later writes, compaction and a second reopen work.
    @Test(arguments: [true, false])
    func aSegmentThatCannotBeOpenedCostsOnlyItsEntries(keepSnapshot: Bool) async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let log = LogRecording()
        let (configuration, homes) = try fill(directory, logger: log)
        let cache = directory.appending("cache")
        if !keepSnapshot { try FileManager.default.removeItem(atPath: cache + "/index.lcx") }
        let path = cache + "/" + CacheDirectory.segmentFileName(Self.damaged)
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)

        let tier = try DiskTier(configuration: configuration)
        try await expectOnlyTheDamagedSegmentMissing(tier, homes: homes)
        #expect(await tier.statistics.corruptRecords == 1)
        #expect(log.all.filter { $0.contains("unreadable segment") }.count == 1)

        // Writes go on (in new segments, above the damaged one's number), and compaction works.
        for index in 0..<100 {
            try await tier.set(entry(Self.newValue(index)), for: CacheKey("new\(index)"))
        }
        for index in 0..<Self.keyCount where index % 3 != 0 && homes[index] != Self.damaged {
            #expect(try await tier.remove(CacheKey("k\(index)")))
        }
        #expect(try await tier.compact() > 0)
        try await tier.close()

        // The next open reports the segment again (once) and serves everything else.
        let reopened = try DiskTier(configuration: configuration)
        for index in 0..<Self.keyCount {
            let found = await reopened.entry(for: CacheKey("k\(index)"))
            if homes[index] == Self.damaged || index % 3 != 0 {
                #expect(found == nil, "k\(index)")
            } else {
                #expect(found?.value == Self.value(index), "k\(index)")
            }
        }
        for index in 0..<100 {
            #expect(await reopened.entry(for: CacheKey("new\(index)"))?.value == Self.newValue(index))
        }
        #expect(await reopened.statistics.corruptRecords == 1)
        try await reopened.close()
        #expect(FileManager.default.fileExists(atPath: path))
    }

    /// The segment is cut after the tier opened (its records are gone from under it): reads of its
    /// keys miss, each dropped once; the other keys hit; compaction drops the segment instead of
    /// failing, and the tier goes on.
    @Test func aSegmentDamagedAfterOpenCostsOnlyItsEntries() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let log = LogRecording()
        let (configuration, homes) = try fill(directory, logger: log)
        let tier = try DiskTier(configuration: configuration)
        let path = directory.appending("cache/" + CacheDirectory.segmentFileName(Self.damaged))
        // Cut in place (the tier's open descriptor sees it), not replaced.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: UInt64(DiskStore.segmentHeaderSize + 10))
        try handle.close()

        try await expectOnlyTheDamagedSegmentMissing(tier, homes: homes)
        // Asked again, a dropped key is a plain miss: reported once.
        let damagedCount = homes.filter { $0 == Self.damaged }.count
        try await expectOnlyTheDamagedSegmentMissing(tier, homes: homes)
        #expect(await tier.statistics.corruptRecords == damagedCount)
        #expect(try await tier.compact() >= 1)
        try await tier.set(entry([1, 2, 3]), for: "after")
        #expect(await tier.entry(for: "after")?.value == [1, 2, 3])
        try await tier.close()
    }

    private func expectOnlyTheDamagedSegmentMissing(_ tier: DiskTier, homes: [UInt32]) async throws {
        for index in 0..<Self.keyCount {
            let found = await tier.entry(for: CacheKey("k\(index)"))
            if homes[index] == Self.damaged {
                #expect(found == nil, "k\(index) was in the damaged segment")
            } else {
                #expect(found?.value == Self.value(index), "k\(index)")
            }
        }
    }
}
