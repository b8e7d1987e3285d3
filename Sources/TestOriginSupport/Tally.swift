// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import Synchronization

/// A count that tasks wait on: ``wait(for:)`` returns once it reaches a number.
final class Tally: Sendable {
    private let state = Mutex<(count: Int, waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)])>(
        (0, [])
    )

    /// The count.
    var count: Int { state.withLock { $0.count } }

    /// Adds `amount` (one by default), and resumes the tasks that waited for the new count.
    func increment(by amount: Int = 1) {
        let ready = state.withLock { state in
            state.count += amount
            let count = state.count
            defer { state.waiters.removeAll { $0.count <= count } }
            return state.waiters.filter { $0.count <= count }.map(\.continuation)
        }
        for continuation in ready { continuation.resume() }
    }

    /// Returns once the count is at least `count`.
    func wait(for count: Int) async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state in
                if state.count >= count { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if done { continuation.resume() }
        }
    }
}
#endif
