// SPDX-License-Identifier: Apache-2.0

import CacheTiers

/// One piece of work per key at a time, its value shared by every caller that asked for it while
/// it ran.
///
/// The work runs in its own task, not in any caller's: a caller that is cancelled stops waiting
/// (and gets nil) while the others go on waiting, and the work completes and is stored for the
/// next caller. That is why this type starts an unstructured `Task` — the one exception to the
/// house rule: the work belongs to the set of its waiters, which changes while it runs, not to
/// any one of them. The tasks are tracked, and ``cancelAll()`` cancels them (the client's
/// `run()` calls it when the app shuts down).
final class SingleFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private final class Flight: Sendable {
        struct State {
            var value: Value?
            var waiters: [UInt64: CheckedContinuation<Value?, Never>] = [:]
            var cancelled: Set<UInt64> = []
            var nextWaiter: UInt64 = 0
            var task: Task<Void, Never>?
        }
        // A lock ThreadSanitizer sees (``VisibleLock``), as every waiter touches it from its own task.
        let state = VisibleLock(State())
    }

    private let flights = VisibleLock<[Key: Flight]>([:])

    init() {}

    /// How many pieces of work are running.
    var count: Int { flights.withLock { $0.count } }

    /// The value of the work for `key`: joins the running work, or starts `work`.
    /// - Returns: the value, or nil when the calling task was cancelled before it came.
    func value(for key: Key, work: @escaping @Sendable () async -> Value) async -> Value? {
        await wait(on: join(key, work: work).flight)
    }

    /// ``value(for:work:)``, and whether the caller joined work another caller started.
    func valueJoining(for key: Key, work: @escaping @Sendable () async -> Value) async -> (Value?, joined: Bool) {
        let (flight, isNew) = join(key, work: work)
        return (await wait(on: flight), !isNew)
    }

    private func wait(on flight: Flight) async -> Value? {
        let id = flight.state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready: Value?? = flight.state.withLock { state in
                    if let value = state.value { return .some(value) }
                    if state.cancelled.remove(id) != nil { return .some(nil) }
                    state.waiters[id] = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = flight.state.withLock { state in
                guard let waiter = state.waiters.removeValue(forKey: id) else {
                    if state.value == nil { state.cancelled.insert(id) }
                    return nil as CheckedContinuation<Value?, Never>?
                }
                return waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    /// How many callers are waiting, over all work.
    var waiterCount: Int {
        flights.withLock { $0.values.reduce(0) { sum, flight in sum + flight.state.withLock { $0.waiters.count } } }
    }

    /// Returns when the work running now has finished.
    func idle() async {
        let running = flights.withLock { $0.values.compactMap { flight in flight.state.withLock { $0.task } } }
        for task in running { await task.value }
    }

    /// Starts `work` for `key` unless work for it is running, and returns without waiting.
    func start(_ key: Key, work: @escaping @Sendable () async -> Value) {
        _ = join(key, work: work)
    }

    /// Cancels every running piece of work. Their waiters get what the work returns when
    /// cancelled.
    func cancelAll() {
        let running = flights.withLock { $0.values.compactMap { flight in flight.state.withLock { $0.task } } }
        for task in running { task.cancel() }
    }

    private func join(_ key: Key, work: @escaping @Sendable () async -> Value) -> (flight: Flight, isNew: Bool) {
        let (flight, isNew) = flights.withLock { flights in
            if let running = flights[key] { return (running, false) }
            let flight = Flight()
            flights[key] = flight
            return (flight, true)
        }
        guard isNew else { return (flight, false) }
        // Started on this thread, up to the work's first suspension (the request handed to the
        // connection): a plain `Task` first waits for a thread of the pool. Work that ends before
        // it suspends has finished the flight by now; its task is then not recorded.
        let task = Task.immediate(executorPreference: RequestTasks.executor) {
            let value = await work()
            self.finish(key, flight, value)
        }
        flight.state.withLock { if $0.value == nil { $0.task = task } }
        return (flight, true)
    }

    private func finish(_ key: Key, _ flight: Flight, _ value: Value) {
        // Out of the table first, so that a caller arriving now starts fresh work instead of
        // joining one that is over.
        flights.withLock { flights in
            if flights[key] === flight { flights[key] = nil }
        }
        let waiters = flight.state.withLock { state in
            state.value = value
            state.task = nil
            defer { state.waiters = [:] }
            return state.waiters.values
        }
        for waiter in waiters { waiter.resume(returning: value) }
    }
}
