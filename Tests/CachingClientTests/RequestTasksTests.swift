// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Synchronization
import Testing

@testable import CachingClient

/// The tasks the client starts on a request's behalf prefer the executor the request runs on
/// when it set one with ``RequestTasks/run(on:_:)``.
@Suite struct RequestTasksTests {
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

    /// Whether the store of a kept body of `bytes` ran on `executor`, when its request prefers it.
    static func storeRunsOn(_ executor: QueueExecutor, bytes: Int) async -> Bool? {
        let stored = Mutex<Bool?>(nil)
        let parts = Mutex<[[UInt8]]>([[UInt8](repeating: 7, count: bytes)])
        let body = StreamedBody(retainingUpTo: 4 << 20)
        let source = ResponseBodySource(next: { parts.withLock { $0.isEmpty ? nil : $0.removeFirst() } }, cancel: {})
        await RequestTasks.run(on: executor) {
            body.pump(
                source,
                idleTimeout: .seconds(600),
                clock: ContinuousClock(),
                store: { whole in
                    stored.withLock { $0 = executor.isCurrent && whole.count == bytes }
                    return nil
                }
            )
            _ = await body.settled()
        }
        return stored.withLock { $0 }
    }

    /// A short body is stored where its request runs; a body over a mebibyte is copied into its
    /// entry on the global executor, not on the request's (an event loop others wait on).
    @Test func onlyALargeBodyIsStoredOffTheRequestsExecutor() async {
        let executor = QueueExecutor()
        #expect(await Self.storeRunsOn(executor, bytes: 1024) == true)
        #expect(await Self.storeRunsOn(executor, bytes: StreamedBody.largeStore + 1) == false)
    }
}
