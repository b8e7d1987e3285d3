// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Metrics
import MetricsTestKit
import Testing

@testable import CacheTiers

@Suite struct DiskTierServiceTests {
    @Test func metricsCountHitsMissesBytesAndCorruption() async throws {
        try await withTemporaryDirectory { directory in
            let metrics = TestMetrics()
            var configuration = diskConfiguration(directory)
            configuration.metricsFactory = metrics
            let tier = try DiskTier(configuration: configuration)
            try await tier.set(entry(SampleData.json(approximateBytes: 8000)), for: "a")
            _ = await tier.entry(for: "a")
            _ = await tier.entry(for: "b")
            #expect(try metrics.expectCounter("layeredcache_disk_hits_total").totalValue == 1)
            #expect(try metrics.expectCounter("layeredcache_disk_misses_total").totalValue == 1)
            let value = try metrics.expectCounter("layeredcache_disk_value_bytes_total").totalValue
            let stored = try metrics.expectCounter("layeredcache_disk_stored_value_bytes_total").totalValue
            #expect(stored > 0 && stored < value)
            #expect(try metrics.expectCounter("layeredcache_disk_bytes_written_total").totalValue > stored)
            #expect(try metrics.expectTimer("layeredcache_disk_recovery_duration").values.count == 1)

            try FileSurgery.flip(directory.appending("cache/" + CacheDirectory.segmentFileName(1)), at: 200)
            #expect(await tier.entry(for: "a") == nil)
            #expect(try metrics.expectCounter("layeredcache_disk_corrupt_records_total").totalValue == 1)
            #expect(await tier.statistics.corruptRecords == 1)
            try await tier.close()
        }
    }

    /// `run()` stops on cancellation and leaves a snapshot that covers every write, so the next
    /// open replays nothing.
    @Test func runWritesASnapshotWhenCancelled() async throws {
        try await withTemporaryDirectory { directory in
            let tier = try DiskTier(configuration: diskConfiguration(directory))
            for index in 0..<50 {
                try await tier.set(entry(versionedValue("k\(index)", version: 1)), for: CacheKey("k\(index)"))
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await tier.run() }
                group.cancelAll()
                try await group.waitForAll()
            }
            #expect(try DiskStore.verify(directory: directory.appending("cache")).snapshotValid)
            try await tier.close()
            let reopened = try DiskStore(configuration: diskConfiguration(directory))
            #expect(reopened.recovery.usedSnapshot && reopened.recovery.replayedRecords == 0)
            #expect(reopened.index.count == 50)
        }
    }

    @Test func maintenanceCompactsAndSnapshots() async throws {
        try await withTemporaryDirectory { directory in
            let tier = try DiskTier(configuration: diskConfiguration(directory, segment: 64 << 10))
            for index in 0..<300 {
                try await tier.set(
                    entry(versionedValue("k\(index)", version: 1, size: 1000)),
                    for: CacheKey("k\(index)")
                )
            }
            for index in 0..<300 where index % 10 != 0 {
                try await tier.remove(CacheKey("k\(index)"))
            }
            let before = await tier.usage
            await tier.maintain()
            let after = await tier.usage
            #expect(after.bytes < before.bytes)
            #expect(after.entryCount == 30)
            #expect(await tier.entry(for: "k10")?.value == versionedValue("k10", version: 1, size: 1000))
        }
    }

    @Test func closedTierRefusesWork() async throws {
        try await withTemporaryDirectory { directory in
            let tier = try DiskTier(configuration: diskConfiguration(directory))
            try await tier.close()
            let error = try await #require(throws: CacheError.self) { try await tier.set(entry([1]), for: "a") }
            #expect(error.code == .closed)
            #expect(await tier.entry(for: "a") == nil)
        }
    }

    @Test func badConfigurationIsAClearError() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var configuration = diskConfiguration(directory)
        configuration.admissionFraction = 2
        let error = try #require(throws: CacheError.self) { try DiskTier(configuration: configuration) }
        #expect(error.code == .invalidArgument)
    }
}
