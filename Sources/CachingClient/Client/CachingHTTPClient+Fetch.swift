// SPDX-License-Identifier: Apache-2.0

public import HTTPCaching
public import HTTPTypes
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension CachingHTTPClient {
    /// Fetches `request` under `policy` and returns the final answer.
    ///
    /// Never throws: a failure is an answer too, with ``FetchResult/error`` set and, where the
    /// policy allows, the stored response served stale. Use ``FetchResult/requireBody()`` to turn
    /// it into a body or an error.
    /// - Parameters:
    ///   - request: the request; its URL must be absolute.
    ///   - body: the request body, for methods that carry one.
    ///   - policy: how to use the cache; nil: the configuration's.
    ///   - freshness: the soft and hard TTLs; nil: the configuration's.
    ///   - willCache: a hook for this request's response alone, run after the cache's own. A call
    ///     with one has an exchange of its own: it does not join identical requests in flight.
    ///   - delegate: a delegate for this request alone, run after the configuration's: its
    ///     `willCache` after the hooks, and it hears the request's ``FetchEvent``s. A call with one
    ///     has an exchange of its own, as with `willCache`.
    /// - Returns: the final answer.
    public func fetch(
        _ request: HTTPRequest,
        body: [UInt8]? = nil,
        policy: CachePolicy? = nil,
        freshness: FreshnessClass? = nil,
        willCache: WillCache? = nil,
        delegate: (any CachingHTTPClientDelegate)? = nil
    ) async -> FetchResult {
        let policy = policy ?? configuration.policy
        guard delegate == nil, !hasDelegate else {
            let call = makeCall(request, body, policy, freshness ?? configuration.freshness, willCache, delegate)
            guard let tracing else { return await observedFetch(call) { _ in } }
            return await tracing.fetch(request) { await observedFetch(call) { _ in } }
        }
        guard let tracing else { return await fetch(request, body, policy, freshness, willCache) }
        return await tracing.fetch(request) { await fetch(request, body, policy, freshness, willCache) }
    }

    /// Fetches `request` under the configuration's policy and freshness class:
    /// ``fetch(_:body:policy:freshness:willCache:delegate:)`` with every other argument left out,
    /// the most common call, which passes and drops none of them.
    /// - Parameter request: the request; its URL must be absolute.
    /// - Returns: the final answer.
    public func fetch(_ request: HTTPRequest) async -> FetchResult {
        guard isPlain else {
            return await fetch(request, body: nil)
        }
        return await fetch(request, nil, configuration.policy, nil, nil)
    }

    /// ``fetch(_:body:policy:freshness:willCache:delegate:)`` without delegates.
    @inline(__always)
    private func fetch(
        _ request: HTTPRequest,
        _ body: [UInt8]?,
        _ policy: CachePolicy,
        _ freshness: FreshnessClass?,
        _ willCache: WillCache?
    ) async -> FetchResult {
        var rest = Rest.unread
        if let answer = freshHit(request, policy, freshness, rest: &rest) { return answer }
        return await fetch(request, body, policy, freshness ?? configuration.freshness, willCache, rest)
    }

    /// Fetches `request` as ``fetch(_:body:policy:freshness:willCache:delegate:)`` does under the
    /// configuration's policy, but an answer from the network comes as soon as its head arrived,
    /// its body in ``FetchResult/bodyStream`` (``FetchResult/body`` empty) when the transport
    /// streams (``StreamingHTTPTransport``); every other answer is whole.
    ///
    /// The body is read from the connection by a task of its own and stored when it ended whole,
    /// where the rules allow and it is no longer than a tier admits
    /// (``StreamedBody``): a reader that goes away stops nothing for the others. That task starts
    /// when the body is first asked for (the first read of a ``FetchResult/bodyStream``, or one let
    /// go), so that a caller passing the head on does so before any of the body is read.
    ///
    /// `bodyParts`, for a method other than `GET` and `HEAD`, sends the request body as it is read
    /// (`body` is then nil) through a transport that streams; any other collects it first.
    package func fetchStreaming(
        _ request: HTTPRequest,
        body: [UInt8]?,
        bodyParts: RequestBodySource? = nil
    ) async -> FetchResult {
        guard let tracing else { return await streamingFetch(request, body, bodyParts) }
        return await tracing.fetch(request) { await streamingFetch(request, body, bodyParts) }
    }

    private func streamingFetch(
        _ request: HTTPRequest,
        _ body: [UInt8]?,
        _ bodyParts: RequestBodySource?
    ) async -> FetchResult {
        let policy = configuration.policy
        var rest = Rest.unread
        if let answer = freshHit(request, policy, nil, rest: &rest) { return answer }
        return await fetch(
            request,
            body,
            policy,
            configuration.freshness,
            nil,
            rest,
            streams: true,
            bodyParts: bodyParts
        )
    }

    /// The rest of ``fetch(_:body:policy:freshness:willCache:delegate:)`` after the memory tier
    /// did not answer it fresh.
    private func fetch(
        _ request: HTTPRequest,
        _ body: [UInt8]?,
        _ policy: CachePolicy,
        _ freshness: FreshnessClass,
        _ willCache: WillCache?,
        _ rest: Rest,
        streams: Bool = false,
        bodyParts: RequestBodySource? = nil
    ) async -> FetchResult {
        let lookup: ResponseLookup
        let at: Date
        switch rest {
        case .unread:
            (lookup, at) = (cache.unreadLookup(request), now)
        case .lookedUp(let found, let now):
            (lookup, at) = (found, now)
        case .pending(let pending):
            (lookup, at) = (await traced("layeredcache.lookup") { await cache.finishLookup(pending) }, now)
            if let answer = freshAnswer(request, policy, freshness, lookup, now: at) { return answer }
        }
        var call = Call(request, body, policy, freshness, willCache)
        call.streams = streams
        call.bodyParts = bodyParts
        switch planWithoutFreshAnswer(call, lookup, now: at) {
        case .answer(let result):
            return result
        case .answerAndRefresh(let result, let step):
            refresh(step)
            return result
        case .answerThenNetwork(_, let step), .network(let step):
            return await network(step)
        }
    }

    /// Fetches `request` under `policy`, yielding every answer: under
    /// ``CachePolicy/staleWhileRevalidate`` and ``CachePolicy/cacheThenNetwork`` a stored answer at
    /// once (not final), then the network's (final); under every other policy the final answer
    /// alone.
    ///
    /// The work happens as the sequence is iterated, in the iterating task.
    /// - Parameters: as for ``fetch(_:body:policy:freshness:willCache:delegate:)``.
    /// - Returns: the answers, the last one final.
    public func results(
        for request: HTTPRequest,
        body: [UInt8]? = nil,
        policy: CachePolicy? = nil,
        freshness: FreshnessClass? = nil,
        willCache: WillCache? = nil,
        delegate: (any CachingHTTPClientDelegate)? = nil
    ) -> some AsyncSequence<FetchResult, Never> & Sendable {
        let call = makeCall(request, body, policy, freshness, willCache, delegate)
        return FetchResultSequence(client: self, call: call)
    }

    /// One call's parameters, the configuration's where the caller gave none.
    func makeCall(
        _ request: HTTPRequest,
        _ body: [UInt8]?,
        _ policy: CachePolicy?,
        _ freshness: FreshnessClass?,
        _ willCache: WillCache?,
        _ delegate: (any CachingHTTPClientDelegate)?
    ) -> Call {
        // The configuration's delegate, then the call's; a call without either builds no list.
        var delegates: [any CachingHTTPClientDelegate] = []
        if hasDelegate || delegate != nil {
            if let first = configuration.delegate { delegates.append(first) }
            if let delegate { delegates.append(delegate) }
        }
        return Call(
            request,
            body,
            policy ?? configuration.policy,
            freshness ?? configuration.freshness,
            willCache,
            delegates: delegates,
            hasOwnPipeline: willCache != nil || delegate != nil
        )
    }

    /// Starts a background refresh, unless the key is backing off.
    func refresh(_ step: NetworkStep) {
        let key = step.backoffKey
        let at = now
        guard backoffTable.withLock({ $0.backingOff(key, now: at) }) == nil else { return }
        // Nobody reads a refresh's answer: it comes whole.
        var step = step
        step.streams = false
        flights.start(step.flightKey) { [step] in await self.exchange(step) }
    }

    /// The cache's lookup for `call`: read once for a safe method under a policy that reads the
    /// cache; for the others only the key is built (a store reads what it replaces itself).
    @inline(__always)
    func lookup(for call: Call) async -> ResponseLookup {
        let isSafe = call.request.method == .get || call.request.method == .head
        guard isSafe, !call.policy.kind.isNetworkOnly else { return cache.unreadLookup(call.request) }
        return await cache.lookup(call.request)
    }
}

extension CachingHTTPClient {
    /// The plan for `call`, given what the cache holds for it (`lookup`) at `now`: the request
    /// engine's (HTTPCaching's `RequestEngine`), pure — no I/O, no clock — with its offers made
    /// into answers, so that every policy's behaviour is table-tested without sockets.
    func plan(_ call: Call, _ lookup: ResponseLookup, now at: Date) -> Plan {
        if let answer = freshAnswer(call.request, call.policy, call.freshness, lookup, now: at) {
            return .answer(answer)
        }
        return planWithoutFreshAnswer(call, lookup, now: at)
    }

    /// ``plan(_:_:now:)`` once ``freshAnswer(_:_:_:_:now:)`` has found no fresh answer: `fetch`
    /// tries that first itself, so that a fresh hit builds no ``Plan`` and a miss does not check
    /// freshness twice.
    func planWithoutFreshAnswer(_ call: Call, _ lookup: ResponseLookup, now at: Date) -> Plan {
        let read = RequestEngine.Read(
            call.request,
            policy: call.policy.kind,
            ttl: call.freshness.ttl,
            networkFirstTimeout: configuration.networkFirstTimeout
        )
        func step(_ exchange: RequestEngine.Exchange) -> NetworkStep {
            NetworkStep(
                request: exchange.request,
                // The flight, the backoff and the store read the key: made once here.
                lookup: lookup.keyed(),
                body: call.body,
                fallback: exchange.fallback,
                timeout: exchange.timeout,
                freshness: call.freshness,
                pipeline: call.pipeline,
                ownFlight: call.hasOwnPipeline ? UInt64.random(in: 1...UInt64.max) : nil,
                isGated: exchange.isGated,
                coalescesByKey: configuration.coalescing == .byCacheKey && !call.hasOwnPipeline
                    && call.policy == .useProtocolCachePolicy && exchange.timeout == nil,
                streams: call.streams,
                bodyParts: call.bodyParts
            )
        }
        func answer(_ offer: RequestEngine.Offer) -> FetchResult {
            let freshness: Freshness
            var error: CachingClientError?
            switch offer.state {
            case .fresh: freshness = .fresh
            case .expired: freshness = .stale(.expired)
            case .markedStale: freshness = .stale(.markedStale)
            case .notValidated:
                freshness = .stale(.notValidated)
                error = Self.notValidated(call.freshness, underlying: nil)
            }
            return self.answer(
                from: call.request.method == .head ? offer.stored.withoutBody : offer.stored,
                freshness: freshness,
                softTTL: call.freshness.softTTL,
                now: at,
                timing: (offer.age, offer.lifetime),
                isFinal: offer.isFinal,
                error: error
            )
        }
        switch engine.plan(read, lookup: lookup, now: at) {
        case .answer(let offer): return .answer(answer(offer))
        case .answerAndRefresh(let offer, let exchange): return .answerAndRefresh(answer(offer), step(exchange))
        case .answerThenForward(let offer, let exchange): return .answerThenNetwork(answer(offer), step(exchange))
        case .forward(let exchange): return .network(step(exchange))
        case .missing(.passive(let closed)): return .answer(passiveMissing(call.policy, closed: closed))
        case .missing(.onlyIfCached(let somethingStored)):
            let what = somethingStored ? "what is cached is stale" : "nothing usable is cached"
            return .answer(missing(.notCached, "only-if-cached, and \(what)"))
        }
    }

    /// When the answer `lookup` holds first stops being fresh: after the soft TTL when there is
    /// one, else by HTTP, from the facts parsed when it was stored.
    func expiresAt(of lookup: ResponseLookup, freshness: FreshnessClass, now: Date) -> Date? {
        guard let stored = lookup.stored else { return nil }
        if let soft = freshness.softTTL {
            return stored.validatedAt.addingTimeInterval(soft.seconds)
        }
        guard let age = lookup.age(now: now), let lifetime = lookup.freshnessLifetime(cache.rules) else { return nil }
        return now.addingTimeInterval(lifetime - age)
    }

    /// The error of an answer that its class's validation window does not allow to act on.
    static func notValidated(_ freshness: FreshnessClass, underlying: (any Error)?) -> CachingClientError {
        CachingClientError(
            code: .notValidated,
            message: "the origin has not confirmed the answer within \(freshness.name)'s validation window",
            underlying: underlying
        )
    }

    /// The passive mode's answer when nothing is cached (or the cache is closed): "missing", which
    /// is not a failure — no error, as the `cacheResponse` event said — except under
    /// ``CachePolicy/returnCacheDataDontLoad``, which keeps URLCache's error. A closed cache is
    /// reported where it always is, in ``FetchResult/cacheError``.
    func passiveMissing(_ policy: CachePolicy, closed: Bool) -> FetchResult {
        var result = FetchResult(response: nil, body: nil, source: .none, freshness: .missing)
        if policy.kind == .returnCacheDataDontLoad {
            result.error = CachingClientError(
                code: .notCached,
                message: "nothing is cached for the request and the policy is returnCacheDataDontLoad"
            )
        }
        result.cacheError = closed ? Self.closedCache : nil
        return result
    }

    func missing(_ code: CachingClientError.Code, _ message: String) -> FetchResult {
        FetchResult(
            response: nil,
            body: nil,
            source: .none,
            freshness: .missing,
            error: CachingClientError(code: code, message: message)
        )
    }
}
