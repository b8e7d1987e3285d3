// SPDX-License-Identifier: Apache-2.0

#if Proxy
import Synchronization

/// The bytes an ``OriginTransport``'s exchanges may hold at once, over all its connections:
/// an answer's body is taken from it as it arrives (a declared `Content-Length` up front) and given
/// back when the answer is handed on or fails. An exchange that would take more than is left fails
/// with ``CachingClient/CachingClientError/Code/overloaded``.
final class BufferBudget: Sendable {
    /// The most that may be held at once.
    let limit: Int
    private let inUse = Atomic<Int>(0)
    private let highWater = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = limit
    }

    /// The bytes held now.
    var bytesInUse: Int { inUse.load(ordering: .relaxed) }
    /// The most held at once so far.
    var peak: Int { highWater.load(ordering: .relaxed) }

    /// Takes `count` bytes.
    /// - Returns: false, taking nothing, when fewer than `count` are left.
    func take(_ count: Int) -> Bool {
        var current = inUse.load(ordering: .relaxed)
        while true {
            guard current + count <= limit else { return false }
            let (exchanged, original) = inUse.compareExchange(
                expected: current,
                desired: current + count,
                ordering: .relaxed
            )
            if exchanged {
                highWater.max(current + count, ordering: .relaxed)
                return true
            }
            current = original
        }
    }

    /// Gives back `count` bytes taken before.
    func give(_ count: Int) {
        guard count > 0 else { return }
        inUse.subtract(count, ordering: .relaxed)
    }
}
#endif
