// SPDX-License-Identifier: Apache-2.0

public import CacheTiers
public import HTTPTypes

#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
#endif

/// What a ``ResponseCache`` holds for one request, found once: the request's normalized key, the
/// record stored under it, and the stored responses that answer the request, with their freshness
/// facts parsed once.
///
/// Make one with ``ResponseCache/lookup(_:)``, then pass it on: to
/// ``ResponseCache/decision(for:now:)-(ResponseLookup,_)`` (pure, no I/O), to
/// ``ResponseCache/storeCachedResponse(_:for:willCache:)-(_,ResponseLookup,_)`` (which replaces
/// what the lookup found without reading it again) and to
/// ``ResponseCache/freshen(with:for:requestTime:responseTime:willCache:)``.
///
/// A lookup is a snapshot: a store by another task after it was made is not in it. Storing
/// through an older lookup is safe (the newest write wins; a variant the older lookup did not
/// know of is forgotten, never served wrongly).
public struct ResponseLookup: Sendable {
    /// The request looked up.
    public let request: HTTPRequest
    /// The request's primary key: its method and normalized URL (RFC 9111 §4.1), with the digest
    /// the tiers index it by; nil when the request has no absolute URL (nothing is stored or found
    /// for it).
    ///
    /// A lookup answered by a memory hit makes the key when it is asked for, each time: a caller
    /// that needs it more than once keeps it.
    public var key: CacheKey? {
        if let madeKey { return madeKey }
        return defersKey ? ResponseCache.primaryKey(for: request) : nil
    }
    /// The key, when it was made.
    private let madeKey: CacheKey?
    /// Whether ``key`` is made from the request when asked for (a memory hit made none).
    private let defersKey: Bool
    /// Whether the tiers were read for ``primary`` (false for a lookup that only built the key).
    package let isRead: Bool
    /// Whether the cache was closed (``ResponseCache/close()``) when the lookup was made: nothing
    /// was read, and storing through the lookup throws ``HTTPCachingError/Code/closed``.
    public let isCacheClosed: Bool
    /// What the tiers hold under ``key``: a response, or the URL's variant index.
    let primary: StoredRecord.Box?
    /// The newest stored response that answers the request.
    let first: StoredRecord.Box?
    /// The older ones that answer it too (other variants), newest first.
    let others: [StoredRecord.Box]

    init(
        request: HTTPRequest,
        key: CacheKey?,
        isRead: Bool = true,
        isCacheClosed: Bool = false,
        primary: StoredRecord.Box? = nil,
        first: StoredRecord.Box? = nil,
        others: [StoredRecord.Box] = []
    ) {
        self.request = request
        self.madeKey = key
        self.defersKey = false
        self.isRead = isRead
        self.isCacheClosed = isCacheClosed
        self.primary = primary
        self.first = first
        self.others = others
    }

    /// A lookup that found `primary` in the memory tier and `first` answering the request (the
    /// same record for a response without `Vary`), and makes its key only when it is asked for.
    init(request: HTTPRequest, deferringKeyOf primary: StoredRecord.Box, first: StoredRecord.Box? = nil) {
        self.request = request
        self.madeKey = nil
        self.defersKey = true
        self.isRead = true
        self.isCacheClosed = false
        self.primary = primary
        self.first = first ?? primary
        self.others = []
    }

    /// This lookup with its ``key`` made, for a caller that reads the key more than once.
    package func keyed() -> ResponseLookup {
        guard defersKey else { return self }
        return ResponseLookup(
            request: request,
            key: key,
            isRead: isRead,
            isCacheClosed: isCacheClosed,
            primary: primary,
            first: first,
            others: others
        )
    }

    /// A lookup whose only answer is `response`, as if it had been stored for `request` (an
    /// answer that could not be stored).
    package static func answering(_ request: HTTPRequest, with response: CachedResponse) -> ResponseLookup {
        ResponseLookup(request: request, key: nil, first: StoredRecord.Box(.response(response), metadataBytes: 0))
    }

    /// The newest stored response that answers the request, whatever its age; nil when none does.
    public var stored: CachedResponse? { first?.response }

    /// The identity of the record ``stored`` comes from, unique in the process: the same while
    /// that record stays stored, another once it is replaced (a record never changes). For a
    /// caller that keeps what it derives from a stored response, found by it.
    package var storedRecordID: UInt64? { first?.serial }

    /// Every stored response that answers the request, newest first.
    public var storedResponses: [CachedResponse] { Self.responses(first, others) }

    /// The responses of `first` and `others`, newest first.
    static func responses(_ first: StoredRecord.Box?, _ others: [StoredRecord.Box]) -> [CachedResponse] {
        guard let first, let response = first.response else { return [] }
        return [response] + others.compactMap(\.response)
    }

    /// The stored answer's current age in seconds (RFC 9111 §4.2.3), from facts parsed once;
    /// nil without one.
    package func age(now: Date) -> TimeInterval? {
        first?.facts?.currentAge(now: now)
    }

    /// The stored answer's freshness lifetime in seconds under `rules` (RFC 9111 §4.2.1), from
    /// facts parsed once; nil without one.
    package func freshnessLifetime(_ rules: CacheRules) -> TimeInterval? {
        guard let first, let facts = first.facts, let response = first.response else { return nil }
        return rules.usesModeDefaults
            ? facts.lifetime(rules)
            : rules.freshnessLifetime(
                of: response.response,
                directives: facts.directives,
                responseTime: facts.responseTime
            )
    }
}
