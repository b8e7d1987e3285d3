// SPDX-License-Identifier: Apache-2.0

import Synchronization

/// The throwaway PostgreSQL server of a test run (scripts/with-postgres.sh's), as a resource the
/// tests of every suite share: a test that crashes and restarts it holds it alone
/// (``exclusive(_:)``), and a test of another suite that needs it up holds it beside the others
/// (``shared(_:)``).
///
/// Swift Testing runs suites in parallel, and `.serialized` orders the tests of one suite only:
/// a crash test of the shared tier's suite stopped the server under a proxy test, whose instances
/// then heard a purge late or not at all, and under the privacy property test, which failed on a
/// `PSQLError`. Tests of the suite that crashes it are serialized among themselves and need no
/// gate.
///
/// First come, first served: a test waiting to hold it alone lets no later test share it first.
package final class DatabaseServerGate: Sendable {
    /// The gate of the run's server.
    package static let server = DatabaseServerGate()
    private struct Waiter {
        let isExclusive: Bool
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var sharers = 0
        var isHeldAlone = false
        var waiters: [Waiter] = []

        /// Whether a new holder of this kind may go in now, ahead of nobody.
        func admits(exclusive: Bool) -> Bool {
            guard waiters.isEmpty, !isHeldAlone else { return false }
            return !exclusive || sharers == 0
        }

        /// Lets in the waiters at the front that may go in now: one exclusive, or every sharer
        /// up to the next exclusive one.
        mutating func admitWaiters() -> [CheckedContinuation<Void, Never>] {
            var admitted: [CheckedContinuation<Void, Never>] = []
            while let first = waiters.first, !isHeldAlone {
                if first.isExclusive {
                    guard sharers == 0, admitted.isEmpty else { break }
                    isHeldAlone = true
                } else {
                    sharers += 1
                }
                admitted.append(waiters.removeFirst().continuation)
            }
            return admitted
        }
    }

    private let state = Mutex(State())

    /// A gate of its own (for its tests); the run's server has ``server``.
    package init() {}

    /// How many wait to go in.
    package var waitingCount: Int { state.withLock { $0.waiters.count } }

    /// Runs `body` while no test holds the server alone.
    package func shared<Result>(_ body: () async throws -> Result) async rethrows -> Result {
        await acquire(exclusive: false)
        defer { release(exclusive: false) }
        return try await body()
    }

    /// Runs `body` while no other test holds the server (to stop and start it).
    package func exclusive<Result>(_ body: () async throws -> Result) async rethrows -> Result {
        await acquire(exclusive: true)
        defer { release(exclusive: true) }
        return try await body()
    }

    private func acquire(exclusive: Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let admitted = state.withLock { state in
                guard state.admits(exclusive: exclusive) else {
                    state.waiters.append(Waiter(isExclusive: exclusive, continuation: continuation))
                    return false
                }
                if exclusive { state.isHeldAlone = true } else { state.sharers += 1 }
                return true
            }
            if admitted { continuation.resume() }
        }
    }

    private func release(exclusive: Bool) {
        let admitted = state.withLock { state in
            if exclusive { state.isHeldAlone = false } else { state.sharers -= 1 }
            return state.admitWaiters()
        }
        for continuation in admitted { continuation.resume() }
    }
}
