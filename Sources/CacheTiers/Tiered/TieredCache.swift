// SPDX-License-Identifier: Apache-2.0

public import ServiceLifecycle

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A memory tier over a disk tier (and any further tiers below it): what an app stores bytes in.
///
/// ```swift
/// let disk = try DiskTier(configuration: .init(directory: "/var/cache/myapp"))
/// let cache = TieredCache(memory: MemoryTier(), disk: disk)
/// try await cache.set(CacheEntry(value: bytes, storedAt: .now), for: "users/42")
/// let hit = await cache.entry(for: "users/42")
/// ```
///
/// Reads ask memory first, then each lower tier in order; a lower-tier hit is promoted to memory.
/// Writes follow the ``StoragePolicy``: `.allowed` writes memory and every lower tier,
/// `.allowedInMemoryOnly` writes memory and removes the key below, `.notAllowed` stores nothing and
/// removes the key everywhere, so an older value never outlives a newer answer.
///
/// `TieredCache` is a `Sendable` value over the tiers, not an actor: a memory hit takes no actor
/// hop and never suspends. Run ``run()`` (a ServiceLifecycle `Service`) for the lower tiers'
/// maintenance.
public struct TieredCache: Sendable, Service {
    /// Bytes and entries per tier.
    public struct Usage: Hashable, Sendable {
        /// The memory tier's usage.
        public var memory: MemoryTier.Usage
        /// The disk tier's usage, when there is one.
        public var disk: DiskTier.Usage?
    }

    /// The memory tier.
    public let memory: MemoryTier
    /// The disk tier, when there is one (it is also the first of ``lowerTiers``).
    public let disk: DiskTier?
    /// The tiers below memory, asked in order.
    public let lowerTiers: [any CacheTier]

    /// Creates a cache of a memory tier over an optional disk tier.
    public init(memory: MemoryTier, disk: DiskTier?) {
        self.memory = memory
        self.disk = disk
        self.lowerTiers = disk.map { [$0] } ?? []
    }

    /// Creates a cache of a memory tier over the given lower tiers, asked in order.
    public init(memory: MemoryTier, lowerTiers: [any CacheTier]) {
        self.memory = memory
        self.disk = lowerTiers.first as? DiskTier
        self.lowerTiers = lowerTiers
    }

    /// The entry for `key`: memory first, then each lower tier; a lower-tier hit is promoted.
    ///
    /// A lower tier that fails is a miss there (its error is its own to log). A promotion never
    /// overwrites a write or removal that reached memory while the lower tier was read, so a
    /// reader racing a writer cannot put the older bytes back in front of the newer ones.
    /// - Complexity: O(1) per tier asked.
    public func entry(for key: CacheKey) async -> CacheEntry? {
        await entry(for: key, preparingPromotion: { $0 })
    }

    /// The entry for `key`, as ``entry(for:)``, with `prepare` applied to a lower-tier hit before
    /// it is promoted and returned: an upper layer attaches its decoded form there, or returns
    /// nil for bytes it cannot use, which is then a miss and is not promoted.
    package func entry(
        for key: CacheKey,
        preparingPromotion prepare: (CacheEntry) -> CacheEntry?
    ) async -> CacheEntry? {
        switch memory.lookup(key) {
        case .hit(let entry): return entry
        case .miss(let generation):
            return await lowerEntry(for: key, memoryGeneration: generation, preparingPromotion: prepare)
        }
    }

    /// The entry for `key` from the lower tiers, after a memory miss that returned `generation`;
    /// see ``entry(for:preparingPromotion:)``. Callers that look memory up themselves (to answer
    /// a hit without an `async` call) use it for the rest.
    package func lowerEntry(
        for key: CacheKey,
        memoryGeneration generation: UInt64,
        preparingPromotion prepare: (CacheEntry) -> CacheEntry?
    ) async -> CacheEntry? {
        for tier in lowerTiers {
            if let found = try? await tier.entry(for: key) {
                guard let entry = prepare(found) else { return nil }
                memory.promote(entry, for: key, ifUnchangedSince: generation)
                return entry
            }
        }
        return nil
    }

    /// Stores `entry` for `key` as `policy` allows.
    /// - Throws: the first lower tier's write error (for example ``CacheError/Code/outOfSpace``);
    ///   the memory tier holds the entry all the same, and the failing tier no longer holds an
    ///   older value for the key.
    /// - Complexity: O(1) per tier.
    public func set(_ entry: CacheEntry, for key: CacheKey, policy: StoragePolicy = .allowed) async throws {
        if policy.allowsMemory {
            memory.set(entry, for: key)
        } else {
            memory.remove(key)
        }
        var firstError: (any Error)?
        for tier in lowerTiers {
            do {
                if policy.allowsDisk {
                    _ = try await tier.set(entry, for: key)
                } else {
                    _ = try await tier.remove(key)
                }
            } catch {
                firstError = firstError ?? error
            }
        }
        if let firstError { throw firstError }
    }

    /// Removes `key` from every tier.
    /// - Returns: whether any tier held it.
    @discardableResult
    public func remove(_ key: CacheKey) async throws -> Bool {
        var removed = memory.remove(key) != nil
        for tier in lowerTiers where try await tier.remove(key) {
            removed = true
        }
        return removed
    }

    /// Removes every entry from every tier.
    public func removeAll() async throws {
        memory.removeAll()
        for tier in lowerTiers {
            try await tier.removeAll()
        }
    }

    /// Removes the entries stored at or after `date` from every tier.
    public func removeEntries(storedSince date: Date) async throws {
        memory.removeEntries(storedSince: date)
        for tier in lowerTiers {
            _ = try await tier.removeEntries(storedSince: date)
        }
    }

    /// The memory tier's byte budget (``MemoryTier/Configuration/capacityBytes``).
    public var memoryCapacityBytes: Int { memory.configuration.capacityBytes }

    /// The disk tier's byte budget, or 0 when there is no disk tier.
    public var diskCapacityBytes: Int { disk?.configuration.capacityBytes ?? 0 }

    /// Current usage of the memory tier and of the disk tier.
    public func usage() async -> Usage {
        Usage(memory: memory.usage, disk: await disk?.usage)
    }

    /// Runs the disk tier's maintenance until cancelled or until graceful shutdown.
    public func run() async throws {
        try await disk?.run()
    }
}
