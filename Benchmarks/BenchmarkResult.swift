// SPDX-License-Identifier: Apache-2.0

#if Tools
/// One row of the results table (and of the `--json` file).
struct BenchmarkResult: Sendable {
    var workload: String
    var subject: String
    var detail: String
    /// Throughput in megabytes (10^6 bytes) per second of uncompressed data, when it applies.
    var megabytesPerSecond: Double?
    var opsPerSecond: Double?
    var p50Nanos: Double?
    var p99Nanos: Double?
    /// Ours ÷ the reference, on the row that has a reference in the same group.
    var ratio: Double?
    var p999Nanos: Double?
    /// Entries the cache held while measured, when the workload depends on it.
    var entries: Int?
    /// Bytes per value, when the workload has one size.
    var valueBytes: Int?
    /// Concurrent tasks, when more than the one calling task.
    var tasks: Int?
    /// Hits ÷ reads per tier ("memory", "disk"), for the mixed workload.
    var hitRatios: [String: Double]?
    /// Bytes the files take on disk (allocated blocks) and value bytes ÷ those bytes.
    var bytesOnDisk: Int?
    var compressionRatio: Double?
    /// Why the row has no figures (for example "skipped: > 120 s").
    var skipped: String?
    /// The `--svg` chart's series this row belongs to, when it is plotted against entries.
    var series: String?

    /// Copies the percentiles and throughput of `summary` into the row.
    mutating func take(_ summary: LatencySummary) {
        opsPerSecond = summary.opsPerSecond
        p50Nanos = summary.p50
        p99Nanos = summary.p99
        p999Nanos = summary.p999
    }

    /// "URLCache" for Foundation's rows, "LayeredCache" for ours, the subject itself for the rest
    /// (raw liblz4, calibration controls).
    var subjectFamily: String {
        if subject.hasPrefix("URLCache") { return "URLCache" }
        let ours = [
            "MemoryTier", "MemoryShard", "DiskTier", "DiskStore", "TieredCache", "ResponseCache", "LayeredCache",
        ]
        if ours.contains(where: { subject.hasPrefix($0) }) || subject.hasPrefix("CachingHTTPClient") {
            return "LayeredCache"
        }
        return subject
    }
}
#endif
