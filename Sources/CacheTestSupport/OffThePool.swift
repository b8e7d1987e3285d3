// SPDX-License-Identifier: Apache-2.0

import Foundation

/// Runs blocking work (a child process and its pipes, a wait for threads) on a thread of its own
/// and awaits its result.
///
/// A synchronous test, or a blocking call in an async one, holds one of the concurrency pool's
/// threads for as long as it waits, and on a 2-core machine the pool has two: two such tests at
/// once stop every other test of the run (a child process that ran 30 s once made an unrelated
/// test's 30 s wait fail). Blocking work goes through here instead.
package func offThePool<Value: Sendable>(
    _ work: @escaping @Sendable () throws -> Value
) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// Polls `condition` every millisecond until it holds or until this waiter has waited `timeout`.
///
/// The time counted is the waiter's: a gap of more than 50 ms between two polls is time the
/// machine spent elsewhere (every thread of the pool held by other tests), and counts as 50 ms,
/// so that a stall of the whole run does not fail a wait that the stall itself delayed.
/// - Returns: whether the condition held, and the wall time from the first poll to the last.
package func poll(
    timeout: Duration,
    _ condition: @Sendable () async -> Bool
) async throws -> (held: Bool, elapsed: Duration) {
    let clock = ContinuousClock()
    let start = clock.now
    var last = start
    var waited = Duration.zero
    while !(await condition()) {
        let now = clock.now
        waited += min(now - last, .milliseconds(50))
        last = now
        guard waited < timeout else { return (false, now - start) }
        // A real pause, not a yield: the condition waits on another task or process, and a
        // waiter that only yields keeps a thread (of two, on a 2-core machine) from it.
        try await Task.sleep(for: .milliseconds(1))
    }
    return (true, clock.now - start)
}
