// SPDX-License-Identifier: Apache-2.0

#if Tools
import CacheTestSupport
import CacheTiers
import Foundation
import PostgresCacheTier

extension SharedTierBenchmarks {
    /// What a shared hit does beside its query, on the CPU alone: the key's row digest, the row's
    /// checks and its decoding into an entry, plain (a CRC-32C, LZ4) and sealed (an HMAC-SHA256
    /// digest, AES-256-GCM open, LZ4), for the 1 KiB JSON row of the hit benchmark. Plain and
    /// sealed alternate round by round; each figure is a batch's mean per read, recorded per read.
    /// Needs no server: it tells how much of a sealed hit's cost over a bare `SELECT` is the
    /// cipher's.
    static func rowDecoding(quick: Bool) throws -> [BenchmarkResult] {
        let key = CacheKey("GET https://api.example.com/v1/items/7?size=1024")
        let entry = CacheEntry(value: SampleData.json(approximateBytes: 1024, seed: 7), storedAt: Date())
        let sealer = RowSealer(key: .random())
        let subjects: [(name: String, detail: String, row: SharedRow, sealer: RowSealer?)] = [
            (
                "SharedRow.decode, plain", "digest, CRC-32C, LZ4 decode",
                try SharedRow.encode(entry, for: key, expiresAtMillis: .max, sealer: nil), nil
            ),
            (
                "SharedRow.decode, sealed", "HMAC digest, CRC-32C, AES-GCM open, LZ4 decode",
                try SharedRow.encode(entry, for: key, expiresAtMillis: .max, sealer: sealer), sealer
            ),
        ]
        let batch = 100
        let batches = quick ? 50 : 500
        var recorders = subjects.map { _ in LatencyRecorder() }
        let keyBytes = Array(key.string.utf8)
        for _ in 0..<batches {
            for (index, subject) in subjects.enumerated() {
                let start = ContinuousClock.now
                for _ in 0..<batch {
                    // The digest as `entry(for:)` makes it, then the row it selected.
                    blackHole(subject.sealer?.digests(of: keyBytes) ?? [Int64(bitPattern: key.digest)])
                    guard let decoded = try? subject.row.decode(for: key, sealer: subject.sealer),
                        decoded.value.count == entry.value.count
                    else { throw BenchmarkFailure("a row did not decode") }
                    blackHole(decoded)
                }
                let elapsed = start.duration(to: .now)
                recorders[index].record(
                    Double(elapsed.components.attoseconds) / 1e9 + Double(elapsed.components.seconds) * 1e9,
                    operations: batch
                )
            }
        }
        let plain = recorders[0].summary.p50
        return subjects.enumerated().map { index, subject in
            var row = BenchmarkResult(
                workload: "shared-tier row decoding, 1 KiB JSON (CPU, no server)",
                subject: subject.name,
                detail: subject.detail
            )
            row.take(recorders[index].summary)
            row.valueBytes = 1024
            row.ratio = recorders[index].summary.p50 / plain
            return row
        }
    }
}
#endif
