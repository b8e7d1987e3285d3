// SPDX-License-Identifier: Apache-2.0

#if Proxy
import NIOCore
import Synchronization

/// The encoded heads of stored responses, made once per stored record and copied by every plain
/// hit on it (``FastHit``): the status line and the stored fields, to which a hit adds its `Age`
/// and cache status. Without them every hit encoded the same fields again.
///
/// A head is found by the identity of the record it was made from, and holds that record weakly:
/// a record replaced or evicted (and freed) never finds a head made from another, even one
/// allocated at its address, and a head keeps no record alive.
///
/// Bounded: a direct-mapped table of ``slotCount`` slots of at most ``maximumHeadBytes`` each.
final class HitHeads: Sendable {
    /// How many slots the table has.
    static let slotCount = 1_024
    /// The largest head kept; a larger one is encoded on every hit.
    static let maximumHeadBytes = 4_096

    private struct Slot {
        weak var record: (any AnyObject & Sendable)?
        /// The encoded head, or nil for a record whose hits are not plain.
        var head: ByteBuffer?
    }

    private let slots: Mutex<[Slot?]>

    init() {
        slots = Mutex(Array(repeating: nil, count: Self.slotCount))
    }

    /// The head kept for `record`, made by `make` (and kept) when there is none; nil when
    /// `make` says the record's hits are not plain.
    func head(for record: any AnyObject & Sendable, make: () -> ByteBuffer?) -> ByteBuffer? {
        let index = DirectMappedSlot.index(of: UInt(bitPattern: ObjectIdentifier(record)), slotCount: Self.slotCount)
        let found: ByteBuffer?? = slots.withLock { slots in
            guard let slot = slots[index], slot.record === record else { return .none }
            return .some(slot.head)
        }
        if let found { return found }
        let head = make()
        guard (head?.readableBytes ?? 0) <= Self.maximumHeadBytes else { return head }
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
