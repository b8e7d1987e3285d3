// SPDX-License-Identifier: Apache-2.0

#if Tools
import Foundation
import Histogram

/// Timing helpers. Every figure is the median of several rounds, and the subjects compared in one
/// group run interleaved, round by round, so that noise on this machine falls on both alike.
enum Harness {
    static func nanoseconds(of duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) * 1e9 + Double(attoseconds) / 1e9
    }

    /// Runs `body` once and returns the elapsed nanoseconds.
    @inline(never)
    static func time(_ body: () throws -> Void) rethrows -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        try body()
        return nanoseconds(of: clock.now - start)
    }

    /// Runs each subject `rounds` times, interleaved, and returns each one's median elapsed time.
    static func interleavedMedians(rounds: Int, subjects: [() throws -> Void]) throws -> [Double] {
        var samples = Array(repeating: [Double](), count: subjects.count)
        for round in 0..<rounds {
            // Alternate the order so that neither subject always runs first.
            let order = round % 2 == 0 ? Array(subjects.indices) : Array(subjects.indices.reversed())
            for index in order {
                samples[index].append(try time(subjects[index]))
            }
        }
        return samples.map(median)
    }

    static func median(_ values: [Double]) -> Double {
        precondition(!values.isEmpty)
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// p50, p99 and throughput of per-operation latencies in nanoseconds, each the mean of
    /// `operationsEach` operations timed together (1 when each was timed alone).
    static func summarize(
        _ perOperation: [Double],
        operationsEach: Int = 1
    ) -> (p50: Double, p99: Double, opsPerSecond: Double) {
        var recorder = LatencyRecorder()
        for nanos in perOperation { recorder.record(nanos * Double(operationsEach), operations: operationsEach) }
        let summary = recorder.summary
        return (summary.p50, summary.p99, summary.opsPerSecond)
    }

    /// One row per subject of an interleaved run: each figure the median of the subject's rounds,
    /// the ratio its throughput ÷ the first subject's (the group's reference).
    static func rows(
        workload: String,
        subjects: [(subject: String, detail: String)],
        rounds: [[(p50: Double, p99: Double, opsPerSecond: Double)]]
    ) -> [BenchmarkResult] {
        let reference = median(rounds[0].map(\.opsPerSecond))
        return zip(subjects, rounds).map { subject, rounds in
            let opsPerSecond = median(rounds.map(\.opsPerSecond))
            return BenchmarkResult(
                workload: workload,
                subject: subject.subject,
                detail: subject.detail,
                opsPerSecond: opsPerSecond,
                p50Nanos: median(rounds.map(\.p50)),
                p99Nanos: median(rounds.map(\.p99)),
                ratio: opsPerSecond / reference
            )
        }
    }

    static func percentile(_ sortedValues: [Double], _ fraction: Double) -> Double {
        precondition(!sortedValues.isEmpty)
        let index = min(sortedValues.count - 1, Int((Double(sortedValues.count) * fraction).rounded(.down)))
        return sortedValues[index]
    }
}

/// Keeps the optimizer from dropping work whose result is otherwise unused.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// Percentiles and throughput of one round, or the medians of several.
struct LatencySummary: Sendable {
    var p50: Double
    var p99: Double
    var p999: Double
    var opsPerSecond: Double

    /// Each figure's median over the rounds.
    static func median(_ rounds: [LatencySummary]) -> LatencySummary {
        LatencySummary(
            p50: Harness.median(rounds.map(\.p50)),
            p99: Harness.median(rounds.map(\.p99)),
            p999: Harness.median(rounds.map(\.p999)),
            opsPerSecond: Harness.median(rounds.map(\.opsPerSecond))
        )
    }
}

/// Latencies of one round in an HdrHistogram (3 significant digits, nanoseconds).
///
/// Callers read the clock around the operation and record after the second read, so recording
/// (a few nanoseconds: an index computation and an increment) is never inside a timed interval.
/// Operations timed together in a batch are recorded as their mean, once per operation.
/// Throughput is the operations over the sum of the timed intervals.
struct LatencyRecorder {
    private var histogram = Histogram<UInt64>(numberOfSignificantValueDigits: .three)
    private var totalNanos = 0.0
    private var operations = 0

    init() {}

    /// Records `nanos` spent on `count` operations timed together.
    @inline(__always)
    mutating func record(_ nanos: Double, operations count: Int = 1) {
        let mean = UInt64(max(1, (nanos / Double(count)).rounded()))
        histogram.record(mean, count: UInt64(count))
        totalNanos += nanos
        operations += count
    }

    var summary: LatencySummary {
        precondition(operations > 0, "no latency recorded")
        return LatencySummary(
            p50: Double(histogram.valueAtPercentile(50)),
            p99: Double(histogram.valueAtPercentile(99)),
            p999: Double(histogram.valueAtPercentile(99.9)),
            opsPerSecond: Double(operations) / totalNanos * 1e9
        )
    }
}
#endif
