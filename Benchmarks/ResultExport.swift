// SPDX-License-Identifier: Apache-2.0

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

    struct Row: Encodable {
        var workload: String
        var subject: String
        var implementation: String
        var detail: String
        var entries: Int?
        var valueBytes: Int?
        var tasks: Int?
        var opsPerSecond: Double?
        var megabytesPerSecond: Double?
        var p50Nanos: Double?
        var p99Nanos: Double?
        var p999Nanos: Double?
        var ratio: Double?
        var hitRatios: [String: Double]?
        var bytesOnDisk: Int?
        var compressionRatio: Double?
        var skipped: String?

        init(_ result: BenchmarkResult) {
            func finite(_ value: Double?) -> Double? { value.flatMap { $0.isFinite ? $0 : nil } }
            workload = result.workload
            subject = result.subjectFamily
            implementation = result.subject
            detail = result.detail
            entries = result.entries
            valueBytes = result.valueBytes
            tasks = result.tasks
            opsPerSecond = finite(result.opsPerSecond)
            megabytesPerSecond = finite(result.megabytesPerSecond)
            p50Nanos = finite(result.p50Nanos)
            p99Nanos = finite(result.p99Nanos)
            p999Nanos = finite(result.p999Nanos)
            ratio = finite(result.ratio)
            hitRatios = result.hitRatios
            bytesOnDisk = result.bytesOnDisk
            compressionRatio = finite(result.compressionRatio)
            skipped = result.skipped
        }
    }

    struct Document: Encodable {
        var machine: Machine
        var results: [Row]
    }

    static func write(_ results: [BenchmarkResult], machine: Machine, to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(Document(machine: machine, results: results.map(Row.init)))
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// The 1-minute load average (Linux), to tell a disturbed run from a quiet one.
    static func loadAverage() -> String {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "unknown" }
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }
}
