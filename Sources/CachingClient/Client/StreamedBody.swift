// SPDX-License-Identifier: Apache-2.0

import CacheTiers
package import HTTPCaching

/// One streamed answer's body, read from its connection by a task of its own and handed to the
/// requests that read it, each at its own pace; kept whole, to be stored once it ended, while it
/// is no longer than a limit.
///
/// - **Kept whole** (`retainingUpTo` > 0, an answer the cache may store): every part stays until
///   the body ended and was stored, so a reader may join at any time and none waits for another.
///   Memory: at most the limit (the largest body a tier admits).
/// - **Passed on** (a body the cache will not store, or one that outgrew the limit): a part is
///   dropped once every reader has it, and the connection is read no further ahead of the slowest
///   reader than `window` bytes. A reader that has not taken a part for `idleTimeout` while the
///   others wait on it is cut off (its next read throws); once no reader is left, the connection
///   is closed. A reader can join only while the first part is still held. Memory: `window` plus
///   one read.
///
/// A reader that goes away (its client disconnected) never stops the body from being read and
/// stored for the others. A body that broke off (the origin died, or stalled past
/// `idleTimeout`) is stored nowhere and every reader's next read throws: a reader never sees a
/// short body end as if it were whole.
package final class StreamedBody: Sendable {
    /// Why a read failed.
    package enum Failure: Error, Equatable {
        /// The reader fell too far behind the others and was cut off.
        case tooSlow
        /// No reader was left to pass the body to.
        case abandoned
    }

    private struct State {
        /// The parts held, by their index in the body.
        var parts: [Int: [UInt8]] = [:]
        /// The index of the first part held, and of the next part to come.
        var first = 0
        var next = 0
        /// The bytes in ``parts``, and in the body so far.
        var held = 0
        var received = 0
        var retaining: Bool
        /// The bytes taken from the budget for the parts kept.
        var charged = 0
        /// How the body ended: nil while it is arriving.
        var end: Result<Void, any Error>?
        /// Each reader's next part index.
        var readers: [Int: Int] = [:]
        var hadReader = false
        var nextReader = 0
        var waiting: [Int: CheckedContinuation<Void, Never>] = [:]
        var pump: CheckedContinuation<Void, Never>?
        /// A wake for the pump that came while it was not waiting yet.
        var pumpSignalled = false
        /// What storing the body gave, once it was tried (nil inside when it was not stored).
        var stored: ResponseLookup??
        var settleWaiters: [CheckedContinuation<ResponseLookup?, Never>] = []
        /// The pump, while it waits for someone to ask for the body (``pump(_:startsOnDemand:idleTimeout:clock:store:whenSettled:)``).
        var deferredPump: (@Sendable () -> Void)?
    }

    // A lock ThreadSanitizer sees (``VisibleLock``): readers and the pump touch it from their tasks.
    private let state: VisibleLock<State>
    private let limit: Int
    private let window: Int
    private let budget: RetentionBudget?

    /// - Parameters:
    ///   - limit: the longest body kept whole for storing; 0 for a body passed on only.
    ///   - window: how far a passed-on body is read ahead of its slowest reader.
    ///   - budget: what the parts kept count against; a part it cannot take ends the keeping (the
    ///     body is passed on from there, not stored). Given back when the body is let go.
    package init(retainingUpTo limit: Int, window: Int = 256 << 10, budget: RetentionBudget? = nil) {
        self.limit = limit
        self.window = window
        self.budget = budget
        self.state = VisibleLock(State(retaining: limit > 0))
    }

    deinit {
        budget?.give(state.withLock { $0.charged })
    }

    /// Whether the body is still kept whole for storing.
    package var isRetaining: Bool { state.withLock { $0.retaining } }

    /// The readers reading it now (for tests).
    var readerCount: Int { state.withLock { $0.readers.count } }

    /// A reader from the body's start, or nil when the start is no longer held (a passed-on body
    /// whose readers moved on) or the body broke off.
    package func reader() -> Reader? {
        let id: Int? = state.withLock { state in
            guard state.first == 0 || state.retaining else { return nil }
            if case .failure? = state.end { return nil }
            let id = state.nextReader
            state.nextReader += 1
            state.readers[id] = 0
            state.hadReader = true
            return id
        }
        return id.map { Reader(body: self, id: $0) }
    }

    /// What storing the body gave: the cache's lookup after it was stored, or nil when it was not
    /// (not storable, too long, broke off, or the store failed). Waits until then.
    package func settled() async -> ResponseLookup? {
        startPump()
        return await withCheckedContinuation { continuation in
            let ready: ResponseLookup?? = state.withLock { state in
                guard let stored = state.stored else {
                    state.settleWaiters.append(continuation)
                    return nil
                }
                return .some(stored)
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Reads `source` to its end in a task of its own (not the caller's: no reader's cancellation
    /// stops it), each part within `idleTimeout` on `clock`; when the body ended whole and was
    /// kept, calls `store` with it. Ends with ``settled()`` answered.
    ///
    /// With `startsOnDemand`, the task starts only when the body is first asked for: a reader's
    /// first read, a reader let go, a wait for ``settled()``, or the returned ``StartToken``
    /// released while no reader was ever made. The answer's head is then on its way to the
    /// client before the body's first part is read: on a busy core, a pump started at once
    /// holds the head back behind the parts it reads.
    @discardableResult
    package func pump(
        _ source: ResponseBodySource,
        startsOnDemand: Bool = false,
        idleTimeout: Duration,
        clock: any Clock<Duration>,
        store: @escaping @Sendable ([UInt8]) async -> ResponseLookup?,
        whenSettled: @escaping @Sendable () -> Void = {}
    ) -> StartToken? {
        let start: @Sendable () -> Void = {
            Task(executorPreference: RequestTasks.executor) {
                await self.run(source, idleTimeout: idleTimeout, clock: clock, store: store)
                whenSettled()
            }
        }
        guard startsOnDemand else {
            start()
            return nil
        }
        state.withLock { $0.deferredPump = start }
        return StartToken(body: self)
    }

    /// Starts the pump if it waits to be asked for; with `unlessRead`, only when no reader was
    /// ever made (``StartToken``).
    func startPump(unlessRead: Bool = false) {
        let start = state.withLock { state -> (@Sendable () -> Void)? in
            if unlessRead, state.hadReader { return nil }
            defer { state.deferredPump = nil }
            return state.deferredPump
        }
        start?()
    }

    private func run(
        _ source: ResponseBodySource,
        idleTimeout: Duration,
        clock: any Clock<Duration>,
        store: @Sendable ([UInt8]) async -> ResponseLookup?
    ) async {
        while true {
            let part: [UInt8]?
            do {
                part = try await withExchangeDeadline(idleTimeout, clock: clock) { try await source.next() }
            } catch {
                source.cancel()
                finish(.failure(error))
                settle(nil)
                return
            }
            guard let part else {
                if let whole = finish(.success(())) {
                    settle(await Self.store(whole, with: store))
                } else {
                    settle(nil)
                }
                return
            }
            guard !part.isEmpty else { continue }
            var open = append(part)
            while !open {
                state.withLock { $0.pumpSignalled = false }
                await waitForWindow(idleTimeout, clock: clock)
                open = cutLaggards()
            }
            if state.withLock({ $0.end != nil }) {
                // Abandoned: no reader is left and nothing is kept.
                source.cancel()
                settle(nil)
                return
            }
        }
    }

    /// Takes `part` in; false when the pump must wait for readers before reading more.
    private func append(_ part: [UInt8]) -> Bool {
        let budget = self.budget
        let (waiters, open, released) = state.withLock {
            state -> ([CheckedContinuation<Void, Never>], Bool, Int) in
            state.parts[state.next] = part
            state.next += 1
            state.held += part.count
            state.received += part.count
            var released = 0
            if state.retaining {
                if state.received <= limit, budget?.take(part.count) ?? true {
                    state.charged += budget == nil ? 0 : part.count
                } else {
                    // Too long to store, or more than the budget has left: from now on the body
                    // is passed on, and what was kept goes back as the readers take it.
                    state.retaining = false
                    released = state.charged
                    state.charged = 0
                    Self.dropTaken(&state)
                    if state.hadReader, state.readers.isEmpty { state.end = .failure(Failure.abandoned) }
                }
            }
            let waiters = Array(state.waiting.values)
            state.waiting.removeAll()
            return (waiters, state.retaining || state.held <= window, released)
        }
        budget?.give(released)
        for waiter in waiters { waiter.resume() }
        return open
    }

    /// Waits until the readers took enough for the window to open, or `timeout` passed.
    private func waitForWindow(_ timeout: Duration, clock: any Clock<Duration>) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let now = self.state.withLock { state in
                        if self.isOpen(state) || state.pumpSignalled { return true }
                        state.pump = continuation
                        return false
                    }
                    if now { continuation.resume() }
                }
            }
            group.addTask {
                // Cancelled when the window opened first: then the wake below finds no wait.
                try? await clock.sleep(for: timeout)
                self.wakePump()
            }
            await group.next()
            group.cancelAll()
            // The other child ends too: a sleep cancelled wakes nothing, a wait is woken.
            self.wakePump()
        }
    }

    private func isOpen(_ state: State) -> Bool {
        state.retaining || state.held <= window || state.end != nil
    }

    private func wakePump() {
        let pump = state.withLock { state in
            defer { state.pump = nil }
            if state.pump == nil { state.pumpSignalled = true }
            return state.pump
        }
        pump?.resume()
    }

    /// After a wait: true when the window is open; else the readers furthest behind are cut off
    /// (when the others are ahead of them) and the window is judged again. With no reader left,
    /// the body is abandoned (the window counts as open, and the pump sees the end).
    private func cutLaggards() -> Bool {
        let (cut, open) = state.withLock { state -> ([CheckedContinuation<Void, Never>], Bool) in
            if isOpen(state) { return ([], true) }
            guard let slowest = state.readers.values.min() else {
                // No reader left, or none came within the wait: the body is given up.
                state.end = .failure(Failure.abandoned)
                return ([], true)
            }
            var cut: [CheckedContinuation<Void, Never>] = []
            for (id, position) in state.readers where position == slowest {
                state.readers[id] = nil
                if let waiter = state.waiting.removeValue(forKey: id) { cut.append(waiter) }
            }
            Self.dropTaken(&state)
            if state.readers.isEmpty { state.end = .failure(Failure.abandoned) }
            return (cut, isOpen(state))
        }
        for waiter in cut { waiter.resume() }
        return open
    }

    /// Drops the parts every reader has taken (a passed-on body only).
    private static func dropTaken(_ state: inout State) {
        guard !state.retaining, state.hadReader else { return }
        let upTo = state.readers.values.min() ?? state.next
        while state.first < upTo {
            if let part = state.parts.removeValue(forKey: state.first) { state.held -= part.count }
            state.first += 1
        }
    }

    /// Records the end; returns the whole body when it ended whole and was kept.
    @discardableResult
    private func finish(_ end: Result<Void, any Error>) -> [UInt8]? {
        let (waiters, whole) = state.withLock { state -> ([CheckedContinuation<Void, Never>], [UInt8]?) in
            if state.end == nil { state.end = end }
            let waiters = Array(state.waiting.values)
            state.waiting.removeAll()
            guard case .success = end, state.retaining else { return (waiters, nil) }
            var whole: [UInt8] = []
            whole.reserveCapacity(state.received)
            for index in state.first..<state.next { whole += state.parts[index] ?? [] }
            return (waiters, whole)
        }
        for waiter in waiters { waiter.resume() }
        return whole
    }

    private func settle(_ stored: ResponseLookup?) {
        let waiters = state.withLock { state in
            state.stored = .some(stored)
            defer { state.settleWaiters.removeAll() }
            return state.settleWaiters
        }
        for waiter in waiters { waiter.resume(returning: stored) }
    }

    enum Step {
        case part([UInt8])
        case end
        case failed(any Error)
        case wait
    }

    func step(_ id: Int) -> Step {
        let (step, pump) = state.withLock { state -> (Step, CheckedContinuation<Void, Never>?) in
            guard let position = state.readers[id] else { return (.failed(Failure.tooSlow), nil) }
            if position < state.next, let part = state.parts[position] {
                state.readers[id] = position + 1
                Self.dropTaken(&state)
                var pump: CheckedContinuation<Void, Never>?
                if isOpen(state) {
                    pump = state.pump
                    state.pump = nil
                }
                return (.part(part), pump)
            }
            switch state.end {
            case .success?: return (.end, nil)
            case .failure(let error)?: return (.failed(error), nil)
            case nil: return (.wait, nil)
            }
        }
        pump?.resume()
        return step
    }

    func wait(_ id: Int) async {
        startPump()
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state in
                    let ready =
                        state.readers[id].map { $0 < state.next } ?? true || state.end != nil || Task.isCancelled
                    if !ready { state.waiting[id] = continuation }
                    return ready
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiting.removeValue(forKey: id) }
            waiter?.resume()
        }
    }

    func leave(_ id: Int) {
        defer { startPump() }
        let pump = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.readers[id] = nil
            state.waiting[id] = nil
            Self.dropTaken(&state)
            if !state.retaining, state.readers.isEmpty, state.end == nil {
                state.end = .failure(Failure.abandoned)
            }
            guard isOpen(state) else { return nil }
            defer { state.pump = nil }
            return state.pump
        }
        pump?.resume()
    }
}
