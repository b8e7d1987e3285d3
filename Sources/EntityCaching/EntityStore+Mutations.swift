// SPDX-License-Identifier: Apache-2.0

import CacheTiers
import CachingClient

extension EntityStore {
    /// Stores the app's own new or changed entities (not yet confirmed by the server), in one
    /// commit. Every cached list that holds a changed entity (found through the reverse index:
    /// cost proportional to those lists) is patched by the configuration's
    /// ``Configuration/patch`` rule or marked stale; a created entity is offered to every list of
    /// the kind by the patch rule, or marks them all stale.
    /// - Throws: a `CachingClientError` (`CachingClientError.Code.storage`
    ///   when the cache refused the commit; `CachingClientError.Code.invalidArgument`
    ///   for an entity that does not encode): nothing stored changes.
    public func upsert(_ entities: [Entity]) async throws {
        try await commit { batch in
            for entity in entities { try await apply(.upsert(entity), isLocal: true, in: &batch) }
        }
    }

    /// Deletes entities, in one commit: each leaves the lists that held it (which are marked
    /// stale), and every list of the kind is marked stale.
    /// - Throws: as ``upsert(_:)``.
    public func delete(_ ids: [Entity.ID]) async throws {
        try await commit { batch in
            for id in ids { try await apply(.delete(id), isLocal: true, in: &batch) }
        }
    }

    /// Applies the server's changes (a change feed's "changes since token N") and records that
    /// the store includes every change up to `token`, in one commit that a crash keeps whole: a
    /// restart resumes from ``changeToken()``. Lists are told as by ``upsert(_:)`` and
    /// ``delete(_:)``.
    /// - Throws: as ``upsert(_:)``.
    public func apply(_ changes: [EntityChange<Entity>], upTo token: String) async throws {
        try await commit { batch in
            for change in changes { try await apply(change, isLocal: false, in: &batch) }
            batch.kind.token = token
        }
    }

    /// Marks the query's cached list stale: its next read says so and the read policies refresh
    /// it.
    /// - Throws: as ``upsert(_:)``.
    public func markStale(_ query: EntityQuery) async throws {
        try await commit { batch in await markStale(query.key, in: &batch) }
    }

    func apply(
        _ change: EntityChange<Entity>,
        isLocal: Bool,
        version: String? = nil,
        in batch: inout Batch
    ) async throws {
        switch change {
        case .upsert(let entity):
            let (created, changed) = try await write(entity, isLocal: isLocal, version: version, in: &batch)
            guard changed else { return }
            if created {
                guard configuration.patch != nil else {
                    batch.kind.structureChanged = batch.sequence
                    batch.kindWide = true
                    return
                }
                for queryKey in await keyList(catalogKey, in: batch) {
                    try await patch(queryKey, for: change, in: &batch)
                }
            } else {
                for queryKey in await keyList(reverseKey(entity.id), in: batch) {
                    try await patch(queryKey, for: change, in: &batch)
                }
            }
        case .delete(let id):
            set(nil, for: id, in: &batch)
            let reverse = reverseKey(id)
            for queryKey in await keyList(reverse, in: batch) {
                guard var index = await indexRecord(queryKey, in: batch) else { continue }
                index.remove(id)
                index.markedStale = true
                set(index, for: queryKey, in: &batch)
            }
            set([], at: reverse, in: &batch)
            batch.kind.structureChanged = batch.sequence
            batch.kindWide = true
        }
    }

    /// Patches the list of `queryKey` for `change` by the configuration's rule, or marks it
    /// stale (no rule, the rule declines, or an entity of the list is not stored).
    private func patch(_ queryKey: String, for change: EntityChange<Entity>, in batch: inout Batch) async throws {
        guard let rule = configuration.patch, var index = await indexRecord(queryKey, in: batch) else {
            await markStale(queryKey, in: &batch)
            return
        }
        var items: [Entity] = []
        items.reserveCapacity(index.ids.count)
        // Stale before this change: the patch keeps it stale.
        var wasStale = index.markedStale || batch.kind.structureChanged > index.valid
        for id in index.ids {
            guard let record = await entityRecord(id, in: batch) else {
                await markStale(queryKey, in: &batch)
                return
            }
            if record.changed > index.valid && record.changed != batch.sequence { wasStale = true }
            items.append(record.entity)
        }
        let query = EntityQuery(index.name, parameters: index.parameters)
        guard let patched = rule(query, items, change) else {
            await markStale(queryKey, in: &batch)
            return
        }
        let ids = patched.map(\.id)
        await relink(queryKey, old: index.ids, new: ids, in: &batch)
        index.replace(with: ids)
        index.valid = batch.sequence
        index.markedStale = wasStale
        set(index, for: queryKey, in: &batch)
    }
}

extension IndexRecord {
    /// Removes `id` from the list, keeping the page boundaries of the rest.
    mutating func remove(_ id: ID) where ID: Equatable {
        var kept: [ID] = []
        var ends: [Int] = []
        var start = 0
        for end in pageEnds {
            kept += ids[start..<min(end, ids.count)].filter { $0 != id }
            ends.append(kept.count)
            start = end
        }
        ids = kept
        pageEnds = ends
    }

    /// Replaces the list's IDs (a patch): the pages keep their ends, the last one takes the rest.
    mutating func replace(with newIDs: [ID]) {
        ids = newIDs
        var ends = pageEnds.dropLast().map { min($0, newIDs.count) }
        ends.append(newIDs.count)
        pageEnds = ends
    }
}
