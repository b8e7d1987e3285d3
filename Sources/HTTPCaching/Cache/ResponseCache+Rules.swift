// SPDX-License-Identifier: Apache-2.0

import CacheTiers
public import HTTPTypes

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension ResponseCache {
    /// How to answer `request` from this cache at `now` (RFC 9111 §4): the stored responses for
    /// its URL that match its varying fields, judged by ``CacheRules/decide(_:stored:now:)``.
    /// - Complexity: one tier lookup for a URL without variants; its header fields are not parsed
    ///   again on a memory hit.
    public func decision(for request: HTTPRequest, now: Date) async -> CacheDecision {
        // The common case: a GET of a URL that holds one response, decided on facts parsed once.
        guard request.method == .get, let primaryKey = Self.primaryKey(for: request) else {
            return rules.decide(request, stored: await storedResponses(for: request), now: now)
        }
        guard let box = await record(for: primaryKey) else { return rules.decide(request, stored: [], now: now) }
        if case .response(let response) = box.record {
            let stored = Self.matches(box, response, request) ? [response] : []
            return rules.decide(request, stored: stored, facts: box.facts, now: now)
        }
        let found = await matching(box, primaryKey: primaryKey, request: request, limit: .max)
        return rules.decide(request, stored: found, now: now)
    }

    /// Applies a 304 (Not Modified) answer to a revalidation of `request` (RFC 9111 §4.3.4): the
    /// stored responses it selects get its header fields and the exchange's times, and are stored
    /// again.
    /// - Returns: the freshened response to answer with, or nil when the 304 selects nothing
    ///   stored (then the request must be sent again without conditions).
    /// - Throws: the disk tier's write error.
    public func freshen(
        with notModified: HTTPResponse,
        for request: HTTPRequest,
        requestTime: Date,
        responseTime: Date
    ) async throws -> CachedResponse? {
        let stored = await storedResponses(for: request)
        var answer: CachedResponse?
        for index in CacheRules.selectForFreshening(stored, notModified: notModified) {
            let updated = CacheRules.freshened(
                stored[index],
                with: notModified,
                requestTime: requestTime,
                responseTime: responseTime
            )
            var origin = request
            for field in updated.varyingRequestFields { origin.headerFields[values: field.name] = [] }
            origin.headerFields.append(contentsOf: updated.varyingRequestFields)
            try await storeCachedResponse(updated, for: origin)
            answer = answer ?? updated
        }
        return answer
    }

    /// Removes what `response` to the unsafe `request` invalidates (RFC 9111 §4.4): the target
    /// URI and same-origin `Location` / `Content-Location`.
    /// - Returns: how many targets were invalidated.
    /// - Throws: the disk tier's error.
    @discardableResult
    public func invalidate(after response: HTTPResponse, to request: HTTPRequest) async throws -> Int {
        let targets = CacheRules.invalidatedTargets(of: request, response: response)
        for target in targets { try await removeCachedResponse(for: target) }
        return targets.count
    }
}

/// A response in the memory tier, with its current age and freshness lifetime: what a client
/// needs to answer a fresh hit without an async lookup or a ``CacheDecision``.
package struct MemoryHit: Sendable {
    /// The stored response.
    package let stored: CachedResponse
    /// Its current age in seconds (RFC 9111 §4.2.3).
    package let age: TimeInterval
    /// Its freshness lifetime in seconds (§4.2.1).
    package let lifetime: TimeInterval
    /// Whether the response demands validation before every use (`no-cache`, §5.2.2.4).
    package let mustValidate: Bool

    /// Whether ``CacheRules/decide(_:stored:now:)`` would answer ``CacheDecision/Action/useStored``.
    package var isFresh: Bool { !mustValidate && age < lifetime }
}

extension ResponseCache {
    /// The response the memory tier holds for a plain `GET` of `request`, when the request
    /// carries no cache directives (no `Cache-Control`, no `Pragma`) and its URL has no variants;
    /// nil otherwise (then ask ``decision(for:now:)``). Synchronous: one memory lookup, no
    /// parsing.
    package func memoryHit(for request: HTTPRequest, now: Date) -> MemoryHit? {
        guard request.method == .get, request.headerFields[.cacheControl] == nil,
            request.headerFields[.pragma] == nil, let primaryKey = Self.primaryKey(for: request),
            case .hit(let entry) = tiers.memory.lookup(CacheKey(primaryKey)),
            let box = entry.decoded as? StoredRecord.Box, case .response(let stored) = box.record,
            let facts = box.facts, Self.matches(box, stored, request), rules == CacheRules(mode: rules.mode)
        else { return nil }
        return MemoryHit(
            stored: stored,
            age: facts.currentAge(now: now),
            lifetime: facts.lifetime(rules),
            mustValidate: facts.directives.noCache
        )
    }
}
