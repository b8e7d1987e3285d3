// SPDX-License-Identifier: Apache-2.0

import Synchronization

/// A first-come, first-served lock that suspends instead of blocking: the store's commits (which
/// read, then write, the tiers) run one at a time.
final class CommitLock: Sendable {
    private struct State {
        var isLocked = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    func withLock<Result>(_ body: () async throws -> Result) async rethrows -> Result {
        await lock()
        defer { unlock() }
        return try await body()
    }

    /// Waits until no commit runs (for readers that saw one under way).
    func waitUntilIdle() async {
        await lock()
        unlock()
    }

    private func lock() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let acquired = state.withLock { state in
                if state.isLocked {
                    state.waiters.append(continuation)
                    return false
                }
                state.isLocked = true
                return true
            }
            if acquired { continuation.resume() }
        }
    }

    private func unlock() {
        let next = state.withLock { state in
            // The lock passes to the first waiter; it stays locked.
            guard !state.waiters.isEmpty else {
                state.isLocked = false
                return nil as CheckedContinuation<Void, Never>?
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
