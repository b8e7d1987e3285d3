// SPDX-License-Identifier: Apache-2.0

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension TieredCache {
    /// Removes `key` from every tier. The removal is final: once it has returned, no read that
    /// raced it brings the value back (see ``entry(for:)``); the shared tier's removal is queued,
    /// and until it is written the shared tier's copy is not read.
    /// - Returns: whether any tier held it.
    /// - Throws: ``CacheError/Code/closed`` when the cache is closed; a lower tier's error.
    @discardableResult
    public func remove(_ key: CacheKey) async throws -> Bool {
        try await remove(key, broadcasting: true)
    }

    /// ``remove(_:)``, telling the other instances sharing the shared tier or not: the removals a
    /// tag's invalidation makes reach them in the tag's one message
    /// (``broadcastTagInvalidation(_:removedKeys:)``), not key by key.
    /// - Parameters:
    ///   - key: the key to remove.
    ///   - broadcasting: whether the shared tier's removal tells every other instance.
    /// - Returns: whether any tier held it.
    /// - Throws: as ``remove(_:)``.
    @discardableResult
    package func remove(_ key: CacheKey, broadcasting: Bool) async throws -> Bool {
        try lifecycle.checkOpen()
        return try await removals.removal(of: key) {
            var removed = memory.remove(key) != nil
            writeThrough?.enqueueRemove(key, broadcast: broadcasting)
            for tier in lowerTiers where try await tier.remove(key) {
                removed = true
            }
            return removed
        }
    }

    /// Removes every entry from every tier; final as ``remove(_:)`` is.
    ///
    /// The shared tier is emptied for every instance sharing it, after the writes queued for it
    /// before this call are dropped and those being written have landed, so that none of them
    /// lands after the wipe.
    /// - Throws: ``CacheError/Code/closed`` when the cache is closed; the first error of a lower
    ///   tier or of the shared tier (unreachable: its rows are then still there, and other
    ///   instances keep theirs); every tier is asked all the same.
    public func removeAll() async throws {
        try lifecycle.checkOpen()
        try await removals.removal(of: nil) {
            memory.removeAll()
            var firstError: (any Error)?
            for tier in lowerTiers {
                do { try await tier.removeAll() } catch { firstError = firstError ?? error }
            }
            do { try await removeShared(storedSince: nil) } catch { firstError = firstError ?? error }
            if let firstError { throw firstError }
        }
    }

    /// Removes the entries stored at or after `date` from every tier; final as ``remove(_:)`` is.
    /// The shared tier's removal is ordered against the writes queued for it, as in
    /// ``removeAll()``.
    /// - Throws: ``CacheError/Code/closed`` when the cache is closed; the first error of a lower
    ///   tier or of the shared tier; every tier is asked all the same.
    public func removeEntries(storedSince date: Date) async throws {
        try lifecycle.checkOpen()
        try await removals.removal(of: nil) {
            memory.removeEntries(storedSince: date)
            var firstError: (any Error)?
            for tier in lowerTiers {
                do { _ = try await tier.removeEntries(storedSince: date) } catch { firstError = firstError ?? error }
            }
            do { try await removeShared(storedSince: date) } catch { firstError = firstError ?? error }
            if let firstError { throw firstError }
        }
    }

    /// Removes every entry whose key starts with `prefix` (byte for byte in UTF-8) from every
    /// tier, and tells every other instance sharing the shared tier to do the same: a ban, as an
    /// HTTP cache bans a URL prefix. Each key is removed as ``remove(_:)`` removes one (final, and
    /// ordered after the writes queued for the shared tier before it); the other instances hear of
    /// it in one message (``SharedInvalidation/keyPrefix(_:keys:)``), which also removes the keys
    /// from the shared tier, and each drops its own keys with the prefix, memory-only ones
    /// included.
    /// - Parameter prefix: the prefix; an empty one is refused (``removeAll()`` removes
    ///   everything).
    /// - Returns: the keys removed here: those memory, the lower tiers and the shared tier held.
    /// - Throws: ``CacheError/Code/invalidArgument`` for an empty prefix or a lower tier that
    ///   cannot list its keys (nothing is removed then); ``CacheError/Code/closed`` when the cache
    ///   is closed; a lower tier's error; ``CacheError/Code/io`` when the shared tier could not be
    ///   listed or the other instances told (the keys held here are gone all the same). Calling it
    ///   again is harmless and reaches what is left.
    /// - Complexity: O(entries in memory), plus the lower tiers' listing (the disk tier reads
    ///   every live record) and the shared tier's, plus one removal per key found.
    @discardableResult
    public func removeEntries(withKeyPrefix prefix: String) async throws -> [CacheKey] {
        guard !prefix.isEmpty else {
            throw CacheError(code: .invalidArgument, message: "a key prefix must not be empty")
        }
        try lifecycle.checkOpen()
        var keys = Set(memory.keys(withPrefix: prefix))
        for tier in lowerTiers { keys.formUnion(try await tier.keys(withPrefix: prefix)) }
        // The shared tier down does not keep this instance's copies: they go, and the error
        // says that the shared tier and the other instances were not reached.
        var unreached: (any Error)?
        let sharing = shared != nil && !lifecycle.isSharedDetached
        if let shared, sharing {
            do { keys.formUnion(try await shared.keys(withPrefix: prefix)) } catch { unreached = error }
        }
        let found = keys.sorted { $0.string < $1.string }
        for key in found { try await remove(key, broadcasting: false) }
        if let shared, sharing {
            do { try await shared.broadcast(.keyPrefix(prefix, keys: found)) } catch { unreached = unreached ?? error }
        }
        if let unreached {
            throw CacheError(
                code: .io,
                message: "removed \(found.count) entries here, but the shared tier and the other instances were not "
                    + "reached: \(unreached)"
            )
        }
        return found
    }
}
