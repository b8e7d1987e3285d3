// SPDX-License-Identifier: Apache-2.0

#if Tools
import CacheTestSupport
import CacheTiers
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Bytes on disk and compression ratio: 100 values (20 with `--quick`) of each size, a JSON API corpus and random
/// bytes, stored in a `DiskTier` (closed afterwards, so its index snapshot is counted) and in a
/// disk `URLCache`. Bytes on disk are the allocated blocks of every file in the cache's
/// directory; the compression ratio is value bytes ÷ bytes on disk (above 1 means smaller than
/// the values). Ratio = URLCache's bytes on disk ÷ ours (above 1: we take less space).
enum FootprintBenchmarks {
    static func run(quick: Bool) async throws -> [BenchmarkResult] {
        try await run(quick: quick, sizes: nil)
    }

    static func run(quick: Bool, sizes: [Int]?) async throws -> [BenchmarkResult] {
        var results: [BenchmarkResult] = []
        let entries = quick ? 20 : 100
        for size in sizes ?? ValueSizeBenchmarks.defaultSizes {
            for corpus in ["JSON API corpus", "random bytes"] {
                let bodies = (0..<entries).map {
                    corpus == "random bytes"
                        ? SampleData.random(count: size, seed: UInt64($0))
                        : SampleData.json(approximateBytes: size, seed: UInt64($0))
                }
                let valueBytes = bodies.reduce(0) { $0 + $1.count }
                let ours = try await ourFootprint(bodies)
                let theirs = urlCacheFootprint(bodies)
                let workload = "bytes on disk, \(corpus), \(ValueSizeBenchmarks.label(size)) values"
                func row(
                    _ subject: String,
                    _ measured: (allocated: Int, apparent: Int),
                    ratio: Double
                ) -> BenchmarkResult {
                    BenchmarkResult(
                        workload: workload,
                        subject: subject,
                        detail: String(
                            format: "%d values, %.2f MB of values: %.2f MB on disk (%.2f MB apparent), %.2fx",
                            entries,
                            Double(valueBytes) / 1e6,
                            Double(measured.allocated) / 1e6,
                            Double(measured.apparent) / 1e6,
                            Double(valueBytes) / Double(measured.allocated)
                        ),
                        ratio: ratio,
                        entries: entries,
                        valueBytes: size,
                        bytesOnDisk: measured.allocated,
                        compressionRatio: Double(valueBytes) / Double(measured.allocated)
                    )
                }
                results.append(row("URLCache", theirs, ratio: 1))
                results.append(row("DiskTier", ours, ratio: Double(theirs.allocated) / Double(ours.allocated)))
            }
        }
        return results
    }

    static func ourFootprint(_ bodies: [[UInt8]]) async throws -> (allocated: Int, apparent: Int) {
        let directory = TemporaryDirectory("bench-footprint")
        defer { directory.remove() }
        let tier = try DiskTier(configuration: DiskTierBenchmarks.configuration(directory))
        let now = Date()
        for (index, body) in bodies.enumerated() {
            _ = try await tier.set(CacheEntry(value: body, storedAt: now), for: CacheKey(URLCacheSubject.url(index)))
        }
        try await tier.close()
        return bytesOnDisk(directory.path)
    }

    static func urlCacheFootprint(_ bodies: [[UInt8]]) -> (allocated: Int, apparent: Int) {
        let subject = URLCacheSubject(disk: "bench-footprint-urlcache")
        subject.fill(to: bodies.count, bodies: bodies)
        return bytesOnDisk(subject.directory!.path)
    }

    /// The allocated blocks and the sizes of every file under `path`.
    static func bytesOnDisk(_ path: String) -> (allocated: Int, apparent: Int) {
        var allocated = 0
        var apparent = 0
        let names = FileManager.default.enumerator(atPath: path)?.compactMap { $0 as? String } ?? []
        for name in names {
            var status = stat()
            guard lstat(path + "/" + name, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { continue }
            allocated += Int(status.st_blocks) * 512
            apparent += Int(status.st_size)
        }
        return (allocated, apparent)
    }
}
#endif
