// SPDX-License-Identifier: Apache-2.0

#if Tools
import CacheTestSupport
import CacheTiers
import Foundation
import PostgresCacheTier
import PostgresNIO

extension SharedTierBenchmarks {
    /// An instance (memory and disk) holds 10,000 keys; its listener is cut, 10,000 removals of
    /// them are logged meanwhile (written straight into the log, as other instances' removals
    /// would be, without a notification), and the listener reconnects and replays them: the time
    /// of that replay, from its first query to the last key dropped from memory and disk.
    static func replay(url: String, bare: PostgresClient, quick: Bool) async throws -> BenchmarkResult {
        let count = quick ? 1000 : 10_000
        let table = "benchreplay\(UInt32.random(in: 0...UInt32.max))"
        let directory = TemporaryDirectory("bench-replay")
        defer { directory.remove() }
        let disk = try DiskTier(configuration: .init(directory: directory.path, capacityBytes: 256 << 20))
        // A reconnection 500 ms after the cut: time enough to log every removal first.
        let b = try instance(
            url: url,
            table: table,
            configure: {
                $0.initialBackoff = .milliseconds(500)
                $0.maximumBackoff = .milliseconds(500)
            },
            lowerTiers: [disk]
        )
        let keys = (0..<count).map { CacheKey("GET https://api.example.com/r/\($0)") }
        let record = try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await b.cache.run() }
            defer { group.cancelAll() }
            try await until("listening") { b.shared.isListening }
            let value = SampleData.json(approximateBytes: 1024)
            // Straight into memory and disk: nothing is queued for the shared tier meanwhile.
            for key in keys {
                let entry = CacheEntry(value: value, storedAt: Date())
                b.cache.memory.set(entry, for: key)
                _ = try await disk.set(entry, for: key)
            }
            let log = "\(table)_v\(PostgresSharedTier.schemaVersion)_log"
            _ = try await bare.query(
                """
                SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE query LIKE 'LISTEN%' AND query LIKE '%' || \(table) || '%'
                """
            ).collect()
            try await until("cut") { !b.shared.isListening }
            _ = try await bare.query(
                """
                INSERT INTO \(unescaped: log) (payload, logged_at)
                SELECT 'lc1|bench|k|' || encode(convert_to('GET https://api.example.com/r/' || i, 'UTF8'), 'base64'),
                    \(Date().millisecondsSince1970)
                FROM generate_series(0, \(count - 1)) AS i
                """
            ).collect()
            try await until("replayed") { b.shared.isListening && (b.shared.lastReplay?.entries ?? 0) >= count }
            for key in [keys[0], keys[count - 1]] where b.cache.memory.entry(for: key) != nil {
                throw BenchmarkFailure("the replay left \(key)")
            }
            guard await disk.entry(for: keys[count / 2]) == nil else {
                throw BenchmarkFailure("the replay left \(keys[count / 2]) on disk")
            }
            return b.shared.lastReplay!
        }
        try? await b.cache.close()
        let nanos = Harness.nanoseconds(of: record.duration)
        var row = BenchmarkResult(
            workload: "shared-tier replay of \(count) missed invalidations",
            subject: "PostgresSharedTier log replay",
            detail: String(format: "after a reconnect, memory + disk: %.0f ms", nanos / 1e6)
        )
        row.p50Nanos = nanos
        row.opsPerSecond = Double(record.entries) / nanos * 1e9
        row.entries = record.entries
        return row
    }

    /// Waits (polling every millisecond, 30 s at most) until `condition` holds.
    private static func until(_ what: String, _ condition: () async -> Bool) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(30)
        while await !condition() {
            guard clock.now < deadline else { throw BenchmarkFailure("shared replay: not \(what) within 30 s") }
            try await Task.sleep(for: .milliseconds(1))
        }
    }
}
#endif
