// SPDX-License-Identifier: Apache-2.0

/// A memory shard's index: key digest → node slot, in one open-addressing table with linear
/// probing.
///
/// The digests are already well mixed 64-bit hashes (``KeyDigest``), so a slot is found from the
/// digest's low bits directly; `Dictionary` would hash each digest again with SipHash, which cost
/// about a tenth of a memory hit. The shard picks its shard from the digest's high bits, so the
/// two do not correlate. Removal shifts the entries after the removed one back (no tombstones), so
/// lookups never slow down with churn. The table grows at three quarters full and never shrinks
/// but on ``removeAll()``.
///
/// Digest zero marks an empty slot, so it is stored as one: the two digests then share an index
/// entry, which the shard's full-key check makes a miss, never a wrong answer (as any digest
/// collision is).
struct DigestTable {
    /// The digest in each slot, zero when the slot is empty.
    private var digests: [UInt64]
    /// The node slot stored with each digest.
    private var values: [Int32]
    /// The number of digests stored.
    private(set) var count = 0

    private static let initialCapacity = 16

    init() {
        digests = Array(repeating: 0, count: Self.initialCapacity)
        values = Array(repeating: 0, count: Self.initialCapacity)
    }

    var isEmpty: Bool { count == 0 }

    /// The digest as the table stores it: never zero.
    @inline(__always)
    private static func stored(_ digest: UInt64) -> UInt64 {
        digest == 0 ? 1 : digest
    }

    /// The value stored for `digest`; setting nil removes it.
    /// - Complexity: O(1) on average.
    subscript(digest: UInt64) -> Int32? {
        get {
            let digest = Self.stored(digest)
            return digests.withUnsafeBufferPointer { digests in
                let mask = digests.count - 1
                var slot = Int(truncatingIfNeeded: digest) & mask
                while true {
                    let found = digests[slot]
                    if found == digest { return values.withUnsafeBufferPointer { $0[slot] } }
                    if found == 0 { return nil }
                    slot = (slot + 1) & mask
                }
            }
        }
        set {
            if let newValue {
                insert(Self.stored(digest), newValue)
            } else {
                remove(Self.stored(digest))
            }
        }
    }

    /// Removes every digest and frees the storage beyond the initial table.
    mutating func removeAll() {
        self = DigestTable()
    }

    /// The slot holding `digest`, or the empty slot where it would go.
    @inline(__always)
    private func slot(of digest: UInt64) -> (slot: Int, found: Bool) {
        digests.withUnsafeBufferPointer { digests in
            let mask = digests.count - 1
            var slot = Int(truncatingIfNeeded: digest) & mask
            while true {
                let found = digests[slot]
                if found == digest { return (slot, true) }
                if found == 0 { return (slot, false) }
                slot = (slot + 1) & mask
            }
        }
    }

    private mutating func insert(_ digest: UInt64, _ value: Int32) {
        var (slot, found) = slot(of: digest)
        if !found {
            if (count + 1) * 4 > digests.count * 3 {
                grow()
                slot = self.slot(of: digest).slot
            }
            digests[slot] = digest
            count += 1
        }
        values[slot] = value
    }

    private mutating func remove(_ digest: UInt64) {
        let (start, found) = slot(of: digest)
        guard found else { return }
        count -= 1
        let mask = digests.count - 1
        // Backward-shift deletion: move each later entry of the run into the hole unless its
        // home slot lies cyclically after the hole (then it is already as close as it can be).
        var hole = start
        var next = (hole + 1) & mask
        while digests[next] != 0 {
            let home = Int(truncatingIfNeeded: digests[next]) & mask
            let stays = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next)
            if !stays {
                digests[hole] = digests[next]
                values[hole] = values[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        digests[hole] = 0
    }

    private mutating func grow() {
        let oldDigests = digests
        let oldValues = values
        let capacity = digests.count * 2
        digests = Array(repeating: 0, count: capacity)
        values = Array(repeating: 0, count: capacity)
        for (index, digest) in oldDigests.enumerated() where digest != 0 {
            let slot = slot(of: digest).slot
            digests[slot] = digest
            values[slot] = oldValues[index]
        }
    }
}
