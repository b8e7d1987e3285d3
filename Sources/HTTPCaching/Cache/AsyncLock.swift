// SPDX-License-Identifier: Apache-2.0

import CacheTiers
import Synchronization

/// The locks under which a store reads and replaces a URL's record (its variant index above
/// all): one of 64, by the primary key's digest.
final class VariantIndexLocks: Sendable {
    private let locks = (0..<64).map { _ in AsyncLock() }

    func lock(for key: CacheKey) -> AsyncLock {
        locks[Int(truncatingIfNeeded: key.digest % UInt64(locks.count))]
    }
}

/// A lock that waits without blocking a thread: for read-modify-write sequences that suspend.
/// First come, first served; a waiting task is not cancellable (the sections it guards are short).
final class AsyncLock: Sendable {
    private struct State {
        var isLocked = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    func lock() async {
        // A free lock is taken without a continuation (every store takes one of these locks).
        if state.withLock({ Self.take(&$0) }) { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let acquired = state.withLock { state in
                guard Self.take(&state) else {
                    state.waiters.append(continuation)
                    return false
                }
                return true
            }
            if acquired { continuation.resume() }
        }
    }

    /// Takes the lock when it is free.
    private static func take(_ state: inout State) -> Bool {
        guard !state.isLocked else { return false }
        state.isLocked = true
        return true
    }

    func unlock() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiters.isEmpty else {
                state.isLocked = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
