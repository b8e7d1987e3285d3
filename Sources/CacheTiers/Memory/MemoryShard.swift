// SPDX-License-Identifier: Apache-2.0

#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One stripe of the memory tier, bounded by total cost in bytes and by entry count, evicting by
/// its ``MemoryTier/EvictionPolicy``: an exact LRU, or S3-FIFO.
///
/// A plain value with synchronous `mutating` methods, so that it can be tested and benchmarked
/// without a lock; ``MemoryTier`` keeps its shards in a ``ShardArray``, behind reader-writer locks.
///
/// Noncopyable: a copy retains and releases every buffer the shard holds. Under a reader lock
/// those are writes to lines that every reader of the shard shares, so the type makes a hidden
/// copy a compile error. While the shard was copyable, the optimizer made one on each hit: the
/// read's atomic mark and its opaque calls (the key compare) kept it from proving a borrow safe.
///
/// Entries are indexed by ``CacheKey/digest`` and live in a node array linked into queues (LRU:
/// one list from most to least recently used; S3-FIFO: a small and a main FIFO queue, newest
/// first), with freed slots kept on a free list, so get, set and remove are O(1). Every node holds
/// the full key: a lookup whose digest matches a different key is a miss, and a set whose digest
/// matches a different key replaces that key's entry.
package struct MemoryShard: ~Copyable {
    // The fields a hit touches come first, so that a hit reads the shard's first cache line and
    // little else of it (the locks live apart, in ``ShardArray``'s reader slots).
    var index = DigestTable()
    var nodes: [Node] = []
    /// LRU: the recency list, most recently used at the head. S3-FIFO: the main queue.
    var main = Queue()
    /// Lookups that found their key.
    package private(set) var hits = 0
    /// Lookups that did not.
    package private(set) var misses = 0
    /// The eviction policy.
    package let policy: MemoryTier.EvictionPolicy
    /// S3-FIFO only: the small queue that new keys enter.
    var small = Queue()
    /// S3-FIFO only: digests recently evicted from the small queue.
    var ghosts: GhostQueue
    /// The first free node, chained through `next`, or `Self.none`.
    var freeList = Self.none
    /// The bytes held, counted by ``CacheEntry/cost(keyByteCount:)``.
    package internal(set) var totalCost = 0
    /// Entries dropped to make room for another.
    package internal(set) var evictions = 0
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
    /// S3-FIFO: the small queue's share of the budgets (10%); the main queue's is the rest.
    let smallCostLimit: Int
    let smallCountLimit: Int

    static let none: Int32 = -1
    /// S3-FIFO: the highest frequency a node counts to.
    static let maximumFrequency: UInt8 = 3
    /// S3-FIFO: a node leaving the small queue moves to the main queue when read more often than
    /// this while it was there (the paper's `freq > 1`).
    static let promotionFrequency: UInt8 = 1

    struct Node {
        /// Nil while the node is on the free list.
        var key: CacheKey?
        var entry: CacheEntry?
        var cost: Int
        /// Towards the head (newest or most recently used) of its queue.
        var previous: Int32
        /// Towards the tail; the free list's link for a free node.
        var next: Int32
        /// S3-FIFO: reads since the node was inserted or last passed the main queue's tail, at
        /// most ``maximumFrequency``.
        var frequency: UInt8
        /// Whether the node is in ``small`` (else ``main``).
        var isSmall: Bool
    }

    /// A doubly linked list of nodes with its totals.
    struct Queue {
        var head = MemoryShard.none
        var tail = MemoryShard.none
        var cost = 0
        var count = 0
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
    ///   - policy: which entry goes when the shard is full.
    package init(
        costLimit: Int,
        countLimit: Int,
        maximumEntryCost: Int? = nil,
        policy: MemoryTier.EvictionPolicy = .lru
    ) {
        precondition(costLimit >= 0, "costLimit must not be negative")
        precondition(countLimit >= 0, "countLimit must not be negative")
        self.costLimit = costLimit
        // Nodes are numbered with 32 bits; two billion entries would not fit in memory anyway.
        self.countLimit = min(countLimit, Int(Int32.max))
        self.maximumEntryCost = min(maximumEntryCost ?? costLimit, costLimit)
        self.policy = policy
        self.smallCostLimit = costLimit / 10
        self.smallCountLimit = self.countLimit / 10
        // The ghost queue remembers as many bytes and entries as the main queue holds.
        self.ghosts = GhostQueue(
            costLimit: policy == .s3FIFO ? costLimit - smallCostLimit : 0,
            countLimit: policy == .s3FIFO ? self.countLimit - smallCountLimit : 0
        )
    }

    /// The number of entries held.
    package var count: Int { index.count }

    /// Whether the shard holds no entry.
    package var isEmpty: Bool { index.isEmpty }

    /// The entry for `key`, nil on a miss. A hit makes the entry the most recently used (LRU) or
    /// raises its frequency (S3-FIFO, which moves no node).
    /// - Complexity: O(1) on average.
    package mutating func entry(for key: CacheKey) -> CacheEntry? {
        guard let slot = hit(key) else { return nil }
        return entry(at: slot)
    }

    /// The node holding `key`, counted as a hit and made the most recently used (LRU) or read
    /// once more (S3-FIFO); nil on a miss, counted. The reads of ``find(digest:isKey:)`` and
    /// ``markRead(_:)``, under the exclusive access a mutating call has.
    @inline(__always)
    private mutating func hit(_ key: CacheKey) -> Int? {
        hit(digest: key.digest) { $0 == key.string }
    }

    /// ``hit(_:)`` for the key whose digest is `digest` and whose string `isKey` accepts.
    @inline(__always)
    mutating func hit(digest: UInt64, isKey: (String) -> Bool) -> Int? {
        guard let slot = find(digest: digest, isKey: isKey) else {
            misses += 1
            return nil
        }
        hits += 1
        switch policy.kind {
        case .lru: moveToFront(Int32(slot))
        case .s3FIFO: markRead(slot)
        }
        return slot
    }

    /// The entry for `key`, as ``entry(for:)``; on a miss, the shard's ``writeGeneration`` to
    /// hand to ``promote(_:for:ifUnchangedSince:)``.
    /// - Complexity: O(1) on average.
    package mutating func lookup(_ key: CacheKey) -> MemoryLookup {
        if let entry = entry(for: key) { return .hit(entry) }
        return .miss(generation: writeGeneration)
    }

    /// The lookup of ``lookup(_:)``, handing out only the attachment of a hit that has one: the
    /// entry's bytes are then not copied (no reference counts touched but the attachment's).
    /// - Complexity: O(1) on average.
    package mutating func attachedLookup(_ key: CacheKey) -> AttachedMemoryLookup {
        let slot = hit(key)
        return attachedLookup(at: slot)
    }

    /// ``attachedLookup(_:)`` of the key whose UTF-8 bytes are `keyBytes` and whose digest is
    /// `digest`, compared byte for byte with the stored key: no `String` is made.
    /// - Complexity: O(1) on average, plus the key's length.
    package mutating func attachedLookup(utf8 keyBytes: UnsafeRawBufferPointer, digest: UInt64) -> AttachedMemoryLookup
    {
        let slot = hit(digest: digest) { Self.utf8(of: $0, equals: keyBytes) }
        return attachedLookup(at: slot)
    }

    /// Whether `string`'s UTF-8 bytes are `bytes`.
    @inline(__always)
    static func utf8(of string: String, equals bytes: UnsafeRawBufferPointer) -> Bool {
        let equal = string.utf8.withContiguousStorageIfAvailable { utf8 in
            utf8.count == bytes.count
                && (bytes.isEmpty || memcmp(utf8.baseAddress!, bytes.baseAddress!, bytes.count) == 0)
        }
        return equal ?? string.utf8.elementsEqual(bytes)
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

    /// The entry for `key` without counting a lookup or changing recency or frequency.
    /// - Complexity: O(1) on average.
    package func peek(_ key: CacheKey) -> CacheEntry? {
        guard let slot = index[key.digest], nodes[Int(slot)].key!.string == key.string else { return nil }
        return nodes[Int(slot)].entry
    }

    /// Stores `entry` for `key`, evicting by the policy until both limits hold.
    ///
    /// LRU: the entry becomes the most recently used. S3-FIFO: a new key enters the small queue,
    /// or the main queue when its digest is a ghost; a key already held keeps its queue and its
    /// frequency.
    ///
    /// An entry whose cost is above ``maximumEntryCost`` (or any entry, when ``countLimit`` is 0)
    /// is refused, and then any older entry for the same key is removed too, so that a stale value
    /// is never served after a newer one was offered. A stored entry replaces the entry of a
    /// different key with the same digest.
    /// - Returns: whether the entry was stored, and how many entries were evicted.
    /// - Complexity: O(1) on average, plus O(1) per evicted entry (S3-FIFO: amortized; a pass over
    ///   the main queue's tail reinserts at most three times per read).
    @discardableResult
    package mutating func set(_ entry: CacheEntry, for key: CacheKey) -> SetOutcome {
        writeGeneration &+= 1
        let cost = entry.cost(keyByteCount: key.string.utf8.count)
        guard cost <= maximumEntryCost, countLimit > 0 else {
            admissionRefusals += 1
            remove(key)
            return SetOutcome(stored: false, evictions: 0)
        }
        var isSmall = policy == .s3FIFO
        var frequency: UInt8 = 0
        if let slot = index[key.digest] {
            // The same key, or another key with the same digest: the new key replaces it, in its
            // queue and with its frequency.
            isSmall = nodes[Int(slot)].isSmall
            frequency = nodes[Int(slot)].frequency
            unlink(slot)
            release(slot)
        } else if isSmall, ghosts.remove(key.digest) {
            isSmall = false
        }
        let before = evictions
        while totalCost + cost > costLimit || index.count >= countLimit {
            switch policy.kind {
            case .lru: evict(main.tail)
            case .s3FIFO: evictS3FIFO()
            }
        }
        let slot = allocate(key: key, entry: entry, cost: cost, frequency: frequency, isSmall: isSmall)
        index[key.digest] = slot
        link(slot)
        return SetOutcome(stored: true, evictions: evictions - before)
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

    /// Removes every entry and ghost and frees the storage; the counters are kept.
    /// - Complexity: O(n).
    package mutating func removeAll() {
        writeGeneration &+= 1
        index.removeAll()
        nodes = []
        main = Queue()
        small = Queue()
        ghosts.removeAll()
        freeList = Self.none
        totalCost = 0
    }

    /// The keys held that start with `prefix`.
    /// - Complexity: O(n).
    package func keys(withPrefix prefix: String) -> [CacheKey] {
        var found: [CacheKey] = []
        for head in [small.head, main.head] {
            var slot = head
            while slot != Self.none {
                if let key = nodes[Int(slot)].key, key.string.utf8.starts(with: prefix.utf8) { found.append(key) }
                slot = nodes[Int(slot)].next
            }
        }
        return found
    }

    /// Removes the entries stored at or after `date`.
    /// - Returns: how many entries were removed.
    /// - Complexity: O(n).
    package mutating func removeEntries(storedSince date: Date) -> Int {
        writeGeneration &+= 1
        var removed = 0
        for head in [small.head, main.head] {
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
        }
        return removed
    }
}
