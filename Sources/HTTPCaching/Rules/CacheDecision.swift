// SPDX-License-Identifier: Apache-2.0

public import HTTPTypes

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// What to do with a request, given what the cache holds for it: the answer of
/// ``CacheRules/decide(_:stored:now:)``, which the client and the proxy act on.
public struct CacheDecision: Sendable {
    /// The action to take.
    public struct Action: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: Hashable {
            case useStored, useStale, useStaleAndRevalidate, revalidate, fetch, gatewayTimeout
        }
        private let kind: Kind

        /// The stored response is fresh enough for the request: answer with it (and ``age``).
        public static let useStored = Action(kind: .useStored)
        /// The stored response is stale, and the request accepts it (`max-stale`): answer with it.
        public static let useStale = Action(kind: .useStale)
        /// The stored response is stale but within `stale-while-revalidate`: answer with it, then
        /// send ``CacheDecision/request`` in the background and store its answer.
        public static let useStaleAndRevalidate = Action(kind: .useStaleAndRevalidate)
        /// Send ``CacheDecision/request`` (conditional when the stored response has validators);
        /// a 304 freshens the stored response, anything else replaces it.
        public static let revalidate = Action(kind: .revalidate)
        /// Nothing stored can be used: send ``CacheDecision/request``.
        public static let fetch = Action(kind: .fetch)
        /// `only-if-cached` and nothing usable: answer 504 (Gateway Timeout) (§5.2.1.7).
        public static let gatewayTimeout = Action(kind: .gatewayTimeout)

        public var description: String { "\(kind)" }
    }

    /// The action.
    public var action: Action
    /// The stored response the action uses or revalidates; nil for ``Action/fetch`` without
    /// candidates and for ``Action/gatewayTimeout``.
    public var stored: CachedResponse?
    /// The request to send for ``Action/revalidate``, ``Action/useStaleAndRevalidate`` and
    /// ``Action/fetch``: the original, with `If-None-Match` / `If-Modified-Since` added when
    /// revalidating a response with validators.
    public var request: HTTPRequest?
    /// The stored response's current age in seconds (§4.2.3); 0 without one.
    public var age: TimeInterval
    /// Its freshness lifetime in seconds (§4.2.1); 0 without one.
    public var freshnessLifetime: TimeInterval
    /// Whether, if the network fails, the stored response may be served stale: within its
    /// `stale-if-error` (response or request, RFC 5861 §4) and not forbidden by
    /// `must-revalidate`, `proxy-revalidate` or `s-maxage` in a shared cache, or `no-cache`.
    public var mayServeStaleOnError: Bool

    /// Whether the stored response is fresh (age below lifetime).
    public var isFresh: Bool { hasStored && age < freshnessLifetime }
    /// When the stored response stops being fresh, as seen at `now`.
    public func expiresAt(now: Date) -> Date? {
        hasStored ? now.addingTimeInterval(freshnessLifetime - age) : nil
    }

    /// Whether ``stored`` is set, without copying it.
    private var hasStored: Bool {
        if case .some = stored { return true }
        return false
    }
}

extension CacheRules {
    /// Decides how to answer `request` from `stored`, the responses the cache holds for its URL
    /// whose varying fields match it (RFC 9111 §4.1), newest first.
    ///
    /// The rules, in order: an unsafe or unknown method fetches (§4); no candidate fetches, or
    /// answers 504 under `only-if-cached`; request `no-cache` (or `Pragma: no-cache`) and
    /// response `no-cache` revalidate (§5.2.1.4, §5.2.2.4); a response fresh for the request
    /// (`max-age`, `min-fresh` of the request applied, §5.2.1) is used; a stale one is served
    /// under the request's `max-stale` or the response's `stale-while-revalidate`, unless
    /// `must-revalidate`, or `proxy-revalidate` / `s-maxage` in a shared cache, forbid it
    /// (§4.2.4, §5.2.2); anything else revalidates.
    /// - Parameters:
    ///   - request: the request to answer.
    ///   - stored: matching stored responses, newest first.
    ///   - now: the time of the decision.
    /// - Returns: the decision.
    public func decide(_ request: HTTPRequest, stored: [CachedResponse], now: Date) -> CacheDecision {
        decide(request, candidate: stored.first, facts: nil, now: now) { stored }
    }

    /// ``decide(_:stored:now:)`` for the newest matching response, `candidate`, with its facts
    /// worked out already when `facts` is given; `all` gives every matching response (for the
    /// validators of a conditional request) and is called only when one is built.
    ///
    /// Each outcome builds its decision once, so that the request and the stored response are
    /// copied only into a decision that carries them.
    func decide(
        _ request: HTTPRequest,
        candidate: CachedResponse?,
        facts: FreshnessFacts?,
        now: Date,
        all: () -> [CachedResponse]
    ) -> CacheDecision {
        let requestDirectives = CacheControl(request.headerFields, isRequest: true)
        guard request.method == .get || request.method == .head, let candidate else {
            if requestDirectives.onlyIfCached {
                return CacheDecision(
                    action: .gatewayTimeout,
                    stored: nil,
                    request: nil,
                    age: 0,
                    freshnessLifetime: 0,
                    mayServeStaleOnError: false
                )
            }
            return CacheDecision(
                action: .fetch,
                stored: nil,
                request: request,
                age: 0,
                freshnessLifetime: 0,
                mayServeStaleOnError: false
            )
        }
        let facts = usesModeDefaults ? facts : nil
        let directives = facts?.directives(self) ?? responseDirectives(candidate.response.headerFields)
        let age = facts?.currentAge(now: now) ?? Self.currentAge(of: candidate, now: now)
        let lifetime =
            facts?.lifetime(self)
            ?? freshnessLifetime(of: candidate.response, directives: directives, responseTime: candidate.responseTime)
        let staleness = age - lifetime
        let neverStale =
            directives.mustRevalidate
            || (mode.isShared && (directives.proxyRevalidate || directives.sharedMaxAge != nil))
        let staleIfError = max(directives.staleIfError ?? -1, requestDirectives.staleIfError ?? -1)
        let mayServeStaleOnError =
            !neverStale && !directives.noCache && (staleness < 0 || staleness <= TimeInterval(staleIfError))
        func decision(_ action: CacheDecision.Action, sending request: HTTPRequest? = nil) -> CacheDecision {
            CacheDecision(
                action: action,
                stored: candidate,
                request: request,
                age: age,
                freshnessLifetime: lifetime,
                mayServeStaleOnError: mayServeStaleOnError
            )
        }

        // RFC 8246: a fresh immutable response answers a reload (no-cache, max-age=0) as it is,
        // unless the app marked it stale.
        let reloadAnswered =
            directives.immutable && !directives.noCache && !candidate.isMarkedStale && staleness < 0
        let mustValidate =
            (requestDirectives.noCache && !reloadAnswered) || directives.noCache || candidate.isMarkedStale
        var freshForRequest = !mustValidate && staleness < 0
        if let maxAge = requestDirectives.maxAge, age > TimeInterval(maxAge), !reloadAnswered {
            freshForRequest = false
        }
        if let minFresh = requestDirectives.minFresh, lifetime - age < TimeInterval(minFresh) {
            freshForRequest = false
        }
        if freshForRequest { return decision(.useStored) }
        if !mustValidate, !neverStale, staleness >= 0 {
            if let maxStale = requestDirectives.maxStale,
                maxStale.seconds.map({ staleness <= TimeInterval($0) }) ?? true
            {
                return decision(.useStale)
            }
            if let window = directives.staleWhileRevalidate, staleness <= TimeInterval(window),
                !requestDirectives.onlyIfCached
            {
                return decision(.useStaleAndRevalidate, sending: conditionalRequest(for: request, stored: all()))
            }
        }
        if requestDirectives.onlyIfCached { return decision(.gatewayTimeout) }
        return decision(.revalidate, sending: conditionalRequest(for: request, stored: all()))
    }
}
