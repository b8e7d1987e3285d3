// SPDX-License-Identifier: Apache-2.0

import Dispatch

/// A task executor that runs its jobs on a queue of its own and tells whether the caller runs
/// there: for tests of where the work of a task that prefers an executor (an event loop, in
/// cache-proxy) runs.
package final class QueueExecutor: TaskExecutor {
    private let queue = DispatchQueue(label: "QueueExecutor")
    private let key = DispatchSpecificKey<Bool>()

    package init() {
        queue.setSpecific(key: key, value: true)
    }

    /// Whether the caller runs on this executor's queue.
    package var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == true }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
