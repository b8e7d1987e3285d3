// SPDX-License-Identifier: Apache-2.0

public import HTTPCaching
public import HTTPTypes

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension CachingHTTPClient {
    /// Fetches `request` under `policy`, yielding its lifecycle: ``FetchEvent/started``,
    /// ``FetchEvent/cacheResponse(_:)`` (always), ``FetchEvent/serverResponse(_:)`` or
    /// ``FetchEvent/failed(_:)`` when the network was asked, and ``FetchEvent/finished(_:)`` (see
    /// ``FetchEvent`` for the active and passive orders).
    ///
    /// The request starts at once, in a task of its own; ending the iteration early cancels it.
    /// The delegates hear the same events.
    /// - Parameters: as for ``fetch(_:body:policy:freshness:willCache:delegate:)``.
    /// - Returns: the events, ``FetchEvent/finished(_:)`` last.
    public func events(
        for request: HTTPRequest,
        body: [UInt8]? = nil,
        policy: CachePolicy? = nil,
        freshness: FreshnessClass? = nil,
        willCache: WillCache? = nil,
        delegate: (any CachingHTTPClientDelegate)? = nil
    ) -> AsyncStream<FetchEvent> {
        let call = makeCall(request, body, policy, freshness, willCache, delegate)
        let (stream, continuation) = AsyncStream.makeStream(of: FetchEvent.self, bufferingPolicy: .unbounded)
        let task = Task(executorPreference: RequestTasks.executor) {
            if let tracing = self.tracing {
                _ = await tracing.fetch(request) { await self.observedFetch(call) { continuation.yield($0) } }
            } else {
                _ = await self.observedFetch(call) { continuation.yield($0) }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// A fetch that emits its lifecycle to the call's delegates and to `emit`.
    func observedFetch(_ call: Call, emit: @Sendable (FetchEvent) async -> Void) async -> FetchResult {
        func send(_ event: FetchEvent) async {
            await call.emit(event)
            await emit(event)
        }
        await send(.started)
        // The cache is read for every safe request, so that the cache's offer is what it holds.
        let isSafe = call.request.method == .get || call.request.method == .head
        let lookup =
            isSafe
            ? await traced("layeredcache.lookup") { await cache.lookup(call.request) }
            : cache.unreadLookup(call.request)
        let at = now
        let plan = plan(call, lookup, now: at)
        await send(.cacheResponse(offer(plan, lookup: lookup, call: call, now: at)))
        let final: FetchResult
        switch plan {
        case .answer(let result):
            final = result
        case .answerAndRefresh(let result, let step):
            refresh(step)
            final = result
        case .answerThenNetwork(_, let step), .network(let step):
            final = await network(step)
            await send(Self.networkEvent(final))
        }
        await send(.finished(final))
        return final
    }

    /// What the cache offers a call before the network: the stored answer the plan starts from,
    /// or "nothing cached".
    func offer(_ plan: Plan, lookup: ResponseLookup, call: Call, now at: Date) -> FetchResult {
        switch plan {
        case .answer(let result) where result.source == .cache: return result
        case .answerAndRefresh(let result, _), .answerThenNetwork(let result, _): return result
        default: break
        }
        guard !lookup.isCacheClosed else {
            var result = FetchResult(response: nil, body: nil, source: .none, freshness: .missing)
            result.cacheError = Self.closedCache
            return result
        }
        guard let stored = lookup.stored else {
            return FetchResult(response: nil, body: nil, source: .none, freshness: .missing)
        }
        return answer(
            from: call.request.method == .head ? stored.withoutBody : stored,
            freshness: .stale(stored.isMarkedStale ? .markedStale : .expired),
            softTTL: call.freshness.softTTL,
            now: at,
            isFinal: false
        )
    }

    /// The event for a network step's answer: the server's answer, or the failure.
    static func networkEvent(_ result: FetchResult) -> FetchEvent {
        if result.source == .network || result.source == .revalidated { return .serverResponse(result) }
        return .failed(
            result.error ?? CachingClientError(code: .network, message: "the network gave no answer")
        )
    }
}
