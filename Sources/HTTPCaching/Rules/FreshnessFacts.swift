// SPDX-License-Identifier: Apache-2.0

import HTTPTypes

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What RFC 9111 needs to know of a stored response that does not change while it is stored,
/// worked out once when it is stored or read from disk, so that a lookup does not parse its
/// header fields again: its directives, its `corrected_initial_age` (§4.2.3) and its freshness
/// lifetime in each mode (§4.2.1). A shared cache with the default rules reads
/// `CDN-Cache-Control` in place of `Cache-Control` where the response has it (RFC 9213).
final class FreshnessFacts: Sendable {
    /// `Cache-Control`'s directives: a private cache's.
    let directives: CacheControl
    /// A shared cache's directives under the default rules.
    let sharedDirectives: CacheControl
    /// The numbers and flags: what a fresh hit reads (a stored record keeps a copy of them).
    let numbers: HitFacts

    var correctedInitialAge: TimeInterval { numbers.correctedInitialAge }
    var responseTime: Date { numbers.responseTime }

    /// Works the facts out; `directives` are the response's, when the caller parsed them already.
    init(_ stored: CachedResponse, directives: CacheControl? = nil) {
        let directives = directives ?? CacheControl(stored.response.headerFields)
        self.directives = directives
        let privateLifetime = CacheRules.privateDefaults.freshnessLifetime(
            of: stored.response,
            directives: directives,
            responseTime: stored.responseTime
        )
        let shared = CacheRules.sharedDefaults
        let sharedLifetime: TimeInterval
        if let targeted = shared.targetedDirectives(stored.response.headerFields) {
            sharedDirectives = targeted
            sharedLifetime = shared.freshnessLifetime(
                of: stored.response,
                directives: targeted,
                responseTime: stored.responseTime
            )
        } else {
            sharedDirectives = directives
            sharedLifetime = directives.sharedMaxAge.map(TimeInterval.init) ?? privateLifetime
        }
        numbers = HitFacts(
            correctedInitialAge: CacheRules.correctedInitialAge(of: stored),
            responseTime: stored.responseTime,
            privateLifetime: privateLifetime,
            sharedLifetime: sharedLifetime,
            privateNoCache: directives.noCache,
            sharedNoCache: sharedDirectives.noCache
        )
    }

    /// The directives a cache under `rules` obeys (rules with the defaults of their mode).
    func directives(_ rules: CacheRules) -> CacheControl {
        rules.mode.isShared ? sharedDirectives : directives
    }

    /// Whether the directives a cache under `rules` obeys say `no-cache` (§5.2.2.4).
    func noCache(_ rules: CacheRules) -> Bool {
        numbers.noCache(shared: rules.mode.isShared)
    }

    /// The freshness lifetime under `rules`' mode and heuristic (§4.2.1).
    func lifetime(_ rules: CacheRules) -> TimeInterval {
        numbers.lifetime(shared: rules.mode.isShared)
    }

    /// The current age at `now` (§4.2.3).
    func currentAge(now: Date) -> TimeInterval {
        numbers.currentAge(now: now)
    }

    /// The facts a fresh hit reads, as plain numbers and flags (no references).
    struct HitFacts: Sendable {
        let correctedInitialAge: TimeInterval
        let responseTime: Date
        let privateLifetime: TimeInterval
        let sharedLifetime: TimeInterval
        /// `no-cache` in ``directives`` and in ``sharedDirectives``.
        let privateNoCache: Bool
        let sharedNoCache: Bool

        /// The current age at `now` (§4.2.3).
        func currentAge(now: Date) -> TimeInterval {
            correctedInitialAge + max(0, now.timeIntervalSince(responseTime))
        }

        /// The freshness lifetime in a shared or a private cache (§4.2.1).
        func lifetime(shared: Bool) -> TimeInterval {
            shared ? sharedLifetime : privateLifetime
        }

        /// Whether a shared or a private cache's directives say `no-cache` (§5.2.2.4).
        func noCache(shared: Bool) -> Bool {
            shared ? sharedNoCache : privateNoCache
        }
    }
}
