// SPDX-License-Identifier: Apache-2.0

import HTTPCaching

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How long ``CachingHTTPClient`` leaves a key alone after the network failed for it:
/// exponential backoff with full jitter.
///
/// After the n-th failure in a row the client waits a random time between zero and
/// `min(maximum, initial × 2ⁿ⁻¹)` before it asks the origin for that key again. While it waits,
/// requests for the key make no network call: they answer with stale data where the policy
/// allows, else with the last error (code ``CachingClientError/Code/backingOff``). A success ends
/// the backoff. Failures are transport failures and 5xx responses, and 429 (Too Many Requests).
public struct Backoff: Hashable, Sendable {
    /// The ceiling of the first wait.
    public var initial: Duration
    /// The largest ceiling.
    public var maximum: Duration

    /// Creates a backoff policy.
    /// - Parameters:
    ///   - initial: the ceiling of the first wait (default 1 second).
    ///   - maximum: the largest ceiling (default 60 seconds).
    public init(initial: Duration = .seconds(1), maximum: Duration = .seconds(60)) {
        precondition(initial >= .zero && maximum >= initial, "Backoff: need 0 <= initial <= maximum")
        self.initial = initial
        self.maximum = maximum
    }

    /// No backoff: every request may go to the network.
    public static let disabled = Backoff(initial: .zero, maximum: .zero)

    /// The ceiling of the wait after `failures` failures in a row (at least 1).
    func ceiling(afterFailures failures: Int) -> Double {
        let exponent = UInt64(min(max(failures, 1) - 1, 62))
        return min(maximum.seconds, initial.seconds * Double(UInt64(1) << exponent))
    }
}

/// The backoff state of every key that failed, behind the client's lock.
struct BackoffTable {
    struct State {
        var failures: Int
        var until: Date
        var lastError: CachingClientError
    }
    private var states: [String: State] = [:]

    /// The state of `key` when it is backing off at `now`.
    func backingOff(_ key: String, now: Date) -> State? {
        guard let state = states[key], now < state.until else { return nil }
        return state
    }

    /// Records a failure and returns the time the key backs off until.
    @discardableResult
    mutating func recordFailure(
        _ key: String,
        error: CachingClientError,
        now: Date,
        policy: Backoff,
        random: (ClosedRange<Double>) -> Double
    ) -> Date {
        let failures = (states[key]?.failures ?? 0) + 1
        let wait = random(0...policy.ceiling(afterFailures: failures))
        let until = now.addingTimeInterval(wait)
        states[key] = State(failures: failures, until: until, lastError: error)
        // Keep the table small: forget keys whose backoff ended long ago.
        if states.count > 4096 {
            states = states.filter { $0.value.until.addingTimeInterval(policy.maximum.seconds) > now }
        }
        return until
    }

    mutating func recordSuccess(_ key: String) {
        if !states.isEmpty { states[key] = nil }
    }
}
