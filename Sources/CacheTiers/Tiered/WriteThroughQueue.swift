// SPDX-License-Identifier: Apache-2.0

import Synchronization

#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
#endif

/// The bounded queue through which ``TieredCache`` writes to its shared tier: a caller enqueues
/// and returns at once; ``TieredCache/run()`` drains it.
///
/// Work is split into lanes by key digest, each drained in order by one writer, so that the
/// operations on one key reach the tier in the order they were made (a removal is never overtaken
/// by an older write). Writes are bounded by the bytes waiting; past the bound a write is dropped
/// and counted. Removals are not counted against the bytes (they are small) but a lane holds at
/// most ``laneCapacity`` items: a removal past it is dropped and counted too.
///
/// A removal the shared tier fails (it is down) is kept, at most ``laneCapacity`` of them, and
/// queued again once the tier takes another operation, or else after a delay that doubles with
/// each failure in a row (``RetryDelays``): its key stays pending until then, so that the shared
/// tier's copy is not read back, and other instances hear of it late rather than never, even
/// when this instance does nothing more.
///
/// A bulk removal (``cutOff(storedSince:)``) is ordered against the writes: those queued before
/// it that it covers are dropped, and it waits for those already being written, so that no write
/// queued before a wipe lands after it.
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
        /// The bulk removals begun before it was queued.
        var epoch: UInt64 = 0
    }

    /// The bulk removals and the writes they wait for.
    private struct Cutoffs {
        /// Writes queued in an epoch below this are dropped: a removal of everything began since.
        var all: UInt64 = 0
        /// Writes queued in an epoch below `since.epoch` of entries stored at or after
        /// `since.date` are dropped. One cutoff stands for all of them (the latest epoch, the
        /// earliest date): it may drop a write more than needed, which a cache may always do.
        var since: (epoch: UInt64, date: Date)?
        /// The writes being written (at most one a lane), by a number each gets when it begins.
        var writing: [UInt64: (key: CacheKey, storedAt: Date, epoch: UInt64)] = [:]
        var nextWrite: UInt64 = 0
        /// Bulk removals waiting for the writes queued before their epoch to be written.
        var waiting: [(epoch: UInt64, continuation: CheckedContinuation<Void, Never>)] = []

        /// Whether a write of `entry` queued in `epoch` is covered by a bulk removal begun since.
        func drops(_ entry: CacheEntry, queuedIn epoch: UInt64) -> Bool {
            if epoch < all { return true }
            if let since, epoch < since.epoch, entry.storedAt >= since.date { return true }
            return false
        }

        /// Whether no write queued before `epoch` is being written.
        func isClear(before epoch: UInt64) -> Bool {
            !writing.values.contains { $0.epoch < epoch }
        }
    }

    package let maximumPendingBytes: Int
    package let laneCapacity: Int
    private let lanes: [AsyncStream<Item>]
    private let continuations: [AsyncStream<Item>.Continuation]
    private let pendingBytes = Atomic<Int>(0)
    /// Keys with a removal queued and not yet written, and how many: the shared tier's copy of
    /// such a key is gone as far as readers go.
    private let pendingRemovals = VisibleLock<[CacheKey: Int]>([:])
    /// Keys with a write queued or being written, and how many.
    private let pendingWrites = VisibleLock<[CacheKey: Int]>([:])
    private let counters = VisibleLock(TieredCache.SharedWriteStatistics())
    /// Removals the shared tier failed, by key (true when one of them broadcast), to be tried
    /// again once the tier takes an operation or their delay passed: until then their keys stay
    /// pending (the shared tier's copy is not read), and other instances have not heard of them.
    private let failedRemovals = VisibleLock<[CacheKey: Bool]>([:])
    /// Failures of the shared tier in a row (writes and removals); a success resets it.
    private let failuresInARow = Atomic<Int>(0)
    private let retryDelays: RetryDelays
    /// A signal for the retry timer: a removal was kept (the newest signal only).
    private let retrySignals: AsyncStream<Void>
    private let retrySignal: AsyncStream<Void>.Continuation
    /// Bulk removals begun; every item carries the count when it was queued.
    private let epoch = Atomic<UInt64>(0)
    private let cutoffs = VisibleLock(Cutoffs())

    package init(
        lanes laneCount: Int,
        maximumPendingBytes: Int,
        laneCapacity: Int = 4096,
        retryDelays: RetryDelays = RetryDelays()
    ) {
        precondition(laneCount >= 1, "a write-through queue needs at least one lane")
        self.maximumPendingBytes = maximumPendingBytes
        self.laneCapacity = laneCapacity
        self.retryDelays = retryDelays
        (retrySignals, retrySignal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
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
        pendingWrites.withLock { $0[key, default: 0] += 1 }
        guard yield(Item(key: key, operation: .set(entry), bytes: bytes, epoch: epoch.load(ordering: .acquiring)))
        else {
            Self.countDown(key, in: pendingWrites)
            return false
        }
        return true
    }

    /// Whether a write of `key` is queued or being written: a removal another instance made
    /// may be overtaken by it (see `TieredCache.dropHere`).
    package func hasPendingWrite(_ key: CacheKey) -> Bool {
        pendingWrites.withLock { $0[key] != nil }
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
        Self.countDown(key, in: pendingRemovals)
    }

    private static func countDown(_ key: CacheKey, in counts: VisibleLock<[CacheKey: Int]>) {
        counts.withLock { pending in
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

    /// Writes every lane's operations to `tier`, each lane in order, and tries the removals it
    /// failed again on their timer, until ``finish()`` or cancellation.
    package func drain(into tier: any SharedCacheTier) async {
        await withDiscardingTaskGroup { group in
            for lane in lanes {
                group.addTask {
                    for await item in lane {
                        await self.apply(item, to: tier)
                    }
                }
            }
            group.addTask { await self.retryKeptRemovalsOnTimer() }
        }
    }

    /// Each time a removal was kept, waits its delay and queues the kept removals again (none,
    /// when another operation's success did first). A removal that fails again signals anew.
    private func retryKeptRemovalsOnTimer() async {
        for await _ in retrySignals {
            let base = retryDelays.delay(afterFailures: failuresInARow.load(ordering: .relaxed))
            let jittered = base * Double.random(in: 0.5...1)
            do { try await retryDelays.clock.sleep(for: jittered) } catch { return }
            retryFailedRemovals()
        }
    }

    private func apply(_ item: Item, to tier: any SharedCacheTier) async {
        if item.bytes > 0 { pendingBytes.wrappingSubtract(item.bytes, ordering: .relaxed) }
        do {
            switch item.operation {
            case .set(let entry):
                defer { Self.countDown(item.key, in: pendingWrites) }
                guard let write = begin(entry, for: item.key, queuedIn: item.epoch) else {
                    counters.withLock { $0.dropped += 1 }
                    return
                }
                defer { end(write) }
                try await tier.set(entry, for: item.key)
            case .remove(let broadcast):
                try await tier.remove(item.key, broadcast: broadcast)
                // An earlier removal of the key that failed is done with too.
                if failedRemovals.withLock({ $0.removeValue(forKey: item.key) }) != nil { removalDone(item.key) }
            }
            counters.withLock { $0.written += 1 }
            failuresInARow.store(0, ordering: .relaxed)
        } catch {
            counters.withLock { $0.failed += 1 }
            failuresInARow.add(1, ordering: .relaxed)
            if case .remove(let broadcast) = item.operation {
                keepFailedRemoval(item.key, broadcast: broadcast)
            }
            return
        }
        if case .remove = item.operation { removalDone(item.key) }
        retryFailedRemovals()
    }

    /// Keeps a removal the shared tier failed for ``retryFailedRemovals()``; its key stays
    /// pending. Past ``laneCapacity`` removals kept, it is dropped and counted.
    private func keepFailedRemoval(_ key: CacheKey, broadcast: Bool) {
        let merged = failedRemovals.withLock { failed -> Bool? in
            if let earlier = failed[key] {
                failed[key] = earlier || broadcast
                return true
            }
            guard failed.count < laneCapacity else { return nil }
            failed[key] = broadcast
            return false
        }
        switch merged {
        case false?: retrySignal.yield()
        case true?: removalDone(key)  // one removal kept stands for both
        case nil:
            counters.withLock { $0.droppedRemovals += 1 }
            removalDone(key)
        }
    }

    /// Queues again every removal the shared tier failed: it took an operation, or their delay
    /// passed.
    private func retryFailedRemovals() {
        let failed = failedRemovals.withLock { failed in
            defer { failed = [:] }
            return failed
        }
        for (key, broadcast) in failed where !yield(Item(key: key, operation: .remove(broadcast: broadcast), bytes: 0))
        {
            removalDone(key)
        }
    }

    /// Registers a write as being written, unless a bulk removal begun since it was queued covers
    /// it (checked under the lock the removal takes, so one of the two sees the other).
    /// - Returns: the write's number, for ``end(_:)``; nil when it is dropped.
    private func begin(_ entry: CacheEntry, for key: CacheKey, queuedIn epoch: UInt64) -> UInt64? {
        cutoffs.withLock { cutoffs in
            guard !cutoffs.drops(entry, queuedIn: epoch) else { return nil }
            let write = cutoffs.nextWrite
            cutoffs.nextWrite += 1
            cutoffs.writing[write] = (key, entry.storedAt, epoch)
            return write
        }
    }

    /// Ends a write; the bulk removals that waited for it go on.
    private func end(_ write: UInt64) {
        let ready = cutoffs.withLock { cutoffs in
            cutoffs.writing[write] = nil
            let now = cutoffs
            cutoffs.waiting = now.waiting.filter { !now.isClear(before: $0.epoch) }
            return now.waiting.filter { now.isClear(before: $0.epoch) }
        }
        for waiter in ready { waiter.continuation.resume() }
    }

    /// Begins a bulk removal in the shared tier: the writes queued until now of entries stored at
    /// or after `date` (every write, for nil) are dropped, and this returns once the writes being
    /// written are done, so that the removal that follows is the last word on what it covers.
    package func cutOff(storedSince date: Date?) async {
        await waitForWrites(before: beginCutOff(storedSince: date))
    }

    /// A bulk removal begun by ``beginCutOff(storedSince:)``.
    package struct CutOff: Sendable {
        fileprivate let epoch: UInt64
        /// The keys of the writes it covers that were being written when it began.
        package let writing: [CacheKey]
    }

    /// The first half of ``cutOff(storedSince:)``: the writes queued until now that it covers are
    /// dropped; those being written are named in the answer. Another instance's bulk removal,
    /// made already, comes before them in the shared tier: its receiver waits for them
    /// (``waitForWrites(before:)``) and removes their keys again (`TieredCache.applyHere`).
    package func beginCutOff(storedSince date: Date?) -> CutOff {
        let cutoff = epoch.add(1, ordering: .acquiringAndReleasing).newValue
        return cutoffs.withLock { cutoffs in
            let writing = cutoffs.writing.values.filter { write in
                write.epoch < cutoff && date.map { write.storedAt >= $0 } ?? true
            }
            if let date {
                let earliest = min(date, cutoffs.since?.date ?? date)
                cutoffs.since = (max(cutoff, cutoffs.since?.epoch ?? 0), earliest)
            } else {
                cutoffs.all = max(cutoffs.all, cutoff)
            }
            return CutOff(epoch: cutoff, writing: writing.map(\.key))
        }
    }

    /// Returns once no write queued before `cutOff` began is being written.
    package func waitForWrites(before cutOff: CutOff) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let proceed = cutoffs.withLock { cutoffs in
                guard cutoffs.isClear(before: cutOff.epoch) else {
                    cutoffs.waiting.append((cutOff.epoch, continuation))
                    return false
                }
                return true
            }
            if proceed { continuation.resume() }
        }
    }

    /// Ends the queue: the writers finish what is queued and stop; later operations are dropped.
    package func finish() {
        for continuation in continuations { continuation.finish() }
        retrySignal.finish()
    }

    /// The bytes of the writes waiting now.
    package var waitingBytes: Int { pendingBytes.load(ordering: .relaxed) }

    /// The counters since the queue was made.
    package var statistics: TieredCache.SharedWriteStatistics { counters.withLock { $0 } }
}
