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
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var tasks: [Task<Void, Never>] = []
        /// Set when the race ended before the continuation arrived (cancelled on entry).
        var early: Result<T, any Error>?
    }

    private let state = Mutex(State())

    func start(
        _ continuation: CheckedContinuation<T, any Error>,
        timeout: Duration,
        _ body: @escaping @Sendable () async throws -> T
    ) {
        let early: Result<T, any Error>? = state.withLock {
            if let early = $0.early { return early }
            $0.continuation = continuation
            return nil
        }
        if let early {
            continuation.resume(with: early)
            return
        }
        let work = Task {
            let result = await Result(catching: body)
            self.finish(result)
        }
        let timer = Task {
            // A cancelled sleep (the body finished first) ends the timer without a verdict.
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self.finish(.failure(DeadlineExceeded()))
        }
        let finished = state.withLock {
            $0.tasks = [work, timer]
            return $0.continuation == nil
        }
        if finished {
            work.cancel()
            timer.cancel()
        }
    }

    /// Resumes the caller with `result` unless it was resumed already, and cancels both tasks.
    func finish(_ result: Result<T, any Error>) {
        let (continuation, tasks) = state.withLock { state in
            guard let continuation = state.continuation else {
                if state.tasks.isEmpty, state.early == nil { state.early = result }
                return (nil as CheckedContinuation<T, any Error>?, [Task<Void, Never>]())
            }
            state.continuation = nil
            return (continuation, state.tasks)
        }
        guard let continuation else { return }
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
