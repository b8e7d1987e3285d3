// SPDX-License-Identifier: Apache-2.0

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
    try await withThrowingTaskGroup(of: Value?.self) { group in
        // Immediate: the exchange starts on this thread (no wait for a thread of the pool before
        // the request is sent); the timer does not hurry.
        group.addImmediateTask { try await work() }
        group.addTask {
            try await clock.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw CachingClientError(code: .timeout, message: "the whole response did not arrive in time")
        }
        return value
    }
}
