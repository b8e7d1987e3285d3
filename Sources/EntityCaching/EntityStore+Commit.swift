// SPDX-License-Identifier: Apache-2.0

import CacheTiers
import CachingClient
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension EntityStore {
    /// The records one commit writes, readable before they are written (a later step of the
    /// same commit sees an earlier one's records).
    struct Batch {
        /// The commit's number: what its changed entities and confirmed lists are stamped with.
        let sequence: UInt64
        let now: Date
        var kind: KindRecord
        var entities: [String: EntityRecord<Entity>?] = [:]
        var indexes: [String: IndexRecord<Entity.ID>] = [:]
        var keyLists: [String: KeyListRecord?] = [:]
        /// The order the keys were first written in.
        var order: [CacheKey] = []
        /// The query keys whose lists changed or went stale; every one when ``kindWide``.
        var touched: Set<String> = []
        var kindWide = false

        mutating func note(_ key: CacheKey) {
            if entities[key.string] == nil, indexes[key.string] == nil, keyLists[key.string] == nil {
                order.append(key)
            }
        }
    }

    /// Runs `build` under the commit lock, then writes what it recorded as one
    /// `TieredCache.commit(_:policy:)` with the kind's record, and tells the
    /// observers of the lists it touched.
    /// - Throws: `build`'s error (nothing is written); `CachingClientError.Code.storage`
    ///   when the cache refused the commit (nothing changed).
    func commit(_ build: (inout Batch) async throws -> Void) async throws {
        let (touched, kindWide) = try await lock.withLock { () async throws -> (Set<String>, Bool) in
            let now = configuration.now()
            let millis = UInt64(max(0, now.timeIntervalSince1970 * 1000))
            let stored = await kindRecord()
            var kind = stored ?? KindRecord(sequence: 0, structureChanged: 0, token: nil)
            // Numbers keep growing across a lost kind record: they start from the clock.
            kind.sequence = max(kind.sequence + 1, millis << 10)
            if stored == nil {
                // What the lost record knew of creations and deletions is gone: every list counts
                // as changed since.
                kind.structureChanged = kind.sequence
            }
            var batch = Batch(sequence: kind.sequence, now: now, kind: kind)
            try await build(&batch)
            let changes = try encode(batch)
            commits.add(1, ordering: .acquiringAndReleasing)
            defer { commits.add(1, ordering: .acquiringAndReleasing) }
            do {
                try await cache.commit(changes, policy: configuration.storagePolicy)
            } catch {
                throw CachingClientError(
                    code: .storage,
                    message: "the cache refused the commit: \(error)",
                    underlying: error
                )
            }
            return (batch.touched, batch.kindWide)
        }
        observers.signal(touched, everyQuery: kindWide)
    }

    private func encode(_ batch: Batch) throws -> [TieredCache.Change] {
        var changes: [TieredCache.Change] = []
        changes.reserveCapacity(batch.order.count + 1)
        for key in batch.order {
            if let pending = batch.entities[key.string] {
                changes.append(try change(pending, for: key, at: batch.now))
            } else if let pending = batch.indexes[key.string] {
                changes.append(try change(pending, for: key, at: batch.now))
            } else if let pending = batch.keyLists[key.string] {
                changes.append(try change(pending, for: key, at: batch.now))
            }
        }
        changes.append(try change(batch.kind, for: kindKey, at: batch.now))
        return changes
    }

    /// The change that stores `record` at `key` (with its decoded form attached, so that the
    /// next memory hit decodes nothing), or removes the key for nil.
    private func change<Value: Codable & Sendable>(
        _ record: Value?,
        for key: CacheKey,
        at now: Date
    ) throws -> TieredCache.Change {
        guard let record else { return .remove(key) }
        let bytes: [UInt8]
        do {
            bytes = try RecordCoding.encode(record)
        } catch {
            throw CachingClientError(
                code: .invalidArgument,
                message: "\(key) does not encode: \(error)",
                underlying: error
            )
        }
        var entry = CacheEntry(value: bytes, storedAt: now)
        entry.attachment = Decoded(record, encodedBytes: bytes.count)
        return .set(entry, for: key)
    }

    // MARK: Records within a batch

    func entityRecord(_ id: Entity.ID, in batch: Batch) async -> EntityRecord<Entity>? {
        if let pending = batch.entities[entityKey(id).string] { return pending }
        return await entityRecord(id)
    }

    func indexRecord(_ queryKey: String, in batch: Batch) async -> IndexRecord<Entity.ID>? {
        let key = indexKey(queryKey)
        if let pending = batch.indexes[key.string] { return pending }
        return await record(IndexRecord<Entity.ID>.self, at: key)
    }

    func keyList(_ key: CacheKey, in batch: Batch) async -> [String] {
        if let pending = batch.keyLists[key.string] { return pending?.keys ?? [] }
        return await record(KeyListRecord.self, at: key)?.keys ?? []
    }

    func set(_ record: EntityRecord<Entity>?, for id: Entity.ID, in batch: inout Batch) {
        let key = entityKey(id)
        batch.note(key)
        batch.entities[key.string] = .some(record)
    }

    func set(_ index: IndexRecord<Entity.ID>, for queryKey: String, in batch: inout Batch) {
        let key = indexKey(queryKey)
        batch.note(key)
        batch.indexes[key.string] = index
        batch.touched.insert(queryKey)
    }

    func set(_ keys: [String], at key: CacheKey, in batch: inout Batch) {
        batch.note(key)
        batch.keyLists[key.string] = .some(keys.isEmpty ? nil : KeyListRecord(keys: keys))
    }

    /// Updates the reverse index for a list that held `old` and now holds `new`: each added
    /// entity names the query, each removed one no longer does. Cost: the IDs that changed.
    func relink(_ queryKey: String, old: [Entity.ID], new: [Entity.ID], in batch: inout Batch) async {
        let oldSet = Set(old)
        let newSet = Set(new)
        for id in newSet where !oldSet.contains(id) {
            let key = reverseKey(id)
            var keys = await keyList(key, in: batch)
            if !keys.contains(queryKey) {
                keys.append(queryKey)
                set(keys, at: key, in: &batch)
            }
        }
        for id in oldSet where !newSet.contains(id) {
            let key = reverseKey(id)
            let keys = await keyList(key, in: batch)
            if keys.contains(queryKey) { set(keys.filter { $0 != queryKey }, at: key, in: &batch) }
        }
    }

    /// Adds `queryKey` to the kind's catalog of lists, when it is new.
    func catalog(_ queryKey: String, in batch: inout Batch) async {
        var keys = await keyList(catalogKey, in: batch)
        guard !keys.contains(queryKey) else { return }
        keys.append(queryKey)
        set(keys, at: catalogKey, in: &batch)
    }

    /// Writes `entity` (from the server when not `isLocal`) with its `version` (nil: the
    /// configuration's reading of it).
    /// - Returns: whether it was created (none stored) and whether its value changed.
    @discardableResult
    func write(
        _ entity: Entity,
        isLocal: Bool,
        version: String? = nil,
        in batch: inout Batch
    ) async throws -> (created: Bool, changed: Bool) {
        let old = await entityRecord(entity.id, in: batch)
        let changed: Bool
        if let old {
            changed = try RecordCoding.canonical(old.entity) != RecordCoding.canonical(entity)
        } else {
            changed = true
        }
        let record = EntityRecord(
            entity: entity,
            fetchedAt: batch.now,
            validatedAt: isLocal ? (old?.validatedAt ?? batch.now) : batch.now,
            version: version ?? configuration.version?(entity),
            isLocal: isLocal,
            changed: changed ? batch.sequence : (old?.changed ?? batch.sequence)
        )
        set(record, for: entity.id, in: &batch)
        return (old == nil, changed)
    }

    /// Marks the list of `queryKey` stale, when one is stored.
    func markStale(_ queryKey: String, in batch: inout Batch) async {
        guard var index = await indexRecord(queryKey, in: batch) else { return }
        index.markedStale = true
        set(index, for: queryKey, in: &batch)
    }
}
