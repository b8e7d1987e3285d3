// SPDX-License-Identifier: Apache-2.0

#if Tools
import Foundation

/// The `--svg` chart: p50 latency against entries on log-log axes, one line per series (disk hit,
/// disk store) and subject (LayeredCache, URLCache), each point labelled with its figure, so that
/// it reads without the table. Hand-written SVG, no dependencies.
enum LatencyChart {
    static let width = 1000.0
    static let height = 560.0
    static let left = 90.0
    static let right = 300.0
    static let top = 60.0
    static let bottom = 70.0

    struct Line {
        var series: String
        var subject: String
        var points: [(entries: Double, nanos: Double)]
        var skipped: [Int]
    }

    static func render(_ results: [BenchmarkResult], title: String) -> String {
        var lines: [Line] = []
        for result in results {
            guard let series = result.series, let entries = result.entries else { continue }
            let subject = result.subjectFamily
            var index = lines.firstIndex { $0.series == series && $0.subject == subject }
            if index == nil {
                lines.append(Line(series: series, subject: subject, points: [], skipped: []))
                index = lines.count - 1
            }
            if let nanos = result.p50Nanos, nanos.isFinite, result.skipped == nil {
                lines[index!].points.append((Double(entries), nanos))
            } else if result.skipped != nil {
                lines[index!].skipped.append(entries)
            }
        }
        lines = lines.filter { !$0.points.isEmpty }
        let allPoints = lines.flatMap(\.points)
        guard !allPoints.isEmpty else { return emptyChart(title) }
        let xRange = decades(allPoints.map(\.entries) + lines.flatMap(\.skipped).map(Double.init))
        let yRange = decades(allPoints.map(\.nanos))
        let plotWidth = width - left - right
        let plotHeight = height - top - bottom
        func x(_ value: Double) -> Double {
            left + (log10(value) - xRange.lowerBound) / (xRange.upperBound - xRange.lowerBound) * plotWidth
        }
        func y(_ value: Double) -> Double {
            top + plotHeight - (log10(value) - yRange.lowerBound) / (yRange.upperBound - yRange.lowerBound) * plotHeight
        }

        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            viewBox="0 0 \(Int(width)) \(Int(height))" font-family="Helvetica, Arial, sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(Int(width / 2))" y="26" text-anchor="middle" font-size="16" font-weight="bold">\(escape(title))</text>
            <text x="\(Int(width / 2))" y="46" text-anchor="middle" font-size="12" fill="#555">p50 per operation, \
            lower is better; circles: disk hits (4 KB JSON, page cache warm), squares: stores</text>

            """
        // Grid and tick labels at every decade.
        for decade in Int(xRange.lowerBound)...Int(xRange.upperBound) {
            let position = x(pow(10, Double(decade)))
            svg += line(position, top, position, top + plotHeight, stroke: "#ddd")
            svg += text(position, top + plotHeight + 18, decadeLabel(decade), anchor: "middle")
        }
        for decade in Int(yRange.lowerBound)...Int(yRange.upperBound) {
            let position = y(pow(10, Double(decade)))
            svg += line(left, position, left + plotWidth, position, stroke: "#ddd")
            svg += text(left - 8, position + 4, durationLabel(decade), anchor: "end")
        }
        svg +=
            "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(plotWidth)\" height=\"\(plotHeight)\" fill=\"none\" stroke=\"#333\"/>\n"
        svg += text(left + plotWidth / 2, height - 22, "entries in the cache (log scale)", anchor: "middle", size: 13)
        svg += "<text transform=\"translate(22 \(top + plotHeight / 2)) rotate(-90)\" text-anchor=\"middle\" "
        svg += "font-size=\"13\">p50 latency per operation (log scale)</text>\n"

        // Lines, markers, labels and the legend.
        let palette = ["LayeredCache": "#1f6fd1", "URLCache": "#e0661b"]
        for (number, chartLine) in lines.enumerated() {
            let color = palette[chartLine.subject] ?? "#555"
            let dash = chartLine.series.contains("store") ? " stroke-dasharray=\"7 4\"" : ""
            let sorted = chartLine.points.sorted { $0.entries < $1.entries }
            let path = sorted.map { "\(format(x($0.entries))),\(format(y($0.nanos)))" }.joined(separator: " ")
            svg += "<polyline points=\"\(path)\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"2.5\"\(dash)/>\n"
            for point in sorted {
                let (px, py) = (x(point.entries), y(point.nanos))
                let marker =
                    chartLine.series.contains("store")
                    ? "<rect x=\"\(format(px - 4))\" y=\"\(format(py - 4))\" width=\"8\" height=\"8\" fill=\"\(color)\"/>\n"
                    : "<circle cx=\"\(format(px))\" cy=\"\(format(py))\" r=\"4.5\" fill=\"\(color)\"/>\n"
                svg += marker
                svg += text(
                    px + 7,
                    py - 7,
                    ResultTable.formatNanos(point.nanos),
                    anchor: "start",
                    size: 10,
                    fill: color
                )
            }
            let legendY = top + 10 + Double(number) * 40
            let legendX = left + plotWidth + 20
            svg += "<line x1=\"\(legendX)\" y1=\"\(legendY)\" x2=\"\(legendX + 28)\" y2=\"\(legendY)\" "
            svg += "stroke=\"\(color)\" stroke-width=\"2.5\"\(dash)/>\n"
            let name = chartLine.series.replacingOccurrences(of: ", 4 KB JSON", with: "")
            svg += text(legendX + 36, legendY + 4, "\(chartLine.subject) \(name)", anchor: "start")
            if let first = chartLine.skipped.min() {
                let note = "not run from \(entriesLabel(first)) entries (too slow)"
                svg += text(legendX + 36, legendY + 19, note, anchor: "start", size: 10, fill: "#666")
            }
        }
        svg += "</svg>\n"
        return svg
    }

    static func emptyChart(_ title: String) -> String {
        """
        <svg xmlns="http://www.w3.org/2000/svg" width="600" height="80"><text x="10" y="40">\(escape(title)): \
        no rows to plot (run the disk suite)</text></svg>

        """
    }

    /// The decades (log10) that enclose `values`.
    static func decades(_ values: [Double]) -> ClosedRange<Double> {
        let logs = values.map(log10)
        let low = (logs.min() ?? 0).rounded(.down)
        let high = max(low + 1, (logs.max() ?? 1).rounded(.up))
        return low...high
    }

    static func decadeLabel(_ decade: Int) -> String {
        switch decade {
        case ..<3: String(Int(pow(10, Double(decade))))
        case 3..<6: "\(Int(pow(10, Double(decade - 3))))k"
        default: "\(Int(pow(10, Double(decade - 6))))M"
        }
    }

    static func durationLabel(_ decade: Int) -> String {
        let units = ["ns", "µs", "ms", "s"]
        let unit = min(units.count - 1, max(0, decade / 3))
        return "\(Int(pow(10, Double(decade - unit * 3)))) \(units[unit])"
    }

    static func entriesLabel(_ entries: Int) -> String {
        entries >= 1_000_000 && entries % 1_000_000 == 0
            ? "\(entries / 1_000_000)M" : entries >= 1000 && entries % 1000 == 0 ? "\(entries / 1000)k" : "\(entries)"
    }

    static func line(_ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, stroke: String) -> String {
        "<line x1=\"\(format(x1))\" y1=\"\(format(y1))\" x2=\"\(format(x2))\" y2=\"\(format(y2))\" stroke=\"\(stroke)\"/>\n"
    }

    static func text(
        _ x: Double,
        _ y: Double,
        _ content: String,
        anchor: String,
        size: Int = 12,
        fill: String = "#222"
    ) -> String {
        "<text x=\"\(format(x))\" y=\"\(format(y))\" text-anchor=\"\(anchor)\" font-size=\"\(size)\" "
            + "fill=\"\(fill)\">\(escape(content))</text>\n"
    }

    static func format(_ value: Double) -> String { String(format: "%.1f", value) }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
#endif
