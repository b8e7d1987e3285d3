// SPDX-License-Identifier: Apache-2.0

/// S3-FIFO's ghost queue: the digests of keys recently evicted from a shard's small queue, with
/// the cost each had, bounded by total cost and by count, forgetting the oldest first.
///
/// A FIFO ring of digests and a table from digest to its place in the ring. A digest removed
/// (because its key came back) leaves a stale slot in the ring, skipped when the ring reaches it;
/// the ring is compacted when spent and stale slots outnumber live ones, so it stays O(live count).
struct GhostQueue {
    private struct Slot {
        var digest: UInt64
        var cost: Int
    }

    /// The most bytes of ghosts remembered.
    let costLimit: Int
    /// The most ghosts remembered.
    let countLimit: Int
    /// Oldest first from `start`; slots before `start` are spent.
    private var ring: [Slot] = []
    private var start = 0
    /// Digest → its slot's absolute sequence number (`ring` index + `dropped`).
    private var places: [UInt64: Int] = [:]
    /// Slots dropped off the front of `ring` by compaction, so that sequence numbers stay valid.
    private var dropped = 0
    /// The cost of the live ghosts.
    private(set) var totalCost = 0

    init(costLimit: Int, countLimit: Int) {
        self.costLimit = costLimit
        self.countLimit = countLimit
    }

    /// The number of live ghosts.
    var count: Int { places.count }

    /// The live digests, oldest first.
    var digests: [UInt64] {
        ring[start...].enumerated().compactMap { offset, slot in
            places[slot.digest] == dropped + start + offset ? slot.digest : nil
        }
    }

    /// Remembers `digest` as the newest ghost, forgetting the oldest while over a limit.
    /// - Complexity: amortized O(1).
    mutating func insert(_ digest: UInt64, cost: Int) {
        guard countLimit > 0, cost <= costLimit else { return }
        remove(digest)
        places[digest] = dropped + ring.count
        ring.append(Slot(digest: digest, cost: cost))
        totalCost += cost
        while totalCost > costLimit || places.count > countLimit {
            let slot = ring[start]
            if places[slot.digest] == dropped + start {
                places[slot.digest] = nil
                totalCost -= slot.cost
            }
            start += 1
        }
        compactIfSparse()
    }

    /// Forgets `digest`.
    /// - Returns: whether it was a ghost.
    /// - Complexity: O(1) on average.
    @discardableResult
    mutating func remove(_ digest: UInt64) -> Bool {
        guard let place = places.removeValue(forKey: digest) else { return false }
        totalCost -= ring[place - dropped].cost
        compactIfSparse()
        return true
    }

    /// Forgets every ghost.
    mutating func removeAll() {
        self = GhostQueue(costLimit: costLimit, countLimit: countLimit)
    }

    /// Rebuilds the ring from its live slots when they are fewer than half of it (spent and stale
    /// slots included).
    private mutating func compactIfSparse() {
        guard ring.count > 64, places.count * 2 < ring.count else { return }
        var live: [Slot] = []
        live.reserveCapacity(places.count * 2)
        let base = dropped + ring.count
        for (offset, slot) in ring[start...].enumerated() where places[slot.digest] == dropped + start + offset {
            places[slot.digest] = base + live.count
            live.append(slot)
        }
        dropped = base
        ring = live
        start = 0
    }
}
