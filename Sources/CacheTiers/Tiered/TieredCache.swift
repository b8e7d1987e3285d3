// SPDX-License-Identifier: Apache-2.0

public import ServiceLifecycle
import Synchronization

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
/// A ``SharedCacheTier`` (``init(memory:lowerTiers:shared:options:)``) is read last and written in
/// the background; see ``SharedOptions``.
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
        /// Every lower tier's usage, in order (the disk tier's first when there is one).
        public var lowerTiers: [CacheUsage]
        /// The shared tier's usage, when there is one and it answered.
        public var shared: CacheUsage?
    }

    /// The memory tier.
    public let memory: MemoryTier
    /// The disk tier, when there is one (it is also the first of ``lowerTiers``).
    public let disk: DiskTier?
    /// The tiers below memory, asked in order.
    public let lowerTiers: [any CacheTier]
    /// Open or closed, shared by every copy of this value (see ``close()``).
    let lifecycle = Lifecycle()
    /// The tier shared with other instances, asked after the lower tiers, when there is one.
    public let shared: (any SharedCacheTier)?
    /// How the shared tier is used.
    public let sharedOptions: SharedOptions
    /// The queue of writes to the shared tier, when there is one.
    let writeThrough: WriteThroughQueue?
    /// The removals under way and done, which keep a read from promoting what a removal took.
    let removals = RemovalLedger()
    /// The keyed digest of a cache without a disk tier, for this process only.
    private let processDigest = KeyedDigest.random()

    /// A keyed digest whose secret lives as long as what the cache stores: the disk tier's
    /// (``KeyedDigest``), or one made for this process without a disk tier. Instances that share
    /// the shared tier digest alike when their disk tiers have the same current encryption key;
    /// otherwise what one stored with digested values is a miss for another, which stores its own.
    package var keyedDigest: KeyedDigest { disk?.keyedDigest ?? processDigest }

    /// Creates a cache of a memory tier over an optional disk tier.
    public init(memory: MemoryTier, disk: DiskTier?) {
        self.init(memory: memory, lowerTiers: disk.map { [$0] } ?? [])
    }

    /// Creates a cache of a memory tier over the given lower tiers, asked in order.
    public init(memory: MemoryTier, lowerTiers: [any CacheTier]) {
        self.init(memory: memory, lowerTiers: lowerTiers, unsealedShared: nil, options: .init())
    }

    /// Creates a cache of a memory tier over the given lower tiers and a tier shared with other
    /// instances of the app (see ``SharedCacheTier``).
    ///
    /// Reads ask memory, the lower tiers, then the shared tier; a shared hit is promoted to the
    /// lower tiers and to memory. Writes that `options` lets through are queued for the shared tier
    /// and written by ``run()``; removals are queued too and broadcast, and ``run()`` drops the
    /// keys other instances removed.
    /// - Parameters:
    ///   - memory: the memory tier.
    ///   - lowerTiers: the tiers below memory (the disk tier first), asked in order.
    ///   - shared: the shared tier, or nil.
    ///   - options: how the shared tier is used.
    /// - Throws: ``CacheError/Code/invalidArgument`` when the disk tier is encrypted and the shared
    ///   tier cannot seal with its keys (see ``SharedOptions/sharesInClear``).
    public init(
        memory: MemoryTier,
        lowerTiers: [any CacheTier],
        shared: (any SharedCacheTier)?,
        options: SharedOptions = .init()
    ) throws {
        self.init(memory: memory, lowerTiers: lowerTiers, unsealedShared: shared, options: options)
        // Encryption follows the cache: the shared tier seals with the disk tier's keys.
        if let shared, !options.sharesInClear, let encryption = disk?.configuration.encryption {
            try shared.useEncryption(encryption)
        }
    }

    private init(
        memory: MemoryTier,
        lowerTiers: [any CacheTier],
        unsealedShared shared: (any SharedCacheTier)?,
        options: SharedOptions
    ) {
        self.memory = memory
        self.disk = lowerTiers.first as? DiskTier
        self.lowerTiers = lowerTiers
        self.shared = shared
        self.sharedOptions = options
        self.writeThrough =
            shared == nil
            ? nil
            : WriteThroughQueue(
                lanes: options.writers,
                maximumPendingBytes: options.maximumPendingBytes,
                retryDelays: options.removalRetry
            )
    }

    /// Whether the cache is open. A closed cache finds nothing, and its writes and removals throw
    /// ``CacheError/Code/closed``, until ``reopen(encryption:)``.
    public var isOpen: Bool { lifecycle.isOpen }

    /// The entry for `key`: memory first, then each lower tier; a lower-tier hit is promoted.
    ///
    /// A lower tier that fails is a miss there (its error is its own to log). A promotion never
    /// overwrites a write or removal that reached memory while the lower tier was read, so a
    /// reader racing a writer cannot put the older bytes back in front of the newer ones. A
    /// completed removal is final: once ``remove(_:)``, ``removeAll()`` or
    /// ``removeEntries(storedSince:)`` has returned, no read that raced it promotes what it
    /// removed, into memory or into a lower tier, and the shared tier's copy is not read until
    /// the queued removal has reached it. A read that overlaps a removal may still return the
    /// value it found (it is not promoted).
    /// A closed cache finds nothing (see ``isOpen``).
    /// - Complexity: O(1) per tier asked; the memory tier is asked once.
    ///
    /// It runs on the caller's executor (`nonisolated(nonsending)`): a memory hit never suspends,
    /// and a hop to the global executor on entry cost a fifth of a hit.
    public nonisolated(nonsending) func entry(for key: CacheKey) async -> CacheEntry? {
        guard lifecycle.isOpen else { return nil }
        switch memory.lookup(key) {
        case .hit(let entry): return entry
        case .miss(let generation):
            return await lowerEntry(for: key, memoryGeneration: generation, attaches: false) { _ in nil }
        }
    }

    /// The entry for `key`, as ``entry(for:)``, carrying an ``CacheEntry/attachment`` made by
    /// `attach`: the caller's decoded form of the bytes, made once and then kept with the entry in
    /// memory, so that later memory hits return it without decoding again.
    ///
    /// `attach` runs on an entry found in a lower tier (before it is promoted) and on a memory
    /// entry stored without an attachment; an entry that already carries one is returned as it is.
    /// When `attach` returns nil, the bytes are unusable: the key is removed from every tier (best
    /// effort) and the read is a miss, so that the next read does not meet them again (`attach`
    /// says why, to its own log).
    /// - Parameters:
    ///   - key: the key to look up.
    ///   - attach: makes the attachment from the entry's bytes, or returns nil for bytes it cannot
    ///     use.
    /// - Returns: the entry with its attachment, or nil on a miss.
    /// - Complexity: O(1) per tier asked; the memory tier is asked once.
    public func entry(
        for key: CacheKey,
        attaching attach: (CacheEntry) -> (any CacheAttachment)?
    ) async -> CacheEntry? {
        guard lifecycle.isOpen else { return nil }
        switch memory.lookup(key) {
        case .hit(var entry):
            guard entry.attachment == nil else { return entry }
            guard let attachment = attach(entry) else {
                _ = try? await remove(key)
                return nil
            }
            entry.attachment = attachment
            return entry
        case .miss(let generation):
            return await lowerEntry(for: key, memoryGeneration: generation, attaches: true, attach: attach)
        }
    }

    /// The attachment of the entry for `key`, as ``entry(for:attaching:)`` would give it, without
    /// the rest of the entry: a memory hit then copies no bytes' references, which is most of the
    /// cost of a hit whose caller only needs its decoded form.
    /// - Complexity: as ``entry(for:attaching:)``.
    public func attachment(
        for key: CacheKey,
        attaching attach: (CacheEntry) -> (any CacheAttachment)?
    ) async -> (any CacheAttachment)? {
        guard lifecycle.isOpen else { return nil }
        return await attachment(for: key, after: memory.attachedLookup(key), attaching: attach)
    }

    /// What ``probeMemory(utf8:)`` found.
    package enum MemoryProbe: Sendable {
        /// The cache is closed: nothing is found.
        case closed
        /// The memory tier holds the key's entry with this attachment.
        case attached(any CacheAttachment)
        /// Anything else: the key, now made, and the memory tier's answer, to finish the read
        /// with ``attachment(for:after:attaching:)``.
        case notAttached(CacheKey, AttachedMemoryLookup)
    }

    /// Looks a key up in the memory tier by its UTF-8 bytes, synchronously: a hit with an
    /// attachment makes no `CacheKey` (no `String`, no allocation), which is what a caller that
    /// builds its keys in a stack buffer saves on every hit. Anything else makes the key and hands
    /// it back with the memory tier's answer; the memory tier counts one lookup either way.
    /// - Parameter keyBytes: the key's UTF-8 bytes. Bytes that are not UTF-8 make the key of
    ///   their repaired string, as `String(decoding:as:)` does, and cost a second lookup.
    package func probeMemory(utf8 keyBytes: UnsafeRawBufferPointer) -> MemoryProbe {
        guard lifecycle.isOpen else { return .closed }
        let digest = KeyDigest.digest(of: keyBytes)
        // Consumed, not copied: a hit moves its attachment out (no retain and release of it).
        let lookup = memory.attachedLookup(utf8: keyBytes, digest: digest)
        switch consume lookup {
        case .attached(let attachment): return .attached(attachment)
        case let lookup: return notAttached(utf8: keyBytes, digest: digest, lookup)
        }
    }

    /// ``probeMemory(utf8:)``'s answer for a key the memory tier holds no attachment for.
    private func notAttached(
        utf8 keyBytes: UnsafeRawBufferPointer,
        digest: UInt64,
        _ lookup: AttachedMemoryLookup
    ) -> MemoryProbe {
        let string = String(decoding: keyBytes, as: UTF8.self)
        guard MemoryShard.utf8(of: string, equals: keyBytes) else {
            // Repaired: not the bytes looked up, so the answer is not the key's.
            let key = CacheKey(string)
            return .notAttached(key, memory.attachedLookup(key))
        }
        return .notAttached(CacheKey(string: string, digest: digest), lookup)
    }

    /// The attachment of the entry for `key` once the memory tier answered `lookup` (from
    /// ``probeMemory(utf8:)``): as ``attachment(for:attaching:)``, reading the lower tiers on a
    /// miss.
    package func attachment(
        for key: CacheKey,
        after lookup: AttachedMemoryLookup,
        attaching attach: (CacheEntry) -> (any CacheAttachment)?
    ) async -> (any CacheAttachment)? {
        switch lookup {
        case .attached(let attachment):
            return attachment
        case .hit(let entry):
            guard let attachment = attach(entry) else {
                _ = try? await remove(key)
                return nil
            }
            return attachment
        case .miss(let generation):
            return await lowerEntry(for: key, memoryGeneration: generation, attaches: true, attach: attach)?.attachment
        }
    }

    /// The entry for `key` from the lower tiers after a memory miss that returned `generation`,
    /// attached (when `attaches`) and promoted.
    private func lowerEntry(
        for key: CacheKey,
        memoryGeneration generation: UInt64,
        attaches: Bool,
        attach: (CacheEntry) -> (any CacheAttachment)?
    ) async -> CacheEntry? {
        // Taken before any lower tier is asked: a removal that begins after it, or was under way,
        // keeps what is found out of memory.
        let ticket = removals.ticket(for: key)
        for tier in lowerTiers {
            guard var found = await Self.read(key, from: tier) else { continue }
            if attaches {
                guard let attachment = attach(found) else {
                    _ = try? await remove(key)
                    return nil
                }
                found.attachment = attachment
            }
            if let ticket, removals.isCurrent(ticket) {
                memory.promote(found, for: key, ifUnchangedSince: generation)
            }
            return found
        }
        return await sharedEntry(
            for: key,
            memoryGeneration: generation,
            ticket: ticket,
            attaches: attaches,
            attach: attach
        )
    }

    /// `tier`'s entry for `key` (nil when it has none or cannot read it), read on the global
    /// concurrent executor whatever the caller's task prefers: a disk read blocks its thread for
    /// as long as the file takes and its bytes take to decompress (milliseconds for an entry of
    /// megabytes), and the caller's executor may be an event loop that other connections wait on
    /// (cache-proxy runs a connection's requests on its channel's loop). Without a preference
    /// this is where the read ran anyway, and the preference is not set: setting it costs about
    /// 390 ns a call, looking whether the task has one about 70 (a standalone loop of a
    /// `nonisolated async` call, 2026-11-29), against microseconds for a disk hit.
    private static func read(_ key: CacheKey, from tier: any CacheTier) async -> CacheEntry? {
        // A read that fails is a miss (the tier's contract: damaged or unreachable).
        guard withUnsafeCurrentTask(body: { $0?.unownedTaskExecutor != nil }) else {
            return try? await tier.entry(for: key)
        }
        return await withTaskExecutorPreference(globalConcurrentExecutor) { try? await tier.entry(for: key) }
    }

    /// Stores `entry` for `key` as `policy` allows.
    /// - Throws: ``CacheError/Code/closed`` when the cache is closed (nothing is stored); the first
    ///   lower tier's write error (for example ``CacheError/Code/outOfSpace``): the memory tier
    ///   holds the entry all the same, and the failing tier no longer holds an older value for the
    ///   key.
    /// - Complexity: O(1) per tier.
    public func set(_ entry: CacheEntry, for key: CacheKey, policy: StoragePolicy = .allowed) async throws {
        try lifecycle.checkOpen()
        if policy.allowsMemory {
            memory.set(entry, for: key)
        } else {
            memory.remove(key)
        }
        writeThrough(entry, for: key, policy: policy)
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

    /// The memory tier's byte budget (``MemoryTier/Configuration/capacityBytes``).
    public var memoryCapacityBytes: Int { memory.configuration.capacityBytes }

    /// The disk tier's byte budget, or 0 when there is no disk tier.
    public var diskCapacityBytes: Int { disk?.configuration.capacityBytes ?? 0 }

    /// Current usage of the memory tier and of every lower tier.
    public func usage() async -> Usage {
        var lower: [CacheUsage] = []
        for tier in lowerTiers { lower.append(await tier.tierUsage) }
        return Usage(
            memory: memory.usage,
            disk: await disk?.usage,
            lowerTiers: lower,
            shared: await shared?.sharedUsage
        )
    }

    /// Runs the disk tier's maintenance, and the shared tier's work (its connections, the writes
    /// queued for it, and dropping what other instances removed), until cancelled or until
    /// graceful shutdown. Tag invalidations from other instances are ignored: see
    /// ``run(onTagInvalidation:)``.
    public func run() async throws {
        try await run(onTagInvalidation: nil)
    }

    /// ``run()``, handing the tag of every tag invalidation that another instance broadcast to
    /// `onTagInvalidation`.
    /// - Parameter onTagInvalidation: called with the tag of every tag invalidation another
    ///   instance broadcast (``broadcastTagInvalidation(_:removedKeys:)``), for the layer that knows which
    ///   entries carry it; nil ignores them.
    public func run(onTagInvalidation: (@Sendable (String) async -> Void)?) async throws {
        guard let shared, let writeThrough else {
            try await disk?.run()
            return
        }
        try await runWithShared(shared, writeThrough: writeThrough, onTag: onTagInvalidation)
    }
}
