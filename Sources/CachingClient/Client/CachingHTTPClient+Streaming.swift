// SPDX-License-Identifier: Apache-2.0

import HTTPCaching
import HTTPTypes
import Logging
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Answers whose bodies are still arriving (``CachingHTTPClient/fetchStreaming(_:body:)``).
extension CachingHTTPClient {
    /// What `response`, whose body `source` is still arriving, does to the cache, as
    /// ``take(_:for:requestTime:responseTime:)`` decides for a whole answer: the head decides at
    /// once (backoff, invalidation); the body is read by a ``StreamedBody`` of its own and stored
    /// when it ended whole, where the rules and the pipeline allow and it is no longer than a tier
    /// admits. A body declared longer is passed on from its start, kept nowhere.
    func take(
        _ response: HTTPResponse,
        streaming streamed: StreamedTransportResponse,
        for step: NetworkStep,
        requestTime: Date,
        at responseTime: Date
    ) async -> NetworkOutcome {
        let source = streamed.body
        let status = response.status.code
        let error = CachingClientError.classify(response)
        let outcome = engine.outcome(
            of: response,
            sent: step.request,
            original: step.original,
            mayAnswerStale: step.fallback && step.stored != nil
        )
        // Where the body is stored once whole; nil when it is only passed on.
        var storeFor: ResponseLookup?
        switch outcome {
        case .failed where step.fallback && step.stored != nil:
            // The stored response answers in its place (``result(of:for:)``): the failure's body
            // is read by nobody.
            recordFailure(step.backoffKey, error!)
            source.cancel()
            return NetworkOutcome(response: response, body: [], source: .network, error: error)
        case .failed:
            recordFailure(step.backoffKey, error!)
        case .store, .freshen:
            recordStorable(error, for: step.backoffKey)
            if await mayStore(status, for: step) { storeFor = step.lookup }
        case .invalidate, .invalidateThenStore:
            recordSuccess(step.backoffKey)
            do {
                try await cache.invalidate(after: response, to: step.original)
                if case .invalidateThenStore(let get) = outcome { storeFor = await cache.lookup(get) }
            } catch {
                configuration.logger.warning("could not invalidate", metadata: ["error": "\(error)"])
            }
        case .keep:
            recordSuccess(step.backoffKey)
        }
        let limit = max(cache.largestStorableBody, 1)
        if let length = response.headerFields[.contentLength].flatMap({ Int($0) }), length > limit {
            storeFor = nil
        }
        let body = StreamedBody(retainingUpTo: storeFor == nil ? 0 : limit, budget: streamed.budget)
        // A request for the URL that comes after this head waits for the store, not for a flight.
        let key = step.coalescesByKey && storeFor != nil ? "\u{1}" + step.backoffKey : nil
        if let key { bodiesInFlight.withLock { $0[key] = body } }
        let pipeline = step.pipeline
        let destination = storeFor
        let backoffKey = step.backoffKey
        let coalesces = step.coalescesByKey
        // Started when the body is first asked for, so that the head leaves first.
        let start = body.pump(
            source,
            startsOnDemand: true,
            idleTimeout: configuration.requestTimeout,
            clock: configuration.clock
        ) { [self] whole in
            guard let destination else { return nil }
            let candidate = CachedResponse(
                response: response,
                body: whole,
                requestTime: requestTime,
                responseTime: responseTime
            )
            do {
                let stored = try await traced("layeredcache.store") {
                    try await cache.store(candidate, for: destination, through: pipeline)
                }
                if stored != nil, coalesces { uncacheableKeys.withLock { $0.unmark(backoffKey) } }
                return stored
            } catch {
                configuration.logger.warning("could not store a response", metadata: ["error": "\(error)"])
                return nil
            }
        } whenSettled: { [self] in
            guard let key else { return }
            bodiesInFlight.withLock { if $0[key] === body { $0[key] = nil } }
        }
        return NetworkOutcome(
            response: response,
            body: [],
            source: .network,
            fetchedAt: responseTime,
            validatedAt: responseTime,
            error: error,
            streamed: body,
            streamStart: start
        )
    }

    /// ``result(of:for:)``, and for a network answer whose body is still arriving, a reader of it
    /// from its start. One that can no longer be read from its start (a body passed on, whose
    /// readers moved on) is not this request's: it asks again on its own.
    func reading(_ outcome: NetworkOutcome, for step: NetworkStep) async -> FetchResult {
        var answer = result(of: outcome, for: step)
        guard let body = outcome.streamed, answer.source == .network else { return answer }
        if let reader = body.reader() {
            answer.bodyStream = reader
            return answer
        }
        // A request whose body went with the first exchange cannot be sent again (unreachable:
        // an unsafe method's answer has one reader, its own).
        guard step.bodyParts == nil else {
            let failure = CachingClientError(code: .network, message: "the answer's body could not be read")
            return result(of: NetworkOutcome(response: nil, body: nil, source: .none, error: failure), for: step)
        }
        let own = await exchange(step)
        answer = result(of: own, for: step)
        if answer.source == .network, let body = own.streamed {
            answer.bodyStream = body.reader()
        }
        return answer
    }
}
