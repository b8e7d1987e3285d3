// SPDX-License-Identifier: Apache-2.0

extension WriteThroughQueue {
    /// When a removal the shared tier failed is tried again if no other operation comes first:
    /// after `first`, doubled for each failure in a row up to `longest`, each delay jittered
    /// down by up to half so that instances that lost the database together do not come back
    /// together.
    package struct RetryDelays: Sendable {
        package var first: Duration
        package var longest: Duration
        package var clock: any Clock<Duration>

        package init(
            first: Duration = .seconds(1),
            longest: Duration = .seconds(60),
            clock: any Clock<Duration> = ContinuousClock()
        ) {
            self.first = first
            self.longest = longest
            self.clock = clock
        }

        /// The delay after `failures` failures in a row (at least one), before its jitter.
        func delay(afterFailures failures: Int) -> Duration {
            var delay = first
            for _ in 1..<max(1, min(failures, 32)) where delay < longest { delay *= 2 }
            return min(delay, longest)
        }
    }
}
