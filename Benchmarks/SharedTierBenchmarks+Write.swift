// SPDX-License-Identifier: Apache-2.0

#if Tools
import CacheTestSupport
import CacheTiers
import Foundation
import NIOCore
import PostgresCacheTier
import PostgresNIO

extension SharedTierBenchmarks {
    /// A shared-tier write of 1 KiB JSON with one task: `PostgresSharedTier.set` (encode and
    /// checksum, the deadline, and the upsert that refuses a write another instance's later
    /// removal covers) beside a bare postgres-nio upsert of the same row's bytes without that check,
    /// paired as the hits are. 1,000 removals of other keys come first, so that the remembered
    /// removals have rows to look through, as they do in use.
    static func writes(tier: PostgresSharedTier, bare: PostgresClient, quick: Bool) async throws -> [BenchmarkResult] {
        for index in 0..<1_000 {
            try await tier.remove(CacheKey("GET https://api.example.com/v1/gone/\(index)"), broadcast: false)
        }
        let keys = (0..<256).map { CacheKey("GET https://api.example.com/v1/written/\($0)") }
        let entries = keys.indices.map {
            CacheEntry(value: SampleData.json(approximateBytes: 1024, seed: UInt64($0)), storedAt: Date())
        }
        let expiresAt = Date().addingTimeInterval(3_600).millisecondsSince1970
        let rows = try keys.indices.map {
            try SharedRow.encode(entries[$0], for: keys[$0], expiresAtMillis: expiresAt, sealer: nil)
        }
        let table = "\(tier.configuration.table)_v\(PostgresSharedTier.schemaVersion)"
        let (ours, physical) = try await measurePaired(
            tasks: 1,
            reads: quick ? 200 : 2_000,
            count: keys.count
        ) { index in
            try await tier.set(entries[index], for: keys[index])
        } bare: { index in
            let row = rows[index]
            _ = try await bare.query(
                """
                INSERT INTO \(unescaped: table)
                    (digest, key, metadata, value, flags, value_length, stored_at, expires_at, size, checksum)
                VALUES (\(row.digest), \(ByteBuffer(bytes: row.key)), \(ByteBuffer(bytes: row.metadata)),
                    \(ByteBuffer(bytes: row.value)), \(row.flags.rawValue), \(row.valueLength), \(row.storedAtMillis),
                    \(row.expiresAtMillis), \(row.size), \(row.checksum))
                ON CONFLICT (digest) DO UPDATE SET key = EXCLUDED.key, metadata = EXCLUDED.metadata,
                    value = EXCLUDED.value, flags = EXCLUDED.flags, value_length = EXCLUDED.value_length,
                    stored_at = EXCLUDED.stored_at, expires_at = EXCLUDED.expires_at, size = EXCLUDED.size,
                    checksum = EXCLUDED.checksum
                """
            ).collect()
        }
        func row(_ subject: String, _ detail: String, _ summary: LatencySummary) -> BenchmarkResult {
            var row = BenchmarkResult(workload: "shared-tier write 1 KiB JSON", subject: subject, detail: detail)
            row.take(summary)
            row.tasks = 1
            row.valueBytes = 1024
            return row
        }
        var ourRow = row("PostgresSharedTier.set", "1 task, + encode, removals checked", ours)
        ourRow.ratio = ours.p50 / physical.p50
        return [row("postgres-nio upsert (bare)", "1 task, same row, no removal check", physical), ourRow]
    }
}
#endif
