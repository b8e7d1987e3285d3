// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
import Synchronization

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
        case running(CheckedContinuation<T, any Error>, tasks: [Task<Void, Never>])
        case finished
    }

    private let state = Mutex(State.idle)

    func start(
        _ continuation: CheckedContinuation<T, any Error>,
        timeout: Duration,
        _ body: @escaping @Sendable () async throws -> T
    ) {
        let cancelledEarly = state.withLock { state in
            guard case .idle = state else {
                state = .finished
                return true
            }
            state = .running(continuation, tasks: [])
            return false
        }
        guard !cancelledEarly else {
            continuation.resume(throwing: CancellationError())
            return
        }
        let work = Task { self.finish(await Result(catching: body)) }
        let timer = Task {
            // A cancelled sleep (the race ended first) ends the timer without a verdict.
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self.finish(.failure(DeadlineExceeded()))
        }
        let alreadyFinished = state.withLock { state in
            guard case .running(let continuation, _) = state else { return true }
            state = .running(continuation, tasks: [work, timer])
            return false
        }
        if alreadyFinished {
            work.cancel()
            timer.cancel()
        }
    }

    /// Resumes the caller with `result` unless it was resumed already, and cancels both tasks.
    /// Before the start only a cancellation comes here: the race is then never started.
    func finish(_ result: Result<T, any Error>) {
        let running: (CheckedContinuation<T, any Error>, [Task<Void, Never>])? = state.withLock { state in
            switch state {
            case .idle:
                state = .cancelledEarly
                return nil
            case .running(let continuation, let tasks):
                state = .finished
                return (continuation, tasks)
            case .cancelledEarly, .finished:
                return nil
            }
        }
        guard let (continuation, tasks) = running else { return }
        for task in tasks { task.cancel() }
        continuation.resume(with: result)
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
