// SPDX-License-Identifier: Apache-2.0

#if Tools
import Foundation

/// Prints results as a fixed-width table.
enum ResultTable {
    static func print(_ results: [BenchmarkResult]) {
        let header = ["workload", "subject", "detail", "MB/s", "ops/s", "p50", "p99", "p999", "ratio"]
        var rows: [[String]] = [header]
        for result in results {
            rows.append([
                result.workload,
                result.subject,
                result.skipped.map { result.detail + "; " + $0 } ?? result.detail,
                result.megabytesPerSecond.map { format($0, digits: 0) } ?? "",
                result.opsPerSecond.map { format($0, digits: 0) } ?? "",
                result.p50Nanos.map(formatNanos) ?? "",
                result.p99Nanos.map(formatNanos) ?? "",
                result.p999Nanos.map(formatNanos) ?? "",
                result.ratio.map { format($0, digits: 2) + "x" } ?? "",
            ])
        }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        for (index, row) in rows.enumerated() {
            let line = row.indices.map { column in
                let cell = row[column]
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                return column < 3 ? cell + padding : padding + cell
            }
            Swift.print(line.joined(separator: "  "))
            if index == 0 { Swift.print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")) }
        }
        Swift.print(
            """

            ratio: ours ÷ the group's reference row (1.00x): URLCache wherever it runs the workload, raw \
            liblz4 for the codec, a direct ResponseCache lookup for the client. A speed ratio (ops/s), \
            except bytes on disk: URLCache's bytes ÷ ours. Higher is better for us everywhere.
            """
        )
    }

    static func format(_ value: Double, digits: Int) -> String {
        guard value.isFinite else { return "-" }
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let rounded = (value * scale).rounded() / scale
        if digits == 0 { return String(Int(rounded)) }
        var text = String(rounded)
        if let dot = text.firstIndex(of: ".") {
            let decimals = text.distance(from: dot, to: text.endIndex) - 1
            if decimals < digits { text += String(repeating: "0", count: digits - decimals) }
        }
        return text
    }

    static func formatNanos(_ nanos: Double) -> String {
        guard nanos.isFinite else { return "-" }
        if nanos < 10_000 { return format(nanos, digits: 0) + " ns" }
        if nanos < 10_000_000 { return format(nanos / 1000, digits: 1) + " µs" }
        return format(nanos / 1_000_000, digits: 1) + " ms"
    }
}
#endif
