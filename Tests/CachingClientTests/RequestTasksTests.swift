// SPDX-License-Identifier: Apache-2.0

import Dispatch
import Synchronization
import Testing

@testable import CachingClient

/// The tasks the client starts on a request's behalf prefer the executor the request runs on
/// when it set one with ``RequestTasks/run(on:_:)``.
@Suite struct RequestTasksTests {
    /// A task executor that runs its jobs on a queue of its own and tells whether the caller runs
    /// there.
    final class QueueExecutor: TaskExecutor {
        private let queue = DispatchQueue(label: "RequestTasksTests")
        private let key = DispatchSpecificKey<Bool>()

        init() {
            queue.setSpecific(key: key, value: true)
        }

        var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == true }

        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
        }
    }

    /// Whether a flight's work runs on `executor` once it resumed from a suspension.
    static func flightResumesOn(_ executor: QueueExecutor) async -> Bool? {
        await SingleFlight<String, Bool>().value(for: "k") {
            await Task.yield()
            return executor.isCurrent
        }
    }

    @Test func aFlightsWorkResumesOnTheRequestsExecutor() async {
        let executor = QueueExecutor()
        let onExecutor = await RequestTasks.run(on: executor) { await Self.flightResumesOn(executor) }
        #expect(onExecutor == true)
    }

    /// The reason ``RequestTasks`` exists: a preference alone does not reach an unstructured task.
    @Test func aPreferenceAloneDoesNotReachTheFlightsTask() async {
        let executor = QueueExecutor()
        let onExecutor = await withTaskExecutorPreference(executor) { await Self.flightResumesOn(executor) }
        #expect(onExecutor == false)
    }

    @Test func aDeadlinesWorkResumesOnTheRequestsExecutor() async {
        let executor = QueueExecutor()
        let onExecutor = await RequestTasks.run(on: executor) {
            await withDeadline(.seconds(600), clock: ContinuousClock()) {
                await Task.yield()
                return executor.isCurrent
            }
        }
        #expect(onExecutor == true)
    }

    @Test func aBodysPumpRunsOnTheRequestsExecutor() async {
        let executor = QueueExecutor()
        let reads = Mutex<[Bool]>([])
        let parts = Mutex<[[UInt8]]>([[1, 2, 3], [4]])
        let body = StreamedBody(retainingUpTo: 1 << 20)
        let source = ResponseBodySource(
            next: {
                reads.withLock { $0.append(executor.isCurrent) }
                await Task.yield()
                return parts.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            },
            cancel: {}
        )
        await RequestTasks.run(on: executor) {
            body.pump(source, idleTimeout: .seconds(600), clock: ContinuousClock(), store: { _ in nil })
            _ = await body.settled()
        }
        #expect(reads.withLock { $0 } == [true, true, true])
    }
}
