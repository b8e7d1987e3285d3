// SPDX-License-Identifier: Apache-2.0

#if Tools
import Foundation

/// The `--json` file: `{"machine": {…}, "results": [{"workload": …, "subject": "LayeredCache" |
/// "URLCache" | a reference, "implementation": the type measured, "entries": …, "valueBytes": …,
/// "tasks": …, "opsPerSecond": …, "p50Nanos": …, "p99Nanos": …, "p999Nanos": …, …}]}`; absent
/// figures are left out.
enum ResultExport {
    struct Machine: Encodable {
        var date: String
        var cores: Int
        var quick: Bool
        var loadAverageBefore: String
        var loadAverageAfter: String
        var wallSeconds: Double
    }

    struct Document: Encodable {
        var machine: Machine
        var results: [BenchmarkResult]
    }

    static func write(_ results: [BenchmarkResult], machine: Machine, to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(Document(machine: machine, results: results))
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// The 1-minute load average (Linux), to tell a disturbed run from a quiet one.
    static func loadAverage() -> String {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "unknown" }
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }
}

extension BenchmarkResult: Encodable {
    enum CodingKeys: String, CodingKey {
        case workload, subject, implementation, detail, entries, valueBytes, tasks, opsPerSecond
        case megabytesPerSecond, p50Nanos, p99Nanos, p999Nanos, ratio, hitRatios, bytesOnDisk
        case compressionRatio, skipped
    }

    /// `subject` is the family ("LayeredCache", "URLCache", or a reference's own name) and
    /// `implementation` the type measured; figures that are absent or not finite are left out.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(workload, forKey: .workload)
        try container.encode(subjectFamily, forKey: .subject)
        try container.encode(subject, forKey: .implementation)
        try container.encode(detail, forKey: .detail)
        try container.encodeIfPresent(entries, forKey: .entries)
        try container.encodeIfPresent(valueBytes, forKey: .valueBytes)
        try container.encodeIfPresent(tasks, forKey: .tasks)
        let figures: [(CodingKeys, Double?)] = [
            (.opsPerSecond, opsPerSecond), (.megabytesPerSecond, megabytesPerSecond), (.p50Nanos, p50Nanos),
            (.p99Nanos, p99Nanos), (.p999Nanos, p999Nanos), (.ratio, ratio), (.compressionRatio, compressionRatio),
        ]
        for (key, value) in figures where value?.isFinite == true { try container.encode(value!, forKey: key) }
        try container.encodeIfPresent(hitRatios, forKey: .hitRatios)
        try container.encodeIfPresent(bytesOnDisk, forKey: .bytesOnDisk)
        try container.encodeIfPresent(skipped, forKey: .skipped)
    }
}
#endif
