// SPDX-License-Identifier: Apache-2.0

#if Proxy
import NIOCore
import Synchronization

/// The encoded heads of stored responses, made once per stored record and copied by every plain
/// hit on it (``FastHit``): the status line and the stored fields, to which a hit adds its `Age`
/// and cache status. Without them every hit encoded the same fields again.
///
/// A head is found by the identity of the record it was made from (``HTTPCaching``'s record
/// serial, unique in the process): a record replaced or evicted never finds a head made from
/// another, and a head keeps no record alive. (Slots held the record weakly until 2026-11-29: a
/// weak reference moves every retain and release of the record to Swift's slow, side-table
/// path, a tenth of a hit's CPU time.)
///
/// Bounded: a direct-mapped table of ``slotCount`` slots of at most ``maximumHeadBytes`` each.
final class HitHeads<Head: Sendable>: Sendable {
    /// How many slots the table has.
    static var slotCount: Int { 1_024 }
    /// The largest head kept; a larger one is encoded on every hit.
    static var maximumHeadBytes: Int { 4_096 }

    private struct Slot {
        var record: UInt64
        /// The head, or nil for a record whose hits are not plain.
        var head: Head?
    }

    private let slots: Mutex<[Slot?]>
    /// The bytes a head takes, held to ``maximumHeadBytes``.
    private let cost: @Sendable (Head) -> Int

    init(cost: @escaping @Sendable (Head) -> Int) {
        slots = Mutex(Array(repeating: nil, count: Self.slotCount))
        self.cost = cost
    }

    /// The head kept for `record`, made by `make` (and kept) when there is none; nil when
    /// `make` says the record's hits are not plain.
    func head(for record: UInt64, make: () -> Head?) -> Head? {
        let index = Int(truncatingIfNeeded: record) & (Self.slotCount - 1)
        let found: Head?? = slots.withLock { slots in
            guard slots[index]?.record == record else { return .none }
            return .some(slots[index]?.head)
        }
        if let found { return found }
        let head = make()
        guard head.map(cost) ?? 0 <= Self.maximumHeadBytes else { return head }
        // The replaced slot is returned, to be released outside the lock.
        _ = slots.withLock { slots -> Slot? in
            let old = slots[index]
            slots[index] = Slot(record: record, head: head)
            return old
        }
        return head
    }
}
#endif
