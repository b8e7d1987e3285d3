// SPDX-License-Identifier: Apache-2.0

/// Where a record lives, and what the tier needs to know about it without reading it.
package struct IndexEntry: Hashable, Sendable {
    /// The key's digest; never zero.
    package var digest: UInt64
    /// The segment's sequence number.
    package var segment: UInt32
    /// The record's offset in the segment.
    package var offset: UInt32
    /// The record's length; the top bit is the access bit.
    private var lengthAndAccess: UInt32
    /// When the record was stored, in whole seconds since 1970, rounded up.
    package var storedAtSeconds: UInt32

    package init(digest: UInt64, segment: UInt32, offset: UInt32, length: Int, storedAtSeconds: UInt32) {
        precondition(length >= 0 && length < 1 << 31, "record length out of range")
        self.digest = digest
        self.segment = segment
        self.offset = offset
        self.lengthAndAccess = UInt32(length)
        self.storedAtSeconds = storedAtSeconds
    }

    /// The record's length in bytes.
    package var length: Int { Int(lengthAndAccess & 0x7FFF_FFFF) }

    /// Set when the entry was read since it was written: it earns a second chance when its segment
    /// is retired.
    package var accessed: Bool {
        get { lengthAndAccess & 0x8000_0000 != 0 }
        set { lengthAndAccess = newValue ? lengthAndAccess | 0x8000_0000 : lengthAndAccess & 0x7FFF_FFFF }
    }

    /// Rounds a time in milliseconds up to whole seconds, so that `removeEntries(storedSince:)`
    /// errs on the side of removing.
    package static func seconds(fromMillis millis: Int64) -> UInt32 {
        let seconds = (millis + 999) / 1000
        return UInt32(clamping: max(0, seconds))
    }
}

/// The disk tier's index: key digest → ``IndexEntry``.
///
/// An open-addressing table with linear probing and backward-shift deletion over one array of
/// 24-byte slots; the slot of a digest is `(digest × capacity) >> 64`, so the capacity need not be
/// a power of two and grows by half when the table is 85% full. That keeps the cost between
/// 28 and 43 bytes an entry (a `Dictionary<UInt64, …>` of the same entries costs 43 to 85).
/// A digest of zero marks an empty slot; ``CacheKey`` digests are never zero.
package struct DiskIndex {
    private var slots: [IndexEntry]
    package private(set) var count = 0

    private static let empty = IndexEntry(digest: 0, segment: 0, offset: 0, length: 0, storedAtSeconds: 0)
    private static let maximumLoad = 0.85

    package init(minimumCapacity: Int = 0) {
        let capacity = max(16, Int((Double(minimumCapacity) / Self.maximumLoad).rounded(.up)) + 1)
        slots = Array(repeating: Self.empty, count: capacity)
    }

    /// The number of slots.
    package var capacity: Int { slots.count }

    /// Bytes of memory the table's slots take.
    package var memoryBytes: Int { slots.count * MemoryLayout<IndexEntry>.stride }

    @inline(__always)
    private func home(_ digest: UInt64) -> Int {
        Int(truncatingIfNeeded: UInt64(slots.count).multipliedFullWidth(by: digest).high)
    }

    private func slotIndex(of digest: UInt64) -> Int? {
        slots.withUnsafeBufferPointer { slots in
            var index = home(digest)
            while true {
                let candidate = slots[index].digest
                if candidate == digest { return index }
                if candidate == 0 { return nil }
                index += 1
                if index == slots.count { index = 0 }
            }
        }
    }

    /// The entry for `digest`.
    /// - Complexity: O(1) on average.
    package subscript(digest: UInt64) -> IndexEntry? {
        guard let index = slotIndex(of: digest) else { return nil }
        return slots[index]
    }

    /// Marks the entry for `digest` as read since written.
    package mutating func markAccessed(_ digest: UInt64) {
        guard let index = slotIndex(of: digest) else { return }
        slots[index].accessed = true
    }

    /// The entry for `digest`, marked as read since written: a reader's lookup. The slot is
    /// written only when its access bit was clear, so that repeated hits leave its memory clean.
    /// - Complexity: O(1) on average.
    package mutating func entryMarkingAccessed(_ digest: UInt64) -> IndexEntry? {
        guard let index = slotIndex(of: digest) else { return nil }
        let entry = slots[index]
        if !entry.accessed { slots[index].accessed = true }
        return entry
    }

    /// Inserts or replaces the entry for `entry.digest`.
    /// - Returns: the entry it replaced.
    @discardableResult
    package mutating func update(_ entry: IndexEntry) -> IndexEntry? {
        precondition(entry.digest != 0, "digest zero is reserved")
        if let index = slotIndex(of: entry.digest) {
            let old = slots[index]
            slots[index] = entry
            return old
        }
        if Double(count + 1) > Double(slots.count) * Self.maximumLoad {
            grow()
        }
        var index = home(entry.digest)
        while slots[index].digest != 0 {
            index += 1
            if index == slots.count { index = 0 }
        }
        slots[index] = entry
        count += 1
        return nil
    }

    /// Removes the entry for `digest`.
    /// - Returns: the entry removed.
    @discardableResult
    package mutating func remove(_ digest: UInt64) -> IndexEntry? {
        guard var hole = slotIndex(of: digest) else { return nil }
        let removed = slots[hole]
        // Backward-shift deletion: pull later members of the probe run into the hole, so that
        // lookups never need tombstones.
        var index = hole
        while true {
            index += 1
            if index == slots.count { index = 0 }
            let candidate = slots[index]
            if candidate.digest == 0 { break }
            let ideal = home(candidate.digest)
            // Move the candidate if its ideal slot is not cyclically within (hole, index].
            let stays = hole <= index ? (ideal > hole && ideal <= index) : (ideal > hole || ideal <= index)
            if !stays {
                slots[hole] = candidate
                hole = index
            }
        }
        slots[hole] = Self.empty
        count -= 1
        return removed
    }

    /// Removes every entry.
    package mutating func removeAll() {
        slots = Array(repeating: Self.empty, count: 16)
        count = 0
    }

    /// Calls `body` with every entry, in no particular order.
    package func forEachEntry(_ body: (IndexEntry) throws -> Void) rethrows {
        for slot in slots where slot.digest != 0 {
            try body(slot)
        }
    }

    /// Every entry for which `isIncluded` is true.
    package func filter(_ isIncluded: (IndexEntry) -> Bool) -> [IndexEntry] {
        slots.filter { $0.digest != 0 && isIncluded($0) }
    }

    /// Makes room for `minimumCount` entries without growing again.
    package mutating func reserveCapacity(_ minimumCount: Int) {
        let needed = Int((Double(minimumCount) / Self.maximumLoad).rounded(.up)) + 1
        guard needed > slots.count else { return }
        rebuild(capacity: needed)
    }

    private mutating func grow() {
        rebuild(capacity: max(16, slots.count + slots.count / 2))
    }

    private mutating func rebuild(capacity: Int) {
        let old = slots
        slots = Array(repeating: Self.empty, count: capacity)
        count = 0
        for slot in old where slot.digest != 0 {
            update(slot)
        }
    }
}
