// SPDX-License-Identifier: Apache-2.0

import Foundation

/// One row of the results table.
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
}

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
        let sorted = perOperation.sorted()
        let total = perOperation.reduce(0, +) * Double(operationsEach)
        return (
            percentile(sorted, 0.5),
            percentile(sorted, 0.99),
            Double(perOperation.count * operationsEach) / total * 1e9
        )
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
