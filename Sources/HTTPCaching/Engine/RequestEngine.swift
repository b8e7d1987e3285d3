// SPDX-License-Identifier: Apache-2.0

package import HTTPTypes

#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
#endif

/// The one request engine every door runs: from a request, what the cache holds for it, the read
/// policy, the app's TTLs and the time, it decides — answer from the cache, ask the origin
/// (conditionally when revalidating), both, or say that nothing usable is cached — and, when the
/// origin answers, what that answer does to the cache (freshen, store, invalidate, keep).
///
/// It is pure: no I/O, no clock, no task. Each door is an adapter that does the I/O and runs
/// the engine's actions: the client (`CachingHTTPClient`, under which the proxy's ordinary path
/// runs), the Hummingbird middleware, and the proxy's fast hit (which answers only what
/// ``plan(_:lookup:now:)`` answers fresh from memory). A rule changes here, once, and is tested
/// here in a table and at each door end to end. (AsyncHTTPClient's connection state machines are
/// the model: values that take events and return actions.)
package struct RequestEngine: Sendable {
    /// The HTTP caching rules (RFC 9111) the engine decides by.
    package let rules: CacheRules

    package init(rules: CacheRules) {
        self.rules = rules
    }

    /// One read: the request and how it uses the cache.
    package struct Read: Sendable {
        package var request: HTTPRequest
        package var policy: ReadPolicy
        package var ttl: TTLRule
        /// The deadline of ``ReadPolicy/networkFirst(timeout:)`` without a timeout of its own.
        package var networkFirstTimeout: Duration?

        package init(
            _ request: HTTPRequest,
            policy: ReadPolicy = .useProtocol,
            ttl: TTLRule = TTLRule(),
            networkFirstTimeout: Duration? = nil
        ) {
            self.request = request
            self.policy = policy
            self.ttl = ttl
            self.networkFirstTimeout = networkFirstTimeout
        }
    }

    /// A stored response offered as an answer.
    package struct Offer: Sendable {
        /// How fresh the offer is.
        package enum State: Hashable, Sendable {
            case fresh
            /// Stale by HTTP or by the soft TTL.
            case expired
            /// Stale because the app marked it so.
            case markedStale
            /// Past the read's validation window: not to be acted on until the origin confirms it.
            case notValidated
        }

        /// The stored response, with its body (a door answering a `HEAD` leaves it out, and may
        /// need its length).
        package var stored: CachedResponse
        package var state: State
        /// Its current age and freshness lifetime in seconds (RFC 9111 §4.2).
        package var age: TimeInterval
        package var lifetime: TimeInterval
        /// False for an answer a later one follows (the origin's).
        package var isFinal: Bool
    }

    /// An exchange with the origin the engine asks for.
    package struct Exchange: Sendable {
        /// The request to send: the read's, made conditional on what is stored when revalidating.
        package var request: HTTPRequest
        /// Whether the stored response may answer, stale, when the origin cannot be reached or
        /// fails (5xx, 429).
        package var fallback: Bool
        /// A deadline after which the stored response answers (network-first).
        package var timeout: Duration?
        /// Whether the stored response is past the read's validation window: a fallback to it
        /// says so.
        package var isGated: Bool
    }

    /// Why nothing from the cache answers and the origin is not asked.
    package enum Missing: Hashable, Sendable {
        /// A passive read (cache only) with nothing stored, or a closed cache.
        case passive(closed: Bool)
        /// `only-if-cached` (RFC 9111 §5.2.1.7) with nothing usable stored: 504.
        case onlyIfCached(somethingStored: Bool)
    }

    /// What a door does with a read.
    package enum Plan: Sendable {
        /// Answer with the offer; nothing more.
        case answer(Offer)
        /// Answer with the offer (final), and run the exchange behind it to refresh the entry.
        case answerAndRefresh(Offer, Exchange)
        /// Answer with the offer (not final), then with the exchange's answer.
        case answerThenForward(Offer, Exchange)
        /// Answer with the exchange's answer.
        case forward(Exchange)
        /// Answer "nothing usable cached".
        case missing(Missing)
    }

    /// The plan for `read`, given what the cache holds for it (`lookup`) at `now`.
    package func plan(_ read: Read, lookup: ResponseLookup, now: Date) -> Plan {
        let request = read.request
        // Exchanges are made only by the plans that send one (a fresh answer copies no request).
        func unconditional() -> Exchange {
            Exchange(request: request, fallback: false, timeout: nil, isGated: false)
        }
        if lookup.isCacheClosed {
            // A closed cache: the origin answers alone (nothing is stored), unless the policy
            // forbids the network.
            return read.policy.isPassive ? .missing(.passive(closed: true)) : .forward(unconditional())
        }
        let isSafe = request.method == .get || request.method == .head
        if !isSafe || read.policy.isNetworkOnly { return .forward(unconditional()) }

        let first = lookup.first
        let others = lookup.others
        let decision = rules.decide(request, candidate: first?.response, facts: first?.facts, now: now) {
            ResponseLookup.responses(first, others)
        }
        guard let stored = decision.stored else {
            switch read.policy {
            case .cacheOnly, .returnCacheDataDontLoad: return .missing(.passive(closed: false))
            case .useProtocol where decision.action == .gatewayTimeout:
                return .missing(.onlyIfCached(somethingStored: false))
            default: return .forward(unconditional())
            }
        }
        let age = read.ttl.age(of: stored, isFreshByHTTP: decision.action == .useStored, now: now)
        /// The exchange that revalidates `stored` (the conditional request is built only here).
        func revalidating(fallback: Bool, timeout: Duration? = nil) -> Exchange {
            Exchange(
                request: decision.request ?? rules.conditionalRequest(for: request, stored: [stored]),
                fallback: fallback,
                timeout: timeout,
                isGated: age == .unvalidated
            )
        }
        func offer(isFinal: Bool = true) -> Offer {
            let state: Offer.State
            switch age {
            case .fresh: state = .fresh
            case .unvalidated: state = .notValidated
            default: state = stored.isMarkedStale ? .markedStale : .expired
            }
            return Offer(
                stored: stored,
                state: state,
                age: decision.age,
                lifetime: decision.freshnessLifetime,
                isFinal: isFinal
            )
        }

        switch read.policy {
        case .cacheOnly, .returnCacheDataDontLoad, .returnCacheDataElseLoad:
            return .answer(offer())
        case .cacheFirst:
            switch age {
            case .fresh: return .answer(offer())
            case .stale: return .answerAndRefresh(offer(), revalidating(fallback: true))
            case .pastHardTTL, .unvalidated: return .forward(revalidating(fallback: true))
            }
        case .cacheThenNetwork:
            return .answerThenForward(offer(isFinal: false), revalidating(fallback: false))
        case .staleWhileRevalidate:
            switch age {
            case .fresh: return .answer(offer())
            case .stale: return .answerThenForward(offer(isFinal: false), revalidating(fallback: true))
            case .pastHardTTL, .unvalidated: return .forward(revalidating(fallback: true))
            }
        case .networkFirst(let timeout):
            return .forward(revalidating(fallback: true, timeout: timeout ?? read.networkFirstTimeout))
        case .useProtocol:
            let fallback = decision.mayServeStaleOnError
            if read.ttl.usesTTLs {
                switch age {
                case .fresh: return .answer(offer())
                case .stale: return .answerAndRefresh(offer(), revalidating(fallback: fallback))
                case .pastHardTTL, .unvalidated:
                    return .forward(revalidating(fallback: fallback || age == .unvalidated))
                }
            }
            switch decision.action {
            case .useStored, .useStale: return .answer(offer())
            case .useStaleAndRevalidate: return .answerAndRefresh(offer(), revalidating(fallback: fallback))
            case .gatewayTimeout: return .missing(.onlyIfCached(somethingStored: true))
            default: return .forward(revalidating(fallback: fallback))
            }
        case .networkOnly:
            return .forward(revalidating(fallback: false))
        }
    }

    /// Whether `read` is answered with `stored` as it is, fresh, given its HTTP freshness
    /// (`isFreshByHTTP`, from ``ResponseCache``'s facts parsed when it was stored): the fresh-hit
    /// rule of ``plan(_:lookup:now:)``, for the hot paths that answer without building a plan.
    @inlinable
    package static func servesFresh(
        _ policy: ReadPolicy,
        _ ttl: TTLRule,
        _ stored: CachedResponse,
        isFreshByHTTP: Bool,
        now: Date
    ) -> Bool {
        guard policy.answersFreshFromCache else { return false }
        // Without TTLs an entry is fresh exactly when HTTP says so and the app has not marked it
        // stale, which `isFreshByHTTP` says (it is false for a marked response).
        guard ttl.usesTTLs else { return isFreshByHTTP }
        return ttl.age(of: stored, isFreshByHTTP: isFreshByHTTP, now: now) == .fresh
    }
}

extension CachedResponse {
    /// The response without its body: the answer to a `HEAD` served from a stored `GET`.
    package var withoutBody: CachedResponse {
        var head = self
        head.body = []
        return head
    }
}
