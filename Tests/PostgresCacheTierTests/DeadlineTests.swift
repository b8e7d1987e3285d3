// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import PostgresCacheTier

/// `withDeadline` never waits for a body that ignores cancellation: a PostgreSQL query made while
/// the server restarted once never returned, and the request that made it hung forever.
@Suite(.timeLimit(.minutes(3)))
struct DeadlineTests {
    @Test func aBodyThatFinishesInTimeGivesItsResult() async throws {
        #expect(try await withDeadline(.seconds(60)) { 42 } == 42)
        await #expect(throws: Stuck.self) { try await withDeadline(.seconds(60)) { throw Stuck() } }
    }

    /// The body goes on where its answer arrives when that is an event loop (the caller then wakes
    /// once, as after a bare query), and on the pool otherwise.
    ///
    /// A body that finds its answer already there never suspends and stays where it was: on a
    /// loaded machine the timer can fire before the body awaits it. So the probe runs up to 20
    /// times, with a longer timer each time, and one body woken on the loop is the proof (with
    /// the pool's executor, none ever is).
    @Test func aBodyWokenOnAnEventLoopGoesOnThereAndAnyOtherOnThePool() async throws {
        let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
        var wokenOnTheLoop = false
        for attempt in 1...20 where !wokenOnTheLoop {
            wokenOnTheLoop = try await withDeadline(.seconds(60)) {
                try await eventLoop.scheduleTask(in: .milliseconds(Int64(5 * attempt))) {}.futureResult.get()
                return eventLoop.inEventLoop
            }
        }
        #expect(wokenOnTheLoop)
        let wokenElsewhere = try await withDeadline(.seconds(60)) {
            await Task.yield()
            return MultiThreadedEventLoopGroup.currentEventLoop == nil
        }
        #expect(wokenElsewhere)
    }

    @Test func theDeadlineEndsTheWaitForABodyThatIgnoresCancellation() async throws {
        let gate = Gate()
        await #expect(throws: DeadlineExceeded.self) {
            try await withDeadline(.milliseconds(10)) { await gate.wait() }
        }
        #expect(gate.wasWaitedOn)
        gate.open()  // the abandoned body ends now
    }

    @Test func cancellingTheCallerEndsTheWaitAtOnce() async throws {
        let gate = Gate()
        let call = Task { try await withDeadline(.seconds(3600)) { await gate.wait() } }
        while !gate.wasWaitedOn { await Task.yield() }
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        gate.open()
    }

    @Test func aCallerCancelledBeforeItStartsDoesNotRunTheWait() async throws {
        let gate = Gate()
        let call = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await withDeadline(.seconds(3600)) { () async -> Int in
                await gate.wait()
                return 1
            }
        }
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(!gate.wasWaitedOn)  // the body never started
        gate.open()
    }

    /// One watch serves every deadline: what is due expires (once), what is cancelled never
    /// does, and nothing stays pending.
    @Test func theWatchExpiresWhatIsDueAndForgetsWhatIsCancelled() async throws {
        let watch = DeadlineWatch()
        let cancelled = watch.schedule(at: .now.advanced(by: .seconds(3600))) {
            Issue.record("a cancelled deadline expired")
        }
        watch.cancel(cancelled)
        let expired = Mutex(0)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            _ = watch.schedule(at: .now) {
                expired.withLock { $0 += 1 }
                continuation.resume()
            }
        }
        #expect(expired.withLock { $0 } == 1)
        #expect(watch.pendingCount == 0)
    }
}

private struct Stuck: Error {}

/// A body that ignores cancellation: it waits until the test opens the gate.
private final class Gate: Sendable {
    private let state = Mutex<(waiting: [CheckedContinuation<Void, Never>], open: Bool, waited: Bool)>(
        ([], false, false)
    )

    var wasWaitedOn: Bool { state.withLock { $0.waited } }

    func wait() async {
        await withCheckedContinuation { continuation in
            let resume = state.withLock {
                $0.waited = true
                if $0.open { return true }
                $0.waiting.append(continuation)
                return false
            }
            if resume { continuation.resume() }
        }
    }

    func open() {
        let waiting = state.withLock { state in
            state.open = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }
}
#endif
