// SPDX-License-Identifier: Apache-2.0

import CacheTiers
import HTTPCaching
import HTTPTypes
import Logging
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What to send, and what to fall back to.
struct NetworkStep: Sendable {
    /// The request to send: the caller's, with validators added when revalidating.
    var request: HTTPRequest
    /// The cache's lookup for the caller's request: its normalized key, what is stored (the
    /// response being revalidated, and the fallback); the answer is stored through it.
    var lookup: ResponseLookup
    var body: [UInt8]?
    /// Whether ``stored`` may answer, stale, when the network fails.
    var fallback: Bool
    /// A deadline for the answer (network-first), after which ``stored`` answers.
    var timeout: Duration?
    var freshness: FreshnessClass
    /// What the answer is stored through: the call's hook, then the delegates' `willCache`.
    var pipeline: StoragePipeline
    /// A token of a flight no other call joins, for a call with a hook or a delegate of its own;
    /// nil for a call that shares (see ``flightKey``).
    var ownFlight: UInt64? = nil
    /// Whether the stored response is past its class's validation window: a fallback to it then
    /// says ``StaleReason/notValidated``.
    var isGated = false
    /// Whether the step joins requests in flight by cache key (``Coalescing/byCacheKey``).
    var coalescesByKey = false
    /// Whether the caller reads a network answer's body as it arrives.
    var streams = false
    /// The request body as it comes (``body`` is then nil): sent once, never again.
    var bodyParts: RequestBodySource? = nil

    /// The caller's request.
    var original: HTTPRequest { lookup.request }
    /// The stored response being revalidated, and the fallback.
    var stored: CachedResponse? { lookup.stored }
    var isSafe: Bool { original.method == .get || original.method == .head }

    /// The key backoff is kept by: the request's normalized method and URL.
    var backoffKey: String {
        lookup.key?.string
            ?? "\(original.method.rawValue) \(original.scheme ?? "")://\(original.authority ?? "")\(original.path ?? "")"
    }

    /// The key identical requests share a flight by: the normalized method and URL, and every
    /// header field of the request to send but the tracing ones, which differ on every request and
    /// do not change the answer.
    ///
    /// A call with a hook or a delegate of its own has a flight of its own: what is stored on its
    /// behalf must pass its own pipeline, and a shared flight stores once, through the pipeline of
    /// the call that started it. Calls without one share: their pipelines are the same (the
    /// cache's hook and the client's delegate).
    var flightKey: String {
        var key = backoffKey
        if let ownFlight { key += "\n#\(ownFlight)" }
        for field in request.headerFields where !CachingHTTPClient.tracingFieldNames.contains(field.name.canonicalName)
        {
            key += "\n\(field.name.canonicalName):\(field.value)"
        }
        return key
    }
}

/// What the network said, after the cache took it in.
struct NetworkOutcome: Sendable {
    var response: HTTPResponse?
    var body: [UInt8]?
    var source: FetchResult.Source
    var fetchedAt: Date?
    var validatedAt: Date?
    /// The cache's lookup as it stands after the answer was stored (for its expiry), when it was.
    var stored: ResponseLookup?
    var error: CachingClientError?
    /// Why the answer could not be stored (a closed cache, a full disk), when it could not.
    var cacheError: CachingClientError?
    /// The flight key of the request that was sent (``NetworkStep/flightKey``), on a flight by
    /// cache key.
    var flightKey: String? = nil
    /// The body still arriving, for a streamed answer (``body`` is then nil).
    var streamed: StreamedBody? = nil
    /// Starts ``streamed``'s reading when the last copy of the outcome goes and nobody read it.
    var streamStart: StreamedBody.StartToken? = nil
}

extension CachingHTTPClient {
    /// Sends `step` (joining identical work in flight for `GET` / `HEAD`) and turns the outcome
    /// into the caller's answer.
    func network(_ step: NetworkStep) async -> FetchResult {
        guard step.isSafe else { return await reading(await exchange(step), for: step) }
        if step.coalescesByKey, let answer = await coalescedByKey(step) { return answer }
        let key = step.flightKey
        let outcome: NetworkOutcome?
        if let timeout = step.timeout {
            // The deadline stops this caller's wait; the flight goes on for the others.
            let waited = await withDeadline(timeout, clock: configuration.clock) {
                await self.flights.value(for: key) { await self.exchange(step) }
            }
            if let waited {
                outcome = waited
            } else if Task.isCancelled {
                outcome = nil
            } else {
                let error = CachingClientError(code: .timeout, message: "no answer within \(timeout)")
                outcome = NetworkOutcome(response: nil, body: nil, source: .none, error: error)
            }
        } else {
            outcome = await flights.value(for: key) { await self.exchange(step) }
        }
        guard let outcome else { return Self.cancelled }
        if step.coalescesByKey, outcome.stored != nil {
            uncacheableKeys.withLock { $0.unmark(step.backoffKey) }
        }
        return await reading(outcome, for: step)
    }

    /// One exchange with the origin, and what it changes in the cache: a 304 freshens the stored
    /// response (through the request's own hook too), a storable response replaces it (an error
    /// response only as ``Configuration/errorResponses`` allows), a 5xx leaves it, an unsafe
    /// method's success invalidates. Records the backoff.
    func exchange(_ step: NetworkStep) async -> NetworkOutcome {
        let backoffKey = step.backoffKey
        let start = now
        if let state = backoffTable.withLock({ $0.backingOff(backoffKey, now: start) }) {
            let error = CachingClientError(
                code: .backingOff,
                message: "backing off after \(state.failures) failure(s), until \(state.until)",
                underlying: state.lastError
            )
            return NetworkOutcome(response: nil, body: nil, source: .none, error: error)
        }
        do {
            var requestTime = start
            var (answer, stream) = try await send(
                step.request,
                body: step.body,
                bodyParts: step.bodyParts,
                streams: step.streams
            )
            var responseTime = now
            if engine.outcome(of: answer.response, sent: step.request, original: step.original) == .freshen {
                // A 304 has no body: read to its end, so that its connection may be kept.
                if let stream { _ = try await collect(stream.body) }
                var cacheError: CachingClientError?
                let after: ResponseLookup?
                do {
                    after = try await traced("layeredcache.store") {
                        try await cache.freshened(
                            with: answer.response,
                            for: step.lookup,
                            requestTime: requestTime,
                            responseTime: responseTime,
                            through: step.pipeline
                        )
                    }
                } catch {
                    // The 304 stands even when it cannot be stored (a closed cache, a full disk).
                    cacheError = Self.cacheFailure(error)
                    after = step.stored.map { stored in
                        ResponseLookup.answering(
                            step.original,
                            with: CacheRules.freshened(
                                stored,
                                with: answer.response,
                                requestTime: requestTime,
                                responseTime: responseTime
                            )
                        )
                    }
                }
                if let after, let freshened = after.stored {
                    recordSuccess(backoffKey)
                    // An answer from storage carries its current Age (RFC 9111 §5.1), as hits do.
                    var response = freshened.response
                    response.headerFields[.age] = CacheRules.ageHeaderValue(of: freshened, now: responseTime)
                    return NetworkOutcome(
                        response: response,
                        body: step.original.method == .head ? [] : freshened.body,
                        source: .revalidated,
                        fetchedAt: freshened.fetchedAt,
                        validatedAt: freshened.validatedAt,
                        stored: after,
                        cacheError: cacheError
                    )
                }
                // The 304 selects nothing stored (RFC 9111 §4.3.3): ask again without conditions.
                requestTime = now
                (answer, stream) = try await send(step.original, body: step.body, bodyParts: nil, streams: step.streams)
                responseTime = now
            }
            if let stream {
                return await take(
                    answer.response,
                    streaming: stream,
                    for: step,
                    requestTime: requestTime,
                    at: responseTime
                )
            }
            return await take(answer, for: step, requestTime: requestTime, responseTime: responseTime)
        } catch {
            let failure = CachingClientError.classify(error)
            if failure.code != .cancelled, failure.code != .overloaded { recordFailure(backoffKey, failure) }
            return NetworkOutcome(response: nil, body: nil, source: .none, error: failure)
        }
    }

    private func take(
        _ answer: HTTPTransportResponse,
        for step: NetworkStep,
        requestTime: Date,
        responseTime: Date
    ) async -> NetworkOutcome {
        let status = answer.response.status.code
        let error = CachingClientError.classify(answer.response)
        var stored: ResponseLookup?
        var cacheError: CachingClientError?
        let outcome = engine.outcome(
            of: answer.response,
            sent: step.request,
            original: step.original,
            mayAnswerStale: step.fallback && step.stored != nil
        )
        switch outcome {
        case .failed:
            recordFailure(step.backoffKey, error!)
        case .store, .freshen:
            recordStorable(error, for: step.backoffKey)
            let candidate = CachedResponse(
                response: answer.response,
                body: answer.body,
                requestTime: requestTime,
                responseTime: responseTime
            )
            do {
                if await mayStore(status, for: step) {
                    stored = try await traced("layeredcache.store") {
                        try await cache.store(candidate, for: step.lookup, through: step.pipeline)
                    }
                }
            } catch {
                cacheError = Self.cacheFailure(error)
                configuration.logger.warning("could not store a response", metadata: ["error": "\(error)"])
            }
        case .invalidate, .invalidateThenStore:
            recordSuccess(step.backoffKey)
            do {
                try await cache.invalidate(after: answer.response, to: step.original)
                if case .invalidateThenStore(let get) = outcome {
                    // A POST's answer that is its target's current representation answers a
                    // later GET: stored for that GET, through the same pipeline (RFC 9110 §9.3.3).
                    let candidate = CachedResponse(
                        response: answer.response,
                        body: answer.body,
                        requestTime: requestTime,
                        responseTime: responseTime
                    )
                    stored = try await cache.store(candidate, for: cache.lookup(get), through: step.pipeline)
                }
            } catch {
                cacheError = Self.cacheFailure(error)
                configuration.logger.warning("could not invalidate", metadata: ["error": "\(error)"])
            }
        case .keep:
            recordSuccess(step.backoffKey)
        }
        return NetworkOutcome(
            response: answer.response,
            body: answer.body,
            source: .network,
            fetchedAt: responseTime,
            validatedAt: responseTime,
            stored: stored,
            error: error,
            cacheError: cacheError
        )
    }

    /// A cache failure as the client reports it: ``CachingClientError/Code/closed`` for a closed
    /// cache, ``CachingClientError/Code/storage`` for the rest.
    static func cacheFailure(_ error: any Error) -> CachingClientError {
        if let error = error as? HTTPCachingError, error.code == .closed {
            return CachingClientError(
                code: .closed,
                message: "the cache is closed: nothing was stored",
                underlying: error
            )
        }
        return CachingClientError(code: .storage, message: "the answer could not be stored", underlying: error)
    }

    /// Whether a response of `status` may be stored for `step`: not an error response (4xx) over
    /// a stored good (2xx) answer, unless ``Configuration/errorResponses`` follows the protocol.
    func mayStore(_ status: Int, for step: NetworkStep) async -> Bool {
        guard status >= 400, !configuration.errorResponses.replacesGoodAnswers else { return true }
        // A lookup made without reading (network-only) learns what is stored only now.
        let stored = step.lookup.isRead ? step.stored : await cache.lookup(step.original).stored
        guard let stored, (200..<300).contains(stored.response.status.code) else { return true }
        configuration.logger.debug(
            "keeping the last good answer",
            metadata: ["status": "\(status)", "key": "\(step.backoffKey)"]
        )
        return false
    }

    /// The caller's answer from what the network said: the network's answer, or the stored
    /// response, stale, when the network failed and the step allows it.
    func result(of outcome: NetworkOutcome, for step: NetworkStep) -> FetchResult {
        let at = now
        if let error = outcome.error, Self.allowsFallback(error), step.fallback, let stored = step.stored {
            var reason: StaleReason =
                error.code == .noConnection || error.code == .backingOff ? .offline : .revalidationFailed
            var error = error
            if step.isGated {
                reason = .notValidated
                error = Self.notValidated(step.freshness, underlying: error)
            }
            let head = step.original.method == .head ? stored.withoutBody : stored
            return answer(from: head, freshness: .stale(reason), softTTL: step.freshness.softTTL, now: at, error: error)
        }
        guard let response = outcome.response else {
            var result = FetchResult(
                response: nil,
                body: nil,
                source: .none,
                freshness: .missing,
                error: outcome.error
            )
            result.cacheError = step.lookup.isCacheClosed ? Self.closedCache : nil
            return result
        }
        let expiry = outcome.stored.flatMap { expiresAt(of: $0, freshness: step.freshness, now: at) }
        var result = FetchResult(
            response: response,
            body: outcome.body,
            source: outcome.source,
            freshness: .fresh,
            fetchedAt: outcome.fetchedAt,
            validatedAt: outcome.validatedAt,
            expiresAt: expiry,
            isFinal: true,
            error: outcome.error
        )
        if let stored = outcome.stored?.stored {
            result.describe(stored)
        }
        result.cacheError = outcome.cacheError ?? (step.lookup.isCacheClosed ? Self.closedCache : nil)
        return result
    }

    /// The cache error of an answer made while the cache was closed.
    static let closedCache = CachingClientError(
        code: .closed,
        message: "the cache is closed: nothing was read or stored"
    )

    /// Failures a stale answer may stand in for: not reaching the origin, and the origin
    /// failing (5xx, 429). Not a 401 / 403 (the credentials were refused) or another 4xx (the
    /// origin's answer).
    static func allowsFallback(_ error: CachingClientError) -> Bool {
        switch error.code {
        case .noConnection, .timeout, .network, .backingOff: return true
        case .server: return (error.response?.status.code ?? 500) >= 500 || error.response?.status.code == 429
        default: return false
        }
    }

    /// Per-request tracing fields (W3C Trace Context and Baggage, B3, common request IDs).
    static let tracingFieldNames: Set<String> = [
        "traceparent", "tracestate", "baggage", "b3", "x-b3-traceid", "x-b3-spanid", "x-b3-parentspanid",
        "x-b3-sampled", "x-b3-flags", "x-request-id", "request-id", "x-correlation-id", "x-amzn-trace-id",
        "x-cloud-trace-context",
    ]
}
