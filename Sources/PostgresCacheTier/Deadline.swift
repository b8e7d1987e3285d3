// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
import NIOConcurrencyHelpers
import NIOPosix

/// Runs `body` in a task of its own and returns its result, or throws ``DeadlineExceeded`` once
/// `timeout` has passed, or `CancellationError` as soon as the caller is cancelled: whichever
/// comes first. The body is then cancelled and left to end on its own.
///
/// The caller never waits for a body that ignores cancellation. A structured race (a task group
/// of the body and a timer) waits for both children, and a query of the PostgreSQL client made
/// while the server restarts can fail to return at all: the request that made it then hung
/// forever, past every timeout (seen about one run in three of the crash test).
func withDeadline<T: Sendable>(
    _ timeout: Duration,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let race = DeadlineRace<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            race.start(continuation, timeout: timeout, body)
        }
    } onCancel: {
        race.finish(.failure(CancellationError()))
    }
}

/// An operation on the database ran past its deadline.
struct DeadlineExceeded: Error {}

/// The state of one ``withDeadline(_:_:)``: the caller's continuation, resumed once, and the two
/// tasks racing to resume it.
private final class DeadlineRace<T: Sendable>: Sendable {
    private enum State {
        /// Before ``start(_:timeout:_:)``.
        case idle
        /// The caller was cancelled before the race started: it is not started.
        case cancelledEarly
        /// Started: the body's task and the deadline's ticket in the watch, once both exist.
        case running(CheckedContinuation<T, any Error>, work: Task<Void, Never>?, watch: DeadlineWatch.Ticket?)
        case finished
    }

    // A lock ThreadSanitizer sees (a pthread mutex): `Synchronization.Mutex` waits on a futex that
    // it does not, and reports the accesses it guards as races.
    private let state = NIOLockedValueBox(State.idle)

    func start(
        _ continuation: CheckedContinuation<T, any Error>,
        timeout: Duration,
        _ body: @escaping @Sendable () async throws -> T
    ) {
        let cancelledEarly = state.withLockedValue { state in
            guard case .idle = state else {
                state = .finished
                return true
            }
            state = .running(continuation, work: nil, watch: nil)
            return false
        }
        guard !cancelledEarly else {
            continuation.resume(throwing: CancellationError())
            return
        }
        // `Task.immediate` runs the body on this thread until its first suspension (the query sent
        // to the connection): a plain `Task` waited for a thread of the pool to pick it up, a
        // wake-up that cost a 1 KiB shared-tier hit with one task about 30 µs (1.37x the bare
        // SELECT before, 1.2x after). Its executor resumes it where the query's answer arrives
        // (``EventLoopResumingExecutor``), so that the caller wakes once, as after a bare query.
        let work = Task.immediate(executorPreference: EventLoopResumingExecutor.shared) {
            self.finish(await Result(catching: body))
        }
        let watch = DeadlineWatch.shared.schedule(at: .now.advanced(by: timeout)) {
            self.finish(.failure(DeadlineExceeded()))
        }
        let alreadyFinished = state.withLockedValue { state in
            guard case .running(let continuation, _, _) = state else { return true }
            state = .running(continuation, work: work, watch: watch)
            return false
        }
        if alreadyFinished {
            work.cancel()
            DeadlineWatch.shared.cancel(watch)
        }
    }

    /// Resumes the caller with `result` unless it was resumed already, cancels the body's task
    /// and takes the deadline out of the watch. Before the start only a cancellation comes here:
    /// the race is then never started.
    func finish(_ result: Result<T, any Error>) {
        typealias Running = (CheckedContinuation<T, any Error>, Task<Void, Never>?, DeadlineWatch.Ticket?)
        let running: Running? = state.withLockedValue { state in
            switch state {
            case .idle:
                state = .cancelledEarly
                return nil
            case .running(let continuation, let work, let watch):
                state = .finished
                return (continuation, work, watch)
            case .cancelledEarly, .finished:
                return nil
            }
        }
        guard let (continuation, work, watch) = running else { return }
        work?.cancel()
        if let watch { DeadlineWatch.shared.cancel(watch) }
        continuation.resume(with: result)
    }
}

/// The executor of a deadline's body: a job enqueued on a SwiftNIO event loop's thread (the body's
/// query answered there, its promise completed) runs at once on that thread, as a future's callback
/// would; any other job goes to the global concurrent executor.
///
/// On the global executor, the body woke on a thread of the pool only to resume the caller, which
/// then woke on another: two wake-ups where a bare query has one. A 1 KiB shared-tier hit read
/// 1.16x-1.25x a bare `SELECT` with the wake-up, 1.03x-1.19x without (`Benchmarks --filter shared`).
/// The body's own work after its query (a row decoded, a seal opened: a few microseconds) runs on
/// the event loop, as the work of a future's callback does.
final class EventLoopResumingExecutor: TaskExecutor {
    static let shared = EventLoopResumingExecutor()

    func enqueue(_ job: consuming ExecutorJob) {
        if MultiThreadedEventLoopGroup.currentEventLoop != nil {
            UnownedJob(job).runSynchronously(on: asUnownedTaskExecutor())
        } else {
            globalConcurrentExecutor.enqueue(job)
        }
    }
}

/// Every pending deadline of the process, watched by one timer task that runs while any is
/// pending and ends each at most ``tick`` after its time: an operation registers its deadline
/// (a lock and a dictionary entry) instead of starting a timer task of its own and cancelling
/// it, which cost a task, a timer and a cancellation per query on the shared tier's hit path.
final class DeadlineWatch: Sendable {
    /// A deadline's place in the watch, to take it out.
    struct Ticket: Sendable, Hashable {
        fileprivate let id: UInt64
    }

    static let shared = DeadlineWatch()
    /// How late a deadline may end: the watch wakes at least this often while one is pending.
    static let tick: Duration = .milliseconds(10)

    private struct State {
        var pending: [UInt64: (deadline: ContinuousClock.Instant, expire: @Sendable () -> Void)] = [:]
        var nextID: UInt64 = 0
        var isWatching = false
    }

    private let state = NIOLockedValueBox(State())  // seen by ThreadSanitizer, as above

    /// Runs `expire` once `deadline` has passed, unless its ticket is cancelled first.
    func schedule(at deadline: ContinuousClock.Instant, _ expire: @escaping @Sendable () -> Void) -> Ticket {
        let (id, startWatching) = state.withLockedValue { state in
            let id = state.nextID
            state.nextID += 1
            state.pending[id] = (deadline, expire)
            defer { state.isWatching = true }
            return (id, !state.isWatching)
        }
        if startWatching { Task { await self.watch() } }
        return Ticket(id: id)
    }

    /// Takes a deadline out of the watch: it will not expire.
    func cancel(_ ticket: Ticket) {
        _ = state.withLockedValue { $0.pending.removeValue(forKey: ticket.id) }
    }

    /// Deadlines pending (for tests).
    var pendingCount: Int { state.withLockedValue { $0.pending.count } }

    /// Ends the deadlines whose time has come, until none is pending.
    private func watch() async {
        let clock = ContinuousClock()
        while true {
            let now = clock.now
            let (due, earliest) = state.withLockedValue { state in
                let due = state.pending.filter { $0.value.deadline <= now }
                for id in due.keys { state.pending[id] = nil }
                let earliest = state.pending.values.map(\.deadline).min()
                if earliest == nil { state.isWatching = false }
                return (due.values.map(\.expire), earliest)
            }
            for expire in due { expire() }
            guard let earliest else { return }
            do {
                try await clock.sleep(until: min(earliest, now.advanced(by: Self.tick)))
            } catch {
                // The watch is never cancelled; were it, it would go on watching.
            }
        }
    }
}

extension Result where Failure == any Error {
    /// The result of an async throwing operation.
    fileprivate init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}
#endif
