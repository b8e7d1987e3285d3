// SPDX-License-Identifier: Apache-2.0

import CacheTiers
import Logging
import Synchronization

extension ResponseCache {
    /// Removes every response stored with `tag` (``CachedResponse/tags``), from memory and disk,
    /// with all variants of their URLs: an offline-first app that changed task 42 drops every
    /// cached query that may list it.
    ///
    /// ```swift
    /// let hook = WillCache.tagging { _, request in
    ///     request.path?.hasPrefix("/tasks") == true ? ["tasks"] : []
    /// }
    /// // … after a change to a task:
    /// let dropped = try await cache.invalidate(tag: "tasks")
    /// ```
    /// - Parameter tag: the tag; one nothing carries is a no-op.
    /// - Returns: how many URLs held a response with the tag and were removed (0 for an unknown
    ///   tag).
    /// - Throws: ``HTTPCachingError/Code/invalidArgument`` for an empty tag;
    ///   ``HTTPCachingError/Code/closed`` when the cache is closed; ``HTTPCachingError/Code/storage``
    ///   with a tier's error.
    ///
    /// With a shared tier (``Configuration/shared``), every other instance drops the responses too,
    /// through one message: the tag and the keys removed here (the member lists are read from the
    /// shared tier as well as from this instance's). The shared tier removes its copies of those
    /// keys with that message; each other instance drops its copies of them, and what its own
    /// lists name for the tag (a member list two instances rewrote at once may hold only one's
    /// members). The message goes out even while the shared tier backs off after failed reads; one
    /// that cannot reach it (down, or not answering within its write timeout) is logged, not
    /// thrown: this instance's copies are gone all the same, as with any removal while the shared
    /// tier is down.
    ///
    /// The member lists are removed after their members: when a removal fails midway (the error
    /// is thrown and nothing is broadcast), the lists still name what is left, and calling this
    /// again removes it.
    /// - Complexity: O(members of the tag), plus a fixed number of reads of the tag's member lists
    ///   (with a shared tier, also from the database: 64 reads).
    @discardableResult
    public func invalidate(tag: String) async throws(HTTPCachingError) -> Int {
        let (removed, unreached) = try await invalidateEverywhere(tag: tag)
        if let unreached {
            configuration.logger.warning(
                "the tag's invalidation did not reach the other instances",
                metadata: ["tag": "\(tag)", "error": "\(unreached)"]
            )
        }
        return removed
    }

    /// ``invalidate(tag:)`` for a caller that must know whether the other instances heard of it
    /// (a proxy's purge answers 503 when they did not, so that the operator tries again).
    /// - Returns: how many URLs were removed here, and the shared tier's error when the message
    ///   could not be sent (nil when it was, or without a shared tier).
    package func invalidateEverywhere(
        tag: String
    ) async throws(HTTPCachingError) -> (removed: Int, unreached: (any Error)?) {
        let (removed, keys) = try await invalidateHere(tag: tag)
        guard tiers.shared != nil else { return (removed, nil) }
        do {
            try await tiers.broadcastTagInvalidation(tag, removedKeys: keys)
        } catch {
            return (removed, error)
        }
        return (removed, nil)
    }

    /// Removes the responses that this instance's member lists, and the shared tier's, name for
    /// `tag`, then the lists: ``invalidate(tag:)`` without telling the other instances, and what
    /// ``run()`` does when another instance tells of one. The shared tier's copies are removed
    /// too, without a message per key.
    /// - Returns: how many URLs held a response with the tag, and the tier keys removed (each
    ///   member's primary key and its variants' keys).
    /// - Throws: as ``invalidate(tag:)``; the lists are then kept, so that a retry reaches the
    ///   members not yet removed.
    func invalidateHere(tag: String) async throws(HTTPCachingError) -> (removed: Int, keys: [CacheKey]) {
        try checkTagged(tag)
        await tagRegistry.lock.lock()
        defer { tagRegistry.lock.unlock() }
        let (members, lists) = await members(of: tag)
        var removed = 0
        var keys: [CacheKey] = []
        for member in members {
            let primary = CacheKey(member)
            let variants = await record(for: primary)?.variantIndex?.variants.map { CacheKey($0.key) } ?? []
            let held = try await HTTPCachingError.storage("removing a tagged response") {
                var held = false
                for key in variants + [primary] where try await tiers.remove(key, broadcasting: false) {
                    held = true
                }
                return held
            }
            keys += variants + [primary]
            removed += held ? 1 : 0
        }
        // Every member is gone: the lists that named them go now, not before.
        tagRegistry.state.withLock { state in
            state.memoryOnly[tag]?.subtract(members)
            if state.memoryOnly[tag]?.isEmpty == true { state.memoryOnly[tag] = nil }
            state.persisted[tag] = nil
        }
        for list in lists {
            _ = try await HTTPCachingError.storage("forgetting a tag") {
                try await tiers.remove(list, broadcasting: false)
            }
        }
        return (removed, keys)
    }

    /// Marks every response stored with `tag` stale: each is kept (an offline app can still show
    /// it), but the next read revalidates it with the origin whatever its freshness lifetime, and
    /// a result served from it without the origin's confirmation says so (a stale reason). A new
    /// response or a 304 clears the mark (``CachedResponse/isMarkedStale``).
    /// - Parameter tag: the tag; one nothing carries is a no-op.
    /// - Returns: how many stored responses were marked (0 for an unknown tag).
    /// - Throws: as ``invalidate(tag:)``.
    /// - Complexity: O(members of the tag): each member is read and written once.
    @discardableResult
    public func markStale(tag: String) async throws(HTTPCachingError) -> Int {
        try checkTagged(tag)
        await tagRegistry.lock.lock()
        let members = await members(of: tag).members
        tagRegistry.lock.unlock()
        var marked = 0
        for key in members {
            guard let primary = await record(for: CacheKey(key)) else { continue }
            if primary.response != nil {
                marked += try await mark(primary, under: CacheKey(key), tag: tag) ? 1 : 0
            } else if let partial = primary.partial, partial.stored.tags.contains(tag) {
                // Partial content is forgotten rather than marked: the next range goes to the origin.
                _ = try await removeRecord(under: CacheKey(key))
                marked += 1
            } else if let index = primary.variantIndex {
                for variant in index.variants {
                    guard let box = await record(for: CacheKey(variant.key)) else { continue }
                    marked += try await mark(box, under: CacheKey(variant.key), tag: tag) ? 1 : 0
                }
            }
        }
        return marked
    }

    /// Rewrites the response in `box` under `key` marked stale, when it carries `tag`.
    private func mark(_ box: StoredRecord.Box, under key: CacheKey, tag: String) async throws(HTTPCachingError) -> Bool
    {
        guard var response = box.response, response.tags.contains(tag) else { return false }
        guard !response.isMarkedStale else { return true }
        response.isMarkedStale = true
        let entry = StoredRecord.response(response).entry(storedAt: configuration.now())
        try await HTTPCachingError.storage("marking a response stale") {
            try await tiers.set(entry, for: key, policy: response.storagePolicy)
        }
        return true
    }

    /// The primary keys recorded for `tag`: this process's memory-only members and the member
    /// lists kept in the tiers (and the shared tier's copies of them), with the keys of the lists
    /// found. The caller holds ``TagRegistry/lock``.
    private func members(of tag: String) async -> (members: [String], lists: [CacheKey]) {
        var keys = tagRegistry.state.withLock { $0.memoryOnly[tag] ?? [] }
        var lists: [CacheKey] = []
        for bucket in 0..<TagRegistry.bucketCount {
            let bucketKey = Self.tagBucketKey(tag, bucket)
            var found = false
            if let members = await record(for: bucketKey)?.tagMembers {
                keys.formUnion(members)
                found = true
            }
            // The shared tier's copy may name members that another instance added after this
            // one read the list.
            if let entry = await tiers.shared?.entry(for: bucketKey),
                let members = (try? StoredRecord.Box.of(entry))?.tagMembers
            {
                keys.formUnion(members)
                found = true
            }
            if found { lists.append(bucketKey) }
        }
        return (keys.sorted(), lists)
    }

    /// Checks that `tag` can name members and that the cache is open.
    private func checkTagged(_ tag: String) throws(HTTPCachingError) {
        guard !tag.isEmpty else {
            throw HTTPCachingError(code: .invalidArgument, message: "a tag must not be empty")
        }
        guard tiers.isOpen else {
            throw HTTPCachingError(code: .closed, message: "the cache is closed")
        }
    }

    /// Records that the primary `key` holds `response`, with its tags: in this process for a
    /// memory-only response, in the tiers (a member list per tag and bucket, written after the
    /// response, so that it is never older than a member) for one that may reach disk.
    /// - Throws: ``HTTPCachingError/Code/storage`` when a member list cannot be written (the
    ///   response is then removed: what could not be invalidated by its tag is not kept).
    func recordTags(of response: CachedResponse, for key: CacheKey) async throws(HTTPCachingError) {
        guard !response.tags.isEmpty else { return }
        let persists = response.storagePolicy == .allowed && !tiers.lowerTiers.isEmpty
        let new = tagRegistry.state.withLock { state in
            response.tags.filter { tag in
                if !persists { return state.memoryOnly[tag, default: []].insert(key.string).inserted }
                return !(state.persisted[tag]?.contains(key.string) ?? false)
            }
        }
        guard persists, !new.isEmpty else { return }
        await tagRegistry.lock.lock()
        defer { tagRegistry.lock.unlock() }
        do throws(HTTPCachingError) {
            for tag in new.sorted() {
                let bucketKey = Self.tagBucketKey(tag, TagRegistry.bucket(of: key.string))
                var members = await record(for: bucketKey)?.tagMembers ?? []
                if !members.contains(key.string) {
                    guard members.count < TagRegistry.maximumBucketMembers else {
                        throw HTTPCachingError(
                            code: .storage,
                            message: "the tag \(tag) has too many members to record another"
                        )
                    }
                    members.append(key.string)
                    let entry = StoredRecord.tagMembers(members).entry(storedAt: configuration.now())
                    try await HTTPCachingError.storage("recording a tag") {
                        try await tiers.set(entry, for: bucketKey, policy: .allowed)
                    }
                }
                _ = tagRegistry.state.withLock { $0.persisted[tag, default: []].insert(key.string) }
            }
        } catch {
            _ = try? await removeRecord(under: key)
            throw error
        }
    }

    /// The tier key of one of `tag`'s member lists. It starts with a control character, which
    /// no request key (an HTTP method token first) can.
    static func tagBucketKey(_ tag: String, _ bucket: Int) -> CacheKey {
        CacheKey("\u{1}tag\u{1F}\(bucket)\u{1F}\(tag)")
    }
}

/// Which primary keys carry which tags: the members this process knows of, and the lock that
/// serializes the read-modify-write of the member lists in the tiers.
final class TagRegistry: Sendable {
    struct State {
        /// Memory-only members, which only this process can know of.
        var memoryOnly: [String: Set<String>] = [:]
        /// Members known to be in the tiers' member lists (so that storing them again writes
        /// nothing).
        var persisted: [String: Set<String>] = [:]
    }

    /// A tag's members are spread over this many lists, so that adding one rewrites a list of
    /// 1/64th of them.
    static let bucketCount = 64
    /// The most members one list holds (a tag then holds up to 64 × 1,024 URLs); a response that
    /// would need more is not stored.
    static let maximumBucketMembers = 1_024

    let state = Mutex(State())
    let lock = AsyncLock()

    static func bucket(of key: String) -> Int {
        // FNV-1a: stable across processes, unlike `Hasher`.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return Int(hash % UInt64(bucketCount))
    }

    /// Forgets what this process knows (the cache was emptied, closed or reset).
    func forgetAll() {
        state.withLock { $0 = State() }
    }
}
