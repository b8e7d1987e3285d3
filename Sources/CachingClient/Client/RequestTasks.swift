// SPDX-License-Identifier: Apache-2.0

/// Where the tasks the client starts on a request's behalf run: its flight's work, its body's
/// pump, a deadline's race, an event stream's fetch.
///
/// Those are unstructured tasks, and an unstructured task does not inherit the task executor
/// preference of the task that starts it (`withTaskExecutorPreference` reaches child tasks
/// only). A server that runs each connection's requests on one executor (cache-proxy: the
/// connection's event loop) sets ``executor`` with ``run(on:_:)``, and those tasks then prefer
/// it too: a miss resumes where its bytes arrive instead of waking a thread of the global pool
/// to hand each step back.
package enum RequestTasks {
    /// The task executor the request's own tasks prefer; nil (the default): none, the global
    /// concurrent executor.
    @TaskLocal package static var executor: (any TaskExecutor)?

    /// Runs `body` preferring `executor`, and so do the tasks the client starts from it.
    package static func run<Result: Sendable>(
        on executor: any TaskExecutor,
        _ body: () async -> Result
    ) async -> Result {
        await withTaskExecutorPreference(executor) {
            await $executor.withValue(executor) { await body() }
        }
    }
}
