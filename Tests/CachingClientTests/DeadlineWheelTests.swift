// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Synchronization
import Testing

@testable import CachingClient

/// The deadlines of exchanges: an entry in one wheel per clock, taken out (and freed) when the
/// exchange ends, expired at most a tick late, with no task running while none is pending.
@Suite struct DeadlineWheelTests {
    /// Expirations, as they come.
    final class Expired: Sendable {
        let stream: AsyncStream<Int>
        let continuation: AsyncStream<Int>.Continuation
        init() { (stream, continuation) = AsyncStream.makeStream(of: Int.self) }
        func callback(_ number: Int) -> @Sendable () -> Void { { self.continuation.yield(number) } }
    }

    @Test func aDeadlineExpiresOnceItsTickHasPassedAndNotBefore() async throws {
        let clock = TestClock()
        let wheel = DeadlineWheel(clock: clock, tick: .milliseconds(10))
        let expired = Expired()
        _ = wheel.schedule(after: .seconds(1), expired.callback(1))
        #expect(wheel.pendingCount == 1)
        await clock.waitForSleepers(1)
        clock.advance(by: .milliseconds(999))
        // Woken or not, the deadline is still pending.
        await clock.waitForSleepers(1)
        #expect(wheel.pendingCount == 1)
        clock.advance(by: .milliseconds(11))
        var iterator = expired.stream.makeAsyncIterator()
        #expect(await iterator.next() == 1)
        #expect(wheel.pendingCount == 0)
        // Nothing pending: the watch ended, no task sleeps.
        while wheel.isWatching { await Task.yield() }
        #expect(clock.sleeperCount == 0)
    }

    @Test func aCancelledDeadlineIsGoneAtOnceAndNeverExpires() async throws {
        let clock = TestClock()
        let wheel = DeadlineWheel(clock: clock, tick: .milliseconds(10))
        let expired = Expired()
        let tickets = (0..<10_000).map { wheel.schedule(after: .seconds(30), expired.callback($0))! }
        let kept = wheel.schedule(after: .seconds(40), expired.callback(-1))!
        #expect(wheel.pendingCount == 10_001)
        for ticket in tickets { wheel.cancel(ticket) }
        // Taken out when cancelled: nothing of them waits for their time.
        #expect(wheel.pendingCount == 1)
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(31))
        // The watch wakes for the cancelled ones' time, finds nothing, and sleeps for the kept one.
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(10))
        var iterator = expired.stream.makeAsyncIterator()
        #expect(await iterator.next() == -1)
        wheel.cancel(kept)  // expired already: nothing happens
        #expect(wheel.pendingCount == 0)
    }

    @Test func aDeadlineEarlierThanTheOneWatchedForStillExpiresOnTime() async throws {
        let clock = TestClock()
        let wheel = DeadlineWheel(clock: clock, tick: .milliseconds(10))
        let expired = Expired()
        _ = wheel.schedule(after: .seconds(60), expired.callback(60))
        await clock.waitForSleepers(1)
        _ = wheel.schedule(after: .seconds(1), expired.callback(1))
        // A second watch sleeps until the earlier deadline; the first ends when it wakes.
        await clock.waitForSleepers(2)
        clock.advance(by: .seconds(1))
        var iterator = expired.stream.makeAsyncIterator()
        #expect(await iterator.next() == 1)
        #expect(wheel.pendingCount == 1)
        await clock.waitForSleepers(2)
        clock.advance(by: .seconds(59))
        #expect(await iterator.next() == 60)
        #expect(wheel.pendingCount == 0)
    }

    @Test func aTimeoutBeyondTenYearsHasNoDeadline() {
        let wheel = DeadlineWheel(clock: TestClock())
        #expect(wheel.schedule(after: .seconds(Int64.max), {}) == nil)
        #expect(wheel.pendingCount == 0 && !wheel.isWatching)
    }

    @Test func theContinuousClocksWheelExpiresADeadline() async {
        // The production path, on the real clock: a deadline of a millisecond ends within a tick
        // or so (waited on, not slept through).
        let expired = Expired()
        let timer = DeadlineTimer(after: .milliseconds(1), clock: ContinuousClock(), expired.callback(7))
        var iterator = expired.stream.makeAsyncIterator()
        #expect(await iterator.next() == 7)
        timer.cancel()
    }

    @Test func workThatEndsInTimeGivesItsValueAndLeavesNoDeadline() async {
        let clock = TestClock()
        let value = await withDeadline(.seconds(5), clock: clock) { () async -> Int in
            await Task.yield()
            return 42
        }
        #expect(value == 42)
        // The deadline's timer was taken out: nobody sleeps on the clock.
        while clock.sleeperCount > 0 { await Task.yield() }
    }

    @Test func workPastTheDeadlineIsCancelledAndAnsweredNil() async {
        let clock = TestClock()
        let sawCancellation = Atomic(false)
        async let value = withDeadline(.seconds(5), clock: clock) { () async -> Int in
            // Waits on the clock too, far past the deadline: only cancellation ends it.
            do {
                try await clock.sleep(for: .seconds(3600))
            } catch {
                sawCancellation.store(true, ordering: .relaxed)
            }
            return 1
        }
        await clock.waitForSleepers(2)
        clock.advance(by: .seconds(5))
        #expect(await value == nil)
        let cancelled = sawCancellation.load(ordering: .relaxed)
        #expect(cancelled)
    }

    @Test func theCallersCancellationCancelsTheWork() async {
        let clock = TestClock()
        let started = Expired()
        let task = Task {
            await withDeadline(.seconds(3600), clock: clock) { () async -> Bool in
                started.continuation.yield(1)
                do {
                    try await clock.sleep(for: .seconds(7200))
                    return false
                } catch {
                    return true  // cancelled
                }
            }
        }
        var iterator = started.stream.makeAsyncIterator()
        _ = await iterator.next()
        task.cancel()
        // The work saw the cancellation and ended; its value came before any deadline.
        #expect(await task.value == true)
    }

    @Test func anExchangeDeadlineThrowsATimeoutAndPassesOtherErrorsOn() async {
        let clock = TestClock()
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await withExchangeDeadline(.seconds(1), clock: clock) { () async throws -> Int in throw Refused() }
        }
        async let late: Int = withExchangeDeadline(.seconds(1), clock: clock) {
            try await clock.sleep(for: .seconds(10))
            return 1
        }
        await clock.waitForSleepers(2)
        clock.advance(by: .seconds(1))
        do {
            _ = try await late
            Issue.record("no timeout")
        } catch let error as CachingClientError {
            #expect(error.code == .timeout)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
