// SPDX-License-Identifier: Apache-2.0

#if Tools
import CacheTestSupport
import CacheTiers
import Foundation

/// Encrypted against plain disk tier, in the same run, on the synchronous `DiskStore` (no actor
/// hop, so the ratio is the engine's own).
///
/// - Store: each round stores a batch of fresh keys (fsync `never`, nothing retired); the time per
///   store is the round's time ÷ the batch.
/// - Hit: the keys are stored and read once (page cache warm), then each round reads all of them
///   in a seeded random order; the time per hit is the round's time ÷ the keys.
/// - Values: JSON of 4 KB and 64 KB (compressed before sealing), and 64 KB of random bytes (stored
///   raw: the least work around the cipher, so the worst ratio).
///
/// Plain and encrypted run interleaved, round by round; each figure is the median round. Ratio =
/// encrypted time ÷ plain time (a cost ratio); the goal is at most 1.5×.
enum EncryptionBenchmarks {
    struct Workload {
        var name: String
        var valueBytes: Int
        var value: (Int) -> [UInt8]
    }

    static func run(_ quick: Bool) async throws -> [BenchmarkResult] {
        let workloads = [
            Workload(name: "4 KB JSON", valueBytes: 4096) { SampleData.json(approximateBytes: 4096, seed: UInt64($0)) },
            Workload(name: "64 KB JSON", valueBytes: 65_536) {
                SampleData.json(approximateBytes: 65_536, seed: UInt64($0))
            },
            Workload(name: "64 KB random", valueBytes: 65_536) { SampleData.random(count: 65_536, seed: UInt64($0)) },
        ]
        var results: [BenchmarkResult] = []
        for workload in workloads {
            results += try measure(workload, quick: quick)
        }
        return results
    }

    static func measure(_ workload: Workload, quick: Bool) throws -> [BenchmarkResult] {
        let batch = workload.valueBytes > 8192 ? (quick ? 50 : 200) : (quick ? 200 : 1000)
        let rounds = quick ? 5 : 15
        let values = (0..<16).map(workload.value)
        let plainDirectory = TemporaryDirectory("bench-plain")
        let sealedDirectory = TemporaryDirectory("bench-sealed")
        defer {
            plainDirectory.remove()
            sealedDirectory.remove()
        }
        let plain = try DiskStore(configuration: configuration(plainDirectory, encryption: nil))
        let sealed = try DiskStore(
            configuration: configuration(sealedDirectory, encryption: DiskEncryption(key: .random()))
        )
        defer {
            try? plain.close()
            try? sealed.close()
        }
        let now = Date()

        // Store: fresh keys each round.
        var round = [0, 0]
        let stores = try Harness.interleavedMedians(
            rounds: rounds,
            subjects: [plain, sealed].enumerated().map { index, store in
                {
                    round[index] += 1
                    for item in 0..<batch {
                        let key = CacheKey("https://api.example.com/v1/items/\(round[index])/\(item)")
                        try store.set(CacheEntry(value: values[item % values.count], storedAt: now), for: key)
                    }
                }
            }
        ).map { $0 / Double(batch) }

        // Hit: the last round's keys, warm, in a seeded random order.
        var generator = SplitMix64(seed: 99)
        let order = (0..<batch).shuffled(using: &generator)
        let keys = [plain, sealed].indices.map { index in
            order.map { CacheKey("https://api.example.com/v1/items/\(round[index])/\($0)") }
        }
        for (index, store) in [plain, sealed].enumerated() {
            for key in keys[index] { precondition(store.entry(for: key) != nil) }
        }
        let hits = try Harness.interleavedMedians(
            rounds: rounds,
            subjects: [plain, sealed].enumerated().map { index, store in
                {
                    for key in keys[index] { blackHole(store.entry(for: key)) }
                }
            }
        ).map { $0 / Double(batch) }

        func rows(_ operation: String, _ nanos: [Double]) -> [BenchmarkResult] {
            ["plain", "AES-256-GCM"].indices.map { index in
                BenchmarkResult(
                    workload: "encryption: disk \(operation), \(workload.name)",
                    subject: index == 0 ? "plain" : "AES-256-GCM",
                    detail: index == 0 ? "DiskStore, \(batch) keys" : "DiskStore; ratio = cost ÷ plain (goal ≤ 1.5x)",
                    megabytesPerSecond: Double(workload.valueBytes) / nanos[index] * 1e3,
                    opsPerSecond: 1e9 / nanos[index],
                    p50Nanos: nanos[index],
                    ratio: index == 0 ? nil : nanos[1] / nanos[0]
                )
            }
        }
        return rows("store", stores) + rows("hit", hits)
    }

    static func configuration(_ directory: TemporaryDirectory, encryption: DiskEncryption?) -> DiskTier.Configuration {
        DiskTier.Configuration(directory: directory.path, capacityBytes: 8 << 30, fsync: .never, encryption: encryption)
    }
}
#endif
