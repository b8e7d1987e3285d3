// SPDX-License-Identifier: Apache-2.0

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension TieredCache {
    /// How a ``TieredCache`` uses its shared tier. Every property has a documented default.
    public struct SharedOptions: Sendable {
        /// Whether entries stored with ``StoragePolicy/allowed`` are written to the shared tier
        /// (`.allowedInMemoryOnly` never is). Default true; false keeps this instance's writes to
        /// itself while it still reads what others share.
        public var sharesAllowedEntries: Bool
        /// The most bytes (keys, values and metadata) that may wait to be written to the shared
        /// tier; past it a write is dropped and counted. Default 16 MiB.
        public var maximumPendingBytes: Int
        /// How many writes to the shared tier run at once (a key always goes through the same
        /// writer, in order). Default 4.
        public var writers: Int
        /// The opt-out from sealing. When false (the default), an encrypted cache (its disk tier
        /// has keys) hands its keys to the shared tier (``SharedCacheTier/useEncryption(_:)``)
        /// when it is made and on every ``TieredCache/reopen(encryption:)``, and making or
        /// reopening it fails when the shared tier cannot seal. When true, the shared tier keeps
        /// its own setting: an encrypted cache may then share keys, headers and bodies in clear.
        public var sharesInClear: Bool
        /// When a removal the shared tier failed is tried again, if no other operation of the
        /// queue succeeds first: after 1 s, doubled for each failure in a row up to 60 s,
        /// jittered (tests bring their own clock).
        package var removalRetry = WriteThroughQueue.RetryDelays()

        /// Creates options; every parameter has the default documented on its property.
        public init(
            sharesAllowedEntries: Bool = true,
            maximumPendingBytes: Int = 16 << 20,
            writers: Int = 4,
            sharesInClear: Bool = false
        ) {
            precondition(writers >= 1, "writers must be at least 1")
            self.sharesAllowedEntries = sharesAllowedEntries
            self.maximumPendingBytes = maximumPendingBytes
            self.writers = writers
            self.sharesInClear = sharesInClear
        }
    }

    /// Counters of the writes queued for the shared tier.
    public struct SharedWriteStatistics: Hashable, Sendable {
        /// Writes and removals the shared tier took.
        public var written = 0
        /// Writes dropped because too many bytes were waiting (or the cache was closed).
        public var dropped = 0
        /// Removals dropped because too many were waiting (or the cache was closed).
        public var droppedRemovals = 0
        /// Writes and removals the shared tier failed (unreachable, slow, refused).
        public var failed = 0
    }

    /// Counters of the writes queued for the shared tier; zero without one.
    public var sharedWriteStatistics: SharedWriteStatistics {
        writeThrough?.statistics ?? SharedWriteStatistics()
    }

    /// The entry for `key` from the shared tier after the lower tiers missed: attached (when
    /// `attaches`) and promoted to the lower tiers and to memory, unless a removal began since
    /// `ticket` was taken (or was under way: nil).
    func sharedEntry(
        for key: CacheKey,
        memoryGeneration generation: UInt64,
        ticket: RemovalLedger.Ticket?,
        attaches: Bool,
        attach: (CacheEntry) -> (any CacheAttachment)?
    ) async -> CacheEntry? {
        guard let shared, !lifecycle.isSharedDetached else { return nil }
        // A removal queued for the shared tier and not yet written: its copy there is gone.
        // Asked before the read, so that the removal cannot land between the two.
        if writeThrough?.hasPendingRemoval(key) == true { return nil }
        guard var found = await shared.entry(for: key) else { return nil }
        if attaches {
            guard let attachment = attach(found) else {
                _ = try? await remove(key)
                return nil
            }
            found.attachment = attachment
        }
        // Registered for as long as it writes: a removal that begins meanwhile waits for it, and
        // then removes what it wrote.
        guard let ticket, removals.beginPromotion(ticket) else { return found }
        defer { removals.endPromotion(ticket) }
        // Only when memory saw no newer write or removal meanwhile: the same guard keeps the
        // lower tiers from taking older bytes.
        if memory.promote(found, for: key, ifUnchangedSince: generation) {
            var stored = found
            stored.attachment = nil
            for tier in lowerTiers { _ = try? await tier.set(stored, for: key) }
        }
        return found
    }

    /// Queues what `policy` lets the shared tier see of a write: the entry, or the removal of the
    /// key's older value there (without a broadcast: other instances keep theirs, as after any
    /// write).
    func writeThrough(_ entry: CacheEntry, for key: CacheKey, policy: StoragePolicy) {
        guard let writeThrough, !lifecycle.isSharedDetached else { return }
        if policy.allowsDisk && sharedOptions.sharesAllowedEntries {
            writeThrough.enqueueSet(entry, for: key)
        } else {
            writeThrough.enqueueRemove(key, broadcast: false)
        }
    }

    /// Removes every entry (nil), or those stored at or after `date`, from the shared tier for
    /// every instance, after the writes queued before it that it covers are dropped and those
    /// being written have landed. Nothing without a shared tier.
    /// - Throws: the shared tier's error.
    func removeShared(storedSince date: Date?) async throws {
        guard let shared else { return }
        await writeThrough?.cutOff(storedSince: date)
        if let date {
            try await shared.removeEntries(storedSince: date)
        } else {
            try await shared.removeAll()
        }
    }

    /// Tells every other instance sharing the tier to drop what it labelled with `tag`, and the
    /// `removedKeys` this instance removed for it, in one message: the shared tier removes its
    /// copies of those keys with it (see ``SharedCacheTier/broadcast(_:)``), and every other
    /// instance drops its own copies of them and hands the tag to ``run(onTagInvalidation:)``.
    /// Nothing without a shared tier.
    /// - Parameters:
    ///   - tag: the tag.
    ///   - removedKeys: the keys removed for it here: every other instance drops them whatever its
    ///     own records name (`ResponseCache` removes them without a message per key, so that the
    ///     tag's invalidation is this one message).
    /// - Throws: ``CacheError/Code/closed`` when the cache is closed; the shared tier's error when
    ///   it could not be reached.
    public func broadcastTagInvalidation(_ tag: String, removedKeys: [CacheKey] = []) async throws {
        guard let shared else { return }
        guard lifecycle.isOpen else { throw CacheError(code: .closed, message: "the cache is closed") }
        try await shared.broadcast(.tag(tag, keys: removedKeys))
    }

    /// Drops this instance's copies of what another instance removed; a tag goes to `onTag` (after
    /// the keys its invalidation names are dropped here). While the cache is closed (its disk
    /// tier cannot drop anything), the invalidation is kept and applied when
    /// ``reopen(encryption:)`` opens it again.
    func apply(_ invalidation: SharedInvalidation, onTag: (@Sendable (String) async -> Void)?) async {
        guard !lifecycle.keepIfNotOpen(invalidation) else { return }
        await applyHere(invalidation)
        if let tag = invalidation.tag { await onTag?(tag) }
        // Closed while it was applied: applied again on reopen.
        if !lifecycle.isOpen { _ = lifecycle.keepIfNotOpen(invalidation) }
    }

    /// Drops the copies an invalidation names from memory and every lower tier: a key, recent
    /// entries, everything, or the keys a tag's invalidation removed (its tag is the layer
    /// above's).
    func applyHere(_ invalidation: SharedInvalidation) async {
        if let key = invalidation.key {
            await dropHere(key)
        } else if invalidation.isAll || invalidation.storedSince != nil {
            let date = invalidation.storedSince
            // Named before the copies here are dropped, which may take a while (a disk pass):
            // a write that lands meanwhile is still removed again.
            let cutOff = writeThrough?.beginCutOff(storedSince: date)
            await removals.removal(of: nil) {
                if let date {
                    memory.removeEntries(storedSince: date)
                    for tier in lowerTiers { await dropBelow { _ = try await tier.removeEntries(storedSince: date) } }
                } else {
                    memory.removeAll()
                    for tier in lowerTiers { await dropBelow { try await tier.removeAll() } }
                }
            }
            if let writeThrough, let cutOff { await forget(cutOff, in: writeThrough) }
        }
        if let prefix = invalidation.keyPrefix {
            // Another instance's ban: what it removed, and what only this instance holds (its
            // memory-only entries, and what it stored after the other listed the shared tier).
            var keys = Set(invalidation.removedKeys)
            keys.formUnion(memory.keys(withPrefix: prefix))
            for tier in lowerTiers {
                await dropBelow { keys.formUnion(try await tier.keys(withPrefix: prefix)) }
            }
            for key in keys { await dropHere(key) }
        } else {
            for key in invalidation.removedKeys { await dropHere(key) }
        }
    }

    /// Drops `key` from memory and every lower tier. A write of the key this instance queued
    /// before it heard of the removal would land in the shared tier after the other instance's
    /// removal and bring the key back for everyone: a removal is queued behind it (same lane, so
    /// written after it; no message, the others have dropped theirs).
    private func dropHere(_ key: CacheKey) async {
        // Asked first as well: a write that lands while the copies here are dropped counts too.
        let wasPending = writeThrough?.hasPendingWrite(key) ?? false
        await removals.removal(of: key) {
            memory.remove(key)
            for tier in lowerTiers { await dropBelow { _ = try await tier.remove(key) } }
        }
        if let writeThrough, wasPending || writeThrough.hasPendingWrite(key) {
            writeThrough.enqueueRemove(key, broadcast: false)
        }
    }

    /// Another instance's bulk removal, for this instance's write-through queue: the writes it
    /// covers that were queued before this instance heard of it are dropped
    /// (``WriteThroughQueue/beginCutOff(storedSince:)``), as for a removal of its own; those that
    /// were being written land in the shared tier after the other's statement and would bring
    /// their keys back, so each is removed again once it has landed (no message, as in
    /// ``dropHere(_:)``).
    private func forget(_ cutOff: WriteThroughQueue.CutOff, in writeThrough: WriteThroughQueue) async {
        await writeThrough.waitForWrites(before: cutOff)
        for key in cutOff.writing { writeThrough.enqueueRemove(key, broadcast: false) }
    }

    /// A lower tier's part of an invalidation from another instance. Its error has no caller to go
    /// to and leaves nothing stale to undo: a disk tier that cannot write a removal forgets what it
    /// was asked to remove all the same (counted in its write errors; `DiskStore.remove(_:)`,
    /// `removeAll()`, `removeEntries(storedSince:)`), so this instance does not serve it; the
    /// invalidation goes on to the other tiers.
    private func dropBelow(_ removal: () async throws -> Void) async {
        do { try await removal() } catch {}
    }

    /// ``run()`` with a shared tier: the disk tier's maintenance, the shared tier's own work with
    /// this cache's invalidation handler, and the write-through writers, until cancelled.
    func runWithShared(
        _ shared: any SharedCacheTier,
        writeThrough: WriteThroughQueue,
        onTag: (@Sendable (String) async -> Void)?
    ) async throws {
        lifecycle.setTagHandler(onTag)
        try await withThrowingTaskGroup(of: Void.self) { group in
            if let disk {
                group.addTask { try await disk.run() }
            }
            group.addTask {
                try await shared.run { invalidation in await self.apply(invalidation, onTag: onTag) }
            }
            group.addTask { await writeThrough.drain(into: shared) }
            // The first to finish (cancellation, graceful shutdown, close) ends the others.
            try await group.next()
            group.cancelAll()
            try await group.waitForAll()
        }
    }
}
