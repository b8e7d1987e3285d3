// SPDX-License-Identifier: Apache-2.0

import CacheTiers
import HTTPTypes
import Logging

extension ResponseCache {
    /// Stores the `206` `response` (its hooks already run) under `key` as partial content
    /// (RFC 9111 §3.3): combined with the partial content or the whole response the key holds when
    /// both carry the same strong entity tag and complete length (§3.4), else in their place. Once
    /// the ranges cover the representation, the whole `200` is stored instead, as any `200` is. A
    /// key that holds variants keeps them (nothing is stored).
    ///
    /// The record never answers a request for the whole (``ResponseCache/lookup(_:)`` serves only a
    /// range it holds), so no door can present part of a body as all of it.
    /// - Returns: a lookup whose first response is `response`, the answer to the request; nil
    ///   when nothing was stored.
    func storePartial(
        _ response: CachedResponse,
        for lookup: ResponseLookup,
        key: CacheKey
    ) async throws(HTTPCachingError) -> ResponseLookup? {
        guard let received = PartialContent(received: response) else {
            configuration.logger.debug("not storing partial content whose Content-Range and body disagree")
            return nil
        }
        let primary = await primaryRecord(of: lookup)
        // What the key holds, as partial content: parts, or a whole response (all of its bytes).
        let held =
            primary?.partial
            ?? primary.flatMap { $0.answersEveryRequest ? $0.response.flatMap(PartialContent.init(complete:)) : nil }
        if held == nil, primary?.variantIndex != nil {
            configuration.logger.debug("not storing partial content over a URL's variants")
            return nil
        }
        let partial = held?.combined(with: received) ?? received
        let stored: StoredRecord.Box
        if partial.isComplete {
            var whole = lookup.request
            whole.headerFields[.range] = nil
            whole.headerFields[.ifRange] = nil
            guard let put = try await put(partial.complete(), for: whole, key: key, replacing: primary, parsed: nil)
            else { return nil }
            stored = put.primary
        } else {
            let entry = StoredRecord.partial(partial).entry(storedAt: configuration.now())
            try await HTTPCachingError.storage("storing partial content") {
                try await tiers.set(entry, for: key, policy: partial.stored.storagePolicy)
            }
            try await recordTags(of: partial.stored, for: key)
            stored = Self.box(of: entry)
        }
        return ResponseLookup(
            request: lookup.request,
            key: key,
            primary: stored,
            first: StoredRecord.Box(.response(response), metadataBytes: 0)
        )
    }
}
