// SPDX-License-Identifier: Apache-2.0

import Synchronization

/// The observations that follow changes, by query key: a commit signals the lists it touched
/// (or every one).
final class Observers: Sendable {
    private struct State {
        var next: UInt64 = 0
        var byQuery: [String: [UInt64: AsyncStream<Void>.Continuation]] = [:]
    }

    private let state = Mutex(State())

    /// A registration's signals; each commit that touches the list yields one (buffered: at
    /// most one waits).
    struct Registration: Sendable {
        let signals: AsyncStream<Void>
        let cancel: @Sendable () -> Void
    }

    func register(_ queryKey: String) -> Registration {
        let (signals, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state in
            state.next += 1
            state.byQuery[queryKey, default: [:]][state.next] = continuation
            return state.next
        }
        let cancel: @Sendable () -> Void = { [weak self] in
            let removed = self?.state.withLock { $0.byQuery[queryKey]?.removeValue(forKey: id) }
            removed?.finish()
        }
        return Registration(signals: signals, cancel: cancel)
    }

    func signal(_ queryKeys: Set<String>, everyQuery: Bool) {
        let continuations = state.withLock { state in
            everyQuery
                ? state.byQuery.values.flatMap(\.values)
                : queryKeys.flatMap { state.byQuery[$0]?.values.map { $0 } ?? [] }
        }
        for continuation in continuations { continuation.yield() }
    }
}
