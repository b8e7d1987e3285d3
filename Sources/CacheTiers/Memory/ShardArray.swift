// SPDX-License-Identifier: Apache-2.0

internal import Synchronization

/// The memory tier's shards, each a ``MemoryShard`` in its own `Mutex`, stored inline in one
/// allocation and padded apart.
///
/// An array of classes (one allocation per shard, as the tier had first) costs every operation a
/// retain and a release of the shard object, two more atomic writes to the cache line that holds
/// the lock, and lets two shards' locks share a cache line. Here a shard is reached through a
/// pointer into the buffer, which the tier keeps alive, and each is followed by a cache line of
/// padding, so that tasks on different cores working on different shards never write to the same
/// cache line.
///
/// `ManagedBuffer` is not `Sendable`; ``MemoryTier`` holds this one as `nonisolated(unsafe)`,
/// which is safe because every shard is only touched inside its own `Mutex` and the count (the
/// header) is written once, before the buffer is shared.
final class ShardArray: ManagedBuffer<Int, ShardArray.Padded> {
    /// One shard and a cache line of padding after it.
    struct Padded: ~Copyable {
        let state: Mutex<MemoryShard>
        private let padding: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)

        init(_ shard: consuming MemoryShard) {
            state = Mutex(shard)
        }
    }

    /// A buffer holding `shards`, in order.
    static func make(_ shards: [MemoryShard]) -> ShardArray {
        let buffer = ShardArray.create(minimumCapacity: shards.count) { _ in shards.count }
        // `create` returns an instance of the class it is called on.
        let array = unsafeDowncast(buffer, to: ShardArray.self)
        array.withUnsafeMutablePointerToElements { elements in
            for (index, shard) in shards.enumerated() {
                (elements + index).initialize(to: Padded(shard))
            }
        }
        return array
    }

    deinit {
        withUnsafeMutablePointers { count, elements in
            _ = elements.deinitialize(count: count.pointee)
        }
    }

    /// The number of shards.
    var count: Int { header }

    /// Runs `body` on shard `index` with its lock held.
    /// - Parameter index: in `0..<count`; the tier derives it from a digest's high bits, so that
    ///   it is always in range (checked in debug builds only: reading the header costs an
    ///   exclusivity check on the hot path).
    @inline(__always)
    func withLock<Result: Sendable>(_ index: Int, _ body: (inout MemoryShard) -> Result) -> Result {
        assert(index >= 0 && index < header, "shard index out of range")
        return withUnsafeMutablePointerToElements { elements in
            elements[index].state.withLock { body(&$0) }
        }
    }
}
