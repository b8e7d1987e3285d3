// SPDX-License-Identifier: Apache-2.0

import Synchronization

/// The disk tier's index, split into stripes by key digest so that readers on many cores do not
/// queue behind each other or behind the writer.
///
/// Each stripe is a ``DiskIndex`` and a table of the open segments behind one `Mutex`; a reader
/// holds one stripe's lock for a lookup (and to set the entry's access bit), takes a reference to
/// the record's ``SegmentHandle`` (through the stripe's own ``SegmentHandle/StripeReference``) in
/// the same critical section, and reads with no lock held. The
/// writer (``DiskStore``, serialized by the ``DiskTier`` actor) changes one stripe at a time;
/// segment changes, which are rare, go to every stripe.
///
/// Readers count hits, misses, bytes read and damaged records in atomics of their stripe, summed
/// on demand, so that the hit path shares no counter between cores.
package final class StripedIndex: Sendable {
    /// One stripe: its part of the index, every open segment, and its readers' counters.
    package final class Stripe: Sendable {
        struct State {
            var table: DiskIndex
            var segments: [UInt32: SegmentHandle.StripeReference] = [:]
        }

        let state: Mutex<State>
        let hits = Atomic<Int>(0)
        let misses = Atomic<Int>(0)
        let bytesRead = Atomic<Int>(0)
        let corruptRecords = Atomic<Int>(0)
        let authenticationFailures = Atomic<Int>(0)

        init(number: Int) {
            state = Mutex(State(table: DiskIndex(stripe: UInt64(number))))
        }

        /// The entry for `digest`, marked accessed, and a reference to its segment: the one
        /// critical section of a read.
        func lookup(_ digest: UInt64) -> (IndexEntry, SegmentHandle.StripeReference)? {
            state.withLock { state in
                guard let entry = state.table.entryMarkingAccessed(digest),
                    let segment = state.segments[entry.segment]
                else { return nil }
                return (entry, segment)
            }
        }

        /// Removes `entry` if the index still points at it (a reader found it damaged).
        /// - Returns: whether it was removed.
        func remove(ifStill entry: IndexEntry) -> Bool {
            state.withLock { state in
                guard let current = state.table[entry.digest], current.segment == entry.segment,
                    current.offset == entry.offset
                else { return false }
                state.table.remove(entry.digest)
                return true
            }
        }
    }

    /// The number of stripes: a power of two, well above the core counts the tier meets, so that
    /// two readers rarely meet on one lock.
    package static let stripeCount = 64

    private let stripes: [Stripe]

    package init() {
        stripes = (0..<Self.stripeCount).map { Stripe(number: $0) }
    }

    /// The stripe of `digest`: its low bits (a stripe's table places entries by the high bits).
    @inline(__always)
    package func stripe(for digest: UInt64) -> Stripe {
        stripes[Int(truncatingIfNeeded: digest) & (Self.stripeCount - 1)]
    }

    // MARK: The writer's side

    /// The entry for `digest`.
    package subscript(digest: UInt64) -> IndexEntry? {
        stripe(for: digest).state.withLock { $0.table[digest] }
    }

    /// Inserts or replaces the entry for `entry.digest`.
    /// - Returns: the entry it replaced.
    @discardableResult
    package func update(_ entry: IndexEntry) -> IndexEntry? {
        stripe(for: entry.digest).state.withLock { $0.table.update(entry) }
    }

    /// Removes the entry for `digest`.
    /// - Returns: the entry removed.
    @discardableResult
    package func remove(_ digest: UInt64) -> IndexEntry? {
        stripe(for: digest).state.withLock { $0.table.remove(digest) }
    }

    /// Replaces every stripe's entries with `tables` (one per stripe, in stripe order, built
    /// without locks: opening from a snapshot).
    package func replaceTables(_ tables: [DiskIndex]) {
        precondition(tables.count == Self.stripeCount, "one table per stripe")
        for (stripe, table) in zip(stripes, tables) {
            stripe.state.withLock { $0.table = table }
        }
    }

    /// The bytes of the entries in each segment from `first` to `first + count - 1` (in size
    /// classes, as entries know lengths), one stripe at a time.
    package func liveBytes(segmentsFrom first: UInt32, count: Int) -> [Int] {
        var live = [Int](repeating: 0, count: count)
        for stripe in stripes {
            stripe.state.withLock { state in
                state.table.forEachEntry { entry in
                    guard entry.segment >= first, Int(entry.segment - first) < count else { return }
                    live[Int(entry.segment - first)] += entry.length
                }
            }
        }
        return live
    }

    /// Removes every entry (the segments stay).
    package func removeAll() {
        for stripe in stripes {
            stripe.state.withLock { $0.table.removeAll() }
        }
    }

    /// Makes `segment` readable: added to every stripe before any entry points into it.
    package func addSegment(_ segment: SegmentHandle) {
        for stripe in stripes {
            stripe.state.withLock { $0.segments[segment.sequence] = SegmentHandle.StripeReference(segment) }
        }
    }

    /// Makes segment `sequence` unreadable for new lookups: removed from every stripe after the
    /// last entry pointing into it. Readers in flight keep their reference (see ``SegmentHandle``).
    package func removeSegment(_ sequence: UInt32) {
        for stripe in stripes {
            stripe.state.withLock { _ = $0.segments.removeValue(forKey: sequence) }
        }
    }

    /// Entries in the index.
    package var count: Int {
        stripes.reduce(0) { total, stripe in total + stripe.state.withLock { $0.table.count } }
    }

    /// Bytes of memory the stripes' slots take.
    package var memoryBytes: Int {
        stripes.reduce(0) { total, stripe in total + stripe.state.withLock { $0.table.memoryBytes } }
    }

    /// Every entry, in no particular order: a copy, taken one stripe at a time.
    package func allEntries() -> [IndexEntry] {
        var entries: [IndexEntry] = []
        for stripe in stripes {
            stripe.state.withLock { state in
                entries.reserveCapacity(entries.count + state.table.count)
                state.table.forEachEntry { entries.append($0) }
            }
        }
        return entries
    }

    /// Calls `body` with every entry (a copy taken first; `body` may change the index).
    package func forEachEntry(_ body: (IndexEntry) throws -> Void) rethrows {
        for entry in allEntries() { try body(entry) }
    }

    /// Every entry for which `isIncluded` is true.
    package func filter(_ isIncluded: (IndexEntry) -> Bool) -> [IndexEntry] {
        var entries: [IndexEntry] = []
        for stripe in stripes {
            stripe.state.withLock { state in
                state.table.forEachEntry { if isIncluded($0) { entries.append($0) } }
            }
        }
        return entries
    }

    // MARK: Readers' counters

    /// The readers' counters, summed over the stripes.
    package var readCounters: (hits: Int, misses: Int, bytesRead: Int, corrupt: Int, unauthenticated: Int) {
        var sums = (hits: 0, misses: 0, bytesRead: 0, corrupt: 0, unauthenticated: 0)
        for stripe in stripes {
            sums.hits += stripe.hits.load(ordering: .relaxed)
            sums.misses += stripe.misses.load(ordering: .relaxed)
            sums.bytesRead += stripe.bytesRead.load(ordering: .relaxed)
            sums.corrupt += stripe.corruptRecords.load(ordering: .relaxed)
            sums.unauthenticated += stripe.authenticationFailures.load(ordering: .relaxed)
        }
        return sums
    }
}
