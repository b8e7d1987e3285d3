// SPDX-License-Identifier: Apache-2.0

import HTTPTypes
import Logging
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension HandlerCache {
    /// One request's work past its lookup: answering from what is stored, calling the handler,
    /// revalidating, storing.
    struct Exchange<Responses: HandlerResponses> {
        let cache: HandlerCache
        let responses: Responses
        let logger: Logger
        let lookup: ResponseLookup

        private var responseCache: ResponseCache { cache.cache }
        private var now: Date { responseCache.configuration.now() }

        /// The answer made from `stored` (``HandlerCache/answer(from:age:to:status:)``) as
        /// the framework's response.
        func answer(
            from stored: CachedResponse,
            age: TimeInterval,
            to request: HTTPRequest,
            status: CacheStatusValue
        ) -> Responses.Response {
            let (head, body) = cache.answer(from: stored, age: age, to: request, status: status)
            return responses.response(head: head, body: body)
        }

        /// `response` with the `Cache-Status` member for `status` (none when the middleware adds
        /// none).
        func withStatus(_ response: Responses.Response, _ status: CacheStatusValue) -> Responses.Response {
            guard let value = cache.statusValue(status) else { return response }
            return responses.appendingCacheStatus(value, to: response)
        }

        /// Sends the plan's request (conditional when `stored` has validators) to the handler,
        /// and does what the engine says its answer does: a 304 freshens `stored` (or, selecting
        /// nothing stored, the request goes again without the conditions); a failure (5xx, 429)
        /// leaves it, and it answers stale where `stale-if-error` allows; anything else replaces
        /// it.
        func revalidate(
            _ stored: CachedResponse,
            plan: RequestEngine.Exchange,
            request: HTTPRequest,
            next: (HTTPRequest?) async throws -> Responses.Response
        ) async throws -> Responses.Response {
            var head = request
            head.headerFields[.ifNoneMatch] = plan.request.headerFields[.ifNoneMatch]
            head.headerFields[.ifModifiedSince] = plan.request.headerFields[.ifModifiedSince]
            let requestTime = now
            let response = try await next(head)
            let responseHead = responses.head(of: response)
            let outcome = cache.engine.outcome(
                of: responseHead,
                sent: plan.request,
                original: lookup.request,
                mayAnswerStale: plan.fallback
            )
            switch outcome {
            case .freshen:
                break
            case .failed where plan.fallback:
                let age = CacheRules.currentAge(of: stored, now: now)
                return answer(from: stored, age: age, to: request, status: .staleOnError(responseHead.status.code))
            default:
                return try await store(response, requestTime: requestTime, status: .miss(.stale))
            }
            let freshened: CachedResponse?
            do {
                // Through the pipeline as a new answer is: the 304's fields (a visitor's
                // Set-Cookie, any field the delegate strips) are judged before the merged answer
                // is stored for everyone.
                freshened = try await responseCache.freshened(
                    with: responseHead,
                    for: lookup,
                    requestTime: requestTime,
                    responseTime: now,
                    through: cache.storagePipeline
                )?.stored
            } catch {
                logger.warning("could not store a freshened response", metadata: ["error": "\(error)"])
                freshened = CacheRules.freshened(
                    stored,
                    with: responseHead,
                    requestTime: requestTime,
                    responseTime: now
                )
            }
            guard let freshened else {
                // The 304 selects nothing stored (RFC 9111 §4.3.3): the request goes again as it
                // came.
                return try await forward(status: .miss(.stale), next: next)
            }
            let age = CacheRules.currentAge(of: freshened, now: now)
            return answer(from: freshened, age: age, to: request, status: .revalidated)
        }

        /// Calls the handler with the request as it came and stores its answer when the rules
        /// allow it.
        func forward(
            status: CacheStatusValue,
            next: (HTTPRequest?) async throws -> Responses.Response
        ) async throws -> Responses.Response {
            let requestTime = now
            let response = try await next(nil)
            return try await store(response, requestTime: requestTime, status: status)
        }

        /// `response` with its body stored once complete, when it may be stored; else `response`
        /// as it is. Either way with its `Cache-Status`.
        func store(
            _ response: Responses.Response,
            requestTime: Date,
            status: CacheStatusValue
        ) async throws -> Responses.Response {
            let head = responses.head(of: response)
            let response = withStatus(response, status)
            guard lookup.request.method == .get,
                cache.engine.outcome(of: head, sent: lookup.request, original: lookup.request)
                    == .store,
                mayStore(head)
            else { return response }
            let store = Store(
                cache: responseCache,
                lookup: lookup,
                head: head,
                requestTime: requestTime,
                pipeline: cache.storagePipeline,
                logger: logger
            )
            return try await responses.storing(response, limit: cache.configuration.maximumBodyBytes, with: store)
        }

        /// Whether the rules let `response` be stored (the middleware's own rules run in its
        /// pipeline, on every answer it stores).
        private func mayStore(_ response: HTTPResponse) -> Bool {
            if let reason = responseCache.rules.reasonNotToStore(response, for: lookup.request) {
                logger.trace("not caching a response", metadata: ["reason": "\(reason)"])
                return false
            }
            return true
        }
    }

    /// What a middleware needs to store one answer once its body is complete.
    package struct Store: Sendable {
        let cache: ResponseCache
        let lookup: ResponseLookup
        let head: HTTPResponse
        let requestTime: Date
        let pipeline: StoragePipeline
        let logger: Logger

        /// Stores the answer with `body` through the lookup and the middleware's pipeline. A
        /// failure to store is logged: the client has its answer all the same.
        package func callAsFunction(body: [UInt8]) async {
            let cached = CachedResponse(
                response: head,
                body: body,
                requestTime: requestTime,
                responseTime: cache.configuration.now()
            )
            do {
                _ = try await cache.store(cached, for: lookup, through: pipeline)
            } catch {
                logger.warning("could not store a response", metadata: ["error": "\(error)"])
            }
        }
    }
}

/// How a middleware answered, as RFC 9211 `Cache-Status` parameters.
enum CacheStatusValue: Sendable, Equatable {
    /// Why the handler was called (RFC 9211 §2.2 `fwd`).
    enum Forward: String, Sendable {
        /// Nothing was stored for the URL.
        case uriMiss = "uri-miss"
        /// Something was stored but the request's directives or method did not let it be used.
        case request
        /// What was stored was stale and could not be revalidated with a 304.
        case stale
        /// The request's method is not answered from the cache (a `POST` whose answer is stored
        /// for a later `GET`).
        case method
    }

    /// Answered from the cache; `ttl` is the remaining freshness in seconds (negative when stale).
    case hit(ttl: TimeInterval)
    /// Answered from the cache after the handler confirmed it with a 304.
    case revalidated
    /// Answered from the cache, stale, because the handler failed with this status and
    /// `stale-if-error` allowed it (RFC 5861 §4).
    case staleOnError(Int)
    /// The handler answered.
    case miss(Forward)

    var parameters: String {
        switch self {
        case .hit(let ttl): "hit; ttl=\(Int(ttl.rounded(.down)))"
        case .revalidated: "fwd=stale; fwd-status=304"
        case .staleOnError(let status): "fwd=stale; fwd-status=\(status)"
        case .miss(let forward): "fwd=\(forward.rawValue)"
        }
    }
}

/// The `Cache-Status` field name (RFC 9211), made once.
let cacheStatusField = HTTPField.Name("Cache-Status")!

/// The cache status of the answer a traced request got, for its span: set where the status is
/// decided, read when the answer is made.
final class CacheStatusRecorder: Sendable {
    @TaskLocal static var current: CacheStatusRecorder?
    private let value = Mutex<String?>(nil)

    func record(_ status: String) { value.withLock { $0 = status } }

    /// The status recorded, as `Cache-Status` parameters (`hit; ttl=42`), or nil for none.
    var status: String? { value.withLock { $0 } }
}
