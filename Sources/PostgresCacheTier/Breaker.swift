// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
/// When the database last failed, and so whether to try it now: after a failure the tier is
/// bypassed for a backoff that doubles up to a maximum; the first operation after it is the probe,
/// and a success closes the breaker. A plain struct, kept under the tier's lock.
struct Breaker: Sendable {
    let initialBackoff: Duration
    let maximumBackoff: Duration
    private(set) var openUntil: ContinuousClock.Instant?
    private(set) var backoff: Duration
    /// Failures in a row.
    private(set) var failures = 0

    init(initialBackoff: Duration, maximumBackoff: Duration) {
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
        self.backoff = initialBackoff
    }

    /// Whether an operation may go to the database at `now`.
    func allows(at now: ContinuousClock.Instant) -> Bool {
        guard let openUntil else { return true }
        return now >= openUntil
    }

    /// Records a success; returns whether the breaker was open (the database is back).
    mutating func recordSuccess() -> Bool {
        let wasOpen = failures > 0
        openUntil = nil
        backoff = initialBackoff
        failures = 0
        return wasOpen
    }

    /// Records a failure at `now`: bypass until the backoff has passed, then double it.
    mutating func recordFailure(at now: ContinuousClock.Instant) {
        failures += 1
        openUntil = now + backoff
        backoff = min(backoff * 2, maximumBackoff)
    }
}
#endif
