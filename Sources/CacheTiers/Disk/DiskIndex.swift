// SPDX-License-Identifier: Apache-2.0

/// One stripe of the disk tier's index: index digest → ``IndexEntry``, in 12-byte slots.
///
/// An open-addressing table with Robin Hood linear probing (an entry displaces one nearer its home
/// slot, so probe runs stay short at high load and a miss stops early) and backward-shift deletion
/// (no tombstones). The home slot of a digest is `(tag × capacity) >> 64`, so the capacity need not
/// be a power of two; the table grows by a fifth when it is 93% full. A slot packs the tag and the
/// access bit into 4 bytes and segment, offset and size class into 8, so the table costs between
/// 12.9 and 15.5 bytes an entry (the 24-byte slots it replaced cost 28 to 43).
package struct DiskIndex {
    /// A packed entry: `tag` is the digest's top 31 bits shifted left once, with the access bit as
    /// bit 0 (below 2: empty); `low` and `high` hold segment << 38 | offset << 8 | size class.
    private struct Slot {
        var tag: UInt32 = 0
        var low: UInt32 = 0
        var high: UInt32 = 0
    }

    private var slots: [Slot]
    package private(set) var count = 0
    /// The low digest bits every entry of this stripe has.
    private let stripe: UInt64

    private static let maximumLoad = 0.93

    /// A table for the entries whose index digests end in `stripe` (below
    /// ``StripedIndex/stripeCount``).
    package init(stripe: UInt64 = 0, minimumCapacity: Int = 0) {
        self.stripe = stripe
        slots = Array(repeating: Slot(), count: Self.capacity(for: minimumCapacity))
    }

    private static func capacity(for count: Int) -> Int {
        max(16, Int((Double(count) / maximumLoad).rounded(.up)) + 1)
    }

    /// The number of slots.
    package var capacity: Int { slots.count }

    /// Bytes of memory the table's slots take.
    package var memoryBytes: Int { slots.count * MemoryLayout<Slot>.stride }

    // MARK: Packing

    @inline(__always)
    private static func tag(of digest: UInt64) -> UInt32 {
        UInt32(truncatingIfNeeded: digest >> 33) << 1
    }

    @inline(__always)
    private static func slot(_ entry: IndexEntry) -> Slot {
        let word = UInt64(entry.segment) << 38 | UInt64(entry.offset) << 8 | UInt64(entry.sizeClass)
        return Slot(
            tag: tag(of: entry.digest) | (entry.accessed ? 1 : 0),
            low: UInt32(truncatingIfNeeded: word),
            high: UInt32(truncatingIfNeeded: word >> 32)
        )
    }

    @inline(__always)
    private func entry(_ slot: Slot) -> IndexEntry {
        let word = UInt64(slot.high) << 32 | UInt64(slot.low)
        return IndexEntry(
            digest: UInt64(slot.tag >> 1) << 33 | stripe,
            segment: UInt32(truncatingIfNeeded: word >> 38),
            offset: UInt32(truncatingIfNeeded: word >> 8) & IndexEntry.maximumOffset,
            sizeClass: UInt8(truncatingIfNeeded: word),
            accessed: slot.tag & 1 != 0
        )
    }

    // MARK: Probing

    @inline(__always)
    private static func home(_ tag: UInt32, capacity: Int) -> Int {
        Int(truncatingIfNeeded: UInt64(capacity).multipliedFullWidth(by: UInt64(tag >> 1) << 33).high)
    }

    /// How far the slot at `index`, holding `tag`, is from its home.
    @inline(__always)
    private static func distance(_ tag: UInt32, at index: Int, capacity: Int) -> Int {
        let home = home(tag, capacity: capacity)
        return index >= home ? index - home : index + capacity - home
    }

    private func slotIndex(of digest: UInt64) -> Int? {
        let digest = IndexEntry.indexDigest(digest)
        guard digest & 0x3F == stripe else { return nil }
        let tag = Self.tag(of: digest)
        return slots.withUnsafeBufferPointer { slots in
            let capacity = slots.count
            var index = Self.home(tag, capacity: capacity)
            var distance = 0
            while true {
                let candidate = slots[index].tag
                if candidate < 2 { return nil }
                if candidate & ~1 == tag { return index }
                // Robin Hood order: an entry nearer its home than we are to ours means no match.
                if Self.distance(candidate, at: index, capacity: capacity) < distance { return nil }
                index += 1
                if index == capacity { index = 0 }
                distance += 1
            }
        }
    }

    // MARK: Operations

    /// The entry for `digest`.
    /// - Complexity: O(1) on average.
    package subscript(digest: UInt64) -> IndexEntry? {
        guard let index = slotIndex(of: digest) else { return nil }
        return entry(slots[index])
    }

    /// Marks the entry for `digest` as read since written.
    package mutating func markAccessed(_ digest: UInt64) {
        guard let index = slotIndex(of: digest) else { return }
        slots[index].tag |= 1
    }

    /// The entry for `digest`, marked as read since written: a reader's lookup. The slot is
    /// written only when its access bit was clear, so that repeated hits leave its memory clean.
    /// - Complexity: O(1) on average.
    package mutating func entryMarkingAccessed(_ digest: UInt64) -> IndexEntry? {
        guard let index = slotIndex(of: digest) else { return nil }
        let slot = slots[index]
        if slot.tag & 1 == 0 { slots[index].tag |= 1 }
        return entry(slot)
    }

    /// Inserts or replaces the entry for `entry.digest`.
    /// - Returns: the entry it replaced.
    @discardableResult
    package mutating func update(_ entry: IndexEntry) -> IndexEntry? {
        precondition(entry.digest & 0x3F == stripe, "an entry of another stripe")
        if let index = slotIndex(of: entry.digest) {
            let old = self.entry(slots[index])
            slots[index] = Self.slot(entry)
            return old
        }
        if Double(count + 1) > Double(slots.count) * Self.maximumLoad {
            grow()
        }
        insert(Self.slot(entry))
        count += 1
        return nil
    }

    /// Places a slot whose tag is not in the table.
    private mutating func insert(_ slot: Slot) {
        slots.withUnsafeMutableBufferPointer { slots in
            let capacity = slots.count
            var carried = slot
            var index = Self.home(carried.tag, capacity: capacity)
            var distance = 0
            while true {
                let resident = slots[index]
                if resident.tag < 2 {
                    slots[index] = carried
                    return
                }
                let residentDistance = Self.distance(resident.tag, at: index, capacity: capacity)
                if residentDistance < distance {
                    slots[index] = carried
                    carried = resident
                    distance = residentDistance
                }
                index += 1
                if index == capacity { index = 0 }
                distance += 1
            }
        }
    }

    /// Removes the entry for `digest`.
    /// - Returns: the entry removed.
    @discardableResult
    package mutating func remove(_ digest: UInt64) -> IndexEntry? {
        guard let found = slotIndex(of: digest) else { return nil }
        let removed = entry(slots[found])
        // Backward-shift deletion: pull the rest of the probe run one slot nearer home.
        slots.withUnsafeMutableBufferPointer { slots in
            let capacity = slots.count
            var hole = found
            while true {
                var next = hole + 1
                if next == capacity { next = 0 }
                let tag = slots[next].tag
                if tag < 2 || Self.distance(tag, at: next, capacity: capacity) == 0 { break }
                slots[hole] = slots[next]
                hole = next
            }
            slots[hole] = Slot()
        }
        count -= 1
        return removed
    }

    /// Removes every entry.
    package mutating func removeAll() {
        slots = Array(repeating: Slot(), count: 16)
        count = 0
    }

    /// Calls `body` with every entry, in no particular order.
    package func forEachEntry(_ body: (IndexEntry) throws -> Void) rethrows {
        for slot in slots where slot.tag >= 2 {
            try body(entry(slot))
        }
    }

    /// Every entry for which `isIncluded` is true.
    package func filter(_ isIncluded: (IndexEntry) -> Bool) -> [IndexEntry] {
        var entries: [IndexEntry] = []
        forEachEntry { if isIncluded($0) { entries.append($0) } }
        return entries
    }

    /// Makes room for `minimumCount` entries without growing again.
    package mutating func reserveCapacity(_ minimumCount: Int) {
        let needed = Self.capacity(for: minimumCount)
        guard needed > slots.count else { return }
        rebuild(capacity: needed)
    }

    private mutating func grow() {
        rebuild(capacity: max(slots.count + 16, slots.count + slots.count / 5))
    }

    private mutating func rebuild(capacity: Int) {
        let old = slots
        slots = Array(repeating: Slot(), count: capacity)
        for slot in old where slot.tag >= 2 {
            insert(slot)
        }
    }
}
