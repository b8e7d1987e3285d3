// SPDX-License-Identifier: Apache-2.0

import CacheTiers
public import HTTPTypes

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension ResponseCache {
    /// How to answer the lookup's request at `now` (RFC 9111 §4): the stored responses it found,
    /// judged by ``CacheRules/decide(_:stored:now:)`` on facts parsed once when they were stored or
    /// read. Pure: no I/O, no clock.
    /// - Complexity: O(1) for a request without cache directives; the stored response's header
    ///   fields are not parsed again.
    public func decision(for lookup: ResponseLookup, now: Date) -> CacheDecision {
        let first = lookup.first
        let others = lookup.others
        return rules.decide(lookup.request, candidate: first?.response, facts: first?.facts, now: now) {
            ResponseLookup.responses(first, others)
        }
    }

    /// The stored answer's current age and freshness lifetime, and whether
    /// ``decision(for:now:)-(ResponseLookup,_)`` would use it as it is, worked out from the facts
    /// parsed when it was stored: what a fresh hit needs, without building a ``CacheDecision``.
    /// - Returns: nil unless the lookup found one answer for a `GET` or `HEAD` without cache
    ///   directives (no `Cache-Control`, no `Pragma`); then ask for the decision.
    package func plainFreshness(
        of lookup: ResponseLookup,
        now: Date
    ) -> (age: TimeInterval, lifetime: TimeInterval, isFresh: Bool)? {
        guard let first = lookup.first, lookup.others.isEmpty else { return nil }
        return plainFreshness(of: first, for: lookup.request, method: lookup.request.method, now: now)
    }

    /// ``plainFreshness(of:now:)`` of what a memory hit found for `request`.
    /// - Parameter method: `request`'s method, when the caller has read it already.
    package func plainFreshness(
        of hit: MemoryHit,
        for request: HTTPRequest,
        method: HTTPRequest.Method? = nil,
        now: Date
    ) -> (age: TimeInterval, lifetime: TimeInterval, isFresh: Bool)? {
        plainFreshness(of: hit.record, for: request, method: method ?? request.method, now: now)
    }

    private func plainFreshness(
        of record: StoredRecord.Box,
        for request: HTTPRequest,
        method: HTTPRequest.Method,
        now: Date
    ) -> (age: TimeInterval, lifetime: TimeInterval, isFresh: Bool)? {
        guard rulesAreModeDefaults, let facts = record.hitFacts else { return nil }
        guard method == .get || method == .head else { return nil }
        let fields = request.headerFields
        guard !fields.contains(.cacheControl), !fields.contains(.pragma) else { return nil }
        // The mode is a flag kept at init (passing the rules copies them).
        let age = facts.currentAge(now: now)
        let lifetime = facts.lifetime(shared: isShared)
        return (age, lifetime, !facts.noCache(shared: isShared) && !record.isMarkedStale && age < lifetime)
    }

    /// How to answer `request` from this cache at `now`: ``lookup(_:)`` then
    /// ``decision(for:now:)-(ResponseLookup,_)``.
    /// - Complexity: as ``lookup(_:)``.
    public func decision(for request: HTTPRequest, now: Date) async -> CacheDecision {
        decision(for: await lookup(request), now: now)
    }

    /// Applies a 304 (Not Modified) answer to a revalidation of the lookup's request (RFC 9111
    /// §4.3.4): the stored responses it selects get its header fields and the exchange's times,
    /// and are stored again through the configuration's hook and then `willCache` — the hook the
    /// request was made with applies to everything stored on its behalf, so a field it strips
    /// stays out even when the 304 carries it again.
    /// - Parameters:
    ///   - notModified: the 304.
    ///   - lookup: the lookup the revalidation was planned from (nothing is read again).
    ///   - requestTime: when the conditional request was sent.
    ///   - responseTime: when the 304 arrived.
    ///   - willCache: the request's own hook.
    /// - Returns: the freshened response to answer with (as the origin confirmed it, before the
    ///   hooks), or nil when the 304 selects nothing stored (then the request must be sent again
    ///   without conditions).
    /// - Throws: ``HTTPCachingError/Code/storage`` with the disk tier's write error.
    public func freshen(
        with notModified: HTTPResponse,
        for lookup: ResponseLookup,
        requestTime: Date,
        responseTime: Date,
        willCache: WillCache? = nil
    ) async throws(HTTPCachingError) -> CachedResponse? {
        try await freshened(
            with: notModified,
            for: lookup,
            requestTime: requestTime,
            responseTime: responseTime,
            through: StoragePipeline(willCache: willCache)
        )?.stored
    }

    /// ``freshen(with:for:requestTime:responseTime:willCache:)`` through `pipeline`, answering
    /// with a lookup whose first response is the freshened one (as the origin confirmed it, whether
    /// or not the pipeline let it be stored).
    package func freshened(
        with notModified: HTTPResponse,
        for lookup: ResponseLookup,
        requestTime: Date,
        responseTime: Date,
        through pipeline: StoragePipeline
    ) async throws(HTTPCachingError) -> ResponseLookup? {
        let stored = lookup.storedResponses
        var primary = await primaryRecord(of: lookup)
        var answer: ResponseLookup?
        for index in CacheRules.selectForFreshening(stored, notModified: notModified) {
            let updated = CacheRules.freshened(
                stored[index],
                with: notModified,
                requestTime: requestTime,
                responseTime: responseTime
            )
            // Stored for a request that carries the variant's own varying fields (a credential's
            // as its digest), which the variant keeps as they are.
            var origin = lookup.request
            for field in updated.varyingRequestFields { origin.headerFields[values: field.name] = [] }
            origin.headerFields.append(contentsOf: updated.varyingRequestFields)
            let through = ResponseLookup(request: origin, key: lookup.key, primary: primary)
            if let after = try await store(
                updated,
                for: through,
                through: pipeline,
                storedVarying: stored[index].varyingRequestFields
            ) {
                primary = after.primary
            }
            answer =
                answer
                ?? ResponseLookup(
                    request: lookup.request,
                    key: lookup.key,
                    first: .init(.response(updated), metadataBytes: 0)
                )
        }
        return answer
    }

    /// Removes what `response` to the unsafe `request` invalidates (RFC 9111 §4.4): the target
    /// URI and same-origin `Location` / `Content-Location`.
    /// - Returns: how many targets were invalidated.
    /// - Throws: ``HTTPCachingError/Code/storage`` with the disk tier's error.
    @discardableResult
    public func invalidate(after response: HTTPResponse, to request: HTTPRequest) async throws(HTTPCachingError) -> Int
    {
        let targets = CacheRules.invalidatedTargets(of: request, response: response)
        for target in targets { try await removeCachedResponse(for: target) }
        return targets.count
    }
}
