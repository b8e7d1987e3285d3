// SPDX-License-Identifier: Apache-2.0

import HTTPCaching
import HTTPTypes

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The hot path's parts: judging a stored response fresh and answering with it, without a plan.
extension CachingHTTPClient {
    /// Where a call goes on when the memory tier did not answer it fresh.
    enum Rest {
        /// Not looked up: a request the cache does not answer (not `GET` or `HEAD`), or a
        /// network-only call.
        case unread
        /// The lookup, done, and the time it was judged at (it has no fresh answer).
        case lookedUp(ResponseLookup, Date)
        /// The memory tier did not finish the lookup: ``ResponseCache/finishLookup(_:)``.
        case pending(ResponseCache.PendingLookup)
    }

    /// What a fresh hit reads of a ``FreshnessClass``, copied without its name.
    struct TTLFacts {
        /// Whether the class sets any TTL or window (else HTTP freshness decides alone).
        let usesTTLs: Bool
        /// The class's soft TTL.
        let softTTL: Duration?

        init(_ freshness: FreshnessClass) {
            usesTTLs = freshness.usesTTLs
            softTTL = freshness.softTTL
        }
    }

    /// The hot path: a fresh memory hit, judged from the stored record and answered without a
    /// call, a plan or a lookup value; the freshness class is not copied (it holds a name), its
    /// TTL facts are.
    /// - Parameter rest: where the call goes on when there is no fresh hit (left `.unread` when
    ///   the request is not one the cache answers).
    /// - Returns: the answer, or nil.
    @inline(__always)
    func freshHit(
        _ request: HTTPRequest,
        _ policy: CachePolicy,
        _ freshness: FreshnessClass?,
        rest: inout Rest
    ) -> FetchResult? {
        let method = request.method
        guard method == .get || method == .head else { return nil }
        if case .networkOnly = policy.kind { return nil }
        switch cache.startLookup(request) {
        case .hit(let hit):
            let at = now
            let ttl = freshness.map(TTLFacts.init) ?? defaultTTLFacts
            if let plain = cache.plainFreshness(of: hit, for: request, method: method, now: at),
                var stored = hit.stored,
                servesFresh(policy, ttl, freshness, stored, plain, now: at)
            {
                // Made here, the stored response moved into it: through `answer(from:)` the
                // result was copied once more and the response counted twice.
                let expiresAt =
                    if let soft = ttl.softTTL {
                        stored.validatedAt.addingTimeInterval(soft.seconds)
                    } else {
                        at.addingTimeInterval(plain.lifetime - plain.age)
                    }
                if method == .head { stored = stored.withoutBody }
                return FetchResult(
                    cached: stored,
                    age: Self.wholeSeconds(plain.age),
                    freshness: .fresh,
                    expiresAt: expiresAt,
                    isFinal: true,
                    error: nil
                )
            }
            rest = .lookedUp(cache.lookup(request, hit: hit), at)
        case .done(let lookup):
            // Closed, or no URL: nothing stored to answer with.
            rest = .lookedUp(lookup, now)
        case .pending(let pending):
            rest = .pending(pending)
        }
        return nil
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
        guard let plain = cache.plainFreshness(of: lookup, now: now), let stored = lookup.stored,
            servesFresh(policy, TTLFacts(freshness), freshness, stored, plain, now: now)
        else { return nil }
        return answer(
            from: request.method == .head ? stored.withoutBody : stored,
            freshness: .fresh,
            softTTL: freshness.softTTL,
            now: now,
            timing: (plain.age, plain.lifetime)
        )
    }

    /// Whether `policy` answers with the stored response as it is, fresh: by HTTP freshness
    /// (`plain`), or by the class's TTLs when it has any.
    /// - Parameters:
    ///   - ttl: the class's TTL facts.
    ///   - freshness: the class, nil for the configuration's (read only when it has TTLs).
    func servesFresh(
        _ policy: CachePolicy,
        _ ttl: TTLFacts,
        _ freshness: FreshnessClass?,
        _ stored: CachedResponse,
        _ plain: (age: TimeInterval, lifetime: TimeInterval, isFresh: Bool),
        now: Date
    ) -> Bool {
        // The engine's fresh-hit rule (`RequestEngine.servesFresh`), its first two steps written
        // here: a call into HTTPCaching for them cost a fresh hit 5-9% (package `@inlinable`
        // bodies stayed calls in the release binary), and the engine's table and PlanTests hold
        // the two to the same answers.
        switch policy.kind {
        case .networkFirst, .networkOnly, .cacheThenNetwork: return false
        default: break
        }
        guard ttl.usesTTLs else { return plain.isFresh }
        let freshness = freshness ?? configuration.freshness
        return RequestEngine.servesFresh(policy.kind, freshness.ttl, stored, isFreshByHTTP: plain.isFresh, now: now)
    }

    /// An answer from the stored response, with a current `Age`.
    /// - Parameters:
    ///   - softTTL: the call's soft TTL, which sets when the answer expires when given.
    ///   - timing: the stored response's current age and freshness lifetime when the caller has
    ///     them (from a ``HTTPCaching/CacheDecision``); else they are worked out.
    func answer(
        from stored: CachedResponse,
        freshness: Freshness,
        softTTL: Duration?,
        now: Date,
        timing: (age: TimeInterval, lifetime: TimeInterval)? = nil,
        isFinal: Bool = true,
        error: CachingClientError? = nil
    ) -> FetchResult {
        let age = timing?.age ?? CacheRules.currentAge(of: stored, now: now)
        let expiresAt: Date
        if let softTTL {
            expiresAt = stored.validatedAt.addingTimeInterval(softTTL.seconds)
        } else {
            let lifetime =
                timing?.lifetime
                ?? cache.rules.freshnessLifetime(of: stored.response, responseTime: stored.responseTime)
            expiresAt = now.addingTimeInterval(lifetime - age)
        }
        return FetchResult(
            cached: stored,
            age: Self.wholeSeconds(age),
            freshness: freshness,
            expiresAt: expiresAt,
            isFinal: isFinal,
            error: error
        )
    }

    /// An age in whole seconds, as `Age` carries it (RFC 9111 §5.1): rounded down, at least 0.
    static func wholeSeconds(_ age: TimeInterval) -> Int {
        Int(min(Double(Int32.max), max(0, age.rounded(.down))))
    }
}
