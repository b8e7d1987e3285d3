// SPDX-License-Identifier: Apache-2.0

#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
#endif

/// One stripe of the memory tier: an exact LRU bounded by total cost in bytes and by entry count.
///
/// A plain value with synchronous `mutating` methods, so that it can be tested and benchmarked
/// without a lock; ``MemoryTier`` keeps each shard inside a `Mutex`.
///
/// Entries are indexed by ``CacheKey/digest`` and live in a node array linked from most to least
/// recently used, with freed slots kept on a free list, so get, set and remove are O(1). Every
/// node holds the full key: a lookup whose digest matches a different key is a miss, and a set
/// whose digest matches a different key replaces that key's entry.
package struct MemoryShard {
    // The fields a hit touches come first, so that they share a cache line with the lock that
    // ``MemoryTier`` puts in front of the shard.
    private var index: [UInt64: Int32] = [:]
    private var nodes: [Node] = []
    /// The most recently used node, or `Self.none`.
    private var head = Self.none
    /// The least recently used node, or `Self.none`.
    private var tail = Self.none
    /// Lookups that found their key.
    package private(set) var hits = 0
    /// Lookups that did not.
    package private(set) var misses = 0
    /// The first free node, chained through `next`, or `Self.none`.
    private var freeList = Self.none
    /// The bytes held, counted by ``CacheEntry/cost(keyByteCount:)``.
    package private(set) var totalCost = 0
    /// Entries dropped to make room for another.
    package private(set) var evictions = 0
    /// Sets refused because the entry costs more than ``maximumEntryCost`` or the shard holds
    /// nothing.
    package private(set) var admissionRefusals = 0
    /// Counts the writes that changed what the shard holds for some key (sets, removals): a
    /// promotion from a lower tier checks it to learn whether a newer write raced ahead of it.
    /// Evictions do not count; they only forget.
    package private(set) var writeGeneration: UInt64 = 0

    /// The most bytes the shard holds, counted by ``CacheEntry/cost(keyByteCount:)``.
    package let costLimit: Int
    /// The most entries the shard holds.
    package let countLimit: Int
    /// The largest cost one entry may have; a costlier entry is refused. At most ``costLimit``.
    package let maximumEntryCost: Int

    private static let none: Int32 = -1

    private struct Node {
        /// Nil while the node is on the free list.
        var key: CacheKey?
        var entry: CacheEntry?
        var cost: Int
        /// Towards the most recently used end.
        var previous: Int32
        /// Towards the least recently used end; the free list's link for a free node.
        var next: Int32
    }

    /// What a set did.
    package struct SetOutcome: Hashable, Sendable {
        /// Whether the entry is now stored.
        package var stored: Bool
        /// How many other entries were evicted to make room.
        package var evictions: Int
    }

    /// Creates an empty shard.
    /// - Parameters:
    ///   - costLimit: the most bytes held; 0 holds nothing.
    ///   - countLimit: the most entries held, at most `Int32.max` (a larger limit means that);
    ///     0 holds nothing.
    ///   - maximumEntryCost: the largest cost of one entry; `nil` or anything above `costLimit`
    ///     means `costLimit`.
    package init(costLimit: Int, countLimit: Int, maximumEntryCost: Int? = nil) {
        precondition(costLimit >= 0, "costLimit must not be negative")
        precondition(countLimit >= 0, "countLimit must not be negative")
        self.costLimit = costLimit
        // Nodes are numbered with 32 bits; two billion entries would not fit in memory anyway.
        self.countLimit = min(countLimit, Int(Int32.max))
        self.maximumEntryCost = min(maximumEntryCost ?? costLimit, costLimit)
    }

    /// The number of entries held.
    package var count: Int { index.count }

    /// Whether the shard holds no entry.
    package var isEmpty: Bool { index.isEmpty }

    /// The entry for `key`, which becomes the most recently used; nil on a miss.
    /// - Complexity: O(1) on average.
    package mutating func entry(for key: CacheKey) -> CacheEntry? {
        guard let slot = index[key.digest], nodes[Int(slot)].key!.string == key.string else {
            misses += 1
            return nil
        }
        hits += 1
        moveToFront(slot)
        return nodes[Int(slot)].entry
    }

    /// The entry for `key`, which becomes the most recently used; on a miss, the shard's
    /// ``writeGeneration`` to hand to ``promote(_:for:ifUnchangedSince:)``.
    /// - Complexity: O(1) on average.
    package mutating func lookup(_ key: CacheKey) -> MemoryLookup {
        if let entry = entry(for: key) { return .hit(entry) }
        return .miss(generation: writeGeneration)
    }

    /// Stores `entry`, read from a lower tier, unless a write reached the shard since the miss
    /// that returned `generation`: a newer set or a removal of the key must win over the older
    /// bytes the lower tier returned.
    /// - Returns: whether the entry was stored.
    /// - Complexity: as ``set(_:for:)``.
    package mutating func promote(
        _ entry: CacheEntry,
        for key: CacheKey,
        ifUnchangedSince generation: UInt64
    ) -> SetOutcome {
        guard generation == writeGeneration else { return SetOutcome(stored: false, evictions: 0) }
        return set(entry, for: key)
    }

    /// The entry for `key` without counting a lookup or changing recency.
    /// - Complexity: O(1) on average.
    package func peek(_ key: CacheKey) -> CacheEntry? {
        guard let slot = index[key.digest], nodes[Int(slot)].key!.string == key.string else { return nil }
        return nodes[Int(slot)].entry
    }

    /// Stores `entry` for `key` as the most recently used, evicting least recently used entries
    /// until both limits hold.
    ///
    /// An entry whose cost is above ``maximumEntryCost`` (or any entry, when ``countLimit`` is 0)
    /// is refused, and then any older entry for the same key is removed too, so that a stale value
    /// is never served after a newer one was offered. A stored entry replaces the entry of a
    /// different key with the same digest.
    /// - Returns: whether the entry was stored, and how many entries were evicted.
    /// - Complexity: O(1) on average, plus O(1) per evicted entry.
    @discardableResult
    package mutating func set(_ entry: CacheEntry, for key: CacheKey) -> SetOutcome {
        writeGeneration &+= 1
        let cost = entry.cost(keyByteCount: key.string.utf8.count)
        guard cost <= maximumEntryCost, countLimit > 0 else {
            admissionRefusals += 1
            remove(key)
            return SetOutcome(stored: false, evictions: 0)
        }
        if let slot = index[key.digest] {
            // The same key, or another key with the same digest: the new key replaces it.
            unlink(slot)
            release(slot)
        }
        var evicted = 0
        while tail != Self.none, totalCost + cost > costLimit || index.count >= countLimit {
            let victim = tail
            unlink(victim)
            release(victim)
            evicted += 1
        }
        evictions += evicted
        let slot = allocate(key: key, entry: entry, cost: cost)
        index[key.digest] = slot
        linkAtFront(slot)
        totalCost += cost
        return SetOutcome(stored: true, evictions: evicted)
    }

    /// Removes the entry for `key`.
    /// - Returns: the removed entry, or nil when there was none.
    /// - Complexity: O(1) on average.
    @discardableResult
    package mutating func remove(_ key: CacheKey) -> CacheEntry? {
        writeGeneration &+= 1
        guard let slot = index[key.digest], nodes[Int(slot)].key!.string == key.string else { return nil }
        let entry = nodes[Int(slot)].entry
        unlink(slot)
        release(slot)
        return entry
    }

    /// Removes every entry and frees the storage; the counters are kept.
    /// - Complexity: O(n).
    package mutating func removeAll() {
        writeGeneration &+= 1
        index = [:]
        nodes = []
        head = Self.none
        tail = Self.none
        freeList = Self.none
        totalCost = 0
    }

    /// Removes the entries stored at or after `date`.
    /// - Returns: how many entries were removed.
    /// - Complexity: O(n).
    package mutating func removeEntries(storedSince date: Date) -> Int {
        writeGeneration &+= 1
        var removed = 0
        var slot = head
        while slot != Self.none {
            let next = nodes[Int(slot)].next
            if nodes[Int(slot)].entry!.storedAt >= date {
                unlink(slot)
                release(slot)
                removed += 1
            }
            slot = next
        }
        return removed
    }

    /// The keys held, from the most to the least recently used.
    /// - Complexity: O(n).
    package var keysByRecency: [CacheKey] {
        var keys: [CacheKey] = []
        keys.reserveCapacity(count)
        var slot = head
        while slot != Self.none {
            keys.append(nodes[Int(slot)].key!)
            slot = nodes[Int(slot)].next
        }
        return keys
    }

    // MARK: Nodes

    /// Takes a node off the recency list and out of the index, and the cost off the total; the
    /// node still holds its key and entry.
    private mutating func unlink(_ slot: Int32) {
        let previous = nodes[Int(slot)].previous
        let next = nodes[Int(slot)].next
        if previous != Self.none {
            nodes[Int(previous)].next = next
        } else {
            head = next
        }
        if next != Self.none {
            nodes[Int(next)].previous = previous
        } else {
            tail = previous
        }
        index[nodes[Int(slot)].key!.digest] = nil
        totalCost -= nodes[Int(slot)].cost
    }

    /// Puts an unlinked node on the free list and drops its key and entry.
    private mutating func release(_ slot: Int32) {
        nodes[Int(slot)].key = nil
        nodes[Int(slot)].entry = nil
        nodes[Int(slot)].cost = 0
        nodes[Int(slot)].previous = Self.none
        nodes[Int(slot)].next = freeList
        freeList = slot
    }

    private mutating func allocate(key: CacheKey, entry: CacheEntry, cost: Int) -> Int32 {
        let node = Node(key: key, entry: entry, cost: cost, previous: Self.none, next: Self.none)
        if freeList != Self.none {
            let slot = freeList
            freeList = nodes[Int(slot)].next
            nodes[Int(slot)] = node
            return slot
        }
        nodes.append(node)
        return Int32(nodes.count - 1)
    }

    private mutating func linkAtFront(_ slot: Int32) {
        nodes[Int(slot)].previous = Self.none
        nodes[Int(slot)].next = head
        if head != Self.none {
            nodes[Int(head)].previous = slot
        } else {
            tail = slot
        }
        head = slot
    }

    private mutating func moveToFront(_ slot: Int32) {
        guard slot != head else { return }
        // Not the head, so it has a previous node.
        let previous = nodes[Int(slot)].previous
        let next = nodes[Int(slot)].next
        nodes[Int(previous)].next = next
        if next != Self.none {
            nodes[Int(next)].previous = previous
        } else {
            tail = previous
        }
        nodes[Int(slot)].previous = Self.none
        nodes[Int(slot)].next = head
        nodes[Int(head)].previous = slot
        head = slot
    }
}
