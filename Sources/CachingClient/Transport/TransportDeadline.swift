// SPDX-License-Identifier: Apache-2.0

import Synchronization

/// `work`'s value if it comes within `timeout`, waited on `clock`; else `work` is cancelled and
/// the answer is a ``CachingClientError`` with code ``CachingClientError/Code/timeout``.
///
/// The transports' one deadline for a whole exchange, head and body: waited on one clock only,
/// so that an injected clock alone decides (with the head's time read on another clock, a head
/// slowed by a busy machine once left a test's body no time at all).
package func withExchangeDeadline<Value: Sendable>(
    _ timeout: Duration,
    clock: any Clock<Duration>,
    _ work: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    let result = await withDeadline(timeout, clock: clock) { () async -> Result<Value, any Error> in
        do {
            return .success(try await work())
        } catch {
            return .failure(error)
        }
    }
    guard let result else {
        throw CachingClientError(code: .timeout, message: "the whole response did not arrive in time")
    }
    return try result.get()
}

/// `work`'s value, or nil when `timeout` passed on `clock` before it came. `work` is then
/// cancelled, and this returns once it has ended (it runs in a task of its own, which the
/// caller's cancellation cancels too).
///
/// The deadline is a ``DeadlineTimer``: on the continuous clock an entry in the shared
/// ``DeadlineWheel``, taken out when `work` ends, not a sleeping task whose timer outlives it.
package func withDeadline<Value: Sendable>(
    _ timeout: Duration,
    clock: any Clock<Duration>,
    _ work: @escaping @Sendable () async -> Value
) async -> Value? {
    let race = DeadlineRace()
    // Immediate: the work starts on this thread, up to its first suspension (a request handed to
    // its connection), as the task group's immediate child did before.
    let task = Task.immediate(executorPreference: RequestTasks.executor) {
        let value = await work()
        race.finish()
        return value
    }
    // Work that ended without suspending needs no deadline.
    let timer =
        race.hasEnded
        ? nil
        : DeadlineTimer(after: timeout, clock: clock) {
            if race.expire() { task.cancel() }
        }
    let value = await withTaskCancellationHandler {
        await task.value
    } onCancel: {
        task.cancel()
    }
    timer?.cancel()
    return race.hasExpired ? nil : value
}

/// Who ended one ``withDeadline(_:clock:_:)`` first: its work or its deadline.
private final class DeadlineRace: Sendable {
    private static let running: UInt8 = 0
    private static let finished: UInt8 = 1
    private static let expired: UInt8 = 2

    private let state = Atomic<UInt8>(DeadlineRace.running)

    /// Records that the work ended first, unless the deadline came before.
    func finish() {
        _ = state.compareExchange(expected: Self.running, desired: Self.finished, ordering: .acquiringAndReleasing)
    }

    /// Records that the deadline came first. Returns false when the work had ended.
    func expire() -> Bool {
        state.compareExchange(expected: Self.running, desired: Self.expired, ordering: .acquiringAndReleasing)
            .exchanged
    }

    var hasEnded: Bool { state.load(ordering: .acquiring) != Self.running }
    var hasExpired: Bool { state.load(ordering: .acquiring) == Self.expired }
}
