// SPDX-License-Identifier: Apache-2.0

import Synchronization

/// The bounded queue through which ``TieredCache`` writes to its shared tier: a caller enqueues
/// and returns at once; ``TieredCache/run()`` drains it.
///
/// Work is split into lanes by key digest, each drained in order by one writer, so that the
/// operations on one key reach the tier in the order they were made (a removal is never overtaken
/// by an older write). Writes are bounded by the bytes waiting; past the bound a write is dropped
/// and counted. Removals are not counted against the bytes (they are small) but a lane holds at
/// most ``laneCapacity`` items: a removal past it is dropped and counted too.
package final class WriteThroughQueue: Sendable {
    /// One operation for the shared tier.
    package enum Operation: Sendable {
        case set(CacheEntry)
        case remove(broadcast: Bool)
    }

    package struct Item: Sendable {
        let key: CacheKey
        let operation: Operation
        let bytes: Int
    }

    package let maximumPendingBytes: Int
    package let laneCapacity: Int
    private let lanes: [AsyncStream<Item>]
    private let continuations: [AsyncStream<Item>.Continuation]
    private let pendingBytes = Atomic<Int>(0)
    /// Keys with a removal queued and not yet written, and how many: the shared tier's copy of
    /// such a key is gone as far as readers go.
    private let pendingRemovals = Mutex<[CacheKey: Int]>([:])
    private let counters = Mutex(TieredCache.SharedWriteStatistics())

    package init(lanes laneCount: Int, maximumPendingBytes: Int, laneCapacity: Int = 4096) {
        precondition(laneCount >= 1, "a write-through queue needs at least one lane")
        self.maximumPendingBytes = maximumPendingBytes
        self.laneCapacity = laneCapacity
        var lanes: [AsyncStream<Item>] = []
        var continuations: [AsyncStream<Item>.Continuation] = []
        for _ in 0..<laneCount {
            let (stream, continuation) = AsyncStream.makeStream(
                of: Item.self,
                bufferingPolicy: .bufferingOldest(laneCapacity)
            )
            lanes.append(stream)
            continuations.append(continuation)
        }
        self.lanes = lanes
        self.continuations = continuations
    }

    /// Queues a write of `entry` (without its attachment).
    /// - Returns: false when it was dropped: the bytes waiting are at the bound, the lane is full
    ///   or the queue is finished.
    @discardableResult
    package func enqueueSet(_ entry: CacheEntry, for key: CacheKey) -> Bool {
        var entry = entry
        entry.attachment = nil
        let bytes = entry.value.count + entry.metadata.count + key.string.utf8.count
        // Admitted while the bytes already waiting are under the bound (so one write may pass it).
        let waiting = pendingBytes.wrappingAdd(bytes, ordering: .relaxed).oldValue
        guard waiting < maximumPendingBytes else {
            pendingBytes.wrappingSubtract(bytes, ordering: .relaxed)
            counters.withLock { $0.dropped += 1 }
            return false
        }
        return yield(Item(key: key, operation: .set(entry), bytes: bytes))
    }

    /// Queues a removal of `key`.
    /// - Returns: false when it was dropped (the lane is full or the queue is finished).
    @discardableResult
    package func enqueueRemove(_ key: CacheKey, broadcast: Bool) -> Bool {
        // Counted before it is queued, so that a writer cannot apply it before it is counted.
        pendingRemovals.withLock { $0[key, default: 0] += 1 }
        guard yield(Item(key: key, operation: .remove(broadcast: broadcast), bytes: 0)) else {
            removalDone(key)
            return false
        }
        return true
    }

    /// Whether a removal of `key` is queued and not yet written (or failed).
    package func hasPendingRemoval(_ key: CacheKey) -> Bool {
        pendingRemovals.withLock { $0[key] != nil }
    }

    private func removalDone(_ key: CacheKey) {
        pendingRemovals.withLock { pending in
            if let count = pending[key], count > 1 {
                pending[key] = count - 1
            } else {
                pending[key] = nil
            }
        }
    }

    private func yield(_ item: Item) -> Bool {
        let lane = Int(truncatingIfNeeded: item.key.digest % UInt64(continuations.count))
        switch continuations[lane].yield(item) {
        case .enqueued:
            return true
        case .dropped, .terminated:
            if item.bytes > 0 { pendingBytes.wrappingSubtract(item.bytes, ordering: .relaxed) }
            counters.withLock {
                if case .remove = item.operation { $0.droppedRemovals += 1 } else { $0.dropped += 1 }
            }
            return false
        @unknown default:
            return false
        }
    }

    /// Writes every lane's operations to `tier`, each lane in order, until ``finish()`` or
    /// cancellation.
    package func drain(into tier: any SharedCacheTier) async {
        await withDiscardingTaskGroup { group in
            for lane in lanes {
                group.addTask {
                    for await item in lane {
                        await self.apply(item, to: tier)
                    }
                }
            }
        }
    }

    private func apply(_ item: Item, to tier: any SharedCacheTier) async {
        if item.bytes > 0 { pendingBytes.wrappingSubtract(item.bytes, ordering: .relaxed) }
        do {
            switch item.operation {
            case .set(let entry): try await tier.set(entry, for: item.key)
            case .remove(let broadcast): try await tier.remove(item.key, broadcast: broadcast)
            }
            counters.withLock { $0.written += 1 }
        } catch {
            counters.withLock { $0.failed += 1 }
        }
        if case .remove = item.operation { removalDone(item.key) }
    }

    /// Ends the queue: the writers finish what is queued and stop; later operations are dropped.
    package func finish() {
        for continuation in continuations { continuation.finish() }
    }

    /// The bytes of the writes waiting now.
    package var waitingBytes: Int { pendingBytes.load(ordering: .relaxed) }

    /// The counters since the queue was made.
    package var statistics: TieredCache.SharedWriteStatistics { counters.withLock { $0 } }
}
