// SPDX-License-Identifier: Apache-2.0

import CacheTiers
public import CachingClient
import HTTPCaching

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension EntityStore {
    /// Asks the server for the query's first page — conditionally when the stored list has a
    /// validator and every entity of it is stored — and stores the answer: "not modified"
    /// confirms the list (its validation time and expiry, no entity rewritten); a page upserts
    /// its entities and replaces the list's IDs (and drops the pages after it), in one commit.
    /// - Parameters:
    ///   - query: the query.
    ///   - conditional: whether to send the stored validator; default true.
    ///   - fetch: the app's fetcher.
    /// - Returns: the list as stored after the answer (source `FetchResult.Source.network`
    ///   or `FetchResult.Source.revalidated`).
    /// - Throws: the fetcher's error, classified as a `CachingClientError`; a
    ///   `CachingClientError.Code.storage` error when the cache refused the
    ///   commit. Nothing stored changes when it throws.
    public func refresh(
        _ query: EntityQuery,
        conditional: Bool = true,
        using fetch: QueryFetcher
    ) async throws -> QueryResult<Entity> {
        try await refresh(query, conditional: conditional, stored: nil, using: fetch)
    }

    /// ``refresh(_:conditional:using:)`` given what a read of the query found just before (an
    /// observation's first read), so that the list is not read twice; nil: read it here.
    func refresh(
        _ query: EntityQuery,
        conditional: Bool,
        stored given: Snapshot?,
        using fetch: QueryFetcher
    ) async throws -> QueryResult<Entity> {
        let stored: Snapshot
        if let given {
            stored = given
        } else {
            stored = await consistently { await self.snapshot(of: query) }
        }
        let validator = conditional && stored.missing.isEmpty ? stored.index?.validator : nil
        let response: QueryResponse<Entity>
        do {
            response = try await fetch(QueryRequest(query: query, validator: validator, cursor: nil))
        } catch {
            throw Self.classify(error)
        }
        switch response {
        case .notModified(let freshFor):
            guard validator != nil else {
                throw CachingClientError(code: .server, message: "\(query): 'not modified' to an unconditional request")
            }
            try await commit { batch in
                // Evicted since: nothing to confirm.
                guard var index = await indexRecord(query.key, in: batch) else { return }
                index.validatedAt = batch.now
                index.expiresAt = batch.now.addingTimeInterval(seconds(freshFor))
                index.valid = batch.sequence
                index.markedStale = false
                set(index, for: query.key, in: &batch)
            }
            return await answer(query, source: .revalidated)
        case .page(let page):
            try await commit { batch in
                let old = await indexRecord(query.key, in: batch)
                try await upsertFromServer(page.entities, in: &batch)
                let ids = page.entities.map(\.id)
                await relink(query.key, old: old?.ids ?? [], new: ids, in: &batch)
                if old == nil { await catalog(query.key, in: &batch) }
                let index = IndexRecord(
                    name: query.name,
                    parameters: query.parameters,
                    ids: ids,
                    pageEnds: [ids.count],
                    nextCursor: page.nextCursor,
                    validator: page.validator,
                    fetchedAt: batch.now,
                    validatedAt: batch.now,
                    expiresAt: batch.now.addingTimeInterval(seconds(page.freshFor)),
                    valid: batch.sequence,
                    markedStale: false
                )
                set(index, for: query.key, in: &batch)
            }
            return await answer(query, source: .network)
        }
    }

    /// Loads the page after the last one stored and appends it to the list, with its entities,
    /// in one commit; the list's validation time does not change.
    /// - Throws: `CachingClientError.Code.invalidArgument` when no list is stored
    ///   or its last page is loaded; the fetcher's error, classified; a storage error. Nothing
    ///   stored changes when it throws.
    public func loadNextPage(_ query: EntityQuery, using fetch: QueryFetcher) async throws -> QueryResult<Entity> {
        guard let cursor = await indexRecord(query)?.nextCursor else {
            throw CachingClientError(code: .invalidArgument, message: "\(query): no list with a next page is stored")
        }
        let response: QueryResponse<Entity>
        do {
            response = try await fetch(QueryRequest(query: query, validator: nil, cursor: cursor))
        } catch {
            throw Self.classify(error)
        }
        guard case .page(let page) = response else {
            throw CachingClientError(code: .server, message: "\(query): 'not modified' to a page request")
        }
        try await commit { batch in
            // The list was replaced (or evicted) while the page loaded: the page is not its.
            guard var index = await indexRecord(query.key, in: batch), index.nextCursor == cursor else {
                throw CachingClientError(
                    code: .invalidArgument,
                    message: "\(query): the list changed while a page loaded"
                )
            }
            // Stale before the page: it stays so. The page's own entities are stamped with this
            // commit, which the list is confirmed up to (they are what the server just sent).
            var wasStale = index.markedStale || batch.kind.structureChanged > index.valid
            for id in index.ids where !wasStale {
                if let record = await entityRecord(id, in: batch), record.changed > index.valid { wasStale = true }
            }
            try await upsertFromServer(page.entities, in: &batch)
            let ids = page.entities.map(\.id)
            await relink(query.key, old: index.ids, new: index.ids + ids, in: &batch)
            index.ids += ids
            index.pageEnds.append(index.ids.count)
            index.nextCursor = page.nextCursor
            index.valid = batch.sequence
            index.markedStale = wasStale
            set(index, for: query.key, in: &batch)
        }
        return await answer(query, source: .network)
    }

    /// Writes entities from the server; the lists that hold one whose value changed are told.
    private func upsertFromServer(_ entities: [Entity], in batch: inout Batch) async throws {
        for entity in entities where try await write(entity, isLocal: false, in: &batch).changed {
            batch.touched.formUnion(await keyList(reverseKey(entity.id), in: batch))
        }
    }

    /// The stored list, as a network answer.
    func answer(_ query: EntityQuery, source: FetchResult.Source) async -> QueryResult<Entity> {
        let snapshot = await consistently { await self.snapshot(of: query) }
        return snapshot.result(freshness: .http, now: configuration.now(), source: source)
    }

    func seconds(_ freshFor: Duration?) -> TimeInterval {
        let duration = freshFor ?? configuration.defaultFreshFor
        return Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// A fetcher's error as the client's classified error: its own when it threw one.
    static func classify(_ error: any Error) -> CachingClientError {
        if let error = error as? CachingClientError { return error }
        if error is CancellationError { return CachingClientError(code: .cancelled, message: "cancelled") }
        return CachingClientError(code: .network, message: "the fetcher failed: \(error)", underlying: error)
    }
}

extension EntityStore {
    /// One entity under a read policy, for a detail screen: fresh by `rule` (its version is the
    /// current one, or the server confirmed it within a time) answers from the cache; otherwise —
    /// and always for `CachePolicy.networkFirst` and
    /// `CachePolicy.cacheThenNetwork` — the fetcher is asked, conditionally with
    /// the stored version, and a failure falls back to the stored entity, stale, with the error. `CachePolicy.cacheOnly` never
    /// asks; `CachePolicy.networkOnly` always asks, unconditionally, without a
    /// fallback. A changed or deleted entity reaches the lists as ``apply(_:upTo:)``'s changes do.
    /// - Returns: the final answer (`staleWhileRevalidate` answers with the network's, or the
    ///   fallback).
    public func entity(
        _ id: Entity.ID,
        policy: CachePolicy,
        rule: EntityFreshnessRule,
        using fetch: EntityFetcher
    ) async -> EntityResult<Entity> {
        let stored = await entityRecord(id)
        let cached = entityResult(stored, rule: rule, source: .cache)
        if policy.kind.isPassive { return cached }
        let alwaysAsks =
            switch policy.kind {
            case .networkOnly, .networkFirst, .cacheThenNetwork: true
            default: false
            }
        let asks = alwaysAsks || stored == nil || !cached.freshness.isFresh
        guard asks else { return cached }
        let conditional = !policy.kind.isNetworkOnly
        do {
            let response = try await fetch(EntityRequest(id: id, version: conditional ? stored?.version : nil))
            switch response {
            case .notModified:
                guard conditional, stored != nil else {
                    throw CachingClientError(code: .server, message: "\(id): 'not modified' without a stored version")
                }
                try await commit { batch in
                    guard var record = await entityRecord(id, in: batch) else { return }
                    record.validatedAt = batch.now
                    record.isLocal = false
                    set(record, for: id, in: &batch)
                }
                return entityResult(await entityRecord(id), rule: rule, source: .revalidated)
            case .entity(let entity, let version):
                try await commit { batch in
                    try await apply(.upsert(entity), isLocal: false, version: version, in: &batch)
                }
                return entityResult(await entityRecord(id), rule: rule, source: .network)
            case .deleted:
                try await commit { batch in try await apply(.delete(id), isLocal: false, in: &batch) }
                return .missing(source: .network)
            }
        } catch {
            let error = Self.classify(error)
            guard stored != nil, !policy.kind.isNetworkOnly else { return .missing(source: .none, error: error) }
            var result = cached
            result.freshness = .stale(error.code == .noConnection ? .offline : .revalidationFailed)
            result.error = error
            return result
        }
    }
}

extension EntityStore {
    /// Refreshes the entities of the query's stored list whose freshness is suspect, without
    /// asking for the list: each entity not fresh by `rule` (or not stored) is asked for on its
    /// own, conditionally on its stored version, so that the server confirms the unchanged ones
    /// ("not modified") and sends only the changed ones. A changed entity marks the lists that
    /// hold it stale as any change does (their order or membership may have changed with it).
    /// - Returns: the list as stored afterwards; its error is the first fetch's failure, when one
    ///   failed (the entities it could not refresh stay as they were).
    public func refreshEntities(
        of query: EntityQuery,
        rule: EntityFreshnessRule,
        using fetch: EntityFetcher
    ) async -> QueryResult<Entity> {
        let ids = await consistently { await self.indexRecord(query)?.ids } ?? []
        var firstError: CachingClientError?
        for id in ids {
            let answer = await entity(id, policy: .cacheFirst, rule: rule, using: fetch)
            firstError = firstError ?? answer.error
        }
        var result = await read(query)
        result.error = firstError
        return result
    }
}
