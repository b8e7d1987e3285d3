// SPDX-License-Identifier: Apache-2.0

import CacheTiers

/// The pending deadlines of many operations on one clock, watched by one task that runs only
/// while a deadline is pending and ends each at most one tick (10 ms by default) after its time.
///
/// Why not a task that sleeps for each operation: on Linux a cancelled `Task.sleep` returns at
/// once, but the timer behind it (the sleep's job and a dispatch timer source) stays allocated
/// until the deadline would have passed. cache-proxy gave each exchange 30 seconds, and its
/// resident memory grew with the request rate rather than with the cache's budget: heaptrack
/// counted 14 MB of such timers at 1,400 misses a second. Here a deadline is an entry in a
/// table, removed when its operation ends: a lock and a dictionary write, no task, no timer.
///
/// Deadlines are kept in buckets of one tick each. The watch sleeps until the end of the earliest
/// bucket that holds a deadline; a deadline earlier than that starts a new watch, and the old one
/// ends when it wakes.
package final class DeadlineWheel<C: Clock>: Sendable where C.Duration == Duration {
    /// A deadline's place in the wheel, to take it out.
    package struct Ticket: Sendable, Hashable {
        fileprivate let bucket: Int64
        fileprivate let id: UInt64
    }

    /// The clock the deadlines are read on.
    private let clock: C
    /// How late a deadline may end.
    private let tick: Duration
    private let tickNanoseconds: Int64
    /// Bucket zero ends here.
    private let origin: C.Instant

    private struct State {
        /// Each bucket's deadlines; a bucket is removed when its last deadline is.
        var buckets: [Int64: [UInt64: @Sendable () -> Void]] = [:]
        /// The numbers of the buckets created and not yet passed, ascending. A bucket whose
        /// deadlines were all cancelled stays listed until the watch passes it.
        var order: [Int64] = []
        var nextID: UInt64 = 0
        var count = 0
        /// The bucket the running watch wakes for; nil when no watch runs.
        var watchingUntil: Int64?
        /// The running watch's number: an older watch ends when it wakes.
        var generation: UInt64 = 0
    }

    // Touched by every exchange on every thread: a lock ThreadSanitizer sees.
    private let state = VisibleLock(State())

    /// A timeout longer than this has no deadline (about ten years).
    static var longest: Duration { .seconds(315_360_000) }

    /// Creates a wheel reading `clock`, whose deadlines end at most `tick` late.
    package init(clock: C, tick: Duration = .milliseconds(10)) {
        precondition(tick > .zero, "tick must be positive")
        self.clock = clock
        self.tick = tick
        self.tickNanoseconds = max(1, Self.nanoseconds(tick))
        self.origin = clock.now
    }

    /// The deadlines pending.
    package var pendingCount: Int { state.withLock { $0.count } }

    /// Whether a watch runs (it runs while a deadline is pending, or until it next wakes).
    package var isWatching: Bool { state.withLock { $0.watchingUntil != nil } }

    /// Calls `expire` once `timeout` has passed (at most one tick later), unless the ticket is
    /// cancelled first.
    /// - Returns: the ticket, or nil for a timeout beyond ten years: that deadline never comes.
    package func schedule(after timeout: Duration, _ expire: @escaping @Sendable () -> Void) -> Ticket? {
        guard timeout <= Self.longest else { return nil }
        let deadline = clock.now.advanced(by: max(timeout, .zero))
        let nanoseconds = Self.nanoseconds(origin.duration(to: deadline))
        // The first bucket that ends at or after the deadline.
        let bucket = (nanoseconds + tickNanoseconds - 1) / tickNanoseconds
        let (ticket, newWatch): (Ticket, UInt64?) = state.withLock { state in
            let id = state.nextID
            state.nextID &+= 1
            if state.buckets[bucket] == nil {
                state.buckets[bucket] = [:]
                Self.insert(bucket, into: &state.order)
            }
            state.buckets[bucket]![id] = expire
            state.count += 1
            var newWatch: UInt64?
            if state.watchingUntil.map({ bucket < $0 }) ?? true {
                state.generation &+= 1
                state.watchingUntil = bucket
                newWatch = state.generation
            }
            return (Ticket(bucket: bucket, id: id), newWatch)
        }
        // An unstructured task, as `SingleFlight`'s work is: the watch serves every caller's
        // deadline, not the one whose deadline started it, and it ends when none is pending.
        if let newWatch { Task { await self.watch(newWatch) } }
        return ticket
    }

    /// Takes a deadline out: it will not expire. Nothing happens when it expired already.
    package func cancel(_ ticket: Ticket) {
        state.withLock { state in
            guard state.buckets[ticket.bucket]?.removeValue(forKey: ticket.id) != nil else { return }
            state.count -= 1
            if state.buckets[ticket.bucket]!.isEmpty { state.buckets[ticket.bucket] = nil }
        }
    }

    /// Ends the deadlines whose bucket has passed, then sleeps until the next bucket that holds
    /// one, until none is pending or a newer watch took over.
    private func watch(_ generation: UInt64) async {
        while true {
            let nanoseconds = Self.nanoseconds(origin.duration(to: clock.now))
            let passed = nanoseconds >= 0 ? nanoseconds / tickNanoseconds : -1
            let (due, next): ([@Sendable () -> Void], Int64?) = state.withLock { state in
                guard state.generation == generation else { return ([], nil) }
                var due: [@Sendable () -> Void] = []
                var dropped = 0
                for bucket in state.order {
                    if bucket > passed, state.buckets[bucket] != nil { break }
                    dropped += 1
                    if let expiring = state.buckets.removeValue(forKey: bucket) {
                        due.append(contentsOf: expiring.values)
                        state.count -= expiring.count
                    }
                }
                state.order.removeFirst(dropped)
                state.watchingUntil = state.order.first
                return (due, state.order.first)
            }
            for expire in due { expire() }
            guard let next else { return }
            do {
                try await clock.sleep(until: origin.advanced(by: tick * Int(next)), tolerance: tick)
            } catch {
                // The watch is never cancelled; were it, it would look again.
            }
        }
    }

    /// Inserts `bucket`, not yet listed, into the ascending `order`: at the end, mostly.
    private static func insert(_ bucket: Int64, into order: inout [Int64]) {
        guard let last = order.last, bucket < last else {
            order.append(bucket)
            return
        }
        var low = 0
        var high = order.count - 1
        while low < high {
            let middle = (low + high) / 2
            if order[middle] < bucket { low = middle + 1 } else { high = middle }
        }
        order.insert(bucket, at: low)
    }

    /// `duration` in whole nanoseconds, saturating (a duration of more than 292 years).
    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        let (sum, overflowAgain) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        guard !overflowAgain else { return seconds < 0 ? .min : .max }
        return sum
    }
}

extension DeadlineWheel where C == ContinuousClock {
    /// The process's wheel on the continuous clock, with a tick of 10 ms.
    package static var shared: DeadlineWheel<ContinuousClock> { sharedContinuousWheel }
}

private let sharedContinuousWheel = DeadlineWheel(clock: ContinuousClock())

/// A deadline on any clock: in the shared ``DeadlineWheel`` on the continuous clock (what
/// production code passes), else a task sleeping on the clock (a test's manual clock).
package struct DeadlineTimer: Sendable {
    private enum Kind: Sendable {
        case wheel(DeadlineWheel<ContinuousClock>.Ticket?)
        case task(Task<Void, Never>)
    }

    private let kind: Kind

    /// Calls `expire` once `timeout` has passed on `clock`, unless ``cancel()`` comes first.
    package init(after timeout: Duration, clock: any Clock<Duration>, _ expire: @escaping @Sendable () -> Void) {
        if clock is ContinuousClock {
            kind = .wheel(DeadlineWheel.shared.schedule(after: timeout, expire))
        } else {
            kind = .task(
                Task {
                    do {
                        try await clock.sleep(for: timeout)
                    } catch {
                        return
                    }
                    expire()
                }
            )
        }
    }

    /// Takes the deadline out: `expire` is not called, unless it was already.
    package func cancel() {
        switch kind {
        case .wheel(let ticket): if let ticket { DeadlineWheel.shared.cancel(ticket) }
        case .task(let task): task.cancel()
        }
    }
}
