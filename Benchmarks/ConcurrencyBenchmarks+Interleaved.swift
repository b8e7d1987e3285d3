// SPDX-License-Identifier: Apache-2.0

#if Tools
import CacheTestSupport
import Foundation
import Synchronization

extension ConcurrencyBenchmarks {
    /// A worker that does no memory access at all: `operations × 20` steps of a random number
    /// generator. Its scaling is what the machine gives the run at that moment (2.00x at 2 tasks
    /// or more when both cores are free), so the other rows of the same round can be judged by it.
    static let control: Worker = { task, operations in
        var generator = SplitMix64(seed: UInt64(task) &+ 1)
        var sum: UInt64 = 0
        for _ in 0..<operations * 20 { sum &+= generator.next() }
        blackHole(sum)
    }

    /// A worker whose every operation increments one counter that all tasks share: with two or
    /// more tasks, each increment moves the counter's cache line from the other core. What that
    /// costs is a property of the machine at that moment (on this virtual machine it changes from
    /// run to run with where the host places the two vCPUs), and it is what a hit that writes a
    /// shared line (a lock, a reference count) pays: the arithmetic control cannot see it.
    static let sharedLineControl: Worker = { _, operations in
        for _ in 0..<operations { sharedLine.wrappingAdd(1, ordering: .relaxed) }
    }

    private static let sharedLine = Atomic<UInt64>(0)

    /// Runs `worker` as `tasks` child tasks sharing `operations` (at least one each) and returns
    /// their aggregate operations per second.
    static func opsPerSecond(tasks: Int, operations: Int, _ worker: @escaping Worker) async -> Double {
        let each = max(1, operations / tasks)
        let clock = ContinuousClock()
        let start = clock.now
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<tasks { group.addTask { await worker(task, each) } }
        }
        return Double(each * tasks) / Harness.nanoseconds(of: clock.now - start) * 1e9
    }

    /// As ``sweep(workload:operations:referenceOperations:rounds:valueBytes:entries:subjects:)``,
    /// but every round measures every task count, in alternating order, and a control row is
    /// added.
    ///
    /// Task counts measured one after the other (all rounds of 1 task, then of 2, …) take their
    /// figures at different moments: on a shared machine a build starting on the other core
    /// during the 8- or 64-task rounds looks like a scaling problem of the subject. Interleaved,
    /// a disturbance falls on every task count alike, and the control shows it.
    static func interleavedSweep(
        workload: String,
        operations: Int,
        referenceOperations: Int? = nil,
        rounds: Int,
        valueBytes: Int,
        entries: Int,
        subjects: [(name: String, worker: Worker)]
    ) async -> [BenchmarkResult] {
        let subjects = subjects + [("control", control), ("shared-line control", sharedLineControl)]
        // samples[task count index][subject index]
        var samples = Array(
            repeating: Array(repeating: [Double](), count: subjects.count),
            count: taskCounts.count
        )
        for round in 0..<rounds {
            let taskOrder = round % 2 == 0 ? Array(taskCounts.indices) : Array(taskCounts.indices.reversed())
            for position in taskOrder {
                let tasks = taskCounts[position]
                let subjectOrder = round % 2 == 0 ? Array(subjects.indices) : Array(subjects.indices.reversed())
                for index in subjectOrder {
                    let total = index == 0 ? (referenceOperations ?? operations) : operations
                    samples[position][index].append(
                        await opsPerSecond(tasks: tasks, operations: total, subjects[index].worker)
                    )
                }
            }
        }
        let medians = samples.map { $0.map(Harness.median) }
        var results: [BenchmarkResult] = []
        for (position, tasks) in taskCounts.enumerated() {
            for (index, subject) in subjects.enumerated() {
                let scaling = medians[position][index] / medians[0][index]
                let isControl = subject.name.hasSuffix("control")
                var note = ""
                if subject.name == "control" {
                    note = ", arithmetic only (the cores the run got)"
                } else if isControl {
                    // Two tasks run at once on two cores: each write took this long.
                    let nanoseconds = 1e9 * Double(min(tasks, 2)) / medians[position][index]
                    note = String(format: ", one shared atomic: %.0f ns a write", nanoseconds)
                }
                results.append(
                    BenchmarkResult(
                        workload: "\(workload), \(tasks) task\(tasks == 1 ? "" : "s")",
                        subject: subject.name,
                        detail: String(format: "%.2fx of 1 task", scaling) + note,
                        // The control's "operations" are not gets: only its scaling means anything.
                        opsPerSecond: isControl ? nil : medians[position][index],
                        ratio: isControl ? nil : medians[position][index] / medians[position][0],
                        entries: entries,
                        valueBytes: valueBytes,
                        tasks: tasks
                    )
                )
            }
        }
        return results
    }
}
#endif
