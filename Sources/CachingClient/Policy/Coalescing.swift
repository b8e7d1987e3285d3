// SPDX-License-Identifier: Apache-2.0

/// Which requests in flight share one exchange with the origin
/// (``CachingHTTPClient/Configuration/coalescing``).
public enum Coalescing: Hashable, Sendable {
    /// Requests with the same method, URL and header fields (tracing fields aside) share one
    /// exchange and its answer. Requests that differ in any field (a `User-Agent`, say) each go
    /// to the origin.
    case identicalRequests
    /// Requests under ``CachePolicy/useProtocolCachePolicy`` with the same cache key (method and
    /// URL) share one exchange, whatever their other fields — the model of Varnish, whose waiting
    /// list is keyed by its hash: a cold URL asked for by a thousand different clients costs the
    /// origin one request.
    ///
    /// The exchange is the first request's. When its answer is stored, each waiter reads the
    /// cache again with its own request: the stored response answers it when it would answer
    /// that request from the cache (its `Vary` fields match); the others ask again, and coalesce
    /// again among themselves (one more exchange per distinct variant, at most three rounds). An
    /// answer the cache does not store (`private`, `no-store`, a hook's veto, an error) goes only
    /// to the request that asked for it, never to a waiter: waiters then ask on their own, and the
    /// URL's requests stop coalescing by key for two minutes (Varnish's hit-for-miss), so that a
    /// URL that always answers privately does not serialize its requests. A failure to reach the
    /// origin is every waiter's failure (each falls back to its own stored response where its
    /// policy allows).
    ///
    /// A request with a hook or delegate of its own, or under another policy, coalesces as
    /// ``identicalRequests``.
    case byCacheKey
}

/// The URLs whose requests do not coalesce by key for a while, because the origin's answer was
/// not stored (Varnish's hit-for-miss); bounded.
struct UncacheableKeys: Sendable {
    /// How long a key stays marked.
    static let duration: Double = 120
    /// The most keys marked at once; past it the expired ones go, then all.
    static let limit = 4_096

    private var until: [String: Double] = [:]

    func isMarked(_ key: String, at now: Double) -> Bool {
        guard let until = until[key] else { return false }
        return until > now
    }

    mutating func mark(_ key: String, at now: Double) {
        if until.count >= Self.limit {
            until = until.filter { $0.value > now }
            if until.count >= Self.limit { until.removeAll(keepingCapacity: true) }
        }
        until[key] = now + Self.duration
    }

    mutating func unmark(_ key: String) {
        if !until.isEmpty { until[key] = nil }
    }
}
