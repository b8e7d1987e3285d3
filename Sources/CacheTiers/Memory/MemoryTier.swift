// SPDX-License-Identifier: Apache-2.0

package import Metrics

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The in-memory tier: a cache of ``CacheEntry`` values bounded by total cost in bytes and by
/// entry count, evicting by S3-FIFO (the default) or LRU (see ``EvictionPolicy``).
///
/// Calls are synchronous and thread-safe: a hit takes one uncontended lock, never suspends and
/// copies no bytes (the entry's arrays are shared, copy-on-write). The tier is a class over locks
/// rather than an actor because one actor serializes every core and its hop costs more than the
/// lookup.
///
/// The tier is split into shards, each evicting on its own behind its own lock, chosen by the
/// high bits of the key's digest, so that tasks on different cores rarely wait for each other.
/// Under S3-FIFO a lookup takes only its processor's reader lock of the shard and writes nothing
/// that other cores write, so hits scale with cores however the host places them; a write takes
/// the shard's reader locks of every processor (a "big reader" lock).
/// Each shard gets an equal part of the byte and count budgets: the policy is exact within a
/// shard and approximate across the tier. A `shardCount` of 1 gives one exact global policy;
/// small budgets also get fewer shards (see ``Configuration/shardCount``).
///
/// Under S3-FIFO a hit only raises a small frequency count in the entry's node, where LRU moves
/// the node to the front of its list, so hits are cheaper; and a one-time scan of many keys passes
/// through the small queue instead of flushing the entries that are read again. On Twitter's
/// production trace (`docs/benchmarks.md`) it misses about 10% less often than LRU at the same
/// byte budget.
///
/// How the tiers' policies combine in a ``TieredCache``: the disk tier below keeps its own policy,
/// FIFO segment retirement with a second chance (an entry read since it was written is appended
/// again when its segment retires), and holds about ten times as much. An entry the memory tier
/// evicts stays on disk until its segment retires; reading it again is a disk hit, which marks it
/// for its second chance there and promotes it into memory as a new entry: into the small queue,
/// or straight into the main queue when its digest is still a ghost (it left the small queue
/// recently without being read twice there, so it is being read again soon: the ghost queue
/// detects exactly the keys whose reuse distance is a little longer than the small queue's). A
/// promotion never overwrites a newer write (see `promote(_:for:ifUnchangedSince:)`). So a key
/// read often lives in memory's main queue, a key read now and then lives on disk and visits
/// memory, and a key read once passes through memory's small queue and a disk segment and is
/// forgotten by both. Hits served by memory do not reach the disk tier, so a key read only from
/// memory earns no second chance on disk: when its segment retires, memory alone holds it.
///
/// An entry costs `cost(keyByteCount:)` bytes: its key, value and metadata bytes, a
/// fixed overhead, and what its ``CacheEntry/attachment`` reports holding
/// (``CacheAttachment/memoryCost``), so that decoded copies count against the budget too. An
/// entry costing more than `admissionFraction` of the whole tier's
/// `capacityBytes` is refused, so that one large value cannot flush the cache.
///
/// Metrics, through swift-metrics, created once when the tier is made and incremented outside the
/// shard locks as events happen (no batching, so they never lag; with no metrics backend
/// bootstrapped an increment costs a few nanoseconds, see `docs/benchmarks.md`):
/// - `layeredcache_memory_hits_total`: lookups that found their key;
/// - `layeredcache_memory_misses_total`: lookups that did not;
/// - `layeredcache_memory_evictions_total`: entries dropped to make room for another;
/// - `layeredcache_memory_admission_refusals_total`: sets refused by admission or zero capacity.
///
/// ```swift
/// let memory = MemoryTier(configuration: .init(capacityBytes: 256 << 20))
/// memory.set(CacheEntry(value: body, storedAt: .now), for: "GET https://example.com/")
/// if let entry = memory.entry(for: "GET https://example.com/") { send(entry.value) }
/// ```
public final class MemoryTier: Sendable {
    /// What a tier holds.
    public struct Usage: Sendable, Hashable {
        /// The bytes held, counted by `cost(keyByteCount:)`.
        public var bytes: Int
        /// The number of entries held.
        public var entryCount: Int
    }

    /// What a tier has done since it was created.
    public struct Statistics: Sendable, Hashable {
        /// Lookups that found their key.
        public var hits: Int
        /// Lookups that did not find their key.
        public var misses: Int
        /// Entries dropped to make room for another.
        public var evictions: Int
        /// Sets refused because the entry was too large for admission or the tier stores nothing.
        public var admissionRefusals: Int
    }

    /// The configuration the tier was created with.
    public let configuration: Configuration

    /// The number of shards in use, after rounding and the reduction for small budgets.
    package let shardCount: Int

    /// The shards, each behind its reader-writer lock (see ``ShardArray``).
    let shards: ShardArray
    /// Whether a hit only reads its shard (S3-FIFO), so that lookups take the reader lock.
    private let hitsOnlyRead: Bool
    /// `64 - log2(shardCount)`: a digest shifted right by this picks the shard from its high bits
    /// (the shard's own table hashes the whole digest).
    let shardShift: UInt64
    private let hitCounter: Counter
    private let missCounter: Counter
    private let evictionCounter: Counter
    private let refusalCounter: Counter

    /// The smallest byte budget a shard is given when the tier has more than one shard.
    package static let minimumShardBytes = 1 << 20
    /// The smallest entry-count budget a shard is given when the tier has more than one shard.
    package static let minimumShardEntryCount = 64

    /// Creates an empty tier; its metrics go to the bootstrapped `MetricsSystem`.
    /// - Parameter configuration: the budgets and the shard count. An invalid configuration
    ///   (a negative budget, `admissionFraction` outside `0...1`, `shardCount` below 1) is a
    ///   programmer error and stops the process.
    /// - Complexity: O(shardCount).
    public convenience init(configuration: Configuration = .init()) {
        self.init(configuration: configuration, metricsFactory: MetricsSystem.factory)
    }

    /// Creates an empty tier whose metrics go to `metricsFactory`.
    package init(configuration: Configuration, metricsFactory: any MetricsFactory) {
        precondition(configuration.capacityBytes >= 0, "capacityBytes must not be negative")
        precondition(configuration.maximumEntryCount >= 0, "maximumEntryCount must not be negative")
        precondition(
            (0.0...1.0).contains(configuration.admissionFraction),
            "admissionFraction must be in 0...1"
        )
        precondition(configuration.shardCount >= 1, "shardCount must be at least 1")
        self.configuration = configuration

        let admissionLimit = Self.admissionLimit(for: configuration)
        let shardCount = Self.effectiveShardCount(for: configuration)
        self.shardCount = shardCount
        self.shardShift = UInt64(64 - shardCount.trailingZeroBitCount)
        // Spread the remainders over the first shards so that the budgets add up exactly.
        let (bytesPerShard, extraBytes) = configuration.capacityBytes.quotientAndRemainder(dividingBy: shardCount)
        let (countPerShard, extraCount) = configuration.maximumEntryCount.quotientAndRemainder(
            dividingBy: shardCount
        )
        self.hitsOnlyRead = configuration.evictionPolicy.kind == .s3FIFO
        self.shards = ShardArray(count: shardCount) { index in
            MemoryShard(
                costLimit: bytesPerShard + (index < extraBytes ? 1 : 0),
                countLimit: countPerShard + (index < extraCount ? 1 : 0),
                maximumEntryCost: admissionLimit,
                policy: configuration.evictionPolicy
            )
        }

        func counter(_ label: String) -> Counter {
            Counter(label: label, dimensions: [], handler: metricsFactory.makeCounter(label: label, dimensions: []))
        }
        self.hitCounter = counter("layeredcache_memory_hits_total")
        self.missCounter = counter("layeredcache_memory_misses_total")
        self.evictionCounter = counter("layeredcache_memory_evictions_total")
        self.refusalCounter = counter("layeredcache_memory_admission_refusals_total")
    }

    /// The largest admissible cost: `admissionFraction × capacityBytes`, rounded down.
    package static func admissionLimit(for configuration: Configuration) -> Int {
        let limit = configuration.admissionFraction * Double(configuration.capacityBytes)
        return limit < Double(Int.max) ? Int(limit) : Int.max
    }

    /// The shard count a tier uses for `configuration`: `shardCount` rounded up to a power of two,
    /// then halved while a shard would get less than ``minimumShardBytes``, fewer than
    /// ``minimumShardEntryCount`` entries, or less than ``admissionLimit(for:)``.
    package static func effectiveShardCount(for configuration: Configuration) -> Int {
        // 2^16 shards is far more than any machine has cores; the cap keeps the shift in range.
        var count = 1
        while count < min(configuration.shardCount, 1 << 16) { count <<= 1 }
        let admissionLimit = admissionLimit(for: configuration)
        while count > 1 {
            let bytes = configuration.capacityBytes / count
            let entries = configuration.maximumEntryCount / count
            if bytes >= minimumShardBytes, entries >= minimumShardEntryCount, bytes >= admissionLimit { break }
            count >>= 1
        }
        return count
    }

    /// Runs `body` on the shard of `key` with the shard's write lock held.
    @inline(__always)
    private func withShard<Result>(for key: CacheKey, _ body: (inout MemoryShard) -> Result) -> Result {
        shards.write(Int(truncatingIfNeeded: key.digest >> shardShift), body)
    }

    /// Finds the key whose digest is `digest` and whose string `isKey` accepts, counts the lookup
    /// as a hit or a miss, and returns what `answer` makes of the shard and the node found (nil on
    /// a miss).
    ///
    /// Under S3-FIFO a hit only marks its node read, so the lookup runs under the shard's reader
    /// lock and writes nothing other cores write (see ``ShardArray``); under LRU a hit moves its
    /// node, so the lookup takes the write lock.
    @inline(__always)
    private func lookUp<Result>(
        digest: UInt64,
        isKey: (String) -> Bool,
        answer: (borrowing MemoryShard, Int?) -> Result
    ) -> Result {
        let index = Int(truncatingIfNeeded: digest >> shardShift)
        let (result, found): (Result, Bool)
        if hitsOnlyRead {
            (result, found) = shards.read(index) { shard, counts in
                let slot = shard.find(digest: digest, isKey: isKey)
                if let slot {
                    counts.hits += 1
                    shard.markRead(slot)
                } else {
                    counts.misses += 1
                }
                return (answer(shard, slot), slot != nil)
            }
        } else {
            (result, found) = shards.write(index) { shard in
                let slot = shard.hit(digest: digest, isKey: isKey)
                return (answer(shard, slot), slot != nil)
            }
        }
        if found {
            hitCounter.increment()
        } else {
            missCounter.increment()
        }
        return result
    }

    /// The entry stored for `key`, which becomes the most recently used in its shard (LRU) or is
    /// marked as read (S3-FIFO).
    /// - Parameter key: the key to look up.
    /// - Returns: the entry, or nil on a miss.
    /// - Complexity: O(1) on average; the entry's bytes are not copied.
    public func entry(for key: CacheKey) -> CacheEntry? {
        lookUp(
            digest: key.digest,
            isKey: { $0 == key.string },
            answer: { shard, slot in slot.map { shard.entry(at: $0) } }
        )
    }

    /// The entry for `key`, as ``entry(for:)``; on a miss, the token that
    /// `promote(_:for:ifUnchangedSince:)` needs.
    /// - Complexity: O(1) on average.
    func lookup(_ key: CacheKey) -> MemoryLookup {
        lookUp(
            digest: key.digest,
            isKey: { $0 == key.string },
            answer: { shard, slot in
                guard let slot else { return .miss(generation: shard.writeGeneration) }
                return .hit(shard.entry(at: slot))
            }
        )
    }

    /// The lookup of ``lookup(_:)``, handing out only the attachment of a hit that has one.
    /// - Complexity: O(1) on average.
    func attachedLookup(_ key: CacheKey) -> AttachedMemoryLookup {
        lookUp(digest: key.digest, isKey: { $0 == key.string }, answer: { $0.attachedLookup(at: $1) })
    }

    /// ``attachedLookup(_:)`` of the key whose UTF-8 bytes are `keyBytes` and whose digest
    /// (``KeyDigest``) is `digest`, without a `String` of it.
    /// - Complexity: O(1) on average, plus the key's length.
    func attachedLookup(utf8 keyBytes: UnsafeRawBufferPointer, digest: UInt64) -> AttachedMemoryLookup {
        lookUp(
            digest: digest,
            isKey: { MemoryShard.utf8(of: $0, equals: keyBytes) },
            answer: { $0.attachedLookup(at: $1) }
        )
    }

    /// Stores `entry`, read from a lower tier after the miss that returned `generation`, unless a
    /// set or removal reached the key's shard since: a promotion never overwrites a newer write or
    /// brings back a removed key. A skipped promotion only costs a later lower-tier read.
    /// - Returns: whether the entry was stored.
    /// - Complexity: as ``set(_:for:)``.
    @discardableResult
    func promote(_ entry: CacheEntry, for key: CacheKey, ifUnchangedSince generation: UInt64) -> Bool {
        let outcome = withShard(for: key) {
            $0.promote(entry, for: key, ifUnchangedSince: generation)
        }
        if outcome.evictions > 0 { evictionCounter.increment(by: outcome.evictions) }
        return outcome.stored
    }

    /// Stores `entry` for `key`, evicting entries of the key's shard by the eviction policy until
    /// its budgets hold.
    ///
    /// An entry costing more than `admissionFraction × capacityBytes` is refused, and so is every
    /// entry when the tier stores nothing. A refused set still removes the older entry for `key`,
    /// so that a stale value is never served after a newer one was offered.
    /// - Parameters:
    ///   - entry: the entry to store.
    ///   - key: its key.
    /// - Returns: true when the entry was stored, false when it was refused.
    /// - Complexity: O(1) on average, plus O(1) per evicted entry.
    @discardableResult
    public func set(_ entry: CacheEntry, for key: CacheKey) -> Bool {
        let outcome = withShard(for: key) { $0.set(entry, for: key) }
        if !outcome.stored {
            refusalCounter.increment()
        } else if outcome.evictions > 0 {
            evictionCounter.increment(by: outcome.evictions)
        }
        return outcome.stored
    }

    /// Removes the entry stored for `key`.
    /// - Parameter key: the key to remove.
    /// - Returns: the removed entry, or nil when there was none.
    /// - Complexity: O(1) on average.
    @discardableResult
    public func remove(_ key: CacheKey) -> CacheEntry? {
        withShard(for: key) { $0.remove(key) }
    }

    /// Removes every entry and frees their memory. Statistics are kept.
    /// - Complexity: O(n), one shard at a time.
    public func removeAll() {
        for index in 0..<shards.count {
            shards.write(index) { $0.removeAll() }
        }
    }

    /// Removes the entries whose ``CacheEntry/storedAt`` is at or after `date`.
    /// - Parameter date: the earliest storage date removed.
    /// - Returns: how many entries were removed.
    /// - Complexity: O(n), one shard at a time.
    @discardableResult
    public func removeEntries(storedSince date: Date) -> Int {
        var removed = 0
        for index in 0..<shards.count {
            removed += shards.write(index) { $0.removeEntries(storedSince: date) }
        }
        return removed
    }

    /// The bytes and entries held, summed over the shards one at a time (so not an atomic
    /// snapshot while other tasks write).
    /// - Complexity: O(shardCount).
    public var usage: Usage {
        var usage = Usage(bytes: 0, entryCount: 0)
        for index in 0..<shards.count {
            let (bytes, entries) = shards.read(index) { shard, _ in (shard.totalCost, shard.count) }
            usage.bytes += bytes
            usage.entryCount += entries
        }
        return usage
    }

    /// The counters since the tier was created, summed over the shards one at a time.
    /// - Complexity: O(shardCount).
    public var statistics: Statistics {
        var statistics = Statistics(hits: 0, misses: 0, evictions: 0, admissionRefusals: 0)
        for index in 0..<shards.count {
            let reads = shards.readCounts(index)
            let shard = shards.write(index) {
                Statistics(
                    hits: $0.hits,
                    misses: $0.misses,
                    evictions: $0.evictions,
                    admissionRefusals: $0.admissionRefusals
                )
            }
            statistics.hits += shard.hits + reads.hits
            statistics.misses += shard.misses + reads.misses
            statistics.evictions += shard.evictions
            statistics.admissionRefusals += shard.admissionRefusals
        }
        return statistics
    }
}

/// What a memory lookup found: the entry, or on a miss the shard's write generation at the time.
package enum MemoryLookup {
    case hit(CacheEntry)
    case miss(generation: UInt64)
}

/// A memory lookup that hands out a hit's attachment alone when it has one.
package enum AttachedMemoryLookup: Sendable {
    case attached(any CacheAttachment)
    case hit(CacheEntry)
    case miss(generation: UInt64)
}
