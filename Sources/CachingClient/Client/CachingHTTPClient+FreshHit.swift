// SPDX-License-Identifier: Apache-2.0

import HTTPCaching
import HTTPTypes

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The hot path: a fresh answer from memory, made synchronously and without building a plan.
extension CachingHTTPClient {
    /// How a call starts: answered from memory, looked up, or still to be looked up below the
    /// memory tier.
    enum Start {
        /// A fresh memory hit, answered as the plan would answer it, without building the plan.
        case answered(FetchResult)
        /// The lookup, done, and the time it was judged at (it has no fresh answer).
        case lookedUp(ResponseLookup, Date)
        /// The memory tier did not finish the lookup: ``ResponseCache/finishLookup(_:)``.
        case pending(ResponseCache.PendingLookup)
    }

    /// The synchronous start of `fetch`: the memory tier's lookup and, for a fresh hit, the
    /// answer.
    func start(_ request: HTTPRequest, _ policy: CachePolicy, _ freshness: FreshnessClass) -> Start {
        let isSafe = request.method == .get || request.method == .head
        guard isSafe, policy.kind != .networkOnly else { return .lookedUp(cache.unreadLookup(request), now) }
        switch cache.startLookup(request) {
        case .pending(let pending):
            return .pending(pending)
        case .hit(let hit):
            // The hot path: judged from the record; a lookup is made only when it is not fresh.
            let at = now
            if let plain = cache.plainFreshness(of: hit, for: request, now: at), let stored = hit.stored,
                let answer = freshAnswer(request, policy, freshness, stored, plain, now: at)
            {
                return .answered(answer)
            }
            return .lookedUp(cache.lookup(request, hit: hit), at)
        case .done(let lookup):
            let at = now
            if let answer = freshAnswer(request, policy, freshness, lookup, now: at) { return .answered(answer) }
            return .lookedUp(lookup, at)
        }
    }

    /// The answer to a call that the lookup answers fresh, for a request without cache
    /// directives: the same answer as the full plan gives, without building a
    /// ``HTTPCaching/CacheDecision`` (the hot path of every policy that serves fresh entries).
    func freshAnswer(
        _ request: HTTPRequest,
        _ policy: CachePolicy,
        _ freshness: FreshnessClass,
        _ lookup: ResponseLookup,
        now: Date
    ) -> FetchResult? {
        guard let plain = cache.plainFreshness(of: lookup, now: now), let stored = lookup.stored else { return nil }
        return freshAnswer(request, policy, freshness, stored, plain, now: now)
    }

    /// ``freshAnswer(_:_:_:_:now:)`` once the stored response and its plain freshness are known.
    func freshAnswer(
        _ request: HTTPRequest,
        _ policy: CachePolicy,
        _ freshness: FreshnessClass,
        _ stored: CachedResponse,
        _ plain: (age: TimeInterval, lifetime: TimeInterval, isFresh: Bool),
        now: Date
    ) -> FetchResult? {
        switch policy.kind {
        case .networkFirst, .networkOnly, .cacheThenNetwork: return nil
        default: break
        }
        if policy.kind == .useProtocol, !freshness.usesTTLs {
            guard plain.isFresh else { return nil }
        } else {
            let age = entryAge(stored, isFreshByHTTP: plain.isFresh, freshness: freshness, now: now)
            guard age == .fresh else { return nil }
        }
        return answer(
            from: request.method == .head ? stored.withoutBody : stored,
            freshness: .fresh,
            ttl: freshness,
            now: now,
            timing: (plain.age, plain.lifetime)
        )
    }

    /// An answer from the stored response, with a current `Age`.
    /// - Parameter timing: the stored response's current age and freshness lifetime when the
    ///   caller has them (from a ``HTTPCaching/CacheDecision``); else they are worked out.
    func answer(
        from stored: CachedResponse,
        freshness: Freshness,
        ttl: FreshnessClass,
        now: Date,
        timing: (age: TimeInterval, lifetime: TimeInterval)? = nil,
        isFinal: Bool = true,
        error: CachingClientError? = nil
    ) -> FetchResult {
        let age = timing?.age ?? CacheRules.currentAge(of: stored, now: now)
        let expiresAt: Date
        if let soft = ttl.softTTL {
            expiresAt = stored.validatedAt.addingTimeInterval(soft.seconds)
        } else {
            let lifetime =
                timing?.lifetime
                ?? cache.rules.freshnessLifetime(of: stored.response, responseTime: stored.responseTime)
            expiresAt = now.addingTimeInterval(lifetime - age)
        }
        return FetchResult(
            cached: stored,
            age: Int(min(Double(Int32.max), max(0, age.rounded(.down)))),
            freshness: freshness,
            expiresAt: expiresAt,
            isFinal: isFinal,
            error: error
        )
    }
}
